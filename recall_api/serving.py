"""How the API is served: one uvicorn config for the node and the API-only process.

HTTPS when ``api_tls_cert_file`` and ``api_tls_key_file`` are set (uvicorn's ssl
options; the cert file may hold the chain), plain HTTP otherwise.
"""

from __future__ import annotations

import ssl
from typing import Literal, TypedDict

import uvicorn
from starlette.types import ASGIApp

from core.settings import Settings


class SslOptions(TypedDict, total=False):
    """uvicorn's ssl keyword arguments that memstream sets."""

    ssl_certfile: str
    ssl_keyfile: str
    ssl_keyfile_password: str


def tls_enabled(s: Settings) -> bool:
    return bool(s.api_tls_cert_file)


def api_base_url(s: Settings, host: str | None = None) -> str:
    scheme = "https" if tls_enabled(s) else "http"
    return f"{scheme}://{host or s.api_host}:{s.api_port}"


def ssl_options(s: Settings) -> SslOptions:
    """uvicorn's ssl keyword arguments; {} without a certificate."""
    if not tls_enabled(s):
        return {}
    opts: SslOptions = {
        "ssl_certfile": s.api_tls_cert_file,
        "ssl_keyfile": s.api_tls_key_file,
    }
    if s.api_tls_key_password.get_secret_value():
        opts["ssl_keyfile_password"] = s.api_tls_key_password.get_secret_value()
    return opts


def server_config(
    app: ASGIApp,
    s: Settings,
    *,
    host: str | None = None,
    port: int | None = None,
    lifespan: Literal["auto", "on", "off"] = "on",
) -> uvicorn.Config:
    """The uvicorn config the API runs under (``host``/``port``: other than the settings')."""
    return uvicorn.Config(
        app,
        host=s.api_host if host is None else host,
        port=s.api_port if port is None else port,
        log_config=None,
        access_log=False,
        lifespan=lifespan,
        **ssl_options(s),
    )


def client_ssl_context(s: Settings) -> ssl.SSLContext | None:
    """What memstream's own CLI uses to reach the API: trusts ``api_tls_ca_file``."""
    if not tls_enabled(s):
        return None
    return ssl.create_default_context(cafile=s.api_tls_ca_file or None)


def client_verify(s: Settings) -> ssl.SSLContext | bool:
    """httpx's ``verify`` for memstream's own CLI calls to its API."""
    return client_ssl_context(s) or True
