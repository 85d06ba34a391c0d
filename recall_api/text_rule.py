"""The text rule at the HTTP edge (docs/api.md#text): one check of every string a request
carries — its path parameters, its query and its JSON body, nested values and keys
included — before any route or model sees it.

Installed on the app (``create_app``), so a route added later is covered without a line
of its own. A lone surrogate or NUL anywhere, or a control character in a path parameter
(all of them ids), answers 40001 with the JSON path of the first bad string; the models'
own types (``memstream.schemas.limits``) then refuse control characters in the body's ids.
"""

from __future__ import annotations

from fastapi import Request

from memstream.schemas.errors import ErrorCode
from memstream.schemas.limits import first_bad_text, has_control_chars
from recall_api.errors import ApiError


async def text_rule(request: Request) -> None:
    """40001 when any string of the request breaks the text rule."""
    for name, value in request.path_params.items():
        if has_control_chars(value):  # NUL, control characters, a surrogate: never an id
            raise ApiError(ErrorCode.BAD_PARAMETER, f"{name}: must not contain control characters")
    query = {k: request.query_params.getlist(k) for k in request.query_params}
    if (bad := first_bad_text(query, "query")) is not None:
        raise ApiError(ErrorCode.BAD_PARAMETER, bad)
    if request.method not in ("POST", "PUT", "PATCH") or not await request.body():
        return
    try:
        body = await request.json()  # parsed once: FastAPI already read it and caches it
    except (ValueError, UnicodeDecodeError):
        return  # not JSON: the route's validation answers 40001
    except RecursionError:
        raise ApiError(ErrorCode.BAD_PARAMETER, "body: JSON nested too deeply") from None
    if (bad := first_bad_text(body, "body")) is not None:
        raise ApiError(ErrorCode.BAD_PARAMETER, bad)
