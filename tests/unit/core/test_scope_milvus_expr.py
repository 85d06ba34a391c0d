"""The rendered Milvus expression parses, type-checks against the collection's fields,
and selects exactly the rows `matches` selects.

Milvus itself cannot run in a unit test; Milvus Lite's filter compiler (a project
dependency, pure Python, same grammar as Milvus' Plan.g4) evaluates the expression
over an Arrow table encoded the way the sinks store it. A test against a real Milvus
belongs to the integration suite.
"""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scope_cases import Rec, records_near, requests, switches

from core.scope import RecallPredicate, resolve_scope
from core.timeutil import epoch_ms
from memstream.schemas.storage import milvus_fields

mfilter = pytest.importorskip("milvus_lite.search.filter")
mtypes = pytest.importorskip("milvus_lite.schema.types")
pa = pytest.importorskip("pyarrow")


def _schema():  # the collection of memstream.schemas.storage, minus the vector
    kinds = {"VARCHAR": "VARCHAR", "INT64": "INT64", "BOOL": "BOOL", "JSON": "JSON"}
    fields = [
        mtypes.FieldSchema(
            f.name,
            mtypes.DataType[kinds[f.kind]],
            is_primary=f.primary,
            max_length=f.max_length or None,
        )
        for f in milvus_fields(8)
        if f.kind in kinds
    ]
    return mtypes.CollectionSchema(fields=fields)


SCHEMA = _schema()


def _row(i: int, r: Rec) -> dict:
    return {
        "memory_id": f"m{i}",
        "user_id": str(r.user_id),
        "tenant_id": r.tenant_id,
        "app_id": r.app_id or "",
        "session_id": r.session_id or "",
        "level": r.level.value,
        "ownership": r.ownership.value,
        "mem_type": r.mem_type.value,
        "status": r.status.value,
        "is_important": False,
        "tags": json.dumps(r.custom_tags),
        "valid_at": epoch_ms(r.valid_at),
        "invalid_at": 0 if r.invalid_at is None else epoch_ms(r.invalid_at),
    }


def _milvus_selects(p: RecallPredicate, recs: list[Rec]) -> list[bool]:
    compiled = mfilter.compile_filter(p.milvus_expr(), SCHEMA)
    names = [f.name for f in SCHEMA.fields]
    table = pa.Table.from_pylist([_row(i, r) for i, r in enumerate(recs)]).select(names)
    return [bool(x) for x in mfilter.evaluate_mask(compiled, table)]


@settings(max_examples=150, deadline=None)
@given(req=requests, sw=switches, data=st.data())
def test_milvus_expression_selects_what_matches_selects(req, sw, data):
    recs = data.draw(st.lists(records_near(req), min_size=1, max_size=12))
    p = resolve_scope(req, sw)
    assert _milvus_selects(p, recs) == [p.matches(r) for r in recs], p.milvus_expr()


def test_every_rendered_expression_compiles():
    # A quoted app id and every filter at once; compile errors raise.
    from datetime import UTC, datetime

    from core.scope import ScopeRequest, Switches
    from memstream.schemas.enums import MemType, Ownership

    req = ScopeRequest(
        user_id=7,
        app_id='we"ird\\app',
        session_id="s",
        ownership=frozenset(Ownership),
        mem_type=frozenset({MemType.PROCEDURAL}),
        custom_tags=("k", "k:v", "flag:true", "名字:张三"),
        include_archived=True,
        as_of=datetime(2025, 6, 1, tzinfo=UTC),
    )
    mfilter.compile_filter(resolve_scope(req, Switches()).milvus_expr(), SCHEMA)
