"""Fit the dense calibration of an embedding model (``core.calibration``) offline.

``python -m ops.bench.quality.calibrate [--users 20] [--sessions 20] [--lang both]`` embeds
the seeded chats of ``bench quality`` (``ops.bench.quality.data``, no stack needed) with the
configured embedder and prints the table row to paste into ``core.calibration.MODELS``.

Two sets of (question, turn) pairs, each turn's ``x = cos − background``
(``core.calibration``; the spread too, for z units):

- *near*: a question against every turn of its user — its evidence is related, the
  rest (chit-chat, and the other facts of the same kind: another trip, another book)
  is not. These hard negatives are where ranking happens;
- *meaning*: a paraphrase question (it shares no word with its evidence) against its
  evidence, related, and against the facts of the other users of its language (the
  evidence turns of their questions), unrelated. What a threshold has to tell apart.

Each set gets a logistic ``P(related | x) = σ(a·(x − m))`` (Newton's method, both
classes weighted to half the mass: an even prior, since the generator's ratio of
related to unrelated pairs says nothing about a real store), and
``core.calibration.fit_knots`` places the knots: relevance 0 and 0.3 at the *meaning*
fit's 0.05 and 0.3 points (``min_relevance`` keeps what the model finds 30 % likely
related by meaning alone), relevance 1 at the *near* fit's 0.975 point (of 0.9 / 0.95 /
0.975 / 0.99, the one that ranked best on ``bench quality``: a lower top saturates
near answers at 1 and leaves their order to the 0.3·weight term of the final score).
An English-only model is fitted on English users only (its Chinese cosines are
meaningless; recall sets them aside). The command prints the knots, in x and in z
units, and the share of each set's pairs that relevance 0.3 keeps, per language.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from core.calibration import (
    REFERENCE,
    UNITS_X,
    UNITS_Z,
    Background,
    background,
    english_only,
    latin_share,
)
from core.calibration_fit import fit_knots
from core.seams import EmbedderLike
from ops.bench.quality.baselines import turn_text
from ops.bench.quality.data import Dataset, generate


@dataclass
class Pairs:
    """Pairs of one set: x = cos − background, the spread, related?, language."""

    x: list[float] = field(default_factory=list)
    spread: list[float] = field(default_factory=list)
    related: list[int] = field(default_factory=list)
    lang: list[str] = field(default_factory=list)

    def add(self, x: float, spread: float, related: bool, lang: str) -> None:
        self.x.append(x)
        self.spread.append(spread)
        self.related.append(int(related))
        self.lang.append(lang)

    def values(self, units: str, keep: Callable[[str], bool]) -> tuple[list[float], list[int]]:
        rows = zip(self.x, self.spread, self.related, self.lang, strict=True)
        picked = [(x if units == UNITS_X else x / s, y) for x, s, y, g in rows if keep(g)]
        return [v for v, _ in picked], [y for _, y in picked]


def pairs(data: Dataset, embedder: EmbedderLike) -> tuple[Pairs, Pairs]:
    """The *near* and the *meaning* pairs of the module docstring."""
    turns = data.turns()
    docs = embedder.embed([turn_text(t) for t in turns])
    ref = embedder.embed(list(REFERENCE))
    questions = [q for q in data.questions() if q.type != "deleted"]
    qvecs = getattr(embedder, "embed_queries", embedder.embed)([q.query for q in questions])
    row = {t.msg_id: i for i, t in enumerate(turns)}
    by_id = {t.msg_id: t for t in turns}
    users = {u.user_id: u for u in data.users}
    near, meaning = Pairs(), Pairs()
    for q, qv in zip(questions, qvecs, strict=True):
        bg = background(ref @ qv)

        def x_of(msg_id: str, qv: Any = qv, bg: Background = bg) -> float:
            return float(docs[row[msg_id]] @ qv) - bg.at(latin_share(by_id[msg_id].content))

        for t in users[q.user_id].turns():
            if t.msg_id not in q.stale:
                near.add(x_of(t.msg_id), bg.spread, t.msg_id in q.evidence, q.lang)
        if q.type == "paraphrase":
            meaning.add(x_of(q.evidence[0]), bg.spread, True, q.lang)
            for o in questions:
                if o.user_id != q.user_id and o.lang == q.lang and o.type != "changed":
                    meaning.add(x_of(o.evidence[0]), bg.spread, False, o.lang)
    return near, meaning


def report(name: str, near: Pairs, meaning: Pairs, units: str) -> dict[str, Any]:
    """The fitted knots in ``units`` and what relevance 0.3 keeps, per set and language."""

    def fitted(g: str) -> bool:
        return g == "en" or not english_only(name)

    knots = fit_knots(meaning.values(units, fitted), near.values(units, fitted))
    out: dict[str, Any] = {"name": name, "units": units, "knots": [knots.lo, knots.cut, knots.hi]}
    for label, found in (("near", near), ("meaning", meaning)):
        for lang in sorted(set(found.lang)):

            def of_lang(g: str, lang: str = lang) -> bool:
                return g == lang

            xs, ys = found.values(units, of_lang)
            rel = [x for x, y in zip(xs, ys, strict=True) if y]
            unrel = [x for x, y in zip(xs, ys, strict=True) if not y]
            out[f"{label}_{lang}"] = {
                "related": len(rel),
                "related_kept": round(sum(x >= knots.cut for x in rel) / max(1, len(rel)), 3),
                "unrelated": len(unrel),
                "unrelated_kept": round(sum(x >= knots.cut for x in unrel) / max(1, len(unrel)), 3),
            }
    return out


def main(argv: list[str] | None = None) -> int:
    from core.settings import get_settings
    from models.factory import build_embedder

    p = argparse.ArgumentParser(prog="python -m ops.bench.quality.calibrate", description=__doc__)
    p.add_argument("--users", type=int, default=20)
    p.add_argument("--sessions", type=int, default=20)
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--lang", choices=("en", "zh", "both"), default="both")
    args = p.parse_args(argv)
    embedder = build_embedder(get_settings())
    data = generate(args.users, args.sessions, args.seed, args.lang)
    print(f"calibrate: {embedder.name}, {len(data.turns())} turns", file=sys.stderr)
    near, meaning = pairs(data, embedder)
    for units in (UNITS_X, UNITS_Z):
        print(json.dumps(report(embedder.name, near, meaning, units), ensure_ascii=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
