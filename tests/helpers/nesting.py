"""Test inputs shaped to hit depth limits."""

from __future__ import annotations


def nested(levels: int) -> dict:
    """``{"k": {"k": … {}}}`` with ``levels`` levels of objects (``json_depth`` counts them)."""
    tags: dict = {}
    node = tags
    for _ in range(levels - 1):
        node["k"] = {}
        node = node["k"]
    return tags
