"""`memstream reembed` as a command: its help, and its refusal while a node holds the
data dir (checked before any store or model is opened)."""

from __future__ import annotations

import argparse
import subprocess
import sys

import pytest

from core.settings import Settings
from ops import reembed_cmd
from ops.cli import main


def test_help_names_the_options(capsys) -> None:
    with pytest.raises(SystemExit) as done:
        main(["reembed", "--help"])
    assert done.value.code == 0
    out = capsys.readouterr().out
    for option in ("--dry-run", "--restart", "--batch-size"):
        assert option in out
    assert "memstream down" in out


def test_a_batch_size_below_one_is_a_usage_error(capsys) -> None:
    with pytest.raises(SystemExit) as done:
        main(["reembed", "--batch-size", "0"])
    assert done.value.code == 2


def test_refused_while_the_node_of_the_data_dir_runs(tmp_path, capsys) -> None:
    # A stand-in whose command line carries the node's marker, as `memstream up` writes it.
    node = subprocess.Popen(
        [sys.executable, "-c", "import time; time.sleep(60)", "ops.node", str(tmp_path)]
    )
    try:
        (tmp_path / "run").mkdir()
        (tmp_path / "run" / "node.pid").write_text(str(node.pid))
        args = argparse.Namespace(dry_run=True, restart=False, batch_size=8)
        assert reembed_cmd.execute(Settings(data_dir=tmp_path), args) == 1
    finally:
        node.kill()
        node.wait()
    err = capsys.readouterr().err
    assert f"the node is running (pid {node.pid})" in err and "memstream down" in err
    assert not (tmp_path / "clickhouse").exists()  # no store was opened
