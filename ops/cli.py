"""The `memstream` command line.

Sub-commands: up, down, status, config show|set|get|unset, node (foreground), api and dataflow
(the node's parts alone, on server stores), sql, extract, bench, lifecycle,
import/export, reembed, tail, entities backfill.
Each prints what it did in plain words. Exit codes: 0 done, 1 failed (the reason on
stderr), 2 a usage or configuration error (argparse's code; a bad setting too), 130
interrupted (``tail`` ends on Ctrl-C with 0: following is all it does).
"""

from __future__ import annotations

import argparse
import json
import sys
import time

import httpx

from core.settings import Settings, SettingsError, get_settings
from ops import stack
from ops.procs import StackError, port_open
from recall_api.serving import api_base_url, client_verify


def _readyz(s: Settings, timeout: float = 3.0) -> tuple[int, dict]:
    """The node's /readyz status and body; (0, {}) when nothing answers."""
    try:
        resp = httpx.get(f"{api_base_url(s)}/readyz", timeout=timeout, verify=client_verify(s))
    except httpx.HTTPError:
        return 0, {}
    try:
        return resp.status_code, resp.json() if resp.content else {}
    except ValueError:
        return resp.status_code, {}


def cmd_up(s: Settings, args: argparse.Namespace) -> int:
    data_dir = s.data_path
    before = stack.running(data_dir)
    if all(before.values()):
        code, _ = _readyz(s)
        state = "ready" if code == 200 else f"not ready yet (readyz {code or 'no answer'})"
        print(f"memstream is already running ({state}); nothing changed. API {api_base_url(s)}")
        return 0
    started = time.monotonic()
    data_dir.mkdir(parents=True, exist_ok=True)
    if not before["node"] and port_open(s.api_host, s.api_port):
        raise StackError(
            f"node: port {s.api_host}:{s.api_port} is already in use by another process"
        )
    if not before["redis"]:
        print("starting redis ...", flush=True)
        stack.start_redis(data_dir, s.redis_url)
    if not before["kafka"]:
        print("starting kafka ...", flush=True)
        security = stack.KafkaSecurity.from_settings(s)  # None: plaintext
        stack.start_kafka(data_dir, s.kafka_bootstrap, s.kafka_partitions, security=security)
    if not before["node"]:
        print("starting node ...", flush=True)
        stack.start_node(data_dir, _node_env(s))
    node = stack.proc(data_dir, "node")
    stack.wait_until(lambda: _readyz(s, 2)[0] == 200, args.timeout, "node /readyz", node, 0.5)
    print(
        f"memstream is up in {time.monotonic() - started:.1f}s: "
        f"API {api_base_url(s)} (docs at /docs), data in {data_dir}.\n"
        "Stop it with `make down` (or `memstream down`)."
    )
    return 0


def _node_env(s: Settings) -> dict[str, str]:
    """The node `up` starts trusts the stack's own CA when no other CA is configured."""
    if s.kafka_security_protocol.endswith("SSL") and not s.kafka_ssl_ca_file:
        return {"MEMSTREAM_KAFKA_SSL_CA_FILE": str(stack.tls_dir(s.data_path) / "ca.pem")}
    return {}


def cmd_down(s: Settings, args: argparse.Namespace) -> int:
    stopped = stack.stop(s.data_path)
    print(f"stopped: {', '.join(stopped)}" if stopped else "memstream was not running")
    return 0


def cmd_status(s: Settings, args: argparse.Namespace) -> int:
    pids = stack.running(s.data_path)
    for name, pid in pids.items():
        print(f"{name:6} {'running, pid ' + str(pid) if pid else 'stopped'}")
    code, body = _readyz(s)
    if code:
        print(f"readyz {code}: {json.dumps(body.get('checks', {}))}")
    else:
        print("readyz: no answer")
    ingest, checks = _get_json(s, "/healthz/ingest")
    if ingest == 503:
        print(
            f"ingest CRASH-LOOPING: {checks.get('restarts')} restarts in "
            f"{checks.get('window_s', 300):.0f} s; adds answer 50301 (see the node's log)"
        )
    elif ingest == 200:
        print(f"ingest ok ({checks.get('restarts', 0)} restarts in the last 5 min)")
    return 0 if code == 200 and ingest != 503 else 1


