"""Entities at ingest: each new memory's text is read for the people, places and things
it names, and each mention is resolved to the user's entity (docs/architecture.md#entities).

Extraction is ``models.rules.entities`` (no LLM); resolution is the user's
``core.entity_resolution.EntityRegistry``, which lives beside the user's hot index (the
writer's keyed state) and is rebuilt from the stored links whenever that index is
loaded again, so a replay resolves to the same ids. Every path that makes a memory's
words goes through :func:`linked`: an extracted fact, ``add_structured``, an import,
an edit of the words (a merge keeps its members' links: ``core.consolidation``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from core.entity_resolution import EntityRegistry, scope_of
from core.settings import Settings
from core.user_index import UserIndex
from memstream.schemas.events import Strategy
from memstream.schemas.facts import FactEntity
from memstream.schemas.memory import MemoryRecord
from models.rules.entities import extract_entities
from models.rules.entity_mention import (
    BUILTIN_TYPES,
    EntityMention,
    entity_key,
    normalize_type,
)


def registry(idx: UserIndex) -> EntityRegistry:
    """The user's registry, built from the held records (and the paged-out ones) on
    first use after the index was loaded; the caller holds ``idx.lock``."""
    reg = idx.entity_registry
    if reg is None:
        reg = EntityRegistry(idx.tenant_id, idx.user_id)
        reg.learn(idx.records.values())
        if idx.paged is not None:
            reg.learn(idx.paged.records.values())
        idx.entity_registry = reg
    return reg


def declared_types(
    settings: Settings, app_id: str | None, strategy: Strategy | None = None
) -> list[str] | None:
    """The entity types kept for one event: its ``strategy.entity_types``, else the app's
    ``entity_types`` setting, else None (the built-in types)."""
    if strategy is not None and strategy.entity_types:
        return list(strategy.entity_types)
    return settings.for_app(app_id).entity_types


def linked(
    rec: MemoryRecord,
    idx: UserIndex,
    types: Sequence[str] | None,
    speakers: Sequence[str] = (),
    given: Sequence[FactEntity] | None = None,
) -> tuple[MemoryRecord, tuple[str, ...]]:
    """``rec`` with the entities its words name, resolved in the user's registry; and
    the warnings for declared types the rules cannot recognise (for the task's answer).
    ``given``: the entities an LLM extractor named for this fact, used instead of the
    rules (any declared type is the LLM's to recognise)."""
    reg = registry(idx)
    warnings: tuple[str, ...] = ()
    if given is not None:
        mentions = _from_llm(rec.content, given, types)
    else:
        found = extract_entities(
            rec.content, speaker_names=speakers, types=types, known=reg.known_keys()
        )
        mentions, warnings = list(found.mentions), found.warnings
    links = reg.resolve(mentions, scope_of(rec))
    return dataclasses.replace(rec, entities=links), warnings


def _from_llm(
    text: str, given: Sequence[FactEntity], types: Sequence[str] | None
) -> list[EntityMention]:
    """An LLM's entities as mentions: its types in the rules' spelling ("Places" →
    place), kept when declared (or, none declared, when built in; else "other")."""
    keep = None if types is None else {normalize_type(t) for t in types}
    out = []
    for e in given:
        kind = normalize_type(e.type)
        if keep is not None and kind not in keep:
            continue
        if keep is None and kind not in BUILTIN_TYPES:
            kind = "other"
        start = text.casefold().find(e.name.casefold())
        key = entity_key(e.name)
        if key and start >= 0:  # a merged or edited text may no longer say it
            out.append(EntityMention(e.name, key, kind, e.relation, start, start + len(e.name)))
    return out
