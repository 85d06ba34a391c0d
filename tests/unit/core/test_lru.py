"""core.lru: cachetools' LRU plus looks that do not make an entry recent."""

from __future__ import annotations

import pytest

from core.lru import LRU


def full() -> LRU[str, int]:
    lru: LRU[str, int] = LRU(maxsize=3)
    for i, k in enumerate("abc"):
        lru[k] = i
    return lru


def test_get_is_a_use_so_the_least_recent_other_leaves():
    lru = full()
    assert lru.get("a") == 0
    lru["d"] = 3
    assert set(lru) == {"a", "c", "d"}


def test_peek_replace_and_held_are_not_uses():
    lru = full()
    assert lru.peek("a") == 0 and lru.peek("zz") is None
    lru.replace("a", 10)
    assert dict(lru.held()) == {"a": 10, "b": 1, "c": 2}
    lru["d"] = 3  # "a" is still the least recent
    assert set(lru) == {"b", "c", "d"}


def test_replace_of_a_key_not_held_is_refused():
    with pytest.raises(KeyError):
        full().replace("zz", 1)


def test_sizes_bound_the_total():
    lru: LRU[str, str] = LRU(maxsize=10, getsizeof=len)
    lru["a"], lru["b"] = "xxxx", "yyyy"
    lru["c"] = "zzzz"  # 12 > 10: the least recent leaves
    assert set(lru) == {"b", "c"} and lru.currsize == 8
