"""Recall isolation: a request's scope → one exact predicate, for Milvus and for memory.

The same predicate renders a Milvus boolean expression (cold users, the archive) and
evaluates ``matches(record)`` in Python (the hot cache), so the two paths can never
disagree about what a caller may see. Rules:

* never another user's memory, nor a memory of another tenant (the same user id in two
  tenants is two people); DELETED never;
* ``include_global`` adds the user's GLOBAL memories; ``app_id`` adds that app's APP
  memories; ``session_id`` adds the SESSION memories of that session *and* app (app
  ``''`` when the request names none);
* a switched-off app contributes nothing (GLOBAL memories are still recalled); the
  user's master switch off → :class:`SwitchedOff`; ``cross_app`` → :class:`CrossAppClosed`;
* status ACTIVE, plus ARCHIVED with ``include_archived``. Without ``as_of`` a memory
  whose ``invalid_at`` is set is excluded. With ``as_of`` the memory must have been
  valid then (``valid_at ≤ as_of < invalid_at``) and SUPERSEDED ones are eligible too;
* ``custom_tags``: every listed tag must be present. ``"k"`` = key ``k`` exists;
  ``"k:v"`` (split at the first ':') = ``tags[k]`` is the string ``v``, or the JSON
  boolean when ``v`` is ``true``/``false``. Other value types never match ``k:v``.

Milvus encoding (``memstream.schemas.storage.milvus_fields``): user_id VARCHAR decimal string;
tenant_id VARCHAR;
app_id and session_id VARCHAR, ``''`` for none; level/ownership/mem_type/status VARCHAR
enum values; tags JSON object of blind-index tokens (keyed HMAC under the user's data
key of ``tag_key_text(k)`` → of ``tag_value_text(k, v)``; the tags themselves are
sealed in ClickHouse): ``milvus_expr(blind)`` asks for the tokens, ``matches`` reads the
decrypted tags. valid_at and invalid_at INT64 epoch milliseconds with
``invalid_at == 0`` meaning "still valid".
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

from core.entity_keys import entity_key
from core.timeutil import epoch_ms
from memstream.schemas.enums import KEYED_TYPES, Level, MemType, Ownership, Status
from memstream.schemas.json_types import JsonValue
from memstream.schemas.limits import has_control_chars
from memstream.schemas.tenants import DEFAULT_TENANT


class ScopeError(Exception):
    """Base of the scope errors; each maps to one API code (see ``code``)."""

    code = 40001


class InvalidScope(ScopeError):
    """A filter value cannot be expressed safely (e.g. a control character in a tag)."""

    code = 40001


class SwitchedOff(ScopeError):
    """The user's memory is switched off: recall returns nothing."""

    code = 40301


class CrossAppClosed(ScopeError):
    """Cross-app recall is not open."""

    code = 40302


@dataclass(frozen=True, slots=True)
class ScopeRequest:
    """What a recall asks to see; filter lists empty = no restriction."""

    user_id: int
    include_global: bool = True
    app_id: str | None = None
    session_id: str | None = None
    cross_app: bool = False
    ownership: frozenset[Ownership] = frozenset()
    mem_type: frozenset[MemType] = frozenset()
    custom_tags: tuple[str, ...] = ()
    entities: tuple[str, ...] = ()  # names, aliases or entity ids: any one links
    include_archived: bool = False
    as_of: datetime | None = None
    tenant_id: str = DEFAULT_TENANT


@dataclass(frozen=True, slots=True)
class Switches:
    """The user's memory switches: the master switch and the apps switched off."""

    global_enabled: bool = True
    disabled_apps: frozenset[str] = frozenset()


class ScopedRecord(Protocol):
    """What :meth:`RecallPredicate.matches` reads from a cached memory (read-only, so
    frozen dataclasses and ``memstream.schemas.memory.MemoryRecord`` both qualify)."""

    # fmt: off
    @property
    def user_id(self) -> int: ...
    @property
    def tenant_id(self) -> str: ...
    @property
    def app_id(self) -> str | None: ...
    @property
    def session_id(self) -> str | None: ...
    @property
    def level(self) -> str: ...  # Level is a str enum
    @property
    def ownership(self) -> str: ...
    @property
    def mem_type(self) -> str: ...
    @property
    def status(self) -> str: ...
    @property
    def custom_tags(self) -> Mapping[str, JsonValue] | None: ...
    @property
    def valid_at(self) -> datetime: ...
    @property
    def invalid_at(self) -> datetime | None: ...
    @property
    def entities(self) -> Sequence[Mapping[str, object]]: ...
    # fmt: on


