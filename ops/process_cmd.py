"""`memstream api` and `memstream dataflow ingest|lifecycle`: the node's parts, each alone.

The distributed deployment (docs/deploy.md#topology, ``helm/``) runs the recall tier and
each dataflow as processes of their own, against a Kafka, a ClickHouse server, a Milvus
server and a Redis. ``api`` runs what ``python -m recall_api.main`` runs. ``dataflow NAME``
runs one flow in the foreground as one process of a Bytewax cluster (``-w`` workers,
``-i/-a`` for several processes), with recovery on a durable directory, until SIGTERM (the
flow's sources end after the batch in flight) or a failure (exit 1: the supervisor restarts
it and recovery resumes it from the last snapshot). The lifecycle process also runs the
periodic passes, on process 0 only, so a cluster of N processes does not run N passes.
``--metrics-port`` serves the process's Prometheus ``/metrics`` (its flow's families and
consumer lag; README "Metrics") on loopback unless ``--metrics-host`` says otherwise.

Each refuses to start on an embedded store (chDB data dir, Milvus Lite file): those
allow one process per data dir, so a second process either fails on the lock or, in a
pod with its own disk, opens a private store that no other process sees. On one machine
``memstream up`` runs the node, which hosts all three in one process.
"""

from __future__ import annotations

import argparse
import math
import signal
import sys
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path

from core.settings import Settings, SettingsError, get_settings
from dataflows.epochs import EPOCH_S, EPOCH_S_MANY_WORKERS, epoch_seconds
from ops.heap import limit_arenas, start_trimmer

FLOWS = ("ingest", "lifecycle")


def embedded_stores(s: Settings) -> list[str]:
    """The stores the settings open embedded, in words (empty: all are servers)."""
    out = []
    if s.clickhouse_target.startswith("chdb://"):
        out.append(
            f"ClickHouse is embedded chDB ({s.clickhouse_target}); set MEMSTREAM_CLICKHOUSE_URL=http://host:8123"
        )
    if not s.milvus_target.startswith(("http://", "https://", "tcp://", "unix:")):
        out.append(
            f"Milvus is embedded Milvus Lite ({s.milvus_target}); set MEMSTREAM_MILVUS_URI=http://host:19530"
        )
    return out


def require_servers(s: Settings) -> None:
    """SettingsError naming each embedded store: a process started alone needs servers."""
    embedded = embedded_stores(s)
    if embedded:
        raise SettingsError(
            "a process started alone needs its stores as servers, shared with the others; "
            + "; ".join(embedded)
            + ". An embedded store allows one process per data dir: on one machine run "
            "`memstream up` (the node hosts the API and both dataflows)."
        )


@dataclass(frozen=True)
class FlowPlan:
    """How one dataflow process runs: its place in the cluster and its recovery."""

    flow: str
    workers: int
    process_id: int | None
    addresses: tuple[str, ...]
    recovery_dir: Path | None
    partitions: int
    snapshot_s: float
    backup_s: float

    @property
    def processes(self) -> int:
        return len(self.addresses) or 1

    @property
    def leader(self) -> bool:
        """Process 0 (or the only one): where once-per-cluster work runs."""
        return not self.process_id


def plan_from_args(args: argparse.Namespace, s: Settings) -> FlowPlan:
    """The plan the arguments ask for; ValueError names what is inconsistent."""
    addresses = tuple(a.strip() for a in (args.addresses or "").split(";") if a.strip())
    for a in addresses:
        host, _, port = a.rpartition(":")
        if not host or not port.isdigit():
            raise ValueError(f"-a/--addresses: {a!r} is not host:port")
    if (args.process_id is None) != (not addresses):
        raise ValueError("-i/--process-id and -a/--addresses go together (give both or neither)")
    if args.process_id is not None and not 0 <= args.process_id < len(addresses):
        raise ValueError(
            f"-i/--process-id {args.process_id}: not one of the {len(addresses)} addresses (0..{len(addresses) - 1})"
        )
    if args.workers_per_process < 1:
        raise ValueError("-w/--workers-per-process: at least 1")
    if args.snapshot_interval is not None and not 0 < args.snapshot_interval < math.inf:
        raise ValueError("-s/--snapshot-interval: more than 0 seconds, finite")
    processes = len(addresses) or 1
    partitions = args.recovery_partitions or processes * args.workers_per_process
    if partitions < processes:
        raise ValueError(
            f"--recovery-partitions {partitions}: fewer than the {processes} processes"
        )
    if args.no_recovery:
        recovery = None
    else:
        recovery = args.recovery_directory or s.data_path / "recovery" / args.flow
    return FlowPlan(
        flow=args.flow,
        workers=args.workers_per_process,
        process_id=args.process_id,
        addresses=addresses,
        recovery_dir=recovery,
        partitions=partitions,
        snapshot_s=epoch_seconds(processes * args.workers_per_process)
        if args.snapshot_interval is None
        else args.snapshot_interval,
        backup_s=args.backup_interval,
    )


