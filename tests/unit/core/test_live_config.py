"""The live config center's pure part: keys, records, validation by Settings, the merge."""

from __future__ import annotations

import json

import pytest

from core.live_config import (
    APP_PREFIX,
    LIVE_SETTINGS,
    ConfigKey,
    ConfigRecord,
    ConfigRefused,
    LiveState,
    coerce,
    merge,
    validate_change,
)
from core.settings import APP_OVERRIDABLE, Settings
from sinks.config_topic import fold


@pytest.fixture
def base() -> Settings:
    return Settings(app_overrides={"app_yaml": {"capacity_per_app": 50, "min_relevance": 0.4}})


def rec(name: str, value, app: str | None = None, by: str = "ops@host") -> ConfigRecord:
    return ConfigRecord(ConfigKey(name, app), value, by, "2026-12-01T00:00:00Z")


def test_keys_name_a_setting_or_one_apps_setting() -> None:
    assert ConfigKey.parse("min_relevance") == ConfigKey("min_relevance")
    assert ConfigKey.parse("app/app_a/min_relevance") == ConfigKey("min_relevance", "app_a")
    assert ConfigKey.parse("app/team/x/min_relevance") == ConfigKey("min_relevance", "team/x")
    assert ConfigKey("min_relevance", "app_a").key == "app/app_a/min_relevance"
    assert ConfigKey("min_relevance").key == "min_relevance"
    for bad in ("app/min_relevance", "app//min_relevance", "app/a/"):
        with pytest.raises(ConfigRefused, match="app/<app_id>/<setting>"):
            ConfigKey.parse(bad)


def test_a_record_round_trips_with_who_and_when() -> None:
    r = rec("min_relevance", 0.5, "app_a")
    key, value = r.encode()
    assert key == b"app/app_a/min_relevance"
    assert json.loads(value) == {"value": 0.5, "by": "ops@host", "at": "2026-12-01T00:00:00Z"}
    assert ConfigRecord.decode(key, value) == r


def test_an_unset_is_a_null_value_and_a_tombstone_is_one_too() -> None:
    assert ConfigRecord.decode(*rec("min_relevance", None).encode()).value is None
    assert ConfigRecord.decode(b"min_relevance", None) == ConfigRecord(
        ConfigKey("min_relevance"), None
    )


@pytest.mark.parametrize(
    ("value", "why"),
    [(b"not json", "not JSON"), (b"[1]", "is not"), (b'{"by": "x"}', "is not"), (b"0.5", "is not")],
)
def test_records_not_written_by_config_set_are_refused(value: bytes, why: str) -> None:
    with pytest.raises(ConfigRefused, match=why):
        ConfigRecord.decode(b"min_relevance", value)
    with pytest.raises(ConfigRefused, match="without a key"):
        ConfigRecord.decode(None, b'{"value": 1}')


def test_command_line_values_are_json_when_they_can_be() -> None:
    assert coerce("0.5") == 0.5 and coerce("true") is True and coerce("20") == 20
    assert coerce("dense") == "dense" and coerce(0.7) == 0.7


def test_a_value_is_held_as_the_setting_types_it(base: Settings) -> None:
    assert validate_change(base, ConfigKey("min_relevance"), "0.5") == 0.5
    assert validate_change(base, ConfigKey("capacity_per_app", "a"), "30") == 30
    assert validate_change(base, ConfigKey("recall_fusion"), "lexical") == "lexical"
    assert validate_change(base, ConfigKey("consolidation_enabled"), "false") is False


@pytest.mark.parametrize(
    ("name", "value", "app", "why"),
    [
        ("min_relevance", "7", None, "less than or equal to 1"),
        ("min_relevance", "abc", "app_a", "valid number"),
        ("min_relevance", "-0.1", None, "greater than or equal to 0"),
        ("capacity_per_app", "0", "app_a", "greater than or equal to 1"),
        ("capacity_total", "1.5", None, "valid integer"),
        ("recall_fusion", "both", None, "'hybrid', 'dense' or 'lexical'"),
        # a cross-field rule of Settings holds for live values too
        ("consolidation_low_water_ratio", "0.95", None, "must not exceed the high-water"),
    ],
)
def test_a_bad_value_is_refused_naming_the_setting(base, name, value, app, why) -> None:
    with pytest.raises(ConfigRefused) as err:
        validate_change(base, ConfigKey(name, app), value)
    assert str(err.value).startswith(name) and why in str(err.value)


