"""Entity extraction by rules on real Chinese memories: precision and recall of the
people and places named in 50 hand-checked MADial-Bench memories (tests/data/README.md).

The memories are read as stored memories are, without speaker names. The floors are the
figures measured when the sample was labelled, so a change to the rules that loses names
fails here; the test prints the figures (``pytest -s``).
"""

from __future__ import annotations

import json
from pathlib import Path

from models.rules.entities import extract_entities
from models.rules.entity_mention import RELATION_KEY_PREFIX, entity_key, relation_key

SAMPLE = Path(__file__).parents[2] / "data" / "entities_madial_zh_50.json"
# Measured on the sample when it was labelled (see the module docstring).
PERSON_PLACE_PRECISION_FLOOR = 0.95  # measured 0.952 (59 found, 3 wrong: 马拉松, 夏令营, 阿黄)
PERSON_PLACE_RECALL_FLOOR = 1.0  # measured 1.000 (every labelled name found)


def _items() -> list[dict[str, object]]:
    items: list[dict[str, object]] = json.loads(SAMPLE.read_text(encoding="utf-8"))["items"]
    return items


def _list(values: object) -> list[str]:
    assert isinstance(values, list)
    return [str(v) for v in values]


def _keys(values: object) -> set[str]:
    return {entity_key(v) for v in _list(values)}


def _score(
    kinds: tuple[str, ...], gold_fields: tuple[str, ...]
) -> tuple[float, float, int, int, int]:
    tp = fp = fn = 0
    for item in _items():
        mentions = extract_entities(str(item["event"])).mentions
        got = {
            (m.type, m.key)
            for m in mentions
            if m.type in kinds and not m.key.startswith(RELATION_KEY_PREFIX)
        }
        gold = {
            (kind, key)
            for kind, field in zip(kinds, gold_fields, strict=True)
            for key in _keys(item[field])
        }
        tp, fp, fn = tp + len(got & gold), fp + len(got - gold), fn + len(gold - got)
    precision = tp / (tp + fp) if tp + fp else 1.0
    recall = tp / (tp + fn) if tp + fn else 1.0
    return precision, recall, tp, fp, fn


def test_the_sample_is_fifty_labelled_memories():
    items = _items()
    assert len(items) == 50 and len({i["id"] for i in items}) == 50
    assert all(_keys(i["persons"]) for i in items)  # every memory names its subject


def test_people_and_places_precision_and_recall():
    precision, recall, tp, fp, fn = _score(("person", "place"), ("persons", "places"))
    print(
        f"\nMADial zh 50, person+place: P={precision:.3f} R={recall:.3f} (tp={tp} fp={fp} fn={fn})"
    )
    assert precision >= PERSON_PLACE_PRECISION_FLOOR
    assert recall >= PERSON_PLACE_RECALL_FLOOR


def test_kin_said_without_a_name_is_found():
    tp = fn = fp = 0
    for item in _items():
        got = {
            m.key
            for m in extract_entities(str(item["event"])).mentions
            if m.type == "person" and m.key.startswith(RELATION_KEY_PREFIX)
        }
        gold = {relation_key(str(r)) for r in _list(item["relations"])}
        tp, fn, fp = tp + len(got & gold), fn + len(gold - got), fp + len(got - gold)
    print(f"\nMADial zh 50, kin relations: tp={tp} fp={fp} fn={fn}")
    assert fn == 0 and fp == 0
