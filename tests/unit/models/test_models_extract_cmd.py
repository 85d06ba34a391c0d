"""`memstream extract`: an event on stdin, facts as JSON lines on stdout."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
RUNNER = (
    "import argparse, sys\n"
    "from ops import extract_cmd\n"
    "p = argparse.ArgumentParser(prog='memstream')\n"
    "extract_cmd.add_parser(p.add_subparsers(dest='command', required=True))\n"
    "args = p.parse_args(sys.argv[1:])\n"
    "sys.exit(args.func(args))\n"
)


def run_extract(stdin: str, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMSTREAM_")}
    env["MEMSTREAM_LLM_PROVIDER"] = "rules"
    return subprocess.run(
        [sys.executable, "-c", RUNNER, "extract", *args],
        input=stdin,
        capture_output=True,
        text=True,
        cwd=REPO,
        env=env,
        timeout=120,
    )


EVENT = {
    "user_id": 42,
    "app_id": "travel",
    "messages": [
        {"role": "system", "content": "My name is SystemBot.", "msg_id": "s0"},
        {
            "role": "user",
            "content": "Hi, my name is John. I am a software engineer.",
            "msg_id": "m1",
        },
        {"role": "assistant", "content": "Nice to meet you!", "msg_id": "m2"},
        {"role": "user", "content": "我下周要搬到上海", "msg_id": "m3"},
    ],
}


def test_prints_one_json_line_per_fact_with_its_msg_id():
    proc = run_extract(json.dumps(EVENT, ensure_ascii=False), "--today", "2026-03-02")
    assert proc.returncode == 0, proc.stderr
    lines = [json.loads(line) for line in proc.stdout.splitlines()]
    assert [(f["text"], f["msg_id"]) for f in lines] == [
        ("User's name is John", "m1"),
        ("User is a software engineer", "m1"),
        ("用户在2026-03-09那一周要搬到上海", "m3"),
    ]
    assert lines[2]["time_bound"] is True and lines[2]["expire_at"] == "2026-03-15"


def test_nothing_to_remember_prints_nothing():
    event = {"user_id": 1, "messages": [{"role": "user", "content": "Hi."}]}
    proc = run_extract(json.dumps(event), "--today", "2026-03-02")
    assert proc.returncode == 0 and proc.stdout == ""


def test_bad_input_exits_2_with_a_message():
    for bad in ("not json", json.dumps({"user_id": 1, "messages": []}), ""):
        proc = run_extract(bad)
        assert proc.returncode == 2 and "bad input" in proc.stderr and proc.stdout == ""


def test_bad_today_is_a_usage_error():
    proc = run_extract(json.dumps(EVENT), "--today", "next tuesday")
    assert proc.returncode == 2 and "YYYY-MM-DD" in proc.stderr


def test_turns_resolve_against_their_own_ts_and_name_their_speaker():
    event = {
        "user_id": 42,
        "ts": "2023-05-10T20:00:00Z",
        "messages": [
            {"role": "user", "name": "Priya", "content": "I started a pottery class yesterday.",
             "msg_id": "m1", "ts": "2023-05-08T19:00:00Z"},
            {"role": "user", "name": "Tomás", "content": "I fly to Osaka tomorrow.",
             "msg_id": "m2"},
        ],
    }  # fmt: skip
    proc = run_extract(json.dumps(event, ensure_ascii=False))
    assert proc.returncode == 0, proc.stderr
    texts = [json.loads(line)["text"] for line in proc.stdout.splitlines()]
    assert any(t.startswith("Priya") and "2023-05-07" in t for t in texts), texts
    assert any(t.startswith("Tomás") and "2023-05-11" in t for t in texts), texts  # event ts