@pytest.mark.parametrize(
    "name",
    ["kafka_bootstrap", "redis_url", "api_port", "data_dir", "encryption_key", "api_tls_cert_file",
     "embedding_model", "hot_cache_budget_mb", "kafka_topic_prefix", "app_overrides"],
)  # fmt: skip
def test_start_time_settings_are_refused_with_their_env_name(base: Settings, name: str) -> None:
    with pytest.raises(ConfigRefused, match="start-time setting") as err:
        validate_change(base, ConfigKey(name), "x")
    assert str(err.value).startswith(name) and f"MEMSTREAM_{name.upper()}" in str(err.value)


def test_unknown_and_not_per_app_settings_are_refused(base: Settings) -> None:
    with pytest.raises(ConfigRefused, match="min_relevence: no such setting"):
        validate_change(base, ConfigKey("min_relevence"), "0.5")
    with pytest.raises(ConfigRefused, match="decay_lambda: cannot be set per app"):
        validate_change(base, ConfigKey("decay_lambda", "app_a"), "0.01")
    with pytest.raises(ConfigRefused, match="1-128 characters"):
        validate_change(base, ConfigKey("min_relevance", "a" * 129), "0.5")


def test_every_live_setting_is_a_setting_and_per_app_ones_are_live() -> None:
    assert LIVE_SETTINGS <= set(Settings.model_fields) and APP_OVERRIDABLE <= LIVE_SETTINGS
    assert APP_PREFIX.rstrip("/") not in Settings.model_fields


def test_merge_puts_global_values_on_fields_and_app_values_over_the_yaml(base) -> None:
    merged = merge(
        base,
        {
            ConfigKey("rank_relevance_weight"): 0.6,
            ConfigKey("min_relevance", "app_yaml"): 0.8,
            ConfigKey("min_relevance", "app_b"): 0.1,
        },
    )
    assert merged.rank_relevance_weight == 0.6
    assert merged.for_app("app_yaml").min_relevance == 0.8
    assert merged.for_app("app_yaml").capacity_per_app == 50  # the YAML's other number stays
    assert merged.for_app("app_b").min_relevance == 0.1
    assert merged.for_app("app_c").min_relevance == 0.3  # another app: the global value
    assert merged.kafka_bootstrap == base.kafka_bootstrap
    assert base.rank_relevance_weight == 0.7  # the start-time settings are not touched


def test_live_state_applies_changes_for_one_app_only(base: Settings) -> None:
    state = LiveState(base)
    done = state.apply(rec("min_relevance", "0.9", "app_a"))
    assert done.settings is state.current and done.previous is None
    assert state.current.for_app("app_a").min_relevance == 0.9
    assert state.current.for_app("app_b").min_relevance == 0.3
    assert state.current.min_relevance == 0.3
    assert state.live[ConfigKey("min_relevance", "app_a")].by == "ops@host"
    assert state.apply(rec("min_relevance", 0.5, "app_a")).previous == 0.9


def test_a_bad_record_changes_nothing_and_says_why(base: Settings) -> None:
    state = LiveState(base)
    state.apply(rec("min_relevance", 0.6))
    before = state.current
    for bad in (rec("min_relevance", 7), rec("min_relevance", "abc"), rec("redis_url", "x")):
        done = state.apply(bad)
        assert done.settings is None and done.reason.startswith(bad.key.name)
        assert state.current is before
    assert state.current.min_relevance == 0.6  # the last good value stays


def test_an_unset_goes_back_to_the_start_value(base: Settings) -> None:
    state = LiveState(base)
    state.apply(rec("min_relevance", 0.6, "app_yaml"))
    state.apply(rec("capacity_total", 900))
    done = state.apply(rec("min_relevance", None, "app_yaml"))
    assert done.previous == 0.6 and done.settings is not None
    assert state.current.for_app("app_yaml").min_relevance == 0.4  # the YAML's again
    assert state.current.capacity_total == 900
    assert ConfigKey("min_relevance", "app_yaml") not in state.live


def test_a_pair_of_rules_is_checked_against_the_live_values(base: Settings) -> None:
    state = LiveState(base)
    assert state.apply(rec("consolidation_high_water_ratio", 0.75)).settings is not None
    refused = state.apply(rec("consolidation_low_water_ratio", 0.76))
    assert refused.settings is None and "high-water" in refused.reason
    assert state.apply(rec("consolidation_low_water_ratio", 0.74)).settings is not None


def test_fold_reads_raw_records_in_order_and_reports_undecodable_ones(base) -> None:
    raw = [
        rec("min_relevance", 0.5, "app_a").encode(),
        (b"min_relevance", b"{oops"),
        rec("min_relevance", 0.7, "app_a").encode(),
        rec("min_relevance", 2, "app_a").encode(),
    ]
    state, results = fold(base, raw)
    assert [r.settings is not None for r in results] == [True, False, True, False]
    assert "not JSON" in results[1].reason and "less than or equal to 1" in results[3].reason
    assert state.current.for_app("app_a").min_relevance == 0.7
