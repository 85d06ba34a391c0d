"""Entity resolution per user: one ``entity_id`` per thing a user's memories name
(docs/architecture.md#entities).

A registry holds, per scope (an app's id, or "" for GLOBAL), the keys each entity
answers to: its names folded (``core.entity_keys.entity_key``: case, possessives), the
forms it was said in, and the speaker's relation said with it ("rel:sister" once "my
sister Anna" was said). A mention resolves, in order:

1. by its key in its own scope, then in GLOBAL (an app memory may name a GLOBAL entity;
   a GLOBAL memory never names an app's, and one app never another's);
2. a name said with a relation, by that relation when the entity it names has no name
   yet ("my sister", then "my sister Anna"); "my friend Anna" and "my friend Marco"
   stay two;
3. a person by a unique first-name match ("Mel" ↔ "Melanie", "Melanie" ↔ "Melanie
   Smith"): two candidates join neither;
4. else a new entity in the mention's scope.

A new entity's id is derived from (tenant, user, scope, key), so replaying the same
mentions in the same order gives the same ids, and the registry is rebuilt from the
user's stored links (``learn``) whenever the writer's keyed state is loaded again.
Two different people with one name are one entity here; a caller splits them
(``entity/update``). Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from core.entity_keys import RELATION_KEY_PREFIX, entity_key, relation_key
from core.hashing import stable_id
from memstream.schemas.memory import EntityLink, MemoryRecord
from memstream.schemas.tenants import id_parts

_MIN_ALIAS = 3  # a first-name alias shorter than this joins nothing ("Al", "Jo")


class Mention(Protocol):
    """What resolution reads of an extractor's mention (``models.rules.entity_mention``)."""

    @property
    def name(self) -> str: ...
    @property
    def key(self) -> str: ...
    @property
    def type(self) -> str: ...
    @property
    def relation(self) -> str | None: ...


@dataclass
class Known:
    """One entity of the registry: its id, display name, type, scope and keys."""

    entity_id: str
    name: str
    type: str
    scope: str
    keys: set[str] = field(default_factory=set)
    # False while the entity is only a relation ("my mom"): a later "my mom Linda" names it
    named: bool = True


def scope_of(rec: MemoryRecord) -> str:
    """The scope a memory's entities live in: its app, or "" for a GLOBAL memory."""
    return rec.app_id or ""


