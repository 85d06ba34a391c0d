"""The key the CLI sends to its node: ``api_key`` (``MEMSTREAM_API_KEY``), if any."""

from __future__ import annotations

from core.settings import Settings


def auth_headers(settings: Settings) -> dict[str, str]:
    key = settings.api_key.get_secret_value()
    return {"Authorization": f"Bearer {key}"} if key else {}
