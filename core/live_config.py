"""The live part of the configuration: thresholds changed at run time
(docs/configuration.md#live-thresholds-memstream-config-setgetunset).

``memory.config`` is a compacted Kafka topic. A record's key is a setting name
(``min_relevance``) or ``app/<app_id>/<name>`` for one app; its value is JSON
``{"value": ..., "by": "user@host", "at": ISO-8601}``; a value of null (or a tombstone)
takes the live value away again, back to the start-time one. Every process folds the records over the settings it
started with (:class:`LiveState`) and swaps the result in; nothing here does I/O.

Only the rules' thresholds are live (:data:`LIVE_SETTINGS`): connection settings,
ports, paths, keys, TLS, models and the sizes fixed when a process builds its caches are
read once at start, so a change of them is refused rather than silently ignored. Each
value is checked by :class:`core.settings.Settings` itself (field constraints and the
cross-field validators), so a live value can never be one the process would have
refused at start.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime

from pydantic import ValidationError

from core.settings import APP_OVERRIDABLE, ENV_PREFIX, Settings, SettingsError
from memstream.schemas.limits import check_id_text, first_bad_text

APP_PREFIX = "app/"

# docs/configuration.md#rules-and-thresholds-all-live: weights and decay, ranking,
# dedup/evolution, capacity, lifecycle. Every one is read where it is used (per recall,
# per write, per pass), never captured at start.
LIVE_SETTINGS = frozenset(
    {
        "weight_user_semantic",
        "weight_user_episodic",
        "weight_user_procedural",
        "weight_agent_semantic",
        "weight_agent_episodic",
        "weight_agent_procedural",
        "weight_time_bound",
        "weight_important",
        "decay_lambda",
        "decay_alpha_normal",
        "decay_alpha_important",
        "recall_recovery_delta",
        "overfetch_factor",
        "overfetch_min",
        "min_relevance",
        "rank_relevance_weight",
        "recall_fusion",
        "default_top_k",
        "recall_timeout_ms",
        "near_duplicate_similarity",
        "evolution_top_k",
        "session_gap_s",
        "session_max_turns",
        "context_turns",
        "capacity_global",
        "capacity_per_app",
        "capacity_total",
        "entity_types",
        "important_ratio",
        "item_limit",
        "evict_target_ratio",
        "consolidation_enabled",
        "consolidation_high_water_ratio",
        "consolidation_low_water_ratio",
        "consolidation_min_cluster",
        "consolidation_max_cluster",
        "consolidation_max_chars",
        "archive_threshold",
        "deleted_retention_days",
        "archived_retention_days",
        "session_pending_ttl_h",
    }
)
assert APP_OVERRIDABLE <= LIVE_SETTINGS


class ConfigRefused(SettingsError):
    """A live change memstream will not apply; the message names the setting."""


@dataclass(frozen=True)
class ConfigKey:
    """What one record of ``memory.config`` sets: a setting, globally or for one app."""

    name: str
    app_id: str | None = None

    @property
    def key(self) -> str:
        return f"{APP_PREFIX}{self.app_id}/{self.name}" if self.app_id else self.name

    @property
    def label(self) -> str:
        return f"{self.name} (app {self.app_id})" if self.app_id else self.name

    @classmethod
    def parse(cls, key: str) -> ConfigKey:
        """``name`` or ``app/<app_id>/<name>`` (an app id may hold '/': the name is last)."""
        if key.startswith(APP_PREFIX):
            app_id, _, name = key[len(APP_PREFIX) :].rpartition("/")
            if not app_id or not name:
                raise ConfigRefused(f"{key!r}: an app key is app/<app_id>/<setting>")
            return cls(name, app_id)
        return cls(key)


@dataclass(frozen=True)
class ConfigRecord:
    """One change: the value (None: back to the start-time value), who made it and when."""

    key: ConfigKey
    value: object  # JSON on the topic; as the setting holds it once applied
    by: str = ""
    at: str = ""

    def encode(self) -> tuple[bytes, bytes]:
        """The Kafka key and value; an unset keeps its who/when (a value of null)."""
        body = {"value": self.value, "by": self.by, "at": self.at}
        return self.key.key.encode(), json.dumps(body, ensure_ascii=False).encode()

    @classmethod
    def decode(cls, key: bytes | None, value: bytes | None) -> ConfigRecord:
        """ConfigRefused when the record is not one `memstream config set` would write."""
        if not key:
            raise ConfigRefused("a memory.config record without a key")
        ck = ConfigKey.parse(key.decode("utf-8", "replace"))
        if value is None:
            return cls(ck, None)
        try:
            body = json.loads(value)
        except ValueError:
            raise ConfigRefused(f"{ck.label}: the record is not JSON") from None
        if not isinstance(body, dict) or "value" not in body:
            raise ConfigRefused(f'{ck.label}: the record is not {{"value": ..., "by", "at"}}')
        if (bad := first_bad_text(body)) is not None:  # the text rule (docs/api.md#text)
            raise ConfigRefused(f"{ck.label}: {bad}")
        return cls(ck, body["value"], str(body.get("by", "")), str(body.get("at", "")))


def check_live_name(key: ConfigKey) -> None:
    """ConfigRefused unless ``key`` names a setting that may change live (for that app)."""
    name = key.name
    if name not in Settings.model_fields:
        raise ConfigRefused(f"{name}: no such setting (memstream config show lists them)")
    if name not in LIVE_SETTINGS:
        raise ConfigRefused(
            f"{name}: a start-time setting (connections, ports, paths, keys, TLS, models and "
            f"sizes are read once at start); set {ENV_PREFIX}{name.upper()} or the YAML file "
            "and restart. Only thresholds are live."
        )
    if key.app_id is not None:
        if not 1 <= len(key.app_id) <= 128:
            raise ConfigRefused(f"{key.label}: an app_id is 1-128 characters")
        try:  # the id rule of every edge (docs/api.md#text)
            check_id_text(key.app_id, "an app_id")
        except ValueError as exc:
            raise ConfigRefused(f"{key.name}: {exc}") from None
        if name not in APP_OVERRIDABLE:
            raise ConfigRefused(
                f"{name}: cannot be set per app (only {', '.join(sorted(APP_OVERRIDABLE))})"
            )


def coerce(value: object) -> object:
    """A command-line value as JSON when it is JSON (0.5, true, 20), else the string."""
    if not isinstance(value, str):
        return value
    try:
        return json.loads(value)
    except ValueError:
        return value


def _validated(data: dict[str, object], label: str) -> Settings:
    try:
        return Settings.model_validate(data)
    except ValidationError as exc:
        reasons = []
        for e in exc.errors():
            loc = ".".join(str(p) for p in e["loc"])
            value = f" (got {e['input']!r})" if loc and not isinstance(e["input"], dict) else ""
            where = f"{loc}: " if loc and not label.startswith(loc) else ""
            reasons.append(f"{where}{e['msg']}{value}")
        raise ConfigRefused(f"{label}: refused: {'; '.join(reasons)}") from None


def validate_change(base: Settings, key: ConfigKey, value: object) -> object:
    """The value as the setting holds it; ConfigRefused (naming it) when it is not valid
    on top of ``base``: out of range, of the wrong type, or against another setting."""
    check_live_name(key)
    data = base.model_dump()
    data[key.name] = coerce(value)
    checked = _validated(data, key.label)
    return getattr(checked, key.name)


def merge(base: Settings, live: Mapping[ConfigKey, object]) -> Settings:
    """``base`` with every live value on it: global ones as fields, per-app ones in
    ``app_overrides`` (winning over the YAML's). ConfigRefused when the whole is invalid."""
    data = base.model_dump()
    apps: dict[str, dict[str, object]] = {a: dict(o) for a, o in base.app_overrides.items()}
    for key, value in live.items():
        if key.app_id is None:
            data[key.name] = value
        else:
            apps.setdefault(key.app_id, {})[key.name] = value
    data["app_overrides"] = apps
    merged = _validated(data, "live configuration")
    for app_id in apps:  # an app's numbers must hold together too (same validators)
        _validated(merged.for_app(app_id).model_dump(), f"app {app_id}")
    return merged


@dataclass(frozen=True)
class Applied:
    """What one record did: ``settings`` is the new whole (None: refused, nothing changed)."""

    record: ConfigRecord
    settings: Settings | None
    previous: object = None
    reason: str = ""


class LiveState:
    """The live values one process holds, folded record by record over its start-time
    settings. A refused record changes nothing and says why; the last good value of its
    key stays."""

    def __init__(self, base: Settings):
        self.base = base
        self.live: dict[ConfigKey, ConfigRecord] = {}
        self.current = base

    def apply(self, record: ConfigRecord) -> Applied:
        key = record.key
        previous = self.live.get(key)
        old = previous.value if previous is not None else None
        values = {k: r.value for k, r in self.live.items()}
        try:
            if record.value is None:  # unset (or a tombstone): back to the start value
                values.pop(key, None)
            else:
                values[key] = validate_change(self.current, key, record.value)
            merged = merge(self.base, values)
        except ConfigRefused as exc:
            return Applied(record, None, old, str(exc))
        if record.value is None:
            self.live.pop(key, None)
        else:
            self.live[key] = ConfigRecord(key, values[key], record.by, record.at)
        self.current = merged
        return Applied(record, merged, old)

    def apply_all(self, records: Iterable[ConfigRecord]) -> list[Applied]:
        return [self.apply(r) for r in records]


def who_and_when(by: str | None = None) -> tuple[str, str]:
    """``by`` (or user@host) and now, as a record carries them."""
    if not by:
        import getpass
        import socket

        by = f"{getpass.getuser()}@{socket.gethostname()}"
    return by, datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")