@dataclass(frozen=True, slots=True)
class Branch:
    """One visible slice: a level, with the app/session it must belong to (None = any)."""

    level: Level
    app_id: str | None = None
    session_id: str | None = None


Blinder = Callable[[str], list[str]]  # text → its tokens, one per live data key, in key order


def tag_key_text(key: str) -> str:
    """What the blind token of a tag key is computed over."""
    return "k:" + key


def tag_value_text(key: str, value: JsonValue) -> str:
    """What the blind token of a tag value is computed over: typed, so the string
    "true" and JSON true stay distinct, as the filter rules above say."""
    if isinstance(value, bool):
        kind = "b:" + ("true" if value else "false")
    elif isinstance(value, str):
        kind = "s:" + value
    else:
        kind = "j:" + json.dumps(value, sort_keys=True, ensure_ascii=False)
    return f"v:{key}\x00{kind}"


@dataclass(frozen=True, slots=True)
class TagFilter:
    key: str
    value: str | None = None  # None = the key only has to exist

    @classmethod
    def parse(cls, tag: str) -> TagFilter:
        key, sep, value = tag.partition(":")
        for part in (key, value):
            if has_control_chars(part) or "\\" in part:
                raise InvalidScope(f"custom tag {tag!r}: control characters or '\\' not allowed")
        if not key:
            raise InvalidScope(f"custom tag {tag!r}: empty key")
        return cls(key, value if sep else None)

    def matches(self, tags: Mapping[str, JsonValue] | None) -> bool:
        if not tags or self.key not in tags:
            return False
        if self.value is None:
            return True
        actual = tags[self.key]
        if isinstance(actual, bool):
            return self.value == ("true" if actual else "false")
        return isinstance(actual, str) and actual == self.value

    def expr(self, blind: Blinder | None = None) -> str:
        if blind is not None:
            return self._blind_expr(blind)
        ref = f"tags[{_q(self.key)}]"
        if self.value is None:
            return f"exists {ref}"
        if self.value in ("true", "false"):
            return f"({ref} == {_q(self.value)} or {ref} == {self.value})"
        return f"{ref} == {_q(self.value)}"

    def _blind_expr(self, blind: Blinder) -> str:
        keys = blind(tag_key_text(self.key))
        if not keys:
            return 'user_id == ""'  # the user has no data key: no tagged row exists
        values: list[list[str]] = []
        if self.value is not None:
            wanted: list[JsonValue] = [self.value]
            if self.value in ("true", "false"):
                wanted.append(self.value == "true")
            values = [blind(tag_value_text(self.key, v)) for v in wanted]
        ors = []
        for i, k in enumerate(keys):
            ref = f"tags[{_q(k)}]"
            if self.value is None:
                ors.append(f"exists {ref}")
            else:
                ors.extend(f"{ref} == {_q(v[i])}" for v in values if i < len(v))
        return ors[0] if len(ors) == 1 else "(" + " or ".join(ors) + ")"


def _q(s: str) -> str:
    """A double-quoted Milvus string literal (backslash and quote escaped)."""
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _in(field: str, values: Iterable[str]) -> str:
    vals = sorted(values)
    if len(vals) == 1:
        return f"{field} == {_q(vals[0])}"
    return f"{field} in [{', '.join(_q(v) for v in vals)}]"


