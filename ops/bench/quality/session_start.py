"""Session-start coverage of ``bench quality`` (issue 44): when a session starts there is
no question yet. What could an agent put in its context then, and how much of the
evidence of that session's questions does it cover?

Per user and session start (RealMem: once exactly the sessions before it are in, where
the harness asks that session's questions; generated data and MADial-Bench: once
everything is in, before any question), each system gives an ordered list of texts, each
with the evidence ids it stands for:

- ``recent`` — a chat window: the user's last raw turns before the session, newest first
  (MADial-Bench: the latest memory texts, by date); a turn's text is its content, as the
  raw-text baselines answer it;
- ``by_weight`` — memstream's memories by weight: every page of ``POST
  /memory/v1/user/list`` (which answers oldest first), the memories recall would see
  (ACTIVE, still valid, GLOBAL or the bench's app), highest ``weight`` first, a tie in
  user/list's order (older first: a stable sort of its answer); a memory stands for its
  ``source.msg_ids`` (MADial: the dataset ids it was stored for);
- ``by_weight_newest`` — the same with a tie newer first. The tie order matters: the
  ``weight`` user/list shows is the stored one (its initial value until a hit or an
  update moves it), not the decayed weight of now, so most memories share their type's
  initial weight (``listed`` counts the memories and distinct weights per context);
- ``profile`` — ``POST /memory/v1/profile {user_id, scope, max_chars}`` once per budget,
  its ``items`` in order, each standing for its ``msg_ids`` (MADial: its ``memory_ids``'
  dataset ids). Until that endpoint exists it answers 40401 (the first call of a run
  decides) and the column reads ``ABSENT``.

Covered: an evidence id is covered at N characters when one of the texts that fit whole,
in order, into N characters stands for it — ``ops.bench.quality.budget.budget_recall``,
the rule of evidence recall at N characters (the first text always counts; one that does
not fit ends the list). A question's coverage is the share of its evidence covered; a
figure is the mean over the questions (deleted ones left out), at 1,000 / 2,000 / 4,000
characters (``start@N``), next to the mean characters the context used (``used@N``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import httpx

from memstream.schemas.errors import ErrorCode
from ops.bench.quality.baselines import Doc
from ops.bench.quality.budget import budget_recall, fitting
from ops.bench.quality.data import Question
from ops.bench.quality.metrics import mean_of

START_BUDGETS = (1000, 2000, 4000)
SYSTEMS = ("recent", "by_weight", "by_weight_newest", "profile")
KEYS = tuple(f"start@{b}" for b in START_BUDGETS)
ABSENT = "n/a (endpoint absent)"
PAGE = 1000  # user/list's largest page


@dataclass(frozen=True)
class Context:
    """What one system would put in context, in order: each text's evidence ids."""

    ranked: list[list[str]]
    contents: list[str]


def recent(docs: Sequence[Doc], visible: int | None) -> Context:
    """The chat window: the first ``visible`` documents (None: all), newest first."""
    shown = list(docs if visible is None else docs[:visible])[::-1]
    return Context([list(d.ids) for d in shown], [d.content for d in shown])


def recallable(memory: Mapping[str, Any], app: str) -> bool:
    """Whether recall with ``{include_global, app_id: app}`` would see a listed memory
    (docs/architecture.md#the-recall-path: ACTIVE, not invalidated, GLOBAL or the app's APP)."""
    if memory.get("status") != "ACTIVE" or memory.get("invalid_at") is not None:
        return False
    level = memory.get("level")
    return level == "GLOBAL" or (level == "APP" and memory.get("app_id") == app)


def evidence_of(memory: Mapping[str, Any], ids: Mapping[str, list[str]] | None) -> list[str]:
    """A listed memory's evidence ids: its source turns, or (``ids``) its dataset ids."""
    if ids is not None:
        return list(ids.get(str(memory.get("memory_id")), []))
    src = memory.get("source") or {}
    return [m for m in (src.get("msg_ids") or [src.get("msg_id")]) if m]


def by_weight(
    memories: Iterable[Mapping[str, Any]], app: str, ids: Mapping[str, list[str]] | None = None,
    *, newest: bool = False,
) -> Context:  # fmt: skip
    """The recallable memories, highest weight first; a tie older first (user/list's
    order), or with ``newest`` newer first."""
    mine = [m for m in memories if recallable(m, app)]
    mine.sort(key=lambda m: (str(m.get("created_at") or ""), str(m.get("memory_id"))))
    if newest:
        mine.reverse()  # the stable sort below keeps this order on a tie
    mine.sort(key=lambda m: -float(m.get("weight") or 0.0))
    return Context([evidence_of(m, ids) for m in mine], [str(m["content"]) for m in mine])


def profiled(reply: Mapping[str, Any], ids: Mapping[str, list[str]] | None = None) -> Context:
    """A profile answer's items, in order: each stands for its ``msg_ids`` (or, with
    ``ids``, its ``memory_ids``' dataset ids)."""
    items = (reply.get("data") or {}).get("items") or []
    ranked = []
    for item in items:
        if ids is not None:
            ranked.append([x for m in item.get("memory_ids") or [] for x in ids.get(m, [])])
        else:
            ranked.append([str(m) for m in item.get("msg_ids") or []])
    return Context(ranked, [str(item.get("text") or "") for item in items])


