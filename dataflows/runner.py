"""Run dataflows in-process (the embedded node) with recovery, restarting on failure.

Each flow runs in a daemon thread under ``bytewax.run.cli_main`` (``workers`` Bytewax
workers, one by default) with its recovery store under ``<data_dir>/recovery/<flow>``,
created once. A flow that raises (a broker that
went away, say) is rebuilt and restarted with backoff; recovery resumes it from its
last snapshot, and deterministic ids make the replay harmless. ``on_failure`` runs
before the restart: the ingest flow drops the hot cache there, because its writer
updates the cache ahead of the durable write, and a batch that failed to become durable
must not look "already stored" to its own replay.

A failure whose root cause is a record's data goes to the flow's poison-pill breaker
(``dataflows.breaker``): after the second in a row the flow replays its in-flight records
one at a time, and the record that fails alone is dead-lettered (``dead_letter``) and
skipped from then on. Every restart is noted in the flow's ``RestartLog``
(``sinks.flow_health``), which shows a crash loop to the API, ``memstream status`` and the
metrics.

A flow run alone as one process of a cluster (``memstream dataflow``, ``ops.dataflow_cmd``)
keeps only its share of the recovery partitions on its own volume
(:func:`init_partition_share`): Bytewax needs the cluster as a whole to hold every
partition once, not each process.
"""

from __future__ import annotations

import logging
import tempfile
import threading
import time
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path

from bytewax.dataflow import Dataflow
from bytewax.recovery import RecoveryConfig, init_db_dir
from bytewax.run import cli_main

from core.logs import describe_error
from dataflows.breaker import Breaker, Record, root_cause
from dataflows.epochs import epoch_seconds
from dataflows.ingest.guard import describe
from sinks.flow_health import RestartLog

DeadLetter = Callable[[list[Record], str], None]  # (records, reason)

log = logging.getLogger(__name__)


def recovery_config(base: Path, name: str) -> RecoveryConfig:
    db_dir = base / "recovery" / name
    if not db_dir.exists() or not any(db_dir.iterdir()):
        db_dir.mkdir(parents=True, exist_ok=True)
        init_db_dir(db_dir, 1)
    return RecoveryConfig(db_dir)


def partition_share(count: int, process_id: int, processes: int) -> list[int]:
    """The recovery partitions process ``process_id`` of ``processes`` holds: every
    ``processes``-th one from its id, so the shares are disjoint and cover ``count``."""
    if not 0 <= process_id < processes:
        raise ValueError(f"process id {process_id} is not in 0..{processes - 1}")
    if count < processes:
        raise ValueError(f"{count} recovery partition(s) cannot be shared by {processes} processes")
    return list(range(process_id, count, processes))


def init_partition_share(db_dir: Path, count: int, process_id: int, processes: int) -> list[str]:
    """Create this process's share of ``count`` fresh partitions in ``db_dir``, unless it
    already holds partitions (a restart: they are the state to resume from). Returns
    the partition files now in ``db_dir``."""
    db_dir.mkdir(parents=True, exist_ok=True)
    held = sorted(p.name for p in db_dir.glob("part-*.sqlite3"))
    if held:
        return held
    share = partition_share(count, process_id, processes)
    with tempfile.TemporaryDirectory(prefix=".init-", dir=db_dir) as tmp:
        init_db_dir(Path(tmp), count)
        for i in share:  # a fresh partition is one file; renamed within one volume
            (Path(tmp) / f"part-{i}.sqlite3").rename(db_dir / f"part-{i}.sqlite3")
    return sorted(p.name for p in db_dir.glob("part-*.sqlite3"))


class FlowThread(threading.Thread):
    def __init__(
        self,
        name: str,
        build: Callable[[], Dataflow],
        data_dir: Path | None,
        epoch_s: float | None = None,  # default: epoch_seconds(workers)
        stop: threading.Event | None = None,
        on_failure: Callable[[], None] | None = None,
        workers: int = 1,
        breaker: Breaker | None = None,
        dead_letter: DeadLetter | None = None,
        restart_log: RestartLog | None = None,
    ):
        super().__init__(name=f"flow-{name}", daemon=True)
        self.workers = workers  # Bytewax workers (threads) of this one-process cluster
        self._on_failure = on_failure
        self.flow_name = name
        self._build = build
        self._data_dir = data_dir
        self._epoch = timedelta(seconds=epoch_seconds(workers) if epoch_s is None else epoch_s)
        self.restarts = 0
        self.breaker = breaker
        self._dead_letter = dead_letter
        self.restart_log = restart_log or RestartLog(name)
        self.running = threading.Event()
        self.stop_event = stop or threading.Event()

    def stop(self, timeout: float = 30.0) -> None:
        """Let the sources end the flow after the batch in flight, and wait for it."""
        self.stop_event.set()
        self.join(timeout)

    def run(self) -> None:
        delay = 1.0
        while not self.stop_event.is_set():
            started = time.monotonic()
            try:
                flow = self._build()
                rc = recovery_config(self._data_dir, self.flow_name) if self._data_dir else None
                self.running.set()
                cli_main(
                    flow,
                    workers_per_process=self.workers,
                    epoch_interval=self._epoch,
                    recovery_config=rc,
                )
                log.info("flow finished", extra={"fields": {"flow": self.flow_name}})
                return
            except Exception as exc:
                self.running.clear()
                self.restarts += 1
                self.restart_log.restarted()
                if self._on_failure is not None:
                    self._on_failure()
                if time.monotonic() - started > 60 or self._blame(exc):
                    delay = 1.0
                log.error(
                    "flow %s failed (%s); restarting in %.0fs",
                    self.flow_name,
                    type(exc).__name__,  # never its message: it may quote memory content
                    delay,
                    extra={
                        "fields": {"flow": self.flow_name, **describe_error(exc), "in_s": delay}
                    },
                )
                self.stop_event.wait(delay)
                delay = min(delay * 2, 30)

    def _blame(self, exc: BaseException) -> bool:
        """Tell the breaker; dead-letter the record it blames. True when one was."""
        if self.breaker is None:
            return False
        blamed = self.breaker.failed(exc)
        if not blamed:
            return False
        reason = "the flow failed on this record alone: " + describe("flow", root_cause(exc))
        try:
            if self._dead_letter is None:
                raise RuntimeError("this flow has no dead-letter queue")
            self._dead_letter(blamed, reason)
        except Exception as err:  # not in the DLQ: it must not be skipped either
            self.breaker.forgive(blamed)
            log.error(
                "a blamed record could not be dead-lettered; it will be tried again",
                extra={"fields": {"flow": self.flow_name, **describe_error(err)}},
            )
            return False
        log.warning(
            "record dead-lettered by the breaker",
            extra={"fields": {"flow": self.flow_name, "reason": reason}},
        )
        return True
