"""The benches' own packages come with the ``bench`` extra: without it ``memstream`` still
builds its parser and runs its other commands, and ``memstream bench …`` exits 2 saying
how to install it (``ops.bench.missing``, checked by the CLI before a bench runs)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from core.settings import get_settings
from ops import bench
from ops.cli import main

REPO = Path(__file__).resolve().parents[3]
HINT = "install the [bench] extra: pip install 'memstream[bench]'"


@pytest.fixture
def env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    for name in list(os.environ):
        if name.startswith("MEMSTREAM_"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("MEMSTREAM_DATA_DIR", str(tmp_path / "data"))
    get_settings.cache_clear()
    yield monkeypatch
    get_settings.cache_clear()


def test_with_the_extra_nothing_is_missing() -> None:
    assert bench.missing() == []


@pytest.mark.parametrize("argv", [["bench", "recall", "--users", "1"], ["bench", "all"]])
def test_a_bench_without_the_extra_exits_2_and_says_how_to_install_it(env, capsys, argv) -> None:
    env.setitem(sys.modules, "matplotlib", None)  # `import matplotlib` raises ImportError
    assert bench.missing() == ["matplotlib"]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "matplotlib" in err and HINT in err


def test_without_the_extra_the_cli_builds_and_its_other_commands_run(tmp_path: Path) -> None:
    """A fresh interpreter (nothing of the benches imported yet) where matplotlib cannot be
    imported: the parser, `bench --help` and `config show` work, and building the parser
    imported no bench module beyond the parsers."""
    script = """
import sys
sys.modules["matplotlib"] = None
from ops.cli import build_parser, main
build_parser()
heavy = sorted(m for m in sys.modules if m.startswith("ops.bench.")
               and m not in {"ops.bench.cmd", "ops.bench.cmd_args", "ops.bench.cmd_ingest",
                             "ops.bench.cmd_idle",
                             "ops.bench.suite", "ops.bench.report", "ops.bench.compare",
                             "ops.bench.machine"})
assert not heavy, heavy
assert main(["config", "show", "--start-only"]) == 0
try:
    main(["bench", "soak", "--help"])
except SystemExit as exc:
    assert exc.code == 0, exc.code
print("bench exit", main(["bench", "soak"]))
"""
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMSTREAM_")}
    env |= {"PYTHONPATH": str(REPO), "MEMSTREAM_DATA_DIR": str(tmp_path / "data")}
    done = subprocess.run([sys.executable, "-c", script], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=120)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "--duration DURATION" in done.stdout and "bench exit 2" in done.stdout
    assert HINT in done.stderr
