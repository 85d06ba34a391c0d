"""The CLI's contract with scripts: every command has --help (exit 0), a bad flag or a
bad value exits 2 (usage), and ``python -m ops.cli`` returns the same codes as a process."""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

import pytest

from core.settings import get_settings
from ops.cli import build_parser, main

REPO = Path(__file__).resolve().parents[3]


def _commands(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()):
    yield path
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _commands(sub, (*path, name))


COMMANDS = list(_commands(build_parser()))


@pytest.fixture
def env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    for name in list(os.environ):
        if name.startswith("MEMSTREAM_"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("MEMSTREAM_DATA_DIR", str(tmp_path / "data"))
    get_settings.cache_clear()
    yield monkeypatch
    get_settings.cache_clear()


def _exit_code(argv: list[str]) -> int:
    try:
        return main(argv)
    except SystemExit as exc:  # argparse: --help and usage errors
        return int(exc.code or 0)


def test_the_walk_finds_every_command() -> None:
    names = {" ".join(c) for c in COMMANDS}
    for expected in ("up", "down", "status", "config show", "tail", "dataflow", "keys create",
                     "bench recall", "lifecycle run", "sql", "export", "import", "reembed"):  # fmt: skip
        assert expected in names


@pytest.mark.parametrize("path", COMMANDS, ids=lambda p: " ".join(p) or "memstream")
def test_help_exits_0_and_a_bad_flag_exits_2(env, capsys, path: tuple[str, ...]) -> None:
    assert _exit_code([*path, "--help"]) == 0
    assert "usage: memstream" in capsys.readouterr().out
    assert _exit_code([*path, "--no-such-flag"]) == 2
    assert "error:" in capsys.readouterr().err  # and argparse says why, on stderr


@pytest.mark.parametrize(
    "argv",
    [
        ["tail", "--user", "x"],
        ["tail", "--user", "-1"],
        ["tail", "--tenant", "bad tenant!"],
        ["dataflow", "nosuchflow"],
        ["config"],  # a group without its sub-command
        [],
    ],
)
def test_bad_values_are_usage_errors(env, capsys, argv: list[str]) -> None:
    assert _exit_code(argv) == 2
    assert capsys.readouterr().err.strip()


def test_a_bad_metrics_port_is_a_usage_error_before_anything_starts(env, tmp_path, capsys) -> None:
    env.setenv("MEMSTREAM_CLICKHOUSE_URL", "http://clickhouse.invalid:8123")
    env.setenv("MEMSTREAM_MILVUS_URI", "http://milvus.invalid:19530")
    assert _exit_code(["dataflow", "ingest", "--metrics-port", "70000"]) == 2
    assert "--metrics-port 70000" in capsys.readouterr().err
    assert not (tmp_path / "data").exists()


def test_tail_fails_with_1_when_the_broker_cannot_be_reached(env, capsys) -> None:
    env.setenv("MEMSTREAM_KAFKA_BOOTSTRAP", "127.0.0.1:1")
    assert _exit_code(["tail", "--timeout", "1"]) == 1
    assert "memstream tail: kafka at 127.0.0.1:1" in capsys.readouterr().err


def test_the_process_exits_with_the_same_code(tmp_path: Path) -> None:
    """One real process (each costs seconds of imports): the usage error is its status."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMSTREAM_")}
    env |= {"MEMSTREAM_DATA_DIR": str(tmp_path), "PYTHONPATH": str(REPO)}
    out = subprocess.run(
        [sys.executable, "-m", "ops.cli", "tail", "--bogus"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 2, out.stderr[-2000:]
    assert "unrecognized arguments: --bogus" in out.stderr
