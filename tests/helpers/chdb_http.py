"""ClickHouse's HTTP interface in front of one embedded chDB, so several test processes
share one ClickHouse (embedded chDB is one process's; this machine has no ClickHouse
server: Debian's is 18.16, from 2018, and there is no container runtime).

The SQL runs on the real engine (chDB, the ClickHouse code); only the transport is this
file's: a POST's SQL (the body, or ``query=`` with the body as an insert's data) runs as
is, ``param_*`` bind server-side parameters (in the URL, or as form fields when long), an insert's Native data is handed to the
engine through ``FROM INFILE``, and errors come back as ClickHouse sends them (HTTP 500,
``X-ClickHouse-Exception-Code``). Transport settings (sessions, progress headers,
compression) are accepted and not applied; one query runs at a time. Enough for
clickhouse-connect's HTTP client as memstream uses it, not a general server.

Run: ``python -m tests.helpers.chdb_http DATA_DIR PORT`` (127.0.0.1).
"""

from __future__ import annotations

import gzip
import json
import os
import re
import sys
import tempfile
import threading
import zlib
from email.parser import BytesParser
from email.policy import default
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qsl, urlparse

_FORMAT = re.compile(rb"\bFORMAT\s+(\w+)\s*$", re.IGNORECASE)
# The statement ends at one newline (clickhouse-connect's "…FORMAT Native\n" + data): never
# more, since a Native block opens with its column count, and 9 to 13 columns are
# whitespace bytes (\t \n \v \f \r) that a greedy ``\s*`` would eat.
_INSERT = re.compile(
    rb"^\s*INSERT\s+INTO\s+(.+?)\s+FORMAT\s+(\w+)[ \t]*\r?\n?", re.IGNORECASE | re.DOTALL
)
_CODE = re.compile(r"Code: (\d+)")


def _decompress(data: bytes, encoding: str | None) -> bytes:
    if not encoding or encoding == "identity":
        return data
    if encoding == "lz4":
        import lz4.frame

        return lz4.frame.decompress(data)
    if encoding == "zstd":
        import zstandard

        return zstandard.ZstdDecompressor().decompressobj().decompress(data)
    if encoding == "gzip":
        return gzip.decompress(data)
    if encoding == "deflate":
        return zlib.decompress(data)
    raise ValueError(f"unsupported Content-Encoding {encoding}")


def _form_fields(content_type: str, body: bytes) -> dict[str, str]:
    """The text fields of a multipart/form-data body (the client's long queries)."""
    msg = BytesParser(policy=default).parsebytes(
        f"Content-Type: {content_type}\r\n\r\n".encode() + body
    )
    return {
        part.get_param("name", header="content-disposition"): part.get_content()
        for part in msg.iter_parts()
    }


class Engine:
    def __init__(self, path: str):
        import chdb

        self.conn = chdb.connect(path)
        self.lock = threading.Lock()

    def run(self, sql: bytes, data: bytes | None, params: dict, database: str | None):
        """(body, format) of one statement."""
        with self.lock:
            if database:
                self.conn.query(f"USE `{database}`", "TabSeparated")
            m = _INSERT.match(sql)
            if m is not None:
                if data is None:  # the statement's first line, then the data
                    data = sql[m.end() :]
                with tempfile.NamedTemporaryFile(suffix=".in", delete=False) as tmp:
                    tmp.write(data)
                try:
                    target, fmt = m.group(1).decode(), m.group(2).decode()
                    self.conn.query(
                        f"INSERT INTO {target} FROM INFILE '{tmp.name}' FORMAT {fmt}",
                        "TabSeparated",
                    )
                finally:
                    os.unlink(tmp.name)
                return b"", "TabSeparated"
            found = _FORMAT.search(sql.rstrip(b"; \n"))
            fmt = found.group(1).decode() if found else "TabSeparated"
            result = self.conn.query(sql.decode(), fmt, params=params)
            return result.bytes() or b"", fmt


def serve(path: str, port: int) -> None:
    engine = Engine(path)

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args) -> None:  # quiet
            pass

        def _answer(self, status: int, body: bytes, headers: dict[str, str]) -> None:
            self.send_response(status)
            for k, v in headers.items():
                self.send_header(k, v)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def _body(self) -> bytes:
            if "chunked" in (self.headers.get("Transfer-Encoding") or "").lower():
                parts = []
                while True:
                    size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                    if size == 0:
                        while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                            pass  # trailers
                        return b"".join(parts)
                    parts.append(self.rfile.read(size))
                    self.rfile.readline()  # the chunk's CRLF
            return self.rfile.read(int(self.headers.get("Content-Length") or 0))

        def do_GET(self) -> None:
            if urlparse(self.path).path in ("/ping", "/"):
                self._answer(200, b"Ok.\n", {"Content-Type": "text/plain"})
            else:
                self._answer(404, b"not found\n", {})

        def do_POST(self) -> None:
            query = dict(parse_qsl(urlparse(self.path).query, keep_blank_values=True))
            body = _decompress(self._body(), self.headers.get("Content-Encoding"))
            ctype = self.headers.get("Content-Type") or ""
            if ctype.startswith("multipart/form-data"):  # long parameters: query and param_*
                query |= _form_fields(ctype, body)
                body = b""
            params = {k[6:]: v for k, v in query.items() if k.startswith("param_")}
            if "query" in query:
                sql, data = query["query"].encode(), body
                if not _INSERT.match(sql):
                    sql, data = sql + b" " + body, None
            else:
                sql, data = body, None
            headers = {
                "X-ClickHouse-Timezone": "UTC",
                "X-ClickHouse-Server-Display-Name": "chdb-http",
                "X-ClickHouse-Query-Id": query.get("query_id", ""),
            }
            try:
                out, fmt = engine.run(sql, data, params, query.get("database"))
            except Exception as exc:  # the engine's error, as ClickHouse reports it
                text = str(exc)
                code = _CODE.search(text)
                headers["X-ClickHouse-Exception-Code"] = code.group(1) if code else "1001"
                self._answer(500, text.encode() + b"\n", headers)
                return
            headers["X-ClickHouse-Format"] = fmt
            headers["X-ClickHouse-Summary"] = json.dumps({"read_rows": "0", "written_rows": "0"})
            self._answer(200, out, headers)

    ThreadingHTTPServer(("127.0.0.1", port), Handler).serve_forever()


if __name__ == "__main__":
    serve(sys.argv[1], int(sys.argv[2]))
