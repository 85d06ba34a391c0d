"""What a purge or a scoped delete leaves behind in the flow: nothing
(docs/architecture.md#purge-fences).

Turns sent before a delete may still wait in the session window (or in a batch between
steps) when the delete reaches the keyed writer; stored after it, they would outlive the
delete the caller was promised. The writer keeps, per user, a :class:`Fences`: the time
(the command's Kafka timestamp) of the last whole-user purge, and of the last scoped
delete (``purge`` or ``batch_delete`` with a ``scope``) per scope and access
(``core.delete_scope``, the rule that selected the memories). It is the ``write`` step's
state, so it survives a restart through the recovery snapshots. A turn sent at or
before a fence that names it is refused: its task ends ``failed`` (40401 and the reason),
nothing of it is stored. A turn with no Kafka timestamp cannot be placed and is kept;
deletes by memory id fence nothing (a turn's memories have no id the caller knew).

Bounded: one time per user and one per distinct scope; a scope fence leaves when the
whole-user fence covers it, when it is older than the conversations topic keeps a turn
(plus a day: no turn that old can still arrive), and, past ``MAX_SCOPES``, the oldest
first (docs/architecture.md#purge-fences).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from datetime import UTC, datetime

from pydantic import ValidationError

from core.delete_scope import DeleteScope
from dataflows.ingest.items import Extracted, Incoming, IncomingCommand
from memstream.schemas.errors import ErrorCode
from memstream.schemas.payloads import DeletePayload
from sinks.tasks import TaskResult

REASON = "the user was purged after this turn was sent: it was not stored"
SCOPE_REASON = (
    "the memories of this turn's scope were deleted (purge or batch_delete) after it was "
    "sent: it was not stored"
)
MAX_SCOPES = 1000  # scope fences kept per user, at most
KEEP_PAST_RETENTION_S = 86_400.0  # a scope fence outlives the conversations retention by


@dataclass
class Fences:
    """One user's fences: epoch seconds, each the time of the last delete it stands for."""

    user: float | None = None  # the last whole-user purge
    scopes: dict[DeleteScope, float] = field(default_factory=dict)

    @classmethod
    def of(cls, state: Fences | float | None) -> Fences:
        """The state as stored: a :class:`Fences`, or (a snapshot of an older version) a
        bare float, the whole-user fence; None: no fence yet."""
        if isinstance(state, Fences):
            return state
        return cls(user=None if state is None else float(state))

    def stored(self) -> Fences | None:
        """What the step keeps: None when there is no fence (the key's state is dropped)."""
        return self if self.user is not None or self.scopes else None

    def note(self, item: IncomingCommand, keep_s: float | None = None) -> None:
        """Fence after ``item``, a command applied without error; ``keep_s``: how long a
        scope fence is kept (the conversations retention), None for ever."""
        at = purged_at(item)
        if at is not None:
            self.user = max(self.user or 0.0, at)
            self.scopes = {k: t for k, t in self.scopes.items() if t > self.user}
            return
        fenced_scope = scope_of(item)
        if fenced_scope is None:
            return
        scope, at = fenced_scope
        if self.user is not None and at <= self.user:
            return  # the whole-user fence refuses all it would
        self.scopes[scope] = max(self.scopes.get(scope, 0.0), at)
        if keep_s is not None:
            oldest = at - keep_s - KEEP_PAST_RETENTION_S
            self.scopes = {k: t for k, t in self.scopes.items() if t >= oldest}
        if len(self.scopes) > MAX_SCOPES:
            newest = sorted(self.scopes.items(), key=lambda kv: kv[1])[-MAX_SCOPES:]
            self.scopes = dict(newest)

    def refuses(self, turn: Incoming) -> str | None:
        """The reason ``turn`` is refused, or None when no fence names it."""
        sent = turn.source.ts_s
        if sent <= 0:
            return None
        if self.user is not None and sent <= self.user:
            return REASON
        e = turn.event
        level = str(e.level)
        session = e.session_id if level == "SESSION" else None  # as the writer stores it
        for scope, at in self.scopes.items():
            if sent <= at and scope.matches(e.app_id, level, session):
                return SCOPE_REASON
        return None


def purged_at(item: IncomingCommand) -> float | None:
    """The time (epoch seconds) of a whole-user purge command, None for any other."""
    p = _delete_payload(item)
    if p is None or not p.shred:
        return None
    return _sent(item)


def scope_of(item: IncomingCommand) -> tuple[DeleteScope, float] | None:
    """The scope and time of a scoped delete (``purge``/``batch_delete`` with a
    ``scope``), None for any other command."""
    p = _delete_payload(item)
    if p is None or p.shred or p.memory_ids or "scope" not in p.model_fields_set:
        return None
    return DeleteScope.of(p), _sent(item)


def _delete_payload(item: IncomingCommand) -> DeletePayload | None:
    """A ``delete`` command's payload (None for any other op, or one the writer refused)."""
    if item.command.op != "delete":
        return None
    try:
        return DeletePayload.model_validate(item.command.payload)
    except ValidationError:
        return None


def _sent(item: IncomingCommand) -> float:
    if item.source.ts_s > 0:
        return item.source.ts_s
    at = item.command.at or datetime.now(UTC)
    return at.timestamp()


def fenced(item: Extracted, fence: Fences | float | None) -> tuple[Extracted, list[TaskResult]]:
    """``item`` without the turns a fence refuses, and their failed tasks."""
    fences = Fences.of(fence)
    if fences.stored() is None:
        return item, []
    gone = {i.task_id: why for i in item.tasks if (why := fences.refuses(i)) is not None}
    if not gone:
        return item, []
    kept = dataclasses.replace(
        item,
        tasks=[i for i in item.tasks if i.task_id not in gone],
        facts=[f for f in item.facts if f.task_id not in gone],
        failures=[b for b in item.failures if b.task_id not in gone],
    )
    failed = [
        TaskResult(
            task_id,
            item.user_id,
            failed=True,
            code=int(ErrorCode.NOT_FOUND),
            reason=gone[task_id],
            tenant_id=item.tenant_id,
        )
        for task_id in sorted(gone)
    ]
    return kept, failed
