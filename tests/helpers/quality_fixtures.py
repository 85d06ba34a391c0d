"""Tiny RealMem and MADial-Bench files in their published formats (see
shared/datasets/README.md), so `bench quality --dataset` is tested without the data."""

from __future__ import annotations

import json
from pathlib import Path


def _turn(speaker: str, content: str, **extra: object) -> dict:
    return {"speaker": speaker, "content": content, "is_query": False, "query_id": None, **extra}


def write_realmem(root: Path) -> Path:
    """One persona, three sessions. Session 2 asks about session 1's allergy (its memory
    points, 1-based, at turn 1); session 3 asks about the bike of session 2."""
    s1 = {
        "session_identifier": "Health:S1_01", "session_uuid": "aaaa0001",
        "current_time": "2025-12-01 (Monday)",
        "dialogue_turns": [
            _turn("User", "Hi, I need help planning meals for my family."),
            _turn("Assistant", "Happy to help. Any dietary needs I should know about?"),
            _turn("User", "Yes: my daughter Mia is allergic to peanuts and sesame."),
            _turn("Assistant", "Noted: no peanuts or sesame for Mia."),
        ],
        "extracted_memory": [{
            "index": "Health-DM-S1_01-01", "type": "Dynamic", "source_turn": 3,
            "content": "Mia, the user's daughter, is allergic to peanuts and sesame.",
            "source_content_snapshot": "Yes: my daughter Mia is allergic to peanuts and sesame.",
            "source_role_snapshot": "User", "session_uuid": "aaaa0001",
        }],
    }  # fmt: skip
    s2 = {
        "session_identifier": "Health:S1_02", "session_uuid": "aaaa0002",
        "current_time": "2025-12-05 (Friday)",
        "dialogue_turns": [
            _turn("User", "What snacks can I pack for Mia's school trip?", is_query=True,
                  query_id="Q-0001", category_name="Implicit Preference"),
            _turn("Assistant", "Fruit and crackers without peanuts or sesame.",
                  memory_used=[{"session_uuid": "aaaa0001",
                                "content": "Mia, the user's daughter, is allergic to "
                                           "peanuts and sesame."}],
                  memory_session_uuids=["aaaa0001"]),
            _turn("User", "Also, I bought a red road bike last weekend for commuting."),
            _turn("Assistant", "Nice, a road bike is great for commuting."),
        ],
        "extracted_memory": [{
            "index": "Health-DM-S1_02-01", "type": "Dynamic", "source_turn": 3,
            "content": "The user bought a red road bike for commuting.",
            "source_content_snapshot": "Also, I bought a red road bike last weekend.",
            "source_role_snapshot": "User", "session_uuid": "aaaa0002",
        }],
    }  # fmt: skip
    s3 = {
        "session_identifier": "Health:S1_03", "session_uuid": "aaaa0003",
        "current_time": "2025-12-09 (Tuesday)",
        "dialogue_turns": [
            _turn("User", "Which route should I ride to work on my bike?", is_query=True,
                  query_id="Q-0002", category_name="Dynamic Incremental"),
            _turn("Assistant", "With your road bike, take the paved river path.",
                  memory_used=[{"session_uuid": "aaaa0002",
                                "content": "The user bought a red road bike for commuting."}],
                  memory_session_uuids=["aaaa0002"]),
        ],
        "extracted_memory": [],
    }  # fmt: skip
    folder = root / "realmem" / "dataset"
    folder.mkdir(parents=True)
    body = {"_metadata": {"person_name": "Ana_Silva", "total_sessions": 3},
            "dialogues": [s1, s2, s3]}  # fmt: skip
    (folder / "Ana_Silva_dialogues_256k.json").write_text(json.dumps(body), encoding="utf-8")
    return root


def write_madial(root: Path, lang: str = "zh") -> Path:
    """One user (Bart), three dated memories, two dialogues."""
    folder = root / "madial-bench" / "data" / {"zh": "ch", "en": "en"}[lang]
    folder.mkdir(parents=True)
    memories = [
        {"1": {"time": "2023-12-25", "scene": "活动类", "emotion": "开心",
               "event": "Bart在圣诞节晚会上跳舞，感觉非常开心。", "user-id": 1, "id": "1"}},
        {"3": {"time": "2023-03-07", "scene": "活动类", "emotion": "开心",
               "event": "Bart在学校的体育节上获得男子一百米第一名。", "user-id": 1, "id": "3"}},
        {"4": {"time": "2023-05-15", "scene": "喜好类", "emotion": "开心",
               "event": "Bart在新开的冰淇淋店尝试了芒果口味的冰淇淋。", "user-id": 1, "id": "4"}},
    ]  # fmt: skip
    dialogues = [
        {"dialogue": ["<BOD>\n", '<Bart>:"元旦晚会我要表演跳舞！"\n',
                      '<Assistant>:"真是太棒了！"\n', '<Bart>:"我有点紧张。"\n',
                      '<Assistant>:"你记得去年圣诞节晚会上你跳舞的时候吗？"\n', "<EOD>\n"],
         "test-turn": [4], "relevant-id": [1], "user-id": 1, "id": 0},
        {"dialogue": ["<BOD>\n", '<Bart>:"今天天气好热，我想吃点凉的。"\n',
                      '<Assistant>:"你上次吃的芒果冰淇淋怎么样？"\n', "<EOD>\n"],
         "test-turn": [2], "relevant-id": [4], "user-id": 1, "id": 1},
    ]  # fmt: skip
    stem = f"MADial-Bench-{lang}"
    (folder / f"{stem}-memory.json").write_text(
        "\n".join(json.dumps(m, ensure_ascii=False) for m in memories), encoding="utf-8"
    )
    (folder / f"{stem}-dialogue.json").write_text(
        "\n".join(json.dumps(d, ensure_ascii=False) for d in dialogues), encoding="utf-8"
    )
    return root