def add_parser(sub: argparse._SubParsersAction) -> None:
    api = sub.add_parser("api", help="the recall/management API alone (needs server stores)")
    api.set_defaults(func=run_api)
    df = sub.add_parser("dataflow", help="one dataflow alone, in the foreground (server stores)")
    df.add_argument("flow", choices=FLOWS)
    df.add_argument("-w", "--workers-per-process", type=int, default=1)
    df.add_argument("-i", "--process-id", type=int, default=None, help="this process (from 0)")
    df.add_argument(
        "-a", "--addresses", default=None, help='every process, "host:port;host:port" (id order)'
    )
    df.add_argument(
        "-r",
        "--recovery-directory",
        type=Path,
        default=None,
        help="this process's recovery partitions (default <data dir>/recovery/FLOW)",
    )
    df.add_argument(
        "--recovery-partitions",
        type=int,
        default=0,
        help="partitions of the whole cluster, made on first start (default processes x workers)",
    )
    df.add_argument("--no-recovery", action="store_true", help="run without snapshots")
    df.add_argument(
        "--metrics-port",
        type=int,
        default=None,
        help="serve Prometheus /metrics on this port (default: not served)",
    )
    df.add_argument(
        "--metrics-host", default="127.0.0.1", help="address of --metrics-port (default loopback)"
    )
    df.add_argument(
        "-s",
        "--snapshot-interval",
        type=float,
        default=None,
        help=f"seconds (default {EPOCH_S:g}; {EPOCH_S_MANY_WORKERS:g} with more than one worker)",
    )
    df.add_argument(
        "-b", "--backup-interval", type=float, default=0.0, help="seconds to keep old snapshots"
    )
    df.set_defaults(func=run_dataflow)


def run_api(args: argparse.Namespace) -> int:
    limit_arenas()  # before the threads start (ops.heap)
    try:
        require_servers(get_settings())
    except SettingsError as exc:
        print(f"memstream api: {exc}", file=sys.stderr)
        return 2
    from recall_api.main import main as api_main

    start_trimmer()
    return api_main()


def run_dataflow(args: argparse.Namespace) -> int:
    limit_arenas()  # before the threads start (ops.heap)
    who = f"memstream dataflow {args.flow}"
    settings = get_settings()
    try:
        require_servers(settings)
        plan = plan_from_args(args, settings)
        if args.metrics_port is not None and not 0 < args.metrics_port < 65536:
            raise ValueError(f"--metrics-port {args.metrics_port}: not a port (1..65535)")
    except (SettingsError, ValueError) as exc:
        print(f"{who}: {exc}", file=sys.stderr)
        return 2
    if args.metrics_port is not None:
        try:
            serve_metrics(args.metrics_host, args.metrics_port)
        except OSError as exc:
            print(f"{who}: --metrics-port {args.metrics_port}: {exc}", file=sys.stderr)
            return 1
    from sinks.errors import ModelMismatch

    try:
        return _run(plan, settings)
    except ModelMismatch as exc:  # another embedding model made the store's vectors
        print(f"{who}: {exc}", file=sys.stderr)
        return 2


def serve_metrics(host: str, port: int) -> None:
    """``GET /metrics`` of this process (the flow's families, its consumer lag included)
    on a daemon thread of prometheus-client; OSError when the port cannot be bound."""
    from prometheus_client import start_http_server

    import dataflows.lag  # noqa: F401  (registers the consumer-lag collector)

    start_http_server(port, addr=host)


def _run(plan: FlowPlan, settings: Settings) -> int:
    from bytewax.recovery import RecoveryConfig
    from bytewax.run import cli_main

    from core import tracing
    from core.logs import setup_logging
    from dataflows.bootstrap import FLOW_READY_S
    from dataflows.runner import init_partition_share
    from dataflows.runtime import open_runtime

    setup_logging(settings.log_level, settings.log_json)
    tracing.setup(settings, f"memstream-{plan.flow}")  # OTLP traces when otel_endpoint is set
    start_trimmer()
    # ModelMismatch: the stores are closed again; on the way out, in reverse order
    with open_runtime(settings, topics=True, ready_s=FLOW_READY_S) as rt:
        stores = rt.stores
        passes = None
        try:
            flow = _build_flow(plan.flow, rt, plan.workers * plan.processes)
            # SIGTERM (a pod stopping): the sources end the flow after the batch in flight
            signal.signal(signal.SIGTERM, lambda *_: rt.stop.set())
            if runs_passes(plan):  # one thread in this process, whatever -w says
                from dataflows.lifecycle.schedule import LifecyclePasses
                from dataflows.lifecycle.submit import KafkaVia

                passes = LifecyclePasses(rt, KafkaVia(stores))
                passes.start()
            rc = None
            if plan.recovery_dir is not None:
                init_partition_share(
                    plan.recovery_dir, plan.partitions, plan.process_id or 0, plan.processes
                )
                rc = RecoveryConfig(plan.recovery_dir, timedelta(seconds=plan.backup_s))
            try:
                cli_main(
                    flow,
                    workers_per_process=plan.workers,
                    process_id=plan.process_id,
                    addresses=list(plan.addresses) or None,
                    epoch_interval=timedelta(seconds=plan.snapshot_s),
                    recovery_config=rc,
                )
            except Exception:  # the supervisor restarts this process: every API sees the loop
                from sinks.flow_health import RestartLog

                RestartLog(plan.flow, stores.redis.client).restarted()
                raise
        finally:
            if passes is not None:
                rt.stop.set()
                passes.join()
    return 0


def runs_passes(plan: FlowPlan) -> bool:
    """Whether this process runs the periodic lifecycle passes: the lifecycle flow's
    process 0 only. The passes are a thread of the process, not a step of the flow, so
    its ``-w`` workers do not multiply them: one pass at a time per cluster."""
    return plan.flow == "lifecycle" and plan.leader


def _build_flow(name: str, rt, workers: int):  # noqa: ANN001, ANN202 - Runtime, Dataflow (lazy)
    """The flow for a cluster of ``workers`` workers in all (ingest: one embed shard each)."""
    if name == "ingest":
        from dataflows.breaker import Breaker
        from dataflows.ingest.flow import build_flow as build_ingest

        # the process is restarted by its supervisor: the sink's bisection and the skip
        # list of the recovery snapshot hold, the careful replay needs in-process restarts
        return build_ingest(rt, workers=workers, breaker=Breaker("ingest"))
    from dataflows.lifecycle.flow import build_flow as build_lifecycle

    return build_lifecycle(rt)
