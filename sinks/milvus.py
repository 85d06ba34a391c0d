"""Milvus: the vectors of active and archived memories (docs/architecture.md#stores).

Embedded Milvus Lite takes a local file path ending in ``.db`` (a directory with a LOCK,
one process); a server takes ``http://host:19530``. After a reopen the collection is
released, so ``setup()`` always loads it. user_id is the partition key, stored as its
decimal string because Milvus has no unsigned 64-bit integer; ``tenant_id`` is in every
filter (``core.scope``), so user 42 of two tenants never meet in a search.

A collection made before tenants (no ``tenant_id`` field; Milvus Lite cannot add one) is
copied once into a new collection of the current schema, its rows in tenant ``default``,
which then takes the old name (``_migrate``).
"""

from __future__ import annotations

import logging
import threading
import time
from pathlib import Path
from typing import Any

from pymilvus import DataType, MilvusClient

from memstream.schemas.storage import MILVUS_SCALAR_INDEXES, milvus_fields
from sinks.errors import StoreUnavailable

# Milvus Lite's in-process gRPC server logs the optional calls it lacks as errors.
logging.getLogger("grpc._server").setLevel(logging.CRITICAL)
log = logging.getLogger(__name__)

FLUSH_ROWS = 5000
FLUSH_INTERVAL_S = 60.0

_EMBEDDED: dict[str, MilvusClient] = {}
_EMBEDDED_LOCK = threading.Lock()


def _connect(uri: str, token: str) -> MilvusClient:
    if uri.startswith(("http://", "https://", "tcp://", "unix:")):
        return MilvusClient(uri=uri, token=token or "", timeout=5)
    path = str(Path(uri).resolve())
    with _EMBEDDED_LOCK:
        if path not in _EMBEDDED:
            Path(path).parent.mkdir(parents=True, exist_ok=True)
            _EMBEDDED[path] = MilvusClient(path)
        return _EMBEDDED[path]


