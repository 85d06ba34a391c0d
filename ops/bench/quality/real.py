"""Public conversation data for ``bench quality --dataset`` (issue 32): the shape every
loader gives the replay runner (``ops.bench.quality.replay``), and where the files are.

The files live in ``shared/datasets/`` beside the clone (``../shared/datasets`` from
the repository root; ``--datasets-dir`` elsewhere): see that folder's README. Loaders:
``ops.bench.quality.realmem`` (RealMem, English user ↔ assistant sessions) and
``ops.bench.quality.madial`` (MADial-Bench, dated event memories, Chinese or English).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ops.bench.quality.baselines import Ask, Doc
from ops.bench.quality.data import Question

DATASETS = ("generated", "realmem", "madial-zh", "madial-en")
QUERY_MAX = 4096  # the recall API's longest query: a longer one keeps its end (the latest turns)


class DatasetError(ValueError):
    """The dataset files are missing or not in the expected format."""


@dataclass
class Replay:
    """One dataset ready to replay. RealMem: ``sessions`` (conversation events per user,
    in time order) go in through Kafka and each question is asked once exactly its
    user's first ``after[qid]`` sessions are in. MADial-Bench: ``memories`` (per user,
    in time order: (dataset id, text, date)) are written with add_structured, then every
    question is asked. ``docs`` are what the raw-text baselines rank."""

    name: str
    lang: str
    users: dict[int, str]  # user_id -> the person's name
    docs: dict[int, list[Doc]]
    questions: list[Question]
    visible: dict[str, int | None]  # qid -> documents of its user the baselines see
    sessions: dict[int, list[dict[str, Any]]] = field(default_factory=dict)
    after: dict[str, int] = field(default_factory=dict)
    memories: dict[int, list[tuple[str, str, str]]] = field(default_factory=dict)

    def asks(self) -> list[Ask]:
        return [Ask(q.qid, q.user_id, q.query, self.visible[q.qid]) for q in self.questions]

    def types(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for q in self.questions:
            out[q.type] = out.get(q.type, 0) + 1
        return dict(sorted(out.items()))


def default_dir() -> Path:
    """``shared/datasets`` beside the repository root (``../shared/datasets``) or beside
    any folder above it (a clone in a worktree folder), else inside the root; the first
    that exists, else the plain ``../shared/datasets`` (for the error)."""
    root = Path(__file__).resolve().parents[3]  # ops/bench/quality/ is three levels in
    for place in (*root.parents, root):
        if (place / "shared" / "datasets").is_dir():
            return place / "shared" / "datasets"
    return root.parent / "shared" / "datasets"


def need(path: Path, what: str) -> Path:
    if not path.exists():
        raise DatasetError(
            f"{what} not found at {path} (the datasets live in shared/datasets beside the "
            "repository; pass --datasets-dir PATH for another place)"
        )
    return path


def query_text(text: str) -> str:
    text = text.strip()
    return text[-QUERY_MAX:]
