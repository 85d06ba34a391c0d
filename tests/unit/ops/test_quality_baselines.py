"""The raw-text baselines of `bench quality`: what each question may see, and RRF."""

from __future__ import annotations

import numpy as np

from ops.bench.quality.baselines import Ask, Doc, rank, rrf


class BagOfWords:
    """A deterministic stand-in embedder: one dimension per known word (the baselines'
    arithmetic is under test here, not a model)."""

    name = "bag-of-words"
    WORDS = ("cat", "dog", "tea", "coffee", "paris", "rome")

    def embed(self, texts: list[str]) -> np.ndarray:
        rows = [[float(w in t.lower()) for w in self.WORDS] for t in texts]
        m = np.array(rows) + 1e-6
        return m / np.linalg.norm(m, axis=1, keepdims=True)


DOCS = {
    1: [Doc(("t0",), "Ann: I have a cat", "I have a cat"),
        Doc(("t1",), "Ann: I drink tea in Paris", "I drink tea in Paris"),
        Doc(("t2",), "Ann: my dog likes coffee", "my dog likes coffee"),
        Doc(("t3",), "Ann: the cat moved to Rome", "the cat moved to Rome")],
}  # fmt: skip


def test_rrf_sums_reciprocal_ranks_and_breaks_ties_by_first_appearance() -> None:
    assert rrf([1, 2, 3], [3, 2, 1]) == [1, 3, 2]  # 1 and 3 tie: 1 came first
    assert rrf([5, 6], [6, 7]) == [6, 5, 7]
    assert rrf([], [4]) == [4]


def test_a_question_sees_only_its_visible_documents_minus_the_gone_ones() -> None:
    asks = [Ask("q-all", 1, "cat"), Ask("q-first", 1, "cat", visible=1),
            Ask("q-gone", 1, "cat", gone=frozenset({"t0"}))]  # fmt: skip
    out = rank(DOCS, asks, BagOfWords())
    assert set(out) == {"bm25", "dense", "hybrid"}
    assert {m for r in out["bm25"]["q-all"].ranked for m in r} == {"t0", "t3"}
    for system in out.values():
        assert system["q-first"].ranked == [["t0"]]  # t3 is said later: not yet in
        assert ["t0"] not in system["q-gone"].ranked
    assert out["dense"]["q-all"].ranked[:2] == [["t0"], ["t3"]]
    assert out["hybrid"]["q-all"].ranked[0] == ["t0"]
    assert out["bm25"]["q-all"].contents[0] in ("I have a cat", "the cat moved to Rome")


def test_answers_are_cut_at_the_depth() -> None:
    out = rank(DOCS, [Ask("q", 1, "tea dog cat rome")], BagOfWords(), depth=2)
    assert all(len(s["q"].ranked) == 2 == len(s["q"].contents) for s in out.values())
