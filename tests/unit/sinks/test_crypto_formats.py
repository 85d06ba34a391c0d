"""Ciphertext formats and topic lifetimes (pure: no store)."""

from __future__ import annotations

import os

import pytest

from sinks.crypto import DataKey, DecryptionError, LegacyCipher, is_ciphertext, key_id_of
from sinks.master_key import LocalMasterKey, UnwrapError
from sinks.topic_config import plaintext_topic_config, topic_config, worst_case_lifetime_ms


def test_v2_blob_names_its_key_and_is_bound_to_its_user() -> None:
    material = os.urandom(32)
    mine, other = DataKey.of("default", 1, "k1", material), DataKey.of("default", 2, "k1", material)
    blob = mine.encrypt("I park at level 3")
    assert blob.startswith("v2:k1:") and key_id_of(blob) == "k1" and is_ciphertext(blob)
    assert mine.decrypt(blob) == "I park at level 3"
    with pytest.raises(DecryptionError):  # same material, another user: does not open
        other.decrypt(blob)


def test_blind_tokens_are_keyed() -> None:
    a, b = (
        DataKey.of("default", 1, "a", os.urandom(32)),
        DataKey.of("default", 1, "b", os.urandom(32)),
    )
    assert a.blind("k:city") == a.blind("k:city") != b.blind("k:city")


def test_legacy_v1_still_reads() -> None:
    old = LegacyCipher(b"the old single key")
    assert LegacyCipher(b"the old single key").decrypt(old.encrypt("hello")) == "hello"


def test_master_wrap_is_bound_to_its_context() -> None:
    master = LocalMasterKey(b"m" * 32)
    wrapped = master.wrap(b"d" * 32, b"user 1")
    assert master.unwrap(wrapped, b"user 1") == b"d" * 32
    with pytest.raises(UnwrapError):
        master.unwrap(wrapped, b"user 2")
    with pytest.raises(UnwrapError):
        LocalMasterKey(b"n" * 32).unwrap(wrapped, b"user 1")


@pytest.mark.parametrize("hours", [24, 1, 168])
def test_plaintext_topics_never_outlive_the_deadline(hours: int) -> None:
    deadline = hours * 3600 * 1000
    config = plaintext_topic_config(deadline)
    assert worst_case_lifetime_ms(config) <= deadline
    assert int(config["segment.ms"]) < 7 * 24 * 3600 * 1000  # not the broker default


def test_only_conversations_and_dlq_get_the_deadline() -> None:
    assert topic_config("memory.dlq", 3600_000) and topic_config("memory.conversations", 3600_000)
    assert topic_config("memory.commands", 3600_000) == {}


def test_a_link_signature_verifies_only_its_message_under_its_key() -> None:
    signer = LegacyCipher(b"k" * 32)
    sig = signer.sign("x_1:1700000000")
    assert sig.isascii() and "=" not in sig  # goes into a URL as it is
    assert signer.verify("x_1:1700000000", sig)
    assert not signer.verify("x_1:1700000001", sig)  # another expiry
    assert not LegacyCipher(b"j" * 32).verify("x_1:1700000000", sig)  # another key
    for junk in ("0" + sig, "", "é", sig[:-2], "not base64!"):
        assert not signer.verify("x_1:1700000000", junk)
