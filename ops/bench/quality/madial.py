"""MADial-Bench for ``bench quality --dataset madial-zh|madial-en``
(``shared/datasets/madial-bench/data/{ch,en}``).

Memories (JSON lines ``{"<id>": {"time", "scene", "emotion", "event", "user-id"}}``) are
each user's dated events: memstream stores each one's ``event`` text with add_structured
(its date and dataset id as custom tags; the API takes no time for it), in date order;
the baselines rank the same texts. A dialogue (JSON lines: ``dialogue`` lines
``<Name>:"..."``, ``test-turn``, ``relevant-id``, ``user-id``) is one question: the
dialogue up to its first test turn (the turn where the assistant should bring a memory
up), as ``Name: text`` lines; its evidence the ``relevant-id`` memories. The English
memories carry no ``user-id``: a memory's user is then the one whose dialogues cite it,
and a memory no dialogue cites belongs to every user (a distractor for all). The data
has no question types: every question is of type ``dialogue``. ``limit``: the first N
dialogues (and the memories of their users).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from ops.bench.quality.baselines import Doc
from ops.bench.quality.data import Question
from ops.bench.quality.real import DatasetError, Replay, need, query_text

FIRST_USER_ID = 9_000_000
FOLDERS = {"zh": "ch", "en": "en"}
LINE = re.compile(r'^\s*<([^>]+)>\s*:\s*"?(.*?)"?\s*$', re.S)
TYPE = "dialogue"


def _lines(path: Path) -> list[dict[str, Any]]:
    out = []
    for n, line in enumerate(need(path, "MADial-Bench file").read_text("utf-8").splitlines()):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except ValueError as exc:
            raise DatasetError(f"{path}:{n + 1}: not JSON ({exc})") from exc
        if not isinstance(row, dict):
            raise DatasetError(f"{path}:{n + 1}: not a JSON object")
        out.append(row)
    return out


def _turn(line: str) -> str | None:
    """``<Bart>:"text"`` as ``Bart: text``; the ``<BOD>``/``<EOD>`` marks as None."""
    m = LINE.match(line.strip())
    if not m:
        return line.strip() or None
    who, text = m.group(1), m.group(2).strip()
    return f"{who}: {text}" if text else None


def load(root: Path, lang: str, limit: int | None = None) -> Replay:
    folder = need(root / "madial-bench" / "data" / FOLDERS[lang], f"MADial-Bench ({lang})")
    stem = f"MADial-Bench-{lang}"
    memories: dict[str, dict] = {}
    for row in _lines(folder / f"{stem}-memory.json"):
        for mid, m in row.items():
            if not isinstance(m, dict) or not str(m.get("event") or "").strip():
                raise DatasetError(f"{stem}-memory.json: memory {mid!r} has no event text")
            memories[str(mid)] = m
    dialogues = _lines(folder / f"{stem}-dialogue.json")
    dialogues = dialogues[:limit] if limit else dialogues
    data = Replay(f"madial-{lang}", lang, {}, {}, [], {})
    cited: dict[str, set[int]] = {}
    for n, d in enumerate(dialogues):
        try:
            user, turn = int(d["user-id"]), int(d["test-turn"][0])
            relevant = [str(r) for r in d["relevant-id"]]
            lines = [t for t in (_turn(x) for x in d["dialogue"][1:turn]) if t]
        except (KeyError, IndexError, TypeError, ValueError) as exc:
            raise DatasetError(f"{stem}-dialogue.json: dialogue {n} malformed ({exc!r})") from exc
        missing = [r for r in relevant if r not in memories]
        if missing:
            raise DatasetError(f"{stem}-dialogue.json: dialogue {n} cites unknown {missing}")
        uid = FIRST_USER_ID + user
        data.users.setdefault(uid, f"user {user}")
        data.docs.setdefault(uid, [])
        for r in relevant:
            cited.setdefault(r, set()).add(uid)
        qid = f"{data.name}-{d.get('id', n)}"
        data.questions.append(Question(qid, uid, lang, TYPE, query_text("\n".join(lines)),
                                       tuple(dict.fromkeys(relevant))))  # fmt: skip
        data.visible[qid] = None
    for mid, m in sorted(memories.items(), key=lambda kv: (str(kv[1].get("time", "")), kv[0])):
        owner = m.get("user-id")
        owners = {FIRST_USER_ID + int(owner)} if owner is not None else cited.get(mid)
        for uid in sorted(owners or data.users):
            if uid in data.users:
                text = str(m["event"]).strip()
                data.memories.setdefault(uid, []).append((mid, text, str(m.get("time", ""))))
                data.docs.setdefault(uid, []).append(Doc((mid,), text, text))
    if not data.questions:
        raise DatasetError(f"no dialogue in {folder}")
    return data
