"""The profile's LLM summary through real Kafka and the production OpenAI-compatible
adapter against a scripted server (docs/architecture.md#the-profile): the writer writes
the plan at once and asks for the summary after; a checked summary replaces the plan,
while a later change writes the plan again at once (the summary is asked for after)."""

from __future__ import annotations

import pytest

from core.derived import PLAN_TAG, profile_id, stored_items
from memstream.schemas.enums import MemType, Status
from tests.helpers.waiting import wait_for
from tests.integration.test_ingest_evolution import _produce, llm_ingest  # noqa: F401
from tests.integration.test_ingest_kafka import _done, _event

pytestmark = pytest.mark.integration


def _profile(rt, user_id):
    pid = profile_id("default", user_id, None)
    rows = rt.memories.load(user_id, memory_ids=[pid], tenant="default")
    return rows[0] if rows else None


def test_a_checked_summary_replaces_the_plan(llm_ingest, user_id) -> None:  # noqa: F811
    rt, script = llm_ingest
    script.push_chat(
        {
            "facts": [
                {"text": "Plays the cello", "source": 0},
                {"text": "Lives in Porto", "source": 0},
            ]
        }
    )
    script.push_chat({"decisions": [{"event": "ADD", "id": None, "text": "Lives in Porto"}]})
    script.push_chat({"items": [{"text": "Plays the cello and lives in Porto", "sources": [1, 2]}]})
    _produce(rt.stores.kafka, [_event(user_id, f"p1-{user_id}", "I play the cello in Porto")])
    assert wait_for(lambda: _done(rt, f"p1-{user_id}"))["status"] == "done"

    summary = wait_for(
        lambda: (p := _profile(rt, user_id)) is not None and PLAN_TAG in p.custom_tags and p
    )
    assert summary.mem_type is MemType.PROFILE
    [item] = stored_items(summary)
    assert item.text == "Plays the cello and lives in Porto"
    active = rt.memories.load(user_id, statuses=[Status.ACTIVE], tenant="default")
    assert sorted(item.memory_ids) == sorted(m.memory_id for m in active)
    assert "You write the profile" in script.sent_text()  # the profile prompt was asked
