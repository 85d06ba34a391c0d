"""`memstream export --user ID` and `memstream import FILE`, through the running node's API.

The node owns the embedded stores (one process per data dir), so both go over HTTP:
export starts an export job, waits for it and downloads the signed file; import reads
an export file (or any JSONL of ``{"type": "memory", ...}`` lines) and writes each live
memory back with ``add_structured``, its old memory id as the idempotency key, so an
interrupted import can simply be run again. Both show progress on stderr.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

import httpx

from core.settings import get_settings
from memstream.schemas.enums import DERIVED_TYPES
from ops.client_auth import auth_headers
from recall_api.serving import api_base_url, client_verify

KEEP = (
    "app_id",
    "session_id",
    "level",
    "ownership",
    "mem_type",
    "content",
    "is_important",
    "expire_at",
    "custom_tags",
)


def add_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    exp = subparsers.add_parser("export", help="download all memories and changes of a user")
    exp.add_argument("--user", type=int, required=True)
    exp.add_argument("--out", type=Path, help="file to write (default: export-<user>.jsonl)")
    exp.set_defaults(func=run_export)
    imp = subparsers.add_parser("import", help="write memories from an export file")
    imp.add_argument("file", type=Path)
    imp.add_argument("--user", type=int, help="import into this user instead of the file's")
    imp.set_defaults(func=run_import)


def _client() -> httpx.Client:
    s = get_settings()
    headers = auth_headers(s)
    return httpx.Client(
        base_url=api_base_url(s), timeout=60, headers=headers, verify=client_verify(s)
    )


def _progress(label: str, done: int, total: int) -> None:
    width = 30
    filled = int(width * done / total) if total else width
    sys.stderr.write(f"\r{label} [{'#' * filled}{'.' * (width - filled)}] {done}/{total}")
    sys.stderr.flush()


def run_export(args: argparse.Namespace) -> int:
    out = args.out or Path(f"export-{args.user}.jsonl")
    with _client() as http:
        started = http.post("/memory/v1/export", json={"user_id": args.user}).json()
        if started.get("code") != 0:
            print(f"memstream export: {started.get('msg')}", file=sys.stderr)
            return 1
        export_id = started["data"]["export_id"]
        while True:
            st = http.get(f"/memory/v1/export/{export_id}").json()["data"]
            if st["status"] != "running":
                break
            sys.stderr.write("\rexporting ...")
            time.sleep(0.3)
        if st["status"] != "done":
            print(f"\nmemstream export: failed: {st.get('reason')}", file=sys.stderr)
            return 1
        total = int(st.get("memories", 0)) + int(st.get("changes", 0))
        written = 0
        with http.stream("GET", st["url"]) as resp, out.open("wb") as f:
            resp.raise_for_status()
            for line in resp.iter_lines():
                f.write(line.encode() + b"\n")
                written += 1
                if written % 100 == 0 or written == total:
                    _progress("downloading", written, total)
    print(f"\nwrote {st.get('memories')} memories and {st.get('changes')} changes to {out}")
    return 0


def write_of(m: dict[str, Any], user_id: int, request_id: str) -> tuple[str, dict[str, Any]]:
    """The write that stores exported memory ``m`` again: ``add_structured``, or for a
    key-value item ``items/put`` of its namespace, key, value and index
    (docs/architecture.md#key-value-items), so it keeps its key."""
    tag = (m.get("custom_tags") or {}).get("item")
    if m.get("mem_type") == "ITEM" and isinstance(tag, dict):
        body = {k: m[k] for k in ("app_id", "session_id") if m.get(k) is not None}
        body.update(
            user_id=user_id,
            namespace=tag.get("ns"),
            key=tag.get("key"),
            value=json.loads(m["content"]),
            request_id=request_id,
        )
        if tag.get("index") is not None:
            body["index"] = tag["index"]
        return "/memory/v1/items/put", body
    body = {k: m[k] for k in KEEP if m.get(k) is not None}
    body.update(user_id=user_id, request_id=request_id)
    return "/memory/v1/add_structured", body


def run_import(args: argparse.Namespace) -> int:
    try:
        lines = [json.loads(x) for x in args.file.read_text(encoding="utf-8").splitlines() if x]
    except (OSError, json.JSONDecodeError) as exc:
        print(f"memstream import: cannot read {args.file}: {exc}", file=sys.stderr)
        return 2
    memories = [
        x
        for x in lines
        if x.get("type", "memory") == "memory"
        and x.get("status", "ACTIVE") in ("ACTIVE", "ARCHIVED")
        # a profile is derived from the memories: the target derives its own
        # (docs/architecture.md#the-profile)
        and x.get("mem_type") not in DERIVED_TYPES
    ]
    failed = 0
    with _client() as http:
        for i, m in enumerate(memories, 1):
            user = args.user if args.user is not None else m["user_id"]
            path, body = write_of(m, user, f"import:{m.get('memory_id', i)}")
            resp = http.post(path, json=body).json()
            if resp.get("code") != 0:
                failed += 1
                sys.stderr.write(f"\nline {i}: {resp.get('code')} {resp.get('msg')}\n")
            _progress("importing", i, len(memories))
    print(
        f"\nimported {len(memories) - failed} of {len(memories)} memories"
        + (f"; {failed} failed" if failed else "")
    )
    return 1 if failed else 0
