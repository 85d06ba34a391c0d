"""Decoded JSON as a type: what ``json.loads``/``orjson.loads`` give back.

``JsonValue`` is pydantic's recursive alias (a model field of that type accepts JSON
values only: dict, list, str, int, float, bool, None); ``JsonObject`` is a decoded JSON
object (``custom_tags``, an event or a payload before its model reads it). Code that
reads into one narrows with ``isinstance`` first, so a caller's odd shape is a clear
error, never an ``AttributeError`` deep in a handler.
"""

from __future__ import annotations

from pydantic import JsonValue

JsonObject = dict[str, JsonValue]

__all__ = ["JsonObject", "JsonValue"]
