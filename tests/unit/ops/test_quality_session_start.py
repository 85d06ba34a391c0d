"""Session-start coverage of `bench quality` (issue 44): what each context holds, in what
order, and how much of the later questions' evidence it covers at a budget — by the same
rule as evidence recall at N characters."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from ops.bench.quality.baselines import Doc
from ops.bench.quality.budget import budget_recall
from ops.bench.quality.data import Question
from ops.bench.quality.session_start import (
    ABSENT,
    Context,
    SessionStart,
    by_weight,
    coverage,
    profiled,
    recent,
    used,
)

APP = "bench"


def _memory(mid: str, weight: float, **over: Any) -> dict[str, Any]:
    out = {"memory_id": mid, "content": f"memory {mid}", "status": "ACTIVE", "level": "APP",
           "app_id": APP, "weight": weight, "invalid_at": None,
           "created_at": "2026-01-01T00:00:00Z", "source": {"msg_id": f"t-{mid}",
                                                           "msg_ids": [f"t-{mid}"]}}  # fmt: skip
    return {**out, **over}


def _question(qid: str, *evidence: str, kind: str = "single") -> Question:
    return Question(qid, 1, "en", kind, "what?", evidence)


def test_the_recent_window_is_the_turns_before_the_session_newest_first() -> None:
    docs = [Doc((f"t{i}",), f"Ann: turn {i}", f"turn {i}") for i in range(5)]
    window = recent(docs, 3)  # the session starts after the third turn
    assert window.ranked == [["t2"], ["t1"], ["t0"]]
    assert window.contents == ["turn 2", "turn 1", "turn 0"]  # what a baseline answers
    assert recent(docs, None).ranked[0] == ["t4"] and recent([], None) == Context([], [])


def test_by_weight_keeps_what_recall_sees_best_weight_first_a_tie_as_listed() -> None:
    listed = [
        _memory("low", 0.2),
        _memory("old", 0.7, created_at="2026-01-01T00:00:00Z"),
        _memory("new", 0.7, created_at="2026-02-01T00:00:00Z"),
        _memory("glob", 0.5, level="GLOBAL", app_id=None),
        _memory("top", 0.9, status="SUPERSEDED"),
        _memory("gone", 0.95, status="DELETED"),
        _memory("archived", 0.9, status="ARCHIVED"),
        _memory("invalid", 0.9, invalid_at="2026-03-01T00:00:00Z"),
        _memory("other", 0.9, app_id="another"),
        _memory("session", 0.9, level="SESSION", session_id="s1"),
    ]
    ctx = by_weight(listed, APP)  # a tie in user/list's order: older first
    assert ctx.contents == ["memory old", "memory new", "memory glob", "memory low"]
    assert ctx.ranked == [["t-old"], ["t-new"], ["t-glob"], ["t-low"]]
    newest = by_weight(listed, APP, newest=True)
    assert newest.contents == ["memory new", "memory old", "memory glob", "memory low"]


def test_a_memory_stands_for_all_its_source_turns_or_its_dataset_ids() -> None:
    merged = _memory("m", 0.5, source={"msg_id": "a", "msg_ids": ["a", "b"]})
    single = _memory("s", 0.4, source={"msg_id": "c", "msg_ids": []})
    assert by_weight([merged, single], APP).ranked == [["a", "b"], ["c"]]
    assert by_weight([merged, single], APP, {"m": ["d1", "d2"]}).ranked == [["d1", "d2"], []]


def test_coverage_is_evidence_recall_at_n_characters_of_the_context() -> None:
    # 600 + 600 + 900 characters: at 1,000 only the first fits, at 2,000 the first two
    # (the third would end at 2,100 and ends the list), at 4,000 all three.
    ctx = Context([["a"], ["b"], ["c", "d"]], ["x" * 600, "y" * 600, "z" * 900])
    got = coverage(["a", "c", "d", "e"], dict.fromkeys((1000, 2000, 4000), ctx))
    assert got == {"start@1000": 0.25, "start@2000": 0.25, "start@4000": 0.75}
    for b in (1000, 2000, 4000):  # the harness's own rule, not a copy of it
        assert got[f"start@{b}"] == budget_recall(["a", "c", "d", "e"], ctx.ranked,
                                                  ctx.contents, b)  # fmt: skip
    long_first = Context([["a"], ["b"]], ["x" * 5000, "y"])  # the first always counts
    assert coverage(["a", "b"], {1000: long_first}) == {"start@1000": 0.5}
    assert used(long_first.contents, 1000) == 5000 and used(ctx.contents, 2000) == 1200
    assert used([], 1000) == 0


def test_a_profile_answer_is_its_items_in_order_citing_their_turns() -> None:
    reply = {"code": 0, "data": {"items": [
        {"text": "Likes tea", "memory_ids": ["m1"], "msg_ids": ["t1", "t2"]},
        {"text": "Sister Ana", "entity": "Ana", "memory_ids": ["m2", "m3"], "msg_ids": []},
    ], "chars_used": 19}}  # fmt: skip
    ctx = profiled(reply)
    assert ctx.contents == ["Likes tea", "Sister Ana"] and ctx.ranked == [["t1", "t2"], []]
    assert profiled(reply, {"m2": ["d2"], "m3": ["d3"]}).ranked == [[], ["d2", "d3"]]
    assert profiled({"code": 40401, "data": None}) == Context([], [])


class _Api:
    """The two endpoints as the API answers them: user/list in pages of ``per_page``;
    profile absent (40401, as an unknown route) unless ``profile`` is given."""

    def __init__(self, memories: list[dict], profile: list[dict] | None, per_page: int = 2):
        self.memories, self.profile, self.per_page = memories, profile, per_page
        self.calls: list[tuple[str, dict]] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        path = request.url.path.rsplit("/", 2)
        self.calls.append(("/".join(path[-2:]), body))
        if request.url.path.endswith("/user/list"):
            page = body["page"]
            rows = self.memories[(page - 1) * self.per_page : page * self.per_page]
            groups = {"GLOBAL": [m for m in rows if m["level"] == "GLOBAL"],
                      "APP": {APP: [m for m in rows if m["level"] == "APP"]}, "SESSION": {}}  # fmt: skip
            more = page * self.per_page < len(self.memories)
            return httpx.Response(200, json={"code": 0, "data": {
                "memories": groups, "total": len(self.memories), "has_more": more}})  # fmt: skip
        if self.profile is None:
            return httpx.Response(404, json={"code": 40401, "msg": "Not Found", "data": None})
        cut: list[dict] = []
        chars = 0
        for item in self.profile:  # whole items, in order, within max_chars
            chars += len(item["text"])
            if chars > body["max_chars"]:
                break
            cut.append(item)
        return httpx.Response(200, json={"code": 0, "data": {"items": cut}})


def weight_overall(out: dict[str, Any]) -> dict[str, Any]:
    return out["systems"]["by_weight"]["overall"]  # no tie among the weights: the same


def _run(api: _Api, questions: list[Question], docs: list[Doc]) -> dict[str, Any]:
    start = SessionStart(APP)
    with httpx.Client(transport=httpx.MockTransport(api)) as client:
        start.measure(client, "http://api/memory/v1", 1, questions, docs, 2)
        start.measure(client, "http://api/memory/v1", 1, questions[:1], docs, 3)
    return start.summary()


@pytest.fixture
def docs() -> list[Doc]:
    return [Doc((f"t{i}",), f"turn {i}", f"turn {i}") for i in range(4)]


def test_without_the_profile_endpoint_the_column_says_so_and_the_others_are_scored(
    docs: list[Doc],
) -> None:
    listed = [_memory("a", 0.9, content="x" * 1500), _memory("b", 0.8, content="y" * 1500),
              _memory("c", 0.1, level="GLOBAL", app_id=None)]  # fmt: skip
    api = _Api(listed, profile=None)
    asked = [_question("q1", "t-a", "t-b"), _question("q2", "t1", kind="entity"),
             _question("q3", "t-c", kind="deleted")]  # fmt: skip
    out = _run(api, asked, docs)
    assert out["profile"] == ABSENT and out["systems"]["profile"] is None
    assert out["contexts"] == 2 and out["failed"] == {}
    assert out["listed"] == {"n": 2, "memories": 3.0, "distinct_weights": 3.0}
    assert out["systems"]["by_weight_newest"]["overall"] == weight_overall(out)
    weight = out["systems"]["by_weight"]
    # q1 twice (both starts), q2 once; the deleted question never counts
    assert weight["overall"]["n"] == 3 and set(weight["by_type"]) == {"single", "entity"}
    assert weight["by_type"]["single"] == {"n": 2, "start@1000": 0.5, "start@2000": 0.5,
                                           "start@4000": 1.0}  # fmt: skip
    assert weight["by_type"]["entity"]["start@4000"] == 0.0
    window = out["systems"]["recent"]
    assert window["by_type"]["entity"]["start@1000"] == 1.0  # t1 is the second-newest turn
    # two turns of 6 characters, then three: the window's mean characters per start
    assert window["used"] == {"n": 2, "used@1000": 15.0, "used@2000": 15.0, "used@4000": 15.0}
    pages = [body["page"] for path, body in api.calls if path == "user/list"]
    assert pages == [1, 2, 1, 2]  # every page, at each start
    assert sum(path == "v1/profile" for path, _ in api.calls) == 1  # asked once, then known


def test_a_served_profile_is_scored_at_each_budget_it_was_asked_for(docs: list[Doc]) -> None:
    items = [{"text": "a" * 900, "msg_ids": ["t0"], "memory_ids": []},
             {"text": "b" * 1000, "msg_ids": ["t-a"], "memory_ids": []}]  # fmt: skip
    api = _Api([_memory("a", 0.9)], profile=items)
    out = _run(api, [_question("q1", "t0", "t-a")], docs)
    assert out["profile"] == "served"
    profile = out["systems"]["profile"]["overall"]
    assert profile == {"n": 2, "start@1000": 0.5, "start@2000": 1.0, "start@4000": 1.0}
    asked = [body["max_chars"] for path, body in api.calls if path == "v1/profile"]
    assert asked == [1000, 2000, 4000, 1000, 2000, 4000]


def test_a_failed_list_is_counted_and_covers_nothing(docs: list[Doc]) -> None:
    def down(request: httpx.Request) -> httpx.Response:
        return httpx.Response(503, json={"code": 50301, "msg": "busy", "data": None})

    start = SessionStart(APP)
    with httpx.Client(transport=httpx.MockTransport(down)) as client:
        start.measure(client, "http://api/memory/v1", 1, [_question("q", "t-a")], docs, 1)
    out = start.summary()
    assert out["failed"] == {"user/list 50301": 1, "profile 50301": 3}
    assert out["systems"]["by_weight"]["overall"]["start@4000"] == 0.0
    assert out["profile"] == "served"  # it answered, just not well: not "absent"
