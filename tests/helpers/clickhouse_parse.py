"""ClickHouse's own parser on rendered SQL: chDB's ``formatQuery``, in a process of its
own (so it never meets the chDB engine a test process may hold)."""

from __future__ import annotations

import json
import subprocess
import sys

PARSE = r"""
import json, sys, chdb
out = []
for q in json.load(sys.stdin):
    text = q.replace("\\", "\\\\").replace("\n", "\\n").replace("\t", "\\t")
    try:  # a parameter's value is read escaped, as in TSV
        chdb.query("SELECT formatQuery({q:String})", "TSV", params={"q": text})
        out.append("")
    except Exception as exc:
        out.append(str(exc))
print(json.dumps(out))
"""


def parse_errors(stmts: list[str]) -> dict[str, str]:
    """What ClickHouse's own parser (chDB, in a process of its own) says of each
    statement: syntax only; engines, macros and clusters are not checked."""
    run = subprocess.run(
        [sys.executable, "-c", PARSE],
        input=json.dumps(stmts),
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    errors = json.loads(run.stdout.strip().splitlines()[-1])
    return {s: e for s, e in zip(stmts, errors, strict=True) if e}
