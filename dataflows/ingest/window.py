"""Session window: batch a burst of turns of one (user, app, session, level, ownership).

Emits a TurnBatch when the burst goes quiet for ``session_gap_s`` or reaches
``session_max_turns``; keeps the last ``context_turns`` turns as extraction context for
the next burst. The pending events and the context are the only ingest state that is
not derivable from the stores, so they are what this step snapshots.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from bytewax.operators import StatefulLogic

from dataflows.ingest.items import Incoming, TurnBatch
from schemas.events import Message

IDLE_TTL = timedelta(minutes=30)  # context of a silent session is dropped after this


def window_key(item: Incoming) -> str:
    e = item.event
    return f"{e.user_id}|{e.app_id or ''}|{e.session_id or ''}|{e.level}|{e.ownership}"


@dataclass
class WindowState:
    pending: list[Incoming] = field(default_factory=list)
    context: list[Message] = field(default_factory=list)


class SessionWindow(StatefulLogic[Incoming, TurnBatch, WindowState]):
    def __init__(self, state: WindowState | None, gap_s: float, max_turns: int, context_turns: int):
        self.state = state or WindowState()
        self.gap = timedelta(seconds=gap_s)
        self.max_turns = max_turns
        self.context_turns = context_turns
        now = datetime.now(UTC)
        self.deadline = now + (self.gap if self.state.pending else IDLE_TTL)

    def on_item(self, value: Incoming) -> tuple[list[TurnBatch], bool]:
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

    def snapshot(self) -> WindowState:
        return WindowState(list(self.state.pending), list(self.state.context))

    def _flush(self) -> TurnBatch:
        batch = TurnBatch(self.state.pending, list(self.state.context))
        turns = [m for i in self.state.pending for m in i.event.messages]
        keep = self.context_turns
        self.state.context = (self.state.context + turns)[-keep:] if keep else []
        self.state.pending = []
        self.deadline = datetime.now(UTC) + IDLE_TTL
        return batch
