"""Raw-text baselines of ``bench quality``: a memory that stores every text as given.

Per user, a list of documents in time order (generated and RealMem data: every turn,
``"<speaker name>: <content>"`` — what a store-everything memory keeps: who said it and
what; MADial-Bench: the same memory texts memstream stores). Each question sees the
first ``visible`` documents of its user (RealMem: the sessions before it) minus the
``gone`` ids (a store that honours a delete), and three systems rank them:

- ``bm25`` — ``core.lexical.BM25Index`` (recall's own lexical channel: Latin words,
  CJK segmented by jieba) built over exactly the visible documents, by raw BM25;
- ``dense`` — the configured embedder over the same texts, exact cosine (the questions
  in the model's query form, ``embed_queries``, as recall embeds them);
- ``hybrid`` — reciprocal rank fusion of the two lists (k = 60).

Each answers its top ``DEPTH`` (the depth memstream is asked at). Ties keep document order.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from core.lexical import BM25Index, tokenize
from ops.bench.quality.data import Dataset, Turn

TOP_K = 10  # the scored k (recall@10, hit@10)
DEPTH = 50  # results asked of every system: enough for the 4,000-character budget
RRF_K = 60
SYSTEMS = ("bm25", "dense", "hybrid")


@dataclass(frozen=True)
class Answer:
    ranked: list[list[str]]  # top results, best first; each its source ids
    contents: list[str]
    ms: float
    code: int = 0  # the API's envelope code (0 = ok); a failed answer ranks nothing


@dataclass(frozen=True)
class Doc:
    ids: tuple[str, ...]  # the evidence ids it stands for
    text: str  # what is indexed
    content: str  # what is answered (its characters are what the agent pays)


@dataclass(frozen=True)
class Ask:
    qid: str
    user_id: int
    query: str
    visible: int | None = None  # the first N documents of the user; None: all
    gone: frozenset[str] = field(default_factory=frozenset)


def turn_text(t: Turn) -> str:
    return f"{t.name}: {t.content}"


def generated(data: Dataset) -> tuple[dict[int, list[Doc]], list[Ask]]:
    """The generated chats as documents and asks; a deleted question's turns are gone."""
    docs, asks = {}, []
    for user in data.users:
        docs[user.user_id] = [Doc((t.msg_id,), turn_text(t), t.content) for t in user.turns()]
        gone = frozenset(m for q in user.questions if q.type == "deleted" for m in q.evidence)
        asks += [Ask(q.qid, q.user_id, q.query, None, gone if q.type == "deleted" else frozenset())
                 for q in user.questions]  # fmt: skip
    return docs, asks


def _window(docs: list[Doc], ask: Ask) -> list[int]:
    n = len(docs) if ask.visible is None else min(ask.visible, len(docs))
    return [i for i in range(n) if not ask.gone.intersection(docs[i].ids)]


def _bm25(docs: dict[int, list[Doc]], asks: Sequence[Ask]) -> dict[str, tuple[list[int], float]]:
    tokens = {u: [tokenize(d.text) for d in ds] for u, ds in docs.items()}
    out: dict[str, tuple[list[int], float]] = {}
    built: dict[tuple[int, tuple[int, ...]], BM25Index] = {}
    for a in asks:
        window = _window(docs[a.user_id], a)
        key = (a.user_id, tuple(window))
        if key not in built:  # one index per distinct window: its statistics, no others
            if any(k[0] != a.user_id for k in built):
                built.clear()  # asks come grouped by user: keep only this user's
            index = BM25Index()
            for i in window:
                index.add_tokens(str(i), tokens[a.user_id][i])
            built[key] = index
        started = time.perf_counter()
        scores = built[key].scores(a.query)
        order = sorted((int(i) for i in scores), key=lambda i: (-scores[str(i)], i))
        out[a.qid] = (order, (time.perf_counter() - started) * 1000)
    return out


def _dense(docs: dict[int, list[Doc]], asks: Sequence[Ask], embedder) -> dict[str, tuple]:
    """One batch for every document, one for every question; the per-query time is the
    question's share of its batch plus its own search."""
    users = list(docs)
    matrix = embedder.embed([d.text for u in users for d in docs[u]])
    offsets, at = {}, 0
    for u in users:
        offsets[u], at = at, at + len(docs[u])
    started = time.perf_counter()
    embed_queries = getattr(embedder, "embed_queries", embedder.embed)
    queries = embed_queries([a.query for a in asks]) if asks else []
    embed_ms = (time.perf_counter() - started) * 1000 / max(1, len(asks))
    out: dict[str, tuple[list[int], float]] = {}
    for row, a in enumerate(asks):
        started = time.perf_counter()
        window = np.array(_window(docs[a.user_id], a), dtype=int)
        if len(window) == 0:
            out[a.qid] = ([], embed_ms)
            continue
        sims = matrix[offsets[a.user_id] + window] @ queries[row]
        order = [int(window[i]) for i in np.argsort(-sims, kind="stable")]
        out[a.qid] = (order, embed_ms + (time.perf_counter() - started) * 1000)
    return out


def rrf(*orders: Sequence[int], k: int = RRF_K) -> list[int]:
    """Reciprocal rank fusion: Σ 1 / (k + rank), rank from 1; ties by first appearance."""
    score: dict[int, float] = {}
    for order in orders:
        for rank, i in enumerate(order, start=1):
            score[i] = score.get(i, 0.0) + 1.0 / (k + rank)
    first = {i: n for n, i in enumerate(dict.fromkeys(x for o in orders for x in o))}
    return sorted(score, key=lambda i: (-score[i], first[i]))


def rank(
    docs: dict[int, list[Doc]], asks: Sequence[Ask], embedder, depth: int = DEPTH
) -> dict[str, dict[str, Answer]]:
    """Every baseline's answers: ``{"bm25"|"dense"|"hybrid": {qid: Answer}}``."""
    lexical, dense = _bm25(docs, asks), _dense(docs, asks, embedder)
    out: dict[str, dict[str, Answer]] = {name: {} for name in SYSTEMS}
    for a in asks:
        mine = docs[a.user_id]
        (lex, lex_ms), (den, den_ms) = lexical[a.qid], dense[a.qid]
        for name, order, ms in (("bm25", lex, lex_ms), ("dense", den, den_ms),
                                ("hybrid", rrf(lex, den), lex_ms + den_ms)):  # fmt: skip
            top = order[:depth]
            out[name][a.qid] = Answer([list(mine[i].ids) for i in top],
                                      [mine[i].content for i in top], ms)  # fmt: skip
    return out
