"""What an agent pays for: evidence recall at a context budget (issue 32). Pure, no I/O.

An agent pays for every recalled character: they go into a finite context window. So
a system is scored on what fits, not on how many results it was allowed:

- ``budget_recall`` — the share of the question's evidence ids covered by the ranked
  results that fit, in rank order and whole, into ``budget`` characters; the first result
  always counts (an agent takes at least one), a result that does not fit ends the list
  (skipping it for a shorter one would reorder the ranking);
- ``top_chars`` — the characters of the top ``k`` results together (what "top 10" costs).

A result's evidence is its source ids (a raw turn: its own msg_id; a memory: every
``source.msg_ids``; a MADial memory: the dataset ids it was stored for).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

BUDGETS = (500, 1000, 2000, 4000)
KEYS = tuple(f"chars@{b}" for b in BUDGETS) + ("top10_chars",)


def fitting(contents: Sequence[str], budget: int) -> int:
    """How many results, in rank order, fit whole into ``budget`` characters (the first
    always counts)."""
    used = 0
    for n, text in enumerate(contents):
        used += len(text)
        if used > budget:
            return max(1, n)
    return len(contents)


def budget_recall(
    evidence: Iterable[str], ranked: Sequence[Sequence[str]], contents: Sequence[str], budget: int
) -> float:
    wanted = set(evidence)
    if not wanted:
        return 0.0
    n = fitting(contents, budget)
    found = {m for result in ranked[:n] for m in result}
    return len(wanted & found) / len(wanted)


def top_chars(contents: Sequence[str], k: int = 10) -> int:
    return sum(len(c) for c in contents[:k])


def budget_scores(
    evidence: Sequence[str], ranked: Sequence[Sequence[str]], contents: Sequence[str]
) -> dict[str, float]:
    """Every budget figure of one answered question (``KEYS``)."""
    if len(ranked) != len(contents):
        raise ValueError(f"{len(ranked)} ranked results but {len(contents)} contents")
    out = {f"chars@{b}": budget_recall(evidence, ranked, contents, b) for b in BUDGETS}
    out["top10_chars"] = float(top_chars(contents))
    return out