def used(contents: Sequence[str], budget: int) -> int:
    """The characters of the texts that fit (the budget rule of ``budget_recall``)."""
    return sum(len(c) for c in contents[: fitting(contents, budget)]) if contents else 0


def coverage(evidence: Sequence[str], contexts: Mapping[int, Context]) -> dict[str, float]:
    """One question's ``start@N`` per budget N, from that budget's context."""
    return {
        f"start@{b}": budget_recall(evidence, c.ranked, c.contents, b) for b, c in contexts.items()
    }


def list_all(client: httpx.Client, base: str, user_id: int) -> tuple[list[dict[str, Any]], int]:
    """Every memory of the user, through every page of ``user/list``: (memories, the
    envelope code; the memories so far when a page failed)."""
    out: list[dict[str, Any]] = []
    page = 1
    while True:
        body = {"user_id": user_id, "page": page, "page_size": PAGE}
        reply = client.post(f"{base}/user/list", json=body).json()
        code = int(reply.get("code", -1))
        if code != 0:
            return out, code
        data = reply["data"]
        groups = data["memories"]
        out += groups.get("GLOBAL") or []
        for scope in ("APP", "SESSION"):
            out += [m for items in (groups.get(scope) or {}).values() for m in items]
        if not data.get("has_more"):
            return out, 0
        page += 1


class SessionStart:
    """Collects the coverage of every session start of one run (module docstring)."""

    def __init__(self, app: str) -> None:
        self.app = app
        self.rows: dict[str, list[tuple[str, dict[str, float]]]] = {s: [] for s in SYSTEMS}
        self.used: dict[str, list[dict[str, float]]] = {s: [] for s in SYSTEMS}
        self.profile = "unknown"  # "absent" once it answered 40401 first, else "served"
        self.failed: dict[str, int] = {}
        self.listed: list[dict[str, float]] = []
        self.contexts = 0

    def measure(
        self, client: httpx.Client, base: str, user_id: int, questions: Sequence[Question],
        docs: Sequence[Doc], visible: int | None, ids: Mapping[str, list[str]] | None = None,
    ) -> None:  # fmt: skip
        """One session start of ``user_id``: ``questions`` are the ones asked in that
        session, ``docs[:visible]`` the raw texts before it; ``base`` the API's
        ``…/memory/v1``."""
        asked = [q for q in questions if q.type != "deleted"]
        if not asked:
            return
        self.contexts += 1
        memories, code = list_all(client, base, user_id)
        self._count("user/list", code)
        for name, ctx in (("recent", recent(docs, visible)),
                          ("by_weight", by_weight(memories, self.app, ids)),
                          ("by_weight_newest", by_weight(memories, self.app, ids, newest=True))):  # fmt: skip
            self._add(name, asked, dict.fromkeys(START_BUDGETS, ctx))
        weights = [float(m.get("weight") or 0.0) for m in memories if recallable(m, self.app)]
        self.listed.append({"memories": len(weights), "distinct_weights": len(set(weights))})
        if self.profile != "absent":
            self._profile(client, base, user_id, asked, ids)

    def _profile(
        self, client: httpx.Client, base: str, user_id: int, asked: Sequence[Question],
        ids: Mapping[str, list[str]] | None,
    ) -> None:  # fmt: skip
        contexts: dict[int, Context] = {}
        for b in START_BUDGETS:
            body = {"user_id": user_id, "scope": {"include_global": True, "app_id": self.app},
                    "max_chars": b}  # fmt: skip
            reply = client.post(f"{base}/profile", json=body).json()
            code = int(reply.get("code", -1))
            if code == ErrorCode.NOT_FOUND and self.profile == "unknown":
                self.profile = "absent"  # no such endpoint yet: no column
                return
            self.profile = "served"
            self._count("profile", code)
            contexts[b] = profiled(reply, ids) if code == 0 else Context([], [])
        self._add("profile", asked, contexts)

    def _add(self, name: str, asked: Sequence[Question], contexts: Mapping[int, Context]) -> None:
        self.rows[name] += [(q.type, coverage(q.evidence, contexts)) for q in asked]
        self.used[name].append({f"used@{b}": used(c.contents, b) for b, c in contexts.items()})

    def _count(self, what: str, code: int) -> None:
        if code != 0:
            key = f"{what} {code}"
            self.failed[key] = self.failed.get(key, 0) + 1

    def summary(self) -> dict[str, Any]:
        """Per system: ``overall`` and ``by_type`` means of ``start@N``, ``used`` (mean
        characters per context); the profile None with ``profile`` saying why."""
        systems: dict[str, Any] = {}
        for name in SYSTEMS:
            rows = self.rows[name]
            if name == "profile" and self.profile != "served":
                systems[name] = None
                continue
            by_type: dict[str, list[dict[str, float]]] = {}
            for kind, m in rows:
                by_type.setdefault(kind, []).append(m)
            systems[name] = {
                "overall": mean_of([m for _, m in rows]),
                "by_type": {k: mean_of(v) for k, v in sorted(by_type.items())},
                "used": mean_of(self.used[name]),
            }
        return {
            "budgets": list(START_BUDGETS),
            "contexts": self.contexts,
            "profile": {"served": "served", "absent": ABSENT}.get(self.profile, "not asked"),
            "failed": self.failed,
            "listed": mean_of(self.listed),
            "systems": systems,
        }
