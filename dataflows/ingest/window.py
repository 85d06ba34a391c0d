"""Session window: batch a burst of turns of one (user, app, session, level, ownership).

Emits a TurnBatch when the burst goes quiet for ``session_gap_s`` or reaches
``session_max_turns``; keeps the last ``context_turns`` turns as extraction context for
the next burst. The pending events and the context are the only ingest state that is
not derivable from the stores, so they are what this step snapshots — sealed with the
user's data key (``SealedWindow``), so the raw turns in the Bytewax recovery store
(``recovery/ingest/*.sqlite3``) stop opening when the user is purged; a window restored
from a shredded snapshot starts empty.
"""

from __future__ import annotations

import base64
import logging
import pickle
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Self

from bytewax.operators import StatefulLogic

from core import metrics
from dataflows.ingest.items import Incoming, TurnBatch
from memstream.schemas.errors import ErrorCode
from memstream.schemas.events import Message
from memstream.schemas.tenants import DEFAULT_TENANT, scoped
from sinks.crypto import KeyDestroyed
from sinks.keyring import KeyRing
from sinks.tasks import TaskResult

log = logging.getLogger(__name__)

IDLE_TTL = timedelta(minutes=30)  # context of a silent session is dropped after this


def window_key(item: Incoming) -> str:
    e = item.event
    key = f"{e.user_id}|{e.app_id or ''}|{e.session_id or ''}|{e.level}|{e.ownership}"
    return scoped(e.tenant_id, key)


@dataclass
class WindowState:
    pending: list[Incoming] = field(default_factory=list)
    context: list[Message] = field(default_factory=list)


@dataclass(frozen=True)
class SealedItem:
    """Any value of one user, sealed while a step holds it across a snapshot."""

    user_id: int
    blob: str
    tenant_id: str = DEFAULT_TENANT  # a snapshot from before tenants: the default's
    # the add tasks inside, in clear (ids, no words): a value that no longer opens (the
    # user was purged meanwhile) still ends its tasks ``failed`` (``dropped_tasks``)
    task_ids: tuple[str, ...] = ()
    weight: int = 1  # how much work is inside (the embed step's facts), a count in clear

    @classmethod
    def seal(
        cls,
        keys: KeyRing,
        user_id: int,
        value: object,
        tenant: str,
        task_ids: Iterable[str] = (),
        weight: int = 1,
    ) -> Self:
        raw = base64.b64encode(pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL))
        blob = keys.encrypt(user_id, raw.decode("ascii"), tenant)
        return cls(user_id, blob, tenant, tuple(task_ids), weight)

    def dropped_tasks(self) -> list[TaskResult]:
        """The tasks inside, failed: the user was purged before their turns were stored."""
        return [
            TaskResult(
                t,
                self.user_id,
                failed=True,
                code=int(ErrorCode.NOT_FOUND),
                reason="the user was purged before this turn was stored",
                tenant_id=self.tenant_id,
            )
            for t in self.task_ids
        ]

    def open(self, keys: KeyRing) -> object | None:
        """The value, or None when the user was purged while it was in flight."""
        try:
            raw = keys.decrypt(self.user_id, self.blob, self.tenant_id)
        except KeyDestroyed:
            return None
        return pickle.loads(base64.b64decode(raw))  # noqa: S301 (sealed by us, AEAD-checked)


@dataclass(frozen=True)
class SealedWindow(SealedItem):
    """A WindowState as the recovery store keeps it: pickled, sealed with the user's key."""

    def open(self, keys: KeyRing) -> WindowState:
        """The state (authenticated, so unpickling it is safe); empty once shredded."""
        state = super().open(keys)
        if state is None:
            log.info(
                "window snapshot of a purged user dropped",
                extra={"fields": {"user_id": self.user_id}},
            )
            return WindowState()
        return state  # type: ignore[return-value]


class SessionWindow(StatefulLogic[Incoming, TurnBatch, WindowState | SealedWindow]):
    def __init__(
        self,
        state: WindowState | SealedWindow | None,
        gap_s: float,
        max_turns: int,
        context_turns: int,
        keys: KeyRing | None = None,
        dropped: Callable[[list[TaskResult]], None] | None = None,
    ):
        """``dropped``: told the failed tasks of a snapshot that no longer opens."""
        self.keys = keys
        self.user_id: int | None = None
        self.tenant_id = DEFAULT_TENANT
        if isinstance(state, SealedWindow):
            self.user_id, self.tenant_id = state.user_id, state.tenant_id
            sealed, state = state, state.open(keys) if keys is not None else None
            if state is not None and not state.pending and sealed.task_ids and dropped:
                dropped(sealed.dropped_tasks())
        self.state = state or WindowState()
        if self.user_id is None and self.state.pending:  # a snapshot from before sealing
            self.user_id = self.state.pending[0].event.user_id
            self.tenant_id = self.state.pending[0].event.tenant_id
        self.gap = timedelta(seconds=gap_s)
        self.max_turns = max_turns
        self.context_turns = context_turns
        now = datetime.now(UTC)
        self.deadline = now + (self.gap if self.state.pending else IDLE_TTL)

    def on_item(self, value: Incoming) -> tuple[list[TurnBatch], bool]:
        with metrics.ingest_stage("window"):
            return self._on_item(value)

    def _on_item(self, value: Incoming) -> tuple[list[TurnBatch], bool]:
        self.user_id, self.tenant_id = value.event.user_id, value.event.tenant_id
        self.state.pending.append(value)
        turns = sum(len(i.event.messages) for i in self.state.pending)
        if turns >= self.max_turns:
            return [self._flush()], self.RETAIN
        self.deadline = datetime.now(UTC) + self.gap
        return [], self.RETAIN

    def on_notify(self) -> tuple[list[TurnBatch], bool]:
        if not self.state.pending:
            return [], self.DISCARD  # idle past the TTL: forget the context
        return [self._flush()], self.RETAIN

    def on_eof(self) -> tuple[list[TurnBatch], bool]:
        return ([self._flush()] if self.state.pending else []), self.RETAIN

    def notify_at(self) -> datetime | None:
        return self.deadline

    def snapshot(self) -> WindowState | SealedWindow:
        with metrics.ingest_stage("window"):
            return self._snapshot()

    def _snapshot(self) -> WindowState | SealedWindow:
        state = WindowState(list(self.state.pending), list(self.state.context))
        if self.keys is None or self.user_id is None:
            return state  # no keys (tests) or nothing of a user held yet
        tasks = tuple(i.task_id for i in state.pending)
        return SealedWindow.seal(self.keys, self.user_id, state, self.tenant_id, tasks)

    def _flush(self) -> TurnBatch:
        batch = TurnBatch(self.state.pending, list(self.state.context))
        turns = [m for i in self.state.pending for m in i.event.messages]
        keep = self.context_turns
        self.state.context = (self.state.context + turns)[-keep:] if keep else []
        self.state.pending = []
        self.deadline = datetime.now(UTC) + IDLE_TTL
        return batch
