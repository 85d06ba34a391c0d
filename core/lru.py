"""cachetools' ``LRUCache`` with looks that are not uses, for the caches of users.

A cache of users (the keyring's data keys, the cold path's record sets) is also read
by passes that must not make an entry recent: a write mirrored into whoever is held, a
refresh-ahead re-reading old entries. ``peek``, ``replace`` and ``held`` do that;
``get``/``[]`` stay uses as in cachetools. Not thread-safe (as cachetools): the owner
holds its own lock around every call.
"""

from __future__ import annotations

from typing import TypeVar

from cachetools import Cache, LRUCache

K = TypeVar("K")
V = TypeVar("V")


class LRU(LRUCache[K, V]):
    """``Cache.__getitem__``/``__setitem__`` skip LRUCache's order update, as its own
    ``popitem`` does."""

    def peek(self, key: K) -> V | None:
        """The value held for ``key``, or ``None``, leaving the LRU order as it is."""
        return Cache.__getitem__(self, key) if key in self else None

    def replace(self, key: K, value: V) -> None:
        """A new value for a ``key`` held, in the same place of the LRU order."""
        if key not in self:
            raise KeyError(key)
        Cache.__setitem__(self, key, value)

    def held(self) -> list[tuple[K, V]]:
        """Every (key, value), none of them made recent."""
        return [(k, Cache.__getitem__(self, k)) for k in list(self)]