class MilvusStore:
    """Collection setup, batch upsert/delete, filtered search and query."""

    def __init__(self, uri: str, collection: str, dim: int, token: str = ""):
        self.uri = uri
        self.collection = collection
        self.dim = dim
        self._token = token
        self._client: MilvusClient | None = None
        self._unflushed = 0
        self._flushed_at = time.monotonic()

    @property
    def embedded(self) -> bool:
        return not self.uri.startswith(("http://", "https://", "tcp://", "unix:"))

    @property
    def client(self) -> MilvusClient:
        if self._client is None:
            raise StoreUnavailable("milvus: setup() was not called")
        return self._client

    def setup(self) -> None:
        try:
            self._client = _connect(self.uri, self._token)
            self._migrate()
            if not self._client.has_collection(self.collection):
                self._create()
            self._client.load_collection(self.collection)
        except StoreUnavailable:
            raise
        except Exception as exc:
            raise StoreUnavailable(f"milvus: cannot open {self.uri}: {exc}") from exc

    def _migrate(self) -> None:
        """Give a collection without ``tenant_id`` the current schema, rows unchanged.

        Copy into ``<name>__v5``, drop the old, rename: a crash before the drop redoes the
        copy; one after it finds only the copy, which is renamed."""
        c, name = self.client, self.collection
        tmp = f"{name}__v5"
        if not c.has_collection(name):
            if c.has_collection(tmp):
                c.rename_collection(tmp, name)
            return
        fields = {f["name"] for f in c.describe_collection(name)["fields"]}
        if "tenant_id" in fields:
            return
        if c.has_collection(tmp):
            c.drop_collection(tmp)
        self._create(tmp)
        c.load_collection(name)
        it = c.query_iterator(name, batch_size=1000, filter="", output_fields=["*"])
        try:
            while rows := it.next():
                c.insert(tmp, [{**r, "tenant_id": "default"} for r in rows])
        finally:
            it.close()
        c.flush(tmp)
        c.drop_collection(name)
        c.rename_collection(tmp, name)

    def _create(self, name: str | None = None) -> None:
        schema = MilvusClient.create_schema(auto_id=False, enable_dynamic_field=False)
        for f in milvus_fields(self.dim):
            kwargs: dict[str, Any] = {}
            if f.kind == "VARCHAR":
                kwargs["max_length"] = f.max_length
            if f.kind == "FLOAT_VECTOR":
                kwargs["dim"] = f.max_length
            if f.primary:
                kwargs["is_primary"] = True
            if f.partition_key:
                kwargs["is_partition_key"] = True
            if f.default is not None:
                kwargs["default_value"] = f.default
            schema.add_field(f.name, getattr(DataType, f.kind), **kwargs)
        index = self.client.prepare_index_params()
        index.add_index(
            field_name="vector",
            index_type="HNSW",
            metric_type="COSINE",
            params={"M": 16, "efConstruction": 200},
        )
        for field in MILVUS_SCALAR_INDEXES:
            index.add_index(field_name=field, index_type="INVERTED")
        self.client.create_collection(name or self.collection, schema=schema, index_params=index)

    def ping(self) -> bool:
        try:
            return self.collection in self.client.list_collections(timeout=2)
        except Exception:
            return False

    def upsert(self, rows: list[dict[str, object]]) -> None:
        if rows:
            self.client.upsert(self.collection, rows)
            self.note_written(len(rows))

    def note_written(self, n: int) -> None:
        """Seal growing segments now and then: Milvus Lite scans unflushed rows brute force
        (a filtered search over 30k unflushed rows took over a second, 30-60 ms after a
        flush). At most once a minute, or every FLUSH_ROWS rows."""
        self._unflushed += n
        due = time.monotonic() - self._flushed_at > FLUSH_INTERVAL_S
        if self._unflushed >= FLUSH_ROWS or (self._unflushed and due):
            self.client.flush(self.collection)
            self._unflushed = 0
            self._flushed_at = time.monotonic()

    def delete(self, ids: list[str]) -> None:
        if ids:
            self.client.delete(self.collection, ids=ids)

    def search(
        self,
        vectors: list[list[float]],
        expr: str,
        limit: int,
        output_fields: list[str] | None = None,
        timeout: float | None = None,
    ) -> list[list[dict[str, Any]]]:
        return self.client.search(
            self.collection,
            data=vectors,
            filter=expr,
            limit=limit,
            output_fields=output_fields or [],
            search_params={"metric_type": "COSINE", "params": {"ef": max(64, limit)}},
            timeout=timeout,
        )

    def query(
        self, expr: str, output_fields: list[str] | None = None, limit: int | None = None
    ) -> list[dict[str, Any]]:
        kwargs: dict[str, Any] = {"filter": expr, "output_fields": output_fields or ["memory_id"]}
        if limit is not None:
            kwargs["limit"] = limit
        return self.client.query(self.collection, **kwargs)

    def get(self, ids: list[str], output_fields: list[str] | None = None) -> list[dict[str, Any]]:
        if not ids:
            return []
        return self.client.get(self.collection, ids=ids, output_fields=output_fields)

    def engine_stats(self) -> dict[str, int]:
        """Embedded Milvus Lite's in-memory state, for a soak to tell its growth from ours.

        Milvus Lite runs in this process and keeps every flushed segment in memory: its
        Arrow table, a numpy copy of the vectors and a pk → row dict. An upsert or a
        delete leaves the old row in its segment behind a tombstone until a compaction
        rewrites the segment (by itself, when four files of one size class meet), so
        ``segment_rows`` above ``rows`` is memory held for dead rows. Read from Milvus
        Lite 3.2's internals, which have no public API for this: {} for a server, or
        where those internals differ (nothing here may fail a stats call)."""
        if not self.embedded or self._client is None:
            return {}
        try:
            from milvus_lite.server_manager import server_manager_instance

            path = Path(self.uri).resolve()
            dbs = [db for p, (_, db, _) in server_manager_instance._servers.items()
                   if Path(p).resolve() == path]  # fmt: skip
            if not dbs:
                return {}
            col = dbs[0].get_collection(self.collection)
            segments = list(col._segment_cache.values())
            return {
                "rows": int(col.num_entities),  # live rows, after dedup and tombstones
                "segments": len(segments),
                "segment_rows": sum(seg.num_rows for seg in segments),
                "segment_arrow_bytes": sum(seg.table.nbytes for seg in segments),
                "segment_vector_bytes": sum(seg.vectors.nbytes for seg in segments),
                "memtable_rows": col._memtable.num_physical_rows(),
                "memtable_bytes": col._memtable.estimated_memory_bytes,
                "tombstones": len(col._delta_index),
            }
        except Exception:  # a Milvus Lite whose internals moved: no figures, no failure
            log.debug("milvus lite stats unavailable", exc_info=True)
            return {}

    def close(self) -> None:
        if self._client is not None and not self.embedded:
            self._client.close()
        self._client = None
