"""Entity extraction by rules on real English memories: precision and recall of the
people and places named in 40 hand-checked RealMem memories (tests/data/README.md).

The memories are read as stored memories are, without speaker names. The floors are the
figures measured when the sample was labelled, so a change to the rules that loses names
or adds wrong ones fails here; the test prints the figures (``pytest -s``).
"""

from __future__ import annotations

import json
from pathlib import Path

from models.rules.entities import extract_entities
from models.rules.entity_mention import RELATION_KEY_PREFIX, entity_key

SAMPLE = Path(__file__).parents[2] / "data" / "entities_realmem_en_40.json"
# Measured on the sample (see the module docstring).
PERSON_PLACE_PRECISION_FLOOR = (
    0.52  # measured 0.522 (24 found right, 22 wrong; 0.151 before the rough edges)
)
PERSON_PLACE_RECALL_FLOOR = 0.77  # measured 0.774 (7 of 31 missed; 0.452 before)


def _items() -> list[dict[str, object]]:
    items: list[dict[str, object]] = json.loads(SAMPLE.read_text(encoding="utf-8"))["items"]
    return items


def _keys(values: object) -> set[str]:
    assert isinstance(values, list)
    return {entity_key(str(v)) for v in values}


def score() -> tuple[float, float, int, int, int, list[str]]:
    """Precision, recall, tp, fp, fn of (type, key) for people and places; the misses."""
    tp = fp = fn = 0
    wrong: list[str] = []
    for item in _items():
        got = {
            (m.type, m.key)
            for m in extract_entities(str(item["text"])).mentions
            if m.type in ("person", "place") and not m.key.startswith(RELATION_KEY_PREFIX)
        }
        gold = {("person", k) for k in _keys(item["persons"])}
        gold |= {("place", k) for k in _keys(item["places"])}
        tp, fp, fn = tp + len(got & gold), fp + len(got - gold), fn + len(gold - got)
        wrong += [f"+{t}:{k}" for t, k in sorted(got - gold)]
        wrong += [f"-{t}:{k}" for t, k in sorted(gold - got)]
    precision = tp / (tp + fp) if tp + fp else 1.0
    recall = tp / (tp + fn) if tp + fn else 1.0
    return precision, recall, tp, fp, fn, wrong


def test_the_sample_is_forty_labelled_memories():
    items = _items()
    assert len(items) == 40 and len({i["id"] for i in items}) == 40
    assert sum(1 for i in items if _keys(i["persons"]) or _keys(i["places"])) >= 14


def test_people_and_places_precision_and_recall():
    precision, recall, tp, fp, fn, wrong = score()
    print(
        f"\nRealMem en 40, person+place: P={precision:.3f} R={recall:.3f} "
        f"(tp={tp} fp={fp} fn={fn})\n  " + " ".join(wrong)
    )
    assert precision >= PERSON_PLACE_PRECISION_FLOOR
    assert recall >= PERSON_PLACE_RECALL_FLOOR
