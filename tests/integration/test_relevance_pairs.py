"""The default embedder at the default ``min_relevance`` keeps every related pair of this
table and drops every unrelated one — English, Chinese, and across the two.

Relevance is computed as recall computes it (``core.calibration`` then
``core.ranking.fuse``, hybrid), over one store holding every memory of the table, so
the lexical channel sees realistic idf. Runs with the session ``embedder`` (the
default model: multilingual-e5-small).
"""

from __future__ import annotations

import pytest

from core.calibration import REFERENCE, background, calibration_for
from core.lexical import BM25Index
from core.ranking import fuse
from core.settings import Settings

pytestmark = pytest.mark.integration

# (query, memory, related)
PAIRS = [
    ("what food should I avoid?", "I am allergic to peanuts.", True),
    ("what food should I avoid?", "My sister lives in Berlin.", False),
    ("what food allergies do I have?", "I am allergic to peanuts.", True),
    ("where does my sister live?", "My sister lives in Berlin.", True),
    ("where does my sister live?", "I am allergic to peanuts.", False),
    ("what should I get Tom for his birthday?", "Tom loves jazz records and old vinyl.", True),
    ("what should I get Tom for his birthday?", "The car needs new tyres before winter.", False),
    ("when is my dentist appointment?", "Dentist on Friday at 3pm, Dr. Lee.", True),
    ("when is my dentist appointment?", "I prefer window seats on long flights.", False),
    ("which programming language do I use at work?", "I write Rust at my job every day.", True),
    ("which programming language do I use at work?", "My cat is called Mochi.", False),
    ("do I have any pets?", "My cat is called Mochi.", True),
    ("do I have any pets?", "I write Rust at my job every day.", False),
    ("帮我叫个车", "打车时喜欢安静的车，不要放音乐", True),
    ("帮我叫个车", "对花生过敏", False),
    ("帮我叫个车", "住在深圳南山区", False),
    ("我不能吃什么", "对花生过敏", True),
    ("我不能吃什么", "住在深圳南山区", False),
    ("我住哪里", "住在深圳南山区", True),
    ("我住哪里", "对花生过敏", False),
    ("叫辆出租车去机场", "打车时喜欢安静的车，不要放音乐", True),
    ("叫辆出租车去机场", "对花生过敏", False),
    ("我养了什么宠物", "我家的猫叫咪咪", True),
    ("我养了什么宠物", "下周三要去上海出差", False),
    ("我什么时候出差", "下周三要去上海出差", True),
    ("我什么时候出差", "我家的猫叫咪咪", False),
    # across languages
    ("what food should I avoid?", "对花生过敏", True),
    ("我不能吃什么", "I am allergic to peanuts.", True),
    ("where do I live?", "住在深圳南山区", True),
    ("我住哪里", "I live in Shenzhen, Nanshan district.", True),
    ("我住哪里", "I am allergic to peanuts.", False),
    ("where do I live?", "对花生过敏", False),
    ("what is my cat called?", "下周三要去上海出差", False),
    ("我的猫叫什么", "My cat is called Mochi.", True),
]


@pytest.fixture(scope="module")
def relevance(embedder):
    memories = sorted({m for _, m, _ in PAIRS})
    vectors = dict(zip(memories, embedder.embed(memories), strict=True))
    index = BM25Index()
    for i, m in enumerate(memories):
        index.add(str(i), m)
    ref = embedder.embed(list(REFERENCE))
    cal = calibration_for(embedder.name, Settings().dense_calibration)

    def of(query: str, memory: str) -> float:
        qv = embedder.embed_query(query)
        dense = cal.of(float(vectors[memory] @ qv), background(ref @ qv), memory, query)
        return fuse(dense, index.normalized(query).get(str(memories.index(memory))))

    return of


def test_the_default_model_is_multilingual(embedder):
    assert not calibration_for(embedder.name).english_only, embedder.name


@pytest.mark.parametrize(("query", "memory", "related"), PAIRS)
def test_min_relevance_keeps_related_and_drops_unrelated(relevance, query, memory, related):
    r = relevance(query, memory)
    threshold = Settings().min_relevance
    assert (r >= threshold) is related, f"relevance {r:.3f} vs {threshold}: {query} | {memory}"