@dataclass(frozen=True, slots=True)
class RecallPredicate:
    """The exact set of memories a recall may return; see the module doc for the rules."""

    user_id: int
    branches: tuple[Branch, ...]
    statuses: frozenset[Status]
    ownership: frozenset[Ownership] = frozenset()
    mem_type: frozenset[MemType] = frozenset()
    tags: tuple[TagFilter, ...] = ()
    as_of_ms: int | None = None
    tenant_id: str = DEFAULT_TENANT
    # an entity filter: entity ids and folded names (core.entity_keys); empty: none
    entities: frozenset[str] = frozenset()

    @property
    def is_empty(self) -> bool:
        """True when nothing can match (e.g. the only app asked for is switched off)."""
        return not self.branches

    def matches(self, r: ScopedRecord) -> bool:
        if r.user_id != self.user_id or r.tenant_id != self.tenant_id:
            return False
        if Status(r.status) not in self.statuses:
            return False
        app, session, level = r.app_id or "", r.session_id or "", Level(r.level)
        if not any(
            b.level is level
            and (b.app_id is None or b.app_id == app)
            and (b.session_id is None or b.session_id == session)
            for b in self.branches
        ):
            return False
        if self.ownership and Ownership(r.ownership) not in self.ownership:
            return False
        if self.mem_type and MemType(r.mem_type) not in self.mem_type:
            return False
        if MemType(r.mem_type) in KEYED_TYPES:  # an item is read by key, never recalled
            return False
        invalid = 0 if r.invalid_at is None else epoch_ms(r.invalid_at)
        if self.as_of_ms is None:
            if invalid != 0:
                return False
        elif not (
            epoch_ms(r.valid_at) <= self.as_of_ms and (invalid == 0 or self.as_of_ms < invalid)
        ):
            return False
        if self.entities and not any(_links(x, self.entities) for x in r.entities):
            return False
        return all(t.matches(r.custom_tags) for t in self.tags)

    def milvus_expr(self, blind: Blinder | None = None) -> str:
        """The Milvus boolean filter; an empty predicate renders one that matches nothing.
        ``blind`` (the user's blind index) turns tag filters into token lookups; without
        it tags are compared as plain JSON (a store that holds plain tags, tests)."""
        parts = [f"user_id == {_q(str(self.user_id))} and tenant_id == {_q(self.tenant_id)}"]
        if self.is_empty:
            return parts[0] + ' and level == ""'
        ors = []
        for b in self.branches:
            conds = [f"level == {_q(b.level.value)}"]
            if b.app_id is not None:
                conds.append(f"app_id == {_q(b.app_id)}")
            if b.session_id is not None:
                conds.append(f"session_id == {_q(b.session_id)}")
            ors.append(conds[0] if len(conds) == 1 else "(" + " and ".join(conds) + ")")
        parts.append(ors[0] if len(ors) == 1 else "(" + " or ".join(ors) + ")")
        parts.append(_in("status", (s.value for s in self.statuses)))
        if self.ownership:
            parts.append(_in("ownership", (o.value for o in self.ownership)))
        if self.mem_type:
            parts.append(_in("mem_type", (m.value for m in self.mem_type)))
        parts.extend(f"mem_type != {_q(t.value)}" for t in sorted(KEYED_TYPES))
        if self.as_of_ms is None:
            parts.append("invalid_at == 0")
        else:
            parts.append(f"valid_at <= {self.as_of_ms}")
            parts.append(f"(invalid_at == 0 or invalid_at > {self.as_of_ms})")
        parts.extend(t.expr(blind) for t in self.tags)
        return " and ".join(parts)


def resolve_scope(req: ScopeRequest, switches: Switches) -> RecallPredicate:
    """Turn a recall request into its predicate, or raise a :class:`ScopeError`."""
    if req.cross_app:
        raise CrossAppClosed("cross-app recall is not open")
    if not switches.global_enabled:
        raise SwitchedOff("memory is switched off for this user")
    for text in (req.app_id or "", req.session_id or ""):
        if has_control_chars(text):  # the rule of memstream.schemas.limits.ScopeId
            raise InvalidScope("app_id/session_id must not contain control characters")
    app_on = not req.app_id or req.app_id not in switches.disabled_apps
    branches: list[Branch] = []
    if req.include_global:
        branches.append(Branch(Level.GLOBAL))
    if req.app_id and app_on:
        branches.append(Branch(Level.APP, app_id=req.app_id))
    if req.session_id and app_on:
        branches.append(Branch(Level.SESSION, app_id=req.app_id or "", session_id=req.session_id))
    statuses = {Status.ACTIVE}
    if req.include_archived:
        statuses.add(Status.ARCHIVED)
    if req.as_of is not None:
        statuses.add(Status.SUPERSEDED)
    return RecallPredicate(
        user_id=req.user_id,
        tenant_id=req.tenant_id,
        branches=tuple(branches),
        statuses=frozenset(statuses),
        ownership=frozenset(req.ownership),
        mem_type=frozenset(req.mem_type),
        tags=tuple(TagFilter.parse(t) for t in req.custom_tags),
        as_of_ms=None if req.as_of is None else epoch_ms(req.as_of),
        entities=frozenset(k for e in req.entities for k in (e, entity_key(e)) if k),
    )


def _links(link: Mapping[str, object], wanted: frozenset[str]) -> bool:
    """Whether one stored link names a wanted entity: by id, name or the form said."""
    if link.get("entity_id") in wanted:
        return True
    return any(entity_key(str(link.get(f) or "")) in wanted for f in ("name", "said"))
