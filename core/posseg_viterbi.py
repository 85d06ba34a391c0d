"""jieba's part-of-speech Viterbi: the same path in half the time.

``jieba.posseg`` tags the runs of characters its dictionary does not split with an HMM
over (position, tag) states, in pure Python: for every character and every state it may
take, a generator builds a (score, state) tuple for every state the previous character
had (``jieba/posseg/viterbi.py``). That loop was ~90 % of the writer's POS tagging on
Chinese chats (``bench ingest --dataset generated``: a fifth of the ingest worker's
time), and no maintained package does it faster with the same answers: the C
``jieba_fast`` is unmaintained, and ``rjieba``'s HMM splits names differently.

:func:`viterbi` takes the same tables and returns the same ``(prob, route)``: the same
sums in the same order, the same tie-break (the greater state), only without the tuples
and with each state's emission looked up once. The rare inputs where a score would be
−∞ (a state no previous one leads to) go to jieba's own function, so its answer, or its
error, stays the answer. ``tests/unit/core/test_posseg_viterbi.py`` holds the two equal
on sentences with names and places and on 400 random runs of characters. Measured here:
the Viterbi of a run 2.1× faster, ``posseg.lcut`` of a Chinese fact 460 → 159 µs.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

MIN_FLOAT = -3.14e100  # jieba's score for an emission its table lacks
_NEG_INF = float("-inf")

State = tuple[str, str]


def viterbi(
    obs: str,
    states: Mapping[str, Iterable[State]],
    start_p: Mapping[State, float],
    trans_p: Mapping[State, Mapping[State, float]],
    emit_p: Mapping[State, Mapping[str, float]],
) -> tuple[float, list[State]]:
    """``jieba.posseg.viterbi.viterbi(obs, states, start_p, trans_p, emit_p)``."""

    def slow() -> tuple[float, list[State]]:
        from jieba.posseg.viterbi import viterbi as jieba_viterbi

        return jieba_viterbi(obs, states, start_p, trans_p, emit_p)  # type: ignore[no-any-return]

    all_states = trans_p.keys()
    first = obs[0]
    scores: dict[State, float] = {
        y: start_p[y] + emit_p[y].get(first, MIN_FLOAT) for y in states.get(first, all_states)
    }
    back: list[dict[State, State]] = []
    for ch in obs[1:]:
        prev = [(y0, v, trans_p[y0]) for y0, v in scores.items() if trans_p[y0]]
        expect = {y for _, _, nxt in prev for y in nxt}
        here = expect.intersection(states.get(ch, all_states)) or expect
        if not here:
            return slow()  # jieba's max() over no state: its error
        now: dict[State, float] = {}
        came: dict[State, State] = {}
        for y in here:
            e = emit_p[y].get(ch, MIN_FLOAT)
            best = _NEG_INF
            best_y0: State | None = None
            for y0, v, nxt in prev:
                p = nxt.get(y)
                if p is None:
                    continue  # jieba adds −∞: never the max while one state leads here
                s = v + p + e
                if s > best or (s == best and best_y0 is not None and y0 > best_y0):
                    best, best_y0 = s, y0
            if best_y0 is None or best == _NEG_INF:
                return slow()  # ties among −∞ scores: jieba's tie-break over every state
            now[y], came[y] = best, best_y0
        scores = now
        back.append(came)
    prob, state = max((v, y) for y, v in scores.items())
    route = [state]
    for came in reversed(back):
        state = came[state]
        route.append(state)
    route.reverse()
    return prob, route
