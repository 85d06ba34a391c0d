"""`memstream extract`: show what the configured provider extracts from one event.

Reads a conversation event (the JSON value of ``memory.conversations``,
docs/architecture.md#kafka-topics) on stdin and prints one JSON object per fact, with the
msg_id it came from — the quickest way to check a prompt, a model or the rules on real
transcripts without a running stack. Exit codes: 0 ok, 1 the model failed, 2 bad input or
configuration.
"""

from __future__ import annotations

import argparse
import json
import sys
from datetime import date

from pydantic import ValidationError

from core.settings import SettingsError, get_settings
from dataflows.ingest.extract import conversation_date, dated_messages
from memstream.schemas.events import ConversationEvent
from models.errors import ModelConfigError, ModelError
from models.factory import build_llm


def add_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register ``extract`` on the main CLI's subparsers (sets ``func=run``)."""
    p = subparsers.add_parser(
        "extract",
        help="print the facts the configured LLM provider extracts from an event on stdin",
        description=__doc__.splitlines()[0],
    )
    p.add_argument(
        "--today",
        type=_iso_date,
        default=None,
        help="date relative expressions of turns without a ts resolve against "
        "(YYYY-MM-DD); default: the conversation's date (its latest ts), else today",
    )
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    raw = sys.stdin.read()
    try:
        event = ConversationEvent.model_validate_json(raw)
    except ValidationError as exc:
        print(f"extract: bad input: not a conversation event: {_first_error(exc)}", file=sys.stderr)
        return 2
    messages = dated_messages(event)  # as the ingest flow gives them to the provider
    today = args.today or conversation_date(messages, date.today)
    try:
        llm = build_llm(get_settings())
    except (SettingsError, ModelConfigError) as exc:
        print(f"extract: {exc}", file=sys.stderr)
        return 2
    try:
        facts = llm.extract_facts(messages, event.ownership, event.strategy, today)
    except ModelError as exc:
        print(f"extract: {llm.name} failed: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    finally:
        llm.close()
    for fact in facts:
        print(json.dumps(fact.model_dump(mode="json"), ensure_ascii=False))
    return 0


def _iso_date(value: str) -> date:
    try:
        return date.fromisoformat(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r} is not a date (YYYY-MM-DD)") from None


def _first_error(exc: ValidationError) -> str:
    err = exc.errors()[0]
    where = ".".join(str(p) for p in err["loc"]) or "event"
    return f"{where}: {err['msg']}"