class EntityRegistry:
    """One user's entities by scope and key (module docstring)."""

    def __init__(self, tenant: str, user_id: int) -> None:
        self.tenant = tenant
        self.user_id = user_id
        self._by_key: dict[tuple[str, str], Known] = {}
        self._by_id: dict[str, Known] = {}
        self._known: frozenset[str] | None = None  # ``known_keys``, until a key is added

    def __len__(self) -> int:
        return len(self._by_id)

    def get(self, entity_id: str) -> Known | None:
        return self._by_id.get(entity_id)

    def known_keys(self) -> frozenset[str]:
        """Every name key the user's entities answer to (relations left out), for the
        extractor: a name the user already has is a name wherever it stands."""
        if self._known is None:
            self._known = frozenset(
                k for (_, k) in self._by_key if not k.startswith(RELATION_KEY_PREFIX)
            )
        return self._known

    # ------------------------------------------------------------ building
    def learn(self, records: Iterable[MemoryRecord]) -> None:
        """Take in the stored links of ``records`` (the registry rebuilt from state)."""
        for rec in records:
            for link in rec.entities:
                known = self._by_id.get(link["entity_id"])
                if known is None:
                    known = Known(link["entity_id"], link["name"], link["type"], scope_of(rec))
                    # stored links keep no flag: a name that is its relation word is unnamed
                    relation = link.get("relation") or ""
                    known.named = not relation or entity_key(link["name"]) != relation.casefold()
                    self._by_id[known.entity_id] = known
                self._join(known, link["name"], link["said"], link.get("relation") or None)

    def _join(self, known: Known, name: str, said: str, relation: str | None) -> None:
        keys = {entity_key(x) for x in (name, said) if x}
        if relation:
            keys.add(relation_key(relation))
        for key in keys - {""}:
            known.keys.add(key)
            if (known.scope, key) not in self._by_key:
                self._by_key[(known.scope, key)] = known
                self._known = None

    # ------------------------------------------------------------ corrections
    # A caller's correction of resolution (``entity/update``, docs/api.md#entityupdate);
    # the handler rewrites the memories' links the same way, so a registry rebuilt from
    # them by ``learn`` answers as this one does.
    def rename(self, entity_id: str, name: str, type_: str | None = None) -> Known:
        """``entity_id`` is called ``name`` (and is a ``type_``) from now on; its old name
        stays one of its keys (an alias)."""
        known = self._by_id[entity_id]
        old = known.name
        known.name, known.named = name, True
        if type_:
            known.type = type_
        self._join(known, name, old, None)
        return known

    def merge(self, entity_id: str, into: str) -> Known:
        """``entity_id`` becomes ``into``: every key it answered to answers ``into``."""
        gone = self._by_id.pop(entity_id)
        target = self._by_id[into]
        for where, known in list(self._by_key.items()):
            if known is gone:
                self._by_key[where] = target
        target.keys |= gone.keys
        self._known = None
        return target

    def split(self, entity_id: str, new_id: str, name: str, type_: str | None = None) -> Known:
        """A new entity ``new_id`` beside ``entity_id``, in its scope: the old entity keeps
        its keys (a new mention of the name still resolves to it); the new one answers
        to ``name`` only where no entity of its scope does."""
        old = self._by_id[entity_id]
        known = self._by_id.get(new_id)
        if known is None:
            known = Known(new_id, name, type_ or old.type, old.scope)
            self._by_id[new_id] = known
        self._join(known, name, "", None)
        return known

    # ------------------------------------------------------------ resolving
    def resolve(self, mentions: Sequence[Mention], scope: str) -> list[EntityLink]:
        """The links of one memory of ``scope`` naming ``mentions``; the registry learns
        them (a later mention of the same memory or batch resolves to the same ids). One
        link per entity, in the mentions' order."""
        out: list[EntityLink] = []
        seen: set[str] = set()
        for m in mentions:
            known = self._find(m, scope)
            if known is None:
                known = self._new(m, scope)
            elif not known.named and not m.key.startswith(RELATION_KEY_PREFIX):
                known.name, known.named = m.name, True  # "my mom", then "my mom Linda"
            self._join(known, m.name, m.name, m.relation)
            if known.entity_id in seen:
                continue
            seen.add(known.entity_id)
            link = EntityLink(
                entity_id=known.entity_id,
                name=known.name,
                type=known.type,
                said="" if m.name == known.name else m.name,
            )
            if m.relation:
                link["relation"] = m.relation
            out.append(link)
        return out

    def _find(self, m: Mention, scope: str) -> Known | None:
        scopes = (scope, "") if scope else ("",)
        for s in scopes:
            if (hit := self._by_key.get((s, m.key))) is not None:
                return hit
        if m.relation and not m.key.startswith(RELATION_KEY_PREFIX):
            # a name said with a relation names an entity known only by that relation
            # ("my mom", then "my mom Linda"); never one with a name of its own: "my
            # friend Anna" and "my friend Marco" are two friends
            for s in scopes:
                hit = self._by_key.get((s, relation_key(m.relation)))
                if hit is not None and not hit.named:
                    return hit
        if m.type == "person":
            return self._first_name(m.key, scopes)
        return None

    def _first_name(self, key: str, scopes: Sequence[str]) -> Known | None:
        """The one person whose first name ``key`` shortens or lengthens, else None."""
        first = key.split(" ")[0]
        if len(first) < _MIN_ALIAS or key.startswith(RELATION_KEY_PREFIX):
            return None
        for s in scopes:
            found = {
                k.entity_id: k
                for k in self._by_id.values()
                if k.scope == s and k.type == "person" and _same_first(first, k.keys)
            }
            if len(found) == 1:
                return next(iter(found.values()))
            if found:
                return None  # two Mels: join neither
        return None

    def _new(self, m: Mention, scope: str) -> Known:
        key = m.key.replace("\x1f", " ")
        eid = stable_id("e_", *id_parts(self.tenant, self.user_id, scope, key))
        known = self._by_id.get(eid)
        if known is None:
            known = Known(eid, m.name, m.type, scope, named=not key.startswith(RELATION_KEY_PREFIX))
            self._by_id[eid] = known
        return known


def _same_first(first: str, keys: Iterable[str]) -> bool:
    for key in keys:
        if key.startswith(RELATION_KEY_PREFIX):
            continue
        other = key.split(" ")[0]
        if len(other) >= _MIN_ALIAS and (other.startswith(first) or first.startswith(other)):
            return True
    return False
