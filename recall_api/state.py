"""What the API serves from: one container, built once with the app (``create_app``).

:class:`ApiState` holds the process's :class:`sinks.services.Services` (opened by
``open_services``; None for an app that answers health and admin only) and the API's own
parts beside them: the key file, the rate limits, the recaller, the ingest flow's
crash-loop watch, the per-tenant SQL gate and the lifecycle runner the node injects. All
of them are made here, at start, so no request builds one on first use and every route
reaches them through one typed accessor (:func:`api_state`, or ``deps.ApiDep``).

``settings`` is kept live (``memory.config``,
docs/configuration.md#live-thresholds-memstream-config-setgetunset)
when the services follow the config: ``Services.keep_live`` swaps it like theirs.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

from starlette.applications import Starlette

from core.settings import Settings
from recall_api.ratelimit import RateLimits
from recall_api.recall import Recaller
from recall_api.sql_gate import TenantGate
from sinks.flow_health import LoopWatch
from sinks.keystore import KeyFile
from sinks.services import Services
from sinks.stores import Stores


class LifecycleRunner(Protocol):
    """One lifecycle pass at ``now`` over ``users`` (None: all) of ``tenant`` (None:
    every tenant), answering its summary (``memstream.schemas.responses.LifecycleSummary``). The
    node injects its ``LifecyclePasses.run``: the API tier does not import the flows."""

    def __call__(
        self, *, now: datetime, users: list[int] | None, tenant: str | None = None
    ) -> Mapping[str, object]: ...


@dataclass
class ApiState:
    settings: Settings
    stores: Stores
    services: Services | None
    keys: KeyFile
    rate_limits: RateLimits
    ingest_watch: LoopWatch
    sql_gate: TenantGate
    recaller: Recaller | None  # with the services only
    lifecycle_runner: LifecycleRunner | None = None  # POST /admin/v1/lifecycle/run

    @classmethod
    def build(
        cls,
        settings: Settings,
        stores: Stores,
        services: Services | None = None,
        *,
        lifecycle_runner: LifecycleRunner | None = None,
    ) -> ApiState:
        """Every part of the API over already-opened stores (the caller owns their lifetime)."""
        state = cls(
            settings=settings,
            stores=stores,
            services=services,
            keys=KeyFile(settings),
            rate_limits=RateLimits(settings),
            ingest_watch=LoopWatch(lambda: stores.redis.client),
            sql_gate=TenantGate(),
            # subscribes to the store's writes and embeds the calibration reference once
            recaller=None if services is None else Recaller(services),
            lifecycle_runner=lifecycle_runner,
        )
        if services is not None:
            services.keep_live(state)  # live thresholds, as the services' own
        return state


def install(app: Starlette, state: ApiState) -> ApiState:
    """Make ``state`` the one ``app`` serves from."""
    app.state.api = state
    return state


def api_state(app: Starlette) -> ApiState:
    """The container ``app`` serves from (``create_app`` installs it)."""
    try:
        state = app.state.api
    except AttributeError:
        state = None
    if not isinstance(state, ApiState):
        raise RuntimeError("this app has no ApiState: build it with recall_api.app.create_app")
    return state
