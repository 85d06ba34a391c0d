"""Command payloads (memstream.schemas.payloads): the JSON earlier versions put on memory.commands
still validates, a typed payload dumps to the same keys, and the writer's registry
refuses a bad one (40001 to the caller, the command to the DLQ)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, cast

import pytest

from dataflows.ingest import management  # noqa: F401  (registers the management commands)
from dataflows.ingest.commands import HANDLERS, apply_command
from dataflows.ingest.items import IncomingCommand, Source
from dataflows.lifecycle import commands as _lifecycle  # noqa: F401  (lifecycle, recall_hits)
from memstream.schemas.commands import Command
from memstream.schemas.payloads import (
    ConsolidatePayload,
    DeletePayload,
    LifecyclePayload,
    RecallHitsPayload,
    SessionClosePayload,
    StructuredFields,
    UpdatePayload,
)

# Payloads exactly as the previous version's producers wrote them (route dumps, the
# lifecycle's Command.new): each must still be applied after an upgrade.
OLD_SHAPES: list[tuple[str, type, dict[str, Any]]] = [
    ("add_structured", StructuredFields, {
        "app_id": "app_a", "level": "APP", "ownership": "USER", "mem_type": "SEMANTIC",
        "content": "likes tea", "is_important": True, "expire_at": "2030-01-01T00:00:00Z",
        "custom_tags": {"k": "v"},
    }),
    ("update", UpdatePayload, {"memory_id": "m_1", "content": "likes coffee"}),
    ("update", UpdatePayload, {"memory_id": "m_1", "expire_at": None}),
    ("update", UpdatePayload, {"memory_id": "m_1", "is_important": False, "custom_tags": {}}),
    ("delete", DeletePayload, {"memory_ids": ["m_1"]}),
    ("delete", DeletePayload, {"memory_ids": ["m_1"], "access": {"apps": ["a"], "global": True}}),
    ("delete", DeletePayload, {"scope": {"app_id": "a", "level": "SESSION", "session_id": "s"},
                               "access": {"apps": ["a"], "global": False}}),
    ("delete", DeletePayload, {"scope": {}, "reason": "purge requested", "shred": True}),
    ("delete", DeletePayload, {"scope": {"level": "GLOBAL"}, "reason": "purge requested"}),
    ("session_close", SessionClosePayload, {"session_id": "s1", "app_id": "a",
                                            "promote_ids": ["m_1"], "pending": True}),
    ("lifecycle", LifecyclePayload, {"now": "2026-01-01T00:00:00Z", "pass_id": "p1",
                                     "memory_ids": ["m_1"], "reply": False}),
    ("recall_hits", RecallHitsPayload, {"at": "2026-01-01T00:00:00+00:00", "hits": {"m_1": 2},
                                        "reply": False}),
    ("consolidate", ConsolidatePayload, {"now": "2026-01-01T00:00:00Z", "pass_id": "p1"}),
]  # fmt: skip


@pytest.mark.parametrize(("op", "model", "payload"), OLD_SHAPES)
def test_old_payloads_validate_with_their_ops_model(op: str, model: type, payload: dict) -> None:
    assert HANDLERS[op].payload is model
    parsed = model.model_validate(payload)
    # what a producer builds from the model is the same JSON, key for key
    dumped = parsed.model_dump(mode="json", by_alias=True, exclude_unset=True)
    assert set(dumped) == set(payload)


def test_presence_is_kept_where_it_means_something() -> None:
    assert (
        "expire_at"
        in UpdatePayload.model_validate({"memory_id": "m", "expire_at": None}).model_fields_set
    )
    assert "expire_at" not in UpdatePayload.model_validate({"memory_id": "m"}).model_fields_set
    assert "scope" not in DeletePayload.model_validate({"memory_ids": ["m"]}).model_fields_set


def test_typed_command_payloads_dump_as_before() -> None:
    at = datetime(2026, 1, 1, tzinfo=UTC)
    cmd = Command.new("recall_hits", "rh", 7, RecallHitsPayload(at=at, hits={"m": 1}), "default")
    assert cmd.payload == {"at": "2026-01-01T00:00:00Z", "hits": {"m": 1}, "reply": True}


def _item(op: str, payload: dict[str, Any]) -> IncomingCommand:
    cmd = Command(op=op, command_id="c1", user_id=7, payload=payload)
    return IncomingCommand(cmd, Source("memory.commands", 0, 5, b"7", b"{}"))


@pytest.mark.parametrize(
    ("op", "payload", "where"),
    [
        ("update", {"content": "no id"}, "memory_id"),
        ("delete", {"memory_ids": "m_1"}, "memory_ids"),
        ("delete", {"shred": "yes"}, "shred"),
        ("session_close", {"session_id": "s", "surprise": 1}, "surprise"),
        ("lifecycle", {"now": "2026-01-01T00:00:00", "pass_id": "p", "memory_ids": []}, "now"),
        ("add_structured", {"content": "x", "user_id": 7}, "user_id"),
    ],
)
def test_a_bad_payload_is_answered_40001_and_dead_lettered(
    op: str, payload: dict, where: str
) -> None:
    writer = cast(Any, None)  # refused before the writer is touched
    applied = apply_command(writer, _item(op, payload))
    ((cid, result),) = applied.command_results
    assert cid == "c1" and result["code"] == 40001
    assert result["msg"].startswith(f"invalid {op} payload: {where}")
    ((rejected,),) = [applied.rejected]
    assert rejected.reason == result["msg"] and rejected.user_id == 7
    assert not applied.batch.memories
