"""The CLI's lazily built embedder is checked against the store's model before use."""

from __future__ import annotations

import pytest

from core.settings import Settings
from ops.lifecycle_cmd import _LazyEmbedder
from sinks.errors import ModelMismatch


def test_a_model_the_store_refuses_is_never_used():
    lazy = _LazyEmbedder(Settings())
    seen = []

    def refuse(model):
        seen.append(model.name)
        raise ModelMismatch("the store's vectors were made by another model")

    lazy.check = refuse
    with pytest.raises(ModelMismatch):
        lazy.embed(["I sail on weekends"])
    with pytest.raises(ModelMismatch):  # still refused: nothing was kept
        lazy.embed(["I sail on weekends"])
    assert len(seen) == 2 and seen[0]


def test_an_accepted_model_is_checked_once_and_kept():
    lazy = _LazyEmbedder(Settings())
    checks = []
    lazy.check = checks.append
    assert lazy.embed(["a"]).shape == (1, 384)
    assert lazy.embed(["b", "c"]).shape == (2, 384)
    assert len(checks) == 1
