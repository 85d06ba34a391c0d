"""The web console: ``GET /console`` (one static page) and ``GET /console/v1/whoami``.

The page is package data (``recall_api/static/console.html``): vanilla JS and inline CSS,
nothing fetched from elsewhere, no build step. It holds no data: it is served to anyone,
asks for the API key in the browser and sends it as ``Authorization: Bearer`` on every
JSON call to the ordinary API (``user/list``, ``history``, ``change_log``, ``recall``,
``profile``, ``entities``, ``entity``), so it can see exactly what that key may see and
nothing more. Its answers, refusals included, are the API's envelopes, shown as they
come. As it opens it asks ``whoami`` with no key: only local mode answers, and then the
page is connected without a click (docs/operations.md#console).

The Content-Security-Policy allows only the page's own inline script and style (by their
SHA-256, computed when the page is first served) and requests to this origin: memory
content is rendered as text, and even a slip into markup could not load or send
anything elsewhere.

``whoami`` answers which tenant, role and apps the key has, so the page can say in which
tenant a user is looked up (a key belongs to one tenant; in local mode, with no key
configured, the caller is tenant ``default``'s operator and any key is accepted).
"""

from __future__ import annotations

import base64
import hashlib
import re
from functools import cache
from importlib import resources

from fastapi import APIRouter, Response
from fastapi.responses import HTMLResponse

from memstream.schemas.api import Envelope
from memstream.schemas.responses import WhoAmI
from recall_api.deps import CallerDep
from recall_api.errors import ok

router = APIRouter(tags=["console"])
PAGE = "static/console.html"
_INLINE = re.compile(r"<(script|style)>(.*?)</\1>", re.DOTALL)


@cache
def page() -> tuple[str, str]:
    """The page and its Content-Security-Policy (read once from the package)."""
    html = resources.files("recall_api").joinpath(PAGE).read_text(encoding="utf-8")
    hashes: dict[str, list[str]] = {"script": [], "style": []}
    for tag, body in _INLINE.findall(html):
        digest = base64.b64encode(hashlib.sha256(body.encode("utf-8")).digest()).decode()
        hashes[tag].append(f"'sha256-{digest}'")
    csp = "; ".join(
        [
            "default-src 'none'",
            "script-src " + " ".join(hashes["script"]),
            "style-src " + " ".join(hashes["style"]),
            "connect-src 'self'",
            "img-src 'self' data:",
            "base-uri 'none'",
            "form-action 'none'",
            "frame-ancestors 'none'",
        ]
    )
    return html, csp


@router.get("/console", response_class=HTMLResponse, include_in_schema=False)
def console() -> HTMLResponse:
    """The page itself: no key needed, no data in it."""
    html, csp = page()
    return HTMLResponse(
        html,
        headers={
            "Content-Security-Policy": csp,
            "Referrer-Policy": "no-referrer",
            "X-Content-Type-Options": "nosniff",
            "Cache-Control": "no-cache",
        },
    )


@router.get("/console/v1/whoami", response_model=Envelope[WhoAmI])
def whoami(caller: CallerDep) -> Response:
    """The key's tenant, role and apps (``apps`` null: every app of the tenant)."""
    return ok(
        WhoAmI(
            tenant=caller.tenant,
            role=caller.role or "local",
            apps=sorted(caller.apps) if caller.is_app else None,
            global_grant=caller.global_grant or not caller.is_app,
            kid=caller.kid or None,
        )
    )
