"""Hashes die with the purge (issue 31: L6).

The dedup hash leaves the process keyed by the user's data key (HMAC): no stored hash is
a keyless hash of the text, before or after a purge, and crypto-shredding the key makes
it unlinkable. Rows of an older node that still hold a plain sha256 are blanked by the
user's purge. Dedup keeps working: the plain hash is rebuilt from the content on load.
"""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime

import pytest

from core.hashing import content_hash, normalize_text
from core.write_batch import WriteBatch
from memstream.schemas.enums import Level, MemType, Ownership
from memstream.schemas.memory import MemoryRecord

pytestmark = pytest.mark.integration
TEXTS = ["I was born in Coimbra in 1984", "My daughter Ines plays the oboe", "I take metformin"]


def _keyless(text: str) -> set[str]:
    """Every keyless hash of the text a guesser would try, hex."""
    out = set()
    for variant in {text, text.strip(), normalize_text(text), text.lower()}:
        data = variant.encode("utf-8")
        for algo in ("sha256", "sha1", "md5", "sha512", "blake2b", "sha3_256"):
            out.add(hashlib.new(algo, data).hexdigest())
    return out


def _stored_hashes(stores, user_id: int, profiles: bool = True) -> list[str]:
    """content_hash of every version of every row of the user (no FINAL: old versions too);
    with ``profiles``, the stored profile's versions too (docs/architecture.md#the-profile)."""
    rows = stores.clickhouse.query(
        "SELECT content_hash FROM memstream.memories WHERE tenant_id = 'default' "
        "AND user_id = {u:UInt64}" + ("" if profiles else " AND mem_type != 'PROFILE'"),
        {"u": user_id},
    )
    return [h for (h,) in rows]


def _write(api, user_id: int, content: str) -> dict:
    got = api.post("/memory/v1/add_structured", json={"user_id": user_id, "content": content})
    body = got.json()
    assert body["code"] == 0, body
    return body["data"]


def test_no_stored_hash_is_a_keyless_hash_of_the_text_before_or_after_a_purge(
    api, runtime, stores, ingest, user_id
) -> None:
    for text in TEXTS:
        _write(api, user_id, text)
    guesses = set().union(*(_keyless(t) for t in TEXTS))
    assert len(_stored_hashes(stores, user_id, profiles=False)) == len(TEXTS)
    (profile,) = runtime.memories.load(user_id, mem_types=[MemType.PROFILE], tenant="default")
    assert all(t in profile.content for t in TEXTS)
    guesses |= _keyless(profile.content)
    before = _stored_hashes(stores, user_id)  # a profile's hash is no guess either
    assert len(before) > len(TEXTS) and not guesses & set(before)

    # dedup still finds the same words after the user is loaded from the stores again
    runtime.cache.invalidate(user_id, tenant="default")
    again = _write(api, user_id, "  i was BORN in Coimbra in 1984 ")
    assert again["duplicate"] is True

    purge = api.post("/memory/v1/purge", json={"user_id": user_id}).json()
    assert purge["code"] == 0, purge
    after = _stored_hashes(stores, user_id)
    assert after and not guesses & set(after)


def test_a_purge_blanks_the_plain_hashes_an_older_node_stored(
    api, runtime, stores, ingest, user_id
) -> None:
    text = "My PIN is the year my father was born"
    now = datetime.now(UTC)
    rec = MemoryRecord(
        memory_id=f"m_legacy{user_id:016x}"[:26],
        user_id=user_id,
        content=text,
        content_hash=content_hash(text),
        level=Level.GLOBAL,
        ownership=Ownership.USER,
        mem_type=MemType.SEMANTIC,
        weight=0.8,
        weight_at=now,
        created_at=now,
        updated_at=now,
        valid_at=now,
    )
    runtime.memories.write(
        WriteBatch(memories=[rec], vectors={rec.memory_id: runtime.embedder.embed([text])[0]})
    )
    # what an older node wrote: the plain sha256 in the row, as it was before hashes were keyed
    stores.clickhouse.command(
        "ALTER TABLE memstream.memories UPDATE content_hash = {h:String} "
        "WHERE user_id = {u:UInt64} SETTINGS mutations_sync = 2",
        {"h": content_hash(text), "u": user_id},
    )
    assert content_hash(text) in _stored_hashes(stores, user_id)
    runtime.cache.invalidate(user_id, tenant="default")

    purge = api.post("/memory/v1/purge", json={"user_id": user_id}).json()
    assert purge["code"] == 0, purge
    after = _stored_hashes(stores, user_id)
    assert after and not _keyless(text) & set(after)
