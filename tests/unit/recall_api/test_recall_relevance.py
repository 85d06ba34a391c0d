"""The dense-channel discount for text an English-only model cannot read."""

from __future__ import annotations

import pytest

from recall_api.recall import english_only_model, latin_share


@pytest.mark.parametrize(
    ("text", "share"),
    [
        ("I like hotpot", 1.0),
        ("我喜欢吃四川火锅", 0.0),
        ("我在Google工作", 6 / 10),
        ("", 1.0),
        ("2024!", 1.0),
        ("Café crème", 1.0),
    ],
)
def test_latin_share(text, share):
    assert latin_share(text) == pytest.approx(share)


@pytest.mark.parametrize(
    ("name", "english"),
    [
        ("all-MiniLM-L6-v2", True),
        ("all-mpnet-base-v2", True),
        ("paraphrase-multilingual-MiniLM-L12-v2", False),
        ("bge-m3", False),
        ("text-embedding-3-small", False),
    ],
)
def test_english_only_models(name, english):
    assert english_only_model(name) is english
