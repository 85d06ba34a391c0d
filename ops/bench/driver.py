"""An HTTP load generator for the benches: C concurrent clients in a separate process.

The clients run in a fresh (spawned) process so that they never share the server's GIL
when the server runs inside the bench process. Two modes: a fixed ``rate`` — open loop,
request *i* is due at ``start + i/rate`` and its latency counts from that due time, so
queueing in front of a saturated server shows instead of being hidden (coordinated
omission) — or saturation (``rate=None``): every client sends back to back.
Every answer is read as the API envelope: its ``code`` and ``data.hit`` are counted.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import multiprocessing as mp
import queue
import time
from typing import Any
from urllib.parse import urlsplit

from ops.bench.env import percentiles


class _Conn:
    """One keep-alive HTTP/1.1 connection speaking just enough to POST JSON.

    A general client (httpx) spends ~1 ms of CPU per request; on a two-core machine
    that shares its cores with the server under test, that would be measured as
    server latency. This one costs a few tens of microseconds.
    """

    def __init__(self, host: str, port: int, path: str, key: str = "") -> None:
        self.host, self.port, self.path = host, port, path
        self.auth = f"Authorization: Bearer {key}\r\n" if key else ""
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None

    async def post(self, body: bytes) -> dict[str, Any]:
        if self.writer is None or self.reader is None:
            self.reader, self.writer = await asyncio.open_connection(self.host, self.port)
        head = (
            f"POST {self.path} HTTP/1.1\r\nHost: {self.host}:{self.port}\r\n"
            f"{self.auth}Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
        )
        self.writer.write(head.encode() + body)
        headers = (await self.reader.readuntil(b"\r\n\r\n")).decode("latin-1").lower()
        length = int(headers.split("content-length:", 1)[1].split("\r\n", 1)[0])
        data = await self.reader.readexactly(length)
        if "connection: close" in headers:
            self.writer.close()
            self.reader = self.writer = None
        return json.loads(data)


async def _load(
    url: str,
    bodies: list[dict],
    clients: int,
    rate: float | None,
    duration_s: float,
    key: str = "",
) -> dict[str, Any]:
    target = urlsplit(url)
    payloads = [json.dumps(b).encode() for b in bodies]
    latencies: list[float] = []
    codes: dict[str, int] = {}
    hits = 0
    counter = itertools.count()
    clock = time.perf_counter  # uvloop's loop.time() ticks in whole milliseconds
    start = clock()
    end = start + duration_s

    async def worker() -> None:
        nonlocal hits
        conn = _Conn(target.hostname or "127.0.0.1", target.port or 80, target.path, key)
        while True:
            i = next(counter)
            due = start + i / rate if rate else clock()
            if due >= end:
                return
            await asyncio.sleep(max(0.0, due - clock()))
            body = await conn.post(payloads[i % len(payloads)])
            latencies.append((clock() - due) * 1000)
            codes[str(body.get("code"))] = codes.get(str(body.get("code")), 0) + 1
            hits += bool((body.get("data") or {}).get("hit"))

    await asyncio.gather(*(worker() for _ in range(clients)))
    return {"latencies": latencies, "codes": codes, "hits": hits, "elapsed": clock() - start}


def _drive_child(out: Any, *args: Any) -> None:
    try:
        import uvloop

        uvloop.install()
    except ImportError:
        pass
    out.put(asyncio.run(_load(*args)))


def drive(
    url: str,
    bodies: list[dict],
    clients: int,
    rate: float | None,
    duration_s: float,
    key: str = "",
) -> dict[str, Any]:
    """POST ``bodies`` (cycled) for ``duration_s``; latency percentiles and throughput.
    ``key``: sent as ``Authorization: Bearer`` (the API's keys are on)."""
    ctx = mp.get_context("spawn")
    out = ctx.Queue()
    args = (out, url, bodies, clients, rate, duration_s, key)
    proc = ctx.Process(target=_drive_child, args=args)
    proc.start()
    deadline = time.monotonic() + duration_s + 120
    while True:
        try:
            got = out.get(timeout=1.0)
            break
        except queue.Empty:
            if not proc.is_alive() or time.monotonic() > deadline:
                proc.kill()
                raise RuntimeError(f"load generator died (exit code {proc.exitcode})") from None
    proc.join(30)
    lat = got["latencies"]
    return {
        "mode": f"fixed {rate}/s" if rate else "saturation",
        "clients": clients,
        "requests": len(lat),
        "recalls_per_s": round(len(lat) / got["elapsed"], 1),
        **{f"{k}_ms": round(v, 2) for k, v in percentiles(lat).items()},
        "max_ms": round(max(lat, default=0.0), 2),
        "codes": got["codes"],
        "hit_ratio": round(got["hits"] / max(1, len(lat)), 3),
    }