def _get_json(s: Settings, path: str, timeout: float = 3.0) -> tuple[int, dict]:
    """A GET of the node's ``path``: its status and body's ``checks`` ((0, {}): no answer)."""
    try:
        resp = httpx.get(f"{api_base_url(s)}{path}", timeout=timeout, verify=client_verify(s))
        return resp.status_code, dict(resp.json().get("checks") or {})
    except (httpx.HTTPError, ValueError, AttributeError):
        return 0, {}


def cmd_config_show(s: Settings, args: argparse.Namespace) -> int:
    from ops.config_cmd import show_live  # with the live values of memory.config on top

    shown = s.masked() if args.start_only else show_live(s)
    print(json.dumps(shown, indent=2, ensure_ascii=False, default=str))
    return 0


def cmd_node(s: Settings, args: argparse.Namespace) -> int:
    from ops.node import main as node_main

    return node_main()


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="memstream", description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="command", required=True)
    up = sub.add_parser("up", help="start Kafka, Redis and the node; wait for /readyz")
    up.add_argument("--timeout", type=float, default=300.0)
    up.set_defaults(func=cmd_up)
    sub.add_parser("down", help="stop what `up` started").set_defaults(func=cmd_down)
    sub.add_parser("status", help="which processes run; readiness").set_defaults(func=cmd_status)
    cfg = sub.add_parser("config", help="configuration")
    cfg_sub = cfg.add_subparsers(dest="config_command", required=True)
    show = cfg_sub.add_parser("show", help="print the effective configuration (secrets masked)")
    show.add_argument(
        "--start-only", action="store_true", help="the start-time values, not reading Kafka"
    )
    show.set_defaults(func=cmd_config_show)
    from ops import config_cmd

    config_cmd.add_parsers(cfg_sub)  # set, get, unset: the live config center
    sub.add_parser("node", help="run the node in the foreground").set_defaults(func=cmd_node)
    _add_optional_commands(sub)
    return p


def _add_optional_commands(sub: argparse._SubParsersAction) -> None:
    """Commands whose modules live beside this one; each registers its own parser."""
    from ops import (
        dlq_cmd,
        entities_cmd,
        extract_cmd,
        keys_cmd,
        lifecycle_cmd,
        process_cmd,
        reembed_cmd,
        sql_cmd,
        tail_cmd,
        transfer_cmd,
    )
    from ops.bench import cmd as bench_cmd  # its parsers only: a bench's modules load when it runs

    for mod in (
        extract_cmd,
        sql_cmd,
        bench_cmd,
        lifecycle_cmd,
        transfer_cmd,
        reembed_cmd,
        keys_cmd,
        process_cmd,
        tail_cmd,
        dlq_cmd,
        entities_cmd,
    ):
        mod.add_parser(sub)
    from memstream import mcp_server  # the client package: MCP tools over the HTTP API

    mcp = sub.add_parser("mcp", help="an MCP server (stdio) over the HTTP API")
    mcp_server.add_arguments(mcp)
    mcp.set_defaults(func=mcp_server.run)


def _bench_extra() -> int:
    """0 when the ``bench`` extra is installed, else 2 (a usage error) and how to get it."""
    from ops import bench

    if lacking := bench.missing():
        print(f"memstream bench needs {', '.join(lacking)} (not installed); {bench.INSTALL}",
              file=sys.stderr)  # fmt: skip
        return 2
    return 0


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.command == "bench" and (code := _bench_extra()):
        return code
    try:
        settings = get_settings()
    except SettingsError as exc:
        print(f"memstream: {exc}", file=sys.stderr)
        return 2
    func = args.func
    try:
        if getattr(func, "__module__", "") == __name__:
            return func(settings, args)
        return func(args)
    except StackError as exc:
        print(f"memstream: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
