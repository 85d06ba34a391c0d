"""Settings precedence (default < YAML < env) and validation messages."""

from __future__ import annotations

import pytest

from core.settings import Settings, SettingsError, load_settings


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    import os

    for key in list(os.environ):
        if key.startswith("MEMSTREAM_"):
            monkeypatch.delenv(key)
    return monkeypatch


def test_defaults_follow_design(clean_env: pytest.MonkeyPatch) -> None:
    s = load_settings()
    assert (s.api_host, s.api_port) == ("127.0.0.1", 8000)
    assert s.kafka_bootstrap == "127.0.0.1:9092"
    assert s.redis_url == "redis://127.0.0.1:6379/0"
    assert s.capacity_global == 500 and s.capacity_per_app == 200 and s.capacity_total == 2000
    assert s.weight_user_semantic == 0.80 and s.min_relevance == 0.3
    assert s.llm_provider == "rules" and s.embedding_provider == "transformers"
    assert s.clickhouse_target.startswith("chdb://") and s.clickhouse_target.endswith("clickhouse")
    assert s.milvus_target.endswith(".db")


def test_yaml_overrides_default(clean_env: pytest.MonkeyPatch, tmp_path) -> None:
    cfg = tmp_path / "c.yaml"
    cfg.write_text("api_port: 9100\ncapacity_global: 50\n")
    clean_env.setenv("MEMSTREAM_CONFIG", str(cfg))
    s = load_settings()
    assert s.api_port == 9100 and s.capacity_global == 50
    assert s.capacity_per_app == 200  # untouched default


def test_env_overrides_yaml(clean_env: pytest.MonkeyPatch, tmp_path) -> None:
    cfg = tmp_path / "c.yaml"
    cfg.write_text("api_port: 9100\nmin_relevance: 0.5\n")
    clean_env.setenv("MEMSTREAM_CONFIG", str(cfg))
    clean_env.setenv("MEMSTREAM_API_PORT", "9200")
    s = load_settings()
    assert s.api_port == 9200  # env wins
    assert s.min_relevance == 0.5  # yaml still applies where env is silent


def test_bad_env_value_names_the_setting(clean_env: pytest.MonkeyPatch) -> None:
    clean_env.setenv("MEMSTREAM_API_PORT", "eighty")
    with pytest.raises(SettingsError, match="MEMSTREAM_API_PORT"):
        load_settings()


def test_out_of_range_value_names_the_setting(clean_env: pytest.MonkeyPatch) -> None:
    clean_env.setenv("MEMSTREAM_MIN_RELEVANCE", "1.5")
    with pytest.raises(SettingsError, match="min_relevance"):
        load_settings()


def test_bad_url_names_the_setting(clean_env: pytest.MonkeyPatch) -> None:
    clean_env.setenv("MEMSTREAM_CLICKHOUSE_URL", "mysql://x")
    with pytest.raises(SettingsError, match="clickhouse_url"):
        load_settings()


def test_unknown_yaml_key_is_refused(clean_env: pytest.MonkeyPatch, tmp_path) -> None:
    cfg = tmp_path / "c.yaml"
    cfg.write_text("capacity_gloabl: 50\n")
    clean_env.setenv("MEMSTREAM_CONFIG", str(cfg))
    with pytest.raises(SettingsError, match="capacity_gloabl"):
        load_settings()


def test_missing_yaml_file_is_an_error(clean_env: pytest.MonkeyPatch, tmp_path) -> None:
    clean_env.setenv("MEMSTREAM_CONFIG", str(tmp_path / "absent.yaml"))
    with pytest.raises(SettingsError, match="no such file"):
        load_settings()


def test_production_mode_refuses_placeholder_secret(clean_env: pytest.MonkeyPatch) -> None:
    clean_env.setenv("MEMSTREAM_LOCAL_MODE", "false")
    clean_env.setenv("MEMSTREAM_API_KEYS", '{"k1": {"tenant": "t", "app_ids": ["a"]}}')
    clean_env.setenv("MEMSTREAM_ENCRYPTION_KEY", "changeme")
    with pytest.raises(SettingsError, match="encryption_key"):
        load_settings()


def test_app_override_applies_only_to_that_app(clean_env: pytest.MonkeyPatch) -> None:
    s = Settings(app_overrides={"app_x": {"capacity_per_app": 5}})
    assert s.for_app("app_x").capacity_per_app == 5
    assert s.for_app("other").capacity_per_app == 200


def test_app_override_of_unknown_field_is_refused(clean_env: pytest.MonkeyPatch) -> None:
    with pytest.raises(SettingsError, match="app_overrides"):
        load_settings(app_overrides={"a": {"redis_url": "redis://x"}})


def test_masked_hides_secrets(clean_env: pytest.MonkeyPatch) -> None:
    s = Settings(llm_api_key="sk-live-123", api_keys={"secret-key": {"tenant": "t"}})
    shown = s.masked()
    assert shown["llm_api_key"] == "***"
    assert "secret-key" not in str(shown) and "sk-live-123" not in str(shown)
