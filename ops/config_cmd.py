"""`memstream config set|get|unset`: the live config center on ``memory.config``.

``set KEY VALUE [--app APP]`` checks the value with the settings model first (a bad
value or a start-time setting is refused, exit 2, nothing published), then publishes
it with who (``--by``, else user@host) and when; every node, API and dataflow process
applies it within seconds (``sinks.config_topic``). ``unset`` goes back to the start-time
value. ``get`` prints the live values (or one setting's effective value and where it
comes from). Exit codes: 0 ok, 1 failed (Kafka), 2 usage or refused value.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys

from core.live_config import (
    LIVE_SETTINGS,
    ConfigKey,
    ConfigRecord,
    ConfigRefused,
    LiveState,
    check_live_name,
    validate_change,
    who_and_when,
)
from core.settings import Settings, SettingsError, get_settings
from sinks.config_topic import KAFKA_LOG, ensure_config_topic, fold, publish, read_all
from sinks.errors import StoreUnavailable
from sinks.kafka import KafkaBus

READ_TIMEOUT_S = 10.0
SHOW_TIMEOUT_S = 3.0  # `config show` on a stopped stack answers quickly, start-time values


def add_parsers(cfg_sub: argparse._SubParsersAction) -> None:
    """``set``, ``get`` and ``unset`` beside ``config show``."""
    live = ", ".join(sorted(LIVE_SETTINGS))
    st = cfg_sub.add_parser(
        "set",
        help="change a threshold live, on every process (memory.config)",
        epilog=f"live settings: {live}",
    )
    st.add_argument("key", metavar="KEY", help="a setting name, e.g. min_relevance")
    st.add_argument("value", metavar="VALUE", help="its new value, e.g. 0.5")
    st.add_argument("--app", default=None, help="for this app only (per-app settings)")
    st.add_argument("--by", default=None, help="who makes the change (default user@host)")
    st.set_defaults(func=cmd_set)
    un = cfg_sub.add_parser("unset", help="a setting back to its start-time value, live")
    un.add_argument("key", metavar="KEY")
    un.add_argument("--app", default=None)
    un.add_argument("--by", default=None)
    un.set_defaults(func=cmd_unset)
    gt = cfg_sub.add_parser("get", help="the live values, or one setting's effective value")
    gt.add_argument("key", metavar="KEY", nargs="?", default=None)
    gt.add_argument("--app", default=None, help="the value this app sees")
    gt.set_defaults(func=cmd_get)


def _settings() -> Settings:
    return get_settings()


def _live(s: Settings, timeout: float = READ_TIMEOUT_S) -> LiveState:
    """The live state every process folds, read from the topic now (one consumer; a broker
    that does not answer is our message, not librdkafka's reconnect lines)."""
    logging.getLogger(KAFKA_LOG.name).setLevel(logging.CRITICAL)
    state, _ = fold(s, read_all(KafkaBus.from_settings(s), timeout))
    return state


def _fail(code: int, msg: str) -> int:
    print(f"memstream config: {msg}", file=sys.stderr)
    return code


def cmd_set(args: argparse.Namespace) -> int:
    return _change(args, args.value)


def cmd_unset(args: argparse.Namespace) -> int:
    return _change(args, None)


def _change(args: argparse.Namespace, value: object) -> int:
    try:
        s = _settings()
        key = ConfigKey(args.key, args.app)
        check_live_name(key)  # refused before any Kafka call
        if value is not None:
            validate_change(s, key, value)  # on the start-time values; again on the live ones
    except (ConfigRefused, SettingsError) as exc:
        return _fail(2, str(exc))
    bus = KafkaBus.from_settings(s)
    try:
        state = _live(s)
        if value is not None:  # checked on top of what is live now, as a process will
            done = state.apply(ConfigRecord(key, value))
            if done.settings is None:
                raise ConfigRefused(done.reason)
            value = state.live[key].value  # as the setting holds it (0.5, not "0.5")
        bus.setup()  # the broker answered: producer and admin
        ensure_config_topic(bus, READ_TIMEOUT_S)  # compacted, before the first record
        by, at = who_and_when(args.by)
        publish(bus, ConfigRecord(key, value, by, at), READ_TIMEOUT_S)
    except ConfigRefused as exc:
        return _fail(2, str(exc))
    except StoreUnavailable as exc:
        return _fail(1, str(exc))
    finally:
        bus.close()
    shown = "its start-time value" if value is None else json.dumps(value)
    print(f"{key.label} = {shown} (by {by} at {at}); every process applies it within seconds")
    return 0


def cmd_get(args: argparse.Namespace) -> int:
    try:
        s = _settings()
        key = ConfigKey(args.key, args.app) if args.key else None
        if key is not None and key.name not in Settings.model_fields:
            check_live_name(key)  # raises: no such setting
    except (ConfigRefused, SettingsError) as exc:
        return _fail(2, str(exc))
    try:
        state = _live(s)
    except StoreUnavailable as exc:
        return _fail(1, str(exc))
    if key is None:
        rows = [_row(r) for r in state.live.values()]
        if args.app:
            rows = [r for r in rows if r["app"] == args.app]
        print(json.dumps(rows, indent=2, ensure_ascii=False, default=str))
        return 0
    print(json.dumps(effective(s, state, key), indent=2, ensure_ascii=False, default=str))
    return 0


def _row(r: ConfigRecord) -> dict[str, object]:
    return {"setting": r.key.name, "app": r.key.app_id, "value": r.value, "by": r.by, "at": r.at}


def effective(base: Settings, state: LiveState, key: ConfigKey) -> dict[str, object]:
    """One setting as a process sees it now, and whether a live change made it so."""
    seen = state.current.for_app(key.app_id)
    start = base.for_app(key.app_id)
    out: dict[str, object] = {
        "setting": key.name,
        "app": key.app_id,
        "value": _shown(seen, key.name),
        "source": "start",
        "start_value": _shown(start, key.name),
        "live": key.name in LIVE_SETTINGS,
    }
    for k in (key, ConfigKey(key.name)) if key.app_id else (key,):
        rec = state.live.get(k)
        if rec is not None:
            out |= {"source": "live", "by": rec.by, "at": rec.at, "live_key": k.key}
            break
    return out


def _shown(s: Settings, name: str) -> object:
    return s.masked()[name]


def show_live(s: Settings) -> dict[str, object]:
    """``config show``: the effective values with the live ones on top, and which are live
    (start-time values alone, with a note on stderr, when Kafka does not answer)."""
    try:
        state = _live(s, SHOW_TIMEOUT_S)
    except StoreUnavailable as exc:
        print(f"memstream config: live values not read ({exc}); start-time values", file=sys.stderr)
        return s.masked()
    out = state.current.masked()
    out["live"] = [_row(r) for r in state.live.values()]
    return out
