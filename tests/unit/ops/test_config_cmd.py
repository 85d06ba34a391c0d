"""`memstream config set|get` refuse bad input before touching Kafka (exit 2)."""

from __future__ import annotations

import pytest

from core.settings import get_settings
from ops import cli


@pytest.fixture(autouse=True)
def no_broker(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("MEMSTREAM_KAFKA_BOOTSTRAP", "127.0.0.1:1")  # nothing listens there
    get_settings.cache_clear()
    yield
    get_settings.cache_clear()


def run(capsys: pytest.CaptureFixture, *argv: str) -> tuple[int, str]:
    try:
        rc = cli.main(["config", *argv])
    except SystemExit as exc:  # argparse
        rc = int(exc.code or 0)
    return rc, capsys.readouterr().err


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (("set", "min_relevance", "7"), "min_relevance: refused: Input should be less than"),
        (("set", "min_relevance", "abc", "--app", "a"), "min_relevance (app a): refused"),
        (("set", "capacity_total", "0"), "capacity_total: refused"),
        (("set", "redis_url", "redis://x:1/0"), "redis_url: a start-time setting"),
        (("set", "api_port", "9000"), "set MEMSTREAM_API_PORT or the YAML file and restart"),
        (("set", "decay_lambda", "0.01", "--app", "a"), "decay_lambda: cannot be set per app"),
        (("set", "min_relevence", "0.5"), "min_relevence: no such setting"),
        (("unset", "kafka_bootstrap"), "kafka_bootstrap: a start-time setting"),
        (("get", "nosuch"), "nosuch: no such setting"),
    ],
)
def test_refused_before_kafka_with_the_settings_name(capsys, argv, says) -> None:
    rc, err = run(capsys, *argv)
    assert rc == 2 and says in err, err


def test_usage_errors_exit_2(capsys) -> None:
    assert run(capsys, "set", "min_relevance")[0] == 2
    assert run(capsys, "set")[0] == 2
