"""Loading RealMem and MADial-Bench files for `bench quality --dataset` (tiny fixtures in
the published formats; the shared datasets are not needed)."""

from __future__ import annotations

from pathlib import Path

import pytest

from ops.bench.quality import madial as quality_madial
from ops.bench.quality import realmem as quality_realmem
from ops.bench.quality.real import DatasetError
from tests.helpers.quality_fixtures import write_madial, write_realmem


def test_realmem_questions_come_after_exactly_the_sessions_before_them(tmp_path: Path) -> None:
    data = quality_realmem.load(write_realmem(tmp_path))
    (uid,) = data.users
    assert data.users[uid] == "Ana Silva"
    q1, q2 = data.questions
    # source_turn 3 is 1-based here: the snapshot names turn index 2 of session aaaa0001
    assert q1.evidence == ("aaaa0001-t02",) and data.after[q1.qid] == 1
    assert q1.type == "implicit preference" and q1.query.startswith("What snacks")
    # the snapshot matches no turn exactly: 1-based source_turn 3 -> index 2
    assert q2.evidence == ("aaaa0002-t02",) and data.after[q2.qid] == 2
    assert data.visible == {q1.qid: 4, q2.qid: 8}  # turns of the sessions before
    events = data.sessions[uid]
    assert [e["task_id"] for e in events] == [f"realmem-{uid}-s00{k}" for k in range(3)]
    first = events[0]["messages"]
    assert [(m["role"], m["name"]) for m in first[:2]] == [("user", "Ana Silva"),
                                                           ("assistant", "Assistant")]  # fmt: skip
    assert events[0]["ts"].startswith("2025-12-01") and first[2]["msg_id"] == "aaaa0001-t02"


def test_realmem_limit_keeps_the_first_sessions(tmp_path: Path) -> None:
    data = quality_realmem.load(write_realmem(tmp_path), limit=2)
    assert len(data.questions) == 1 and len(next(iter(data.sessions.values()))) == 2


def test_madial_questions_are_the_dialogue_up_to_the_test_turn(tmp_path: Path) -> None:
    data = quality_madial.load(write_madial(tmp_path, "zh"), "zh")
    q0, q1 = data.questions
    assert q0.query.splitlines() == ["Bart: 元旦晚会我要表演跳舞！", "Assistant: 真是太棒了！",
                                     "Bart: 我有点紧张。"]  # fmt: skip
    assert q0.evidence == ("1",) and q1.evidence == ("4",) and q0.type == "dialogue"
    (uid,) = data.users
    assert [m[0] for m in data.memories[uid]] == ["3", "4", "1"]  # date order
    assert [d.ids for d in data.docs[uid]] == [("3",), ("4",), ("1",)]


def test_absent_or_malformed_data_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(DatasetError, match="--datasets-dir"):
        quality_realmem.load(tmp_path / "nowhere")
    with pytest.raises(DatasetError, match="MADial-Bench"):
        quality_madial.load(tmp_path / "nowhere", "en")
    root = write_madial(tmp_path / "bad", "zh")
    path = root / "madial-bench" / "data" / "ch" / "MADial-Bench-zh-dialogue.json"
    path.write_text('{"dialogue": [], "test-turn": [1], "relevant-id": [99], "user-id": 1}')
    with pytest.raises(DatasetError, match="unknown"):
        quality_madial.load(root, "zh")
