"""Raw-turn baselines of ``bench quality``: a memory that stores every turn as said.

Each turn is one document, ``"<speaker name>: <content>"`` (what a store-everything
memory keeps: who said it and what), searched per user:

- ``bm25`` — ``core.lexical.BM25Index`` (recall's own lexical channel: Latin words,
  CJK segmented by jieba), top 10 by raw BM25;
- ``dense`` — the configured embedder over the same texts, exact cosine top 10 (the
  questions in the model's query form, ``embed_queries``, as recall embeds them).

A deleted question is answered by a store that honours the delete: the deleted turns
are out of its candidates, so a baseline never leaks. Ties keep the conversation order.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from core.lexical import BM25Index, tokenize
from ops.quality_data import Dataset, Question, Turn, UserData

TOP_K = 10


@dataclass(frozen=True)
class Answer:
    ranked: list[list[str]]  # top results, best first; each its source msg_ids
    contents: list[str]
    ms: float
    code: int = 0  # the API's envelope code (0 = ok); a failed answer ranks nothing


def turn_text(t: Turn) -> str:
    return f"{t.name}: {t.content}"


def _deleted(user: UserData) -> set[str]:
    return {m for q in user.questions if q.type == "deleted" for m in q.evidence}


def _answer(order: list[int], turns: list[Turn], q: Question, gone: set[str], ms: float) -> Answer:
    if q.type == "deleted":
        order = [i for i in order if turns[i].msg_id not in gone]
    top = order[:TOP_K]
    return Answer([[turns[i].msg_id] for i in top], [turns[i].content for i in top], ms)


def bm25(data: Dataset) -> dict[str, Answer]:
    out = {}
    for user in data.users:
        turns, gone = user.turns(), _deleted(user)
        index = BM25Index()
        for i, t in enumerate(turns):
            index.add_tokens(str(i), tokenize(turn_text(t)))
        for q in user.questions:
            started = time.perf_counter()
            scores = index.scores(q.query)
            order = sorted((int(i) for i in scores), key=lambda i: (-scores[str(i)], i))
            ms = (time.perf_counter() - started) * 1000
            out[q.qid] = _answer(order, turns, q, gone, ms)
    return out


def dense(data: Dataset, embedder) -> dict[str, Answer]:
    """One batch for every turn, one for every question; the per-query time is the
    question's share of its batch plus its own search."""
    turns, questions = data.turns(), data.questions()
    docs = embedder.embed([turn_text(t) for t in turns])
    started = time.perf_counter()
    embed_queries = getattr(embedder, "embed_queries", embedder.embed)
    queries = embed_queries([q.query for q in questions])
    embed_ms = (time.perf_counter() - started) * 1000 / max(1, len(questions))
    row = {id(q): i for i, q in enumerate(questions)}
    out, offset = {}, 0
    for user in data.users:
        mine = user.turns()
        matrix = docs[offset : offset + len(mine)]
        offset += len(mine)
        gone = _deleted(user)
        for q in user.questions:
            started = time.perf_counter()
            sims = matrix @ queries[row[id(q)]]
            order = [int(i) for i in np.argsort(-sims, kind="stable")[: TOP_K + len(gone)]]
            ms = embed_ms + (time.perf_counter() - started) * 1000
            out[q.qid] = _answer(order, mine, q, gone, ms)
    return out
