"""RealMem for ``bench quality --dataset realmem`` (``shared/datasets/realmem``).

Each persona file (``dataset/<Persona>_dialogues_256k.json``) is one user; its sessions
go in, in time order, as one ``memory.conversations`` event each: the user's turns with
role ``user`` and ``name`` the persona's name, the assistant's with role ``assistant``
and name "Assistant", ``ts`` the session's ``current_time`` (a date: noon UTC, one
minute a turn). A turn with ``is_query`` is a question, asked once exactly the sessions
before its own are in; its type is the turn's ``category_name``. Its evidence: the
``memory_used`` of the assistant turn after it, each matched to an ``extracted_memory``
item by ``session_uuid`` + ``content``, whose ``source_turn`` points at the evidence turn
(1-based in most files, 0-based in some: the turn whose text starts like the item's
``source_content_snapshot`` decides; otherwise 1-based). Evidence outside the sessions
before the question is dropped (the question too when none is left). ``limit``: the first
N sessions of every persona.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from ops.bench.quality.baselines import Doc
from ops.bench.quality.data import Question
from ops.bench.quality.real import DatasetError, Replay, need, query_text

FIRST_USER_ID = 8_000_000
ASSISTANT = "Assistant"


def _json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise DatasetError(f"{path}: not readable JSON ({exc})") from exc


def _date(text: str, where: str) -> datetime:
    try:
        day = datetime.strptime(str(text)[:10], "%Y-%m-%d")
    except ValueError as exc:
        raise DatasetError(f"{where}: current_time {text!r} does not start with a date") from exc
    return day.replace(hour=12, tzinfo=UTC)


def _source(turns: list[dict], item: dict) -> int:
    """The index of an extracted memory's evidence turn (see the module docstring)."""
    at = int(item.get("source_turn", 0))
    snap = str(item.get("source_content_snapshot") or "")[:60]
    for j in (at - 1, at, at + 1):
        if snap and 0 <= j < len(turns) and str(turns[j].get("content", ""))[:60] == snap:
            return j
    return min(max(0, at - 1), len(turns) - 1)


def _key(content: Any) -> str:
    return content if isinstance(content, str) else json.dumps(content, sort_keys=True)


def load(root: Path, limit: int | None = None, app_id: str | None = "bench") -> Replay:
    folder = need(root / "realmem" / "dataset", "RealMem (realmem/dataset)")
    files = sorted(folder.glob("*_dialogues_256k.json"))
    if not files:
        raise DatasetError(f"no *_dialogues_256k.json persona file in {folder}")
    data = Replay("realmem", "en", {}, {}, [], {})
    for n, path in enumerate(files):
        _persona(data, FIRST_USER_ID + n, _json(path), path, limit, app_id)
    if not data.questions:
        raise DatasetError(f"no question with evidence in {folder} (limit {limit})")
    return data


def _persona(
    data: Replay, uid: int, raw: dict, path: Path, limit: int | None, app_id: str | None
) -> None:
    if not isinstance(raw, dict) or not isinstance(raw.get("dialogues"), list):
        raise DatasetError(f"{path}: no 'dialogues' list")
    meta = raw.get("_metadata") or {}
    name = str(meta.get("person_name") or path.name.split("_dialogues")[0]).replace("_", " ")
    sessions = sorted(raw["dialogues"], key=lambda s: str(s.get("current_time", "")))
    sessions = sessions[:limit] if limit else sessions
    docs: list[Doc] = []
    events: list[dict[str, Any]] = []
    data.users[uid] = name
    where: dict[str, int] = {}  # session_uuid -> its position
    memory: dict[tuple[str, str], str] = {}  # (session_uuid, content) -> evidence msg_id
    for k, s in enumerate(sessions):
        sid, turns = str(s.get("session_uuid") or f"s{k}"), s.get("dialogue_turns") or []
        at = _date(s.get("current_time", ""), f"{path.name} session {k}")
        ids = [f"{sid}-t{j:02d}" for j in range(len(turns))]
        for j, turn in enumerate(turns):
            if turn.get("is_query") and k > 0:
                _question(data, uid, k, len(docs), turn, turns[j + 1 : j + 2], where, memory)
        messages = []
        for j, turn in enumerate(turns):
            text = str(turn.get("content") or "").strip()
            if not text:
                continue
            user = turn.get("speaker") != ASSISTANT
            who = name if user else ASSISTANT
            messages.append({"role": "user" if user else "assistant", "name": who,
                             "content": text, "msg_id": ids[j],
                             "ts": (at + timedelta(minutes=j)).isoformat()})  # fmt: skip
            docs.append(Doc((ids[j],), f"{who}: {text}", text))
        for item in s.get("extracted_memory") or []:
            if turns:
                memory[(sid, _key(item.get("content")))] = ids[_source(turns, item)]
        where[sid] = k
        if messages:
            events.append({"task_id": f"realmem-{uid}-s{k:03d}", "user_id": uid,
                           "app_id": app_id, "session_id": f"s{k:03d}",
                           "ts": at.isoformat(), "messages": messages})  # fmt: skip
        else:
            events.append({})  # keeps positions: nothing to send
    data.docs[uid], data.sessions[uid] = docs, events


def _question(
    data: Replay, uid: int, k: int, seen: int, turn: dict, reply: list[dict],
    where: dict[str, int], memory: dict[tuple[str, str], str],
) -> None:  # fmt: skip
    """The question of a query turn in session ``k``, when evidence from an earlier
    session (one already in ``where``) backs it."""
    used = (reply[0].get("memory_used") if reply else None) or []
    evidence = []
    for u in used:
        sid = str(u.get("session_uuid"))
        msg = memory.get((sid, _key(u.get("content"))))
        if msg and where.get(sid, k) < k and msg not in evidence:
            evidence.append(msg)
    query = query_text(str(turn.get("content") or ""))
    if not evidence or not query:
        return
    qid = f"{uid}-{turn.get('query_id') or len(data.questions)}-{len(data.questions)}"
    kind = str(turn.get("category_name") or "query").lower().replace("-", " ")
    data.questions.append(Question(qid, uid, "en", kind, query, tuple(evidence)))
    data.after[qid], data.visible[qid] = k, seen
