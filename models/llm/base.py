"""The LLM interface, and the shared behaviour of every prompt-driven provider.

The dataflow calls ``extract_facts``, ``decide``, ``summarize`` and ``summarize_profile``
through the seam ``core.seams.LLMLike``, the one interface type; ``LLM`` implements it
with what every provider shares.
``PromptedLLM`` builds the prompts, parses the JSON answer, re-asks once when the answer
is malformed (showing the model its mistake) and then raises MalformedOutput — never an
empty list pretending success. A provider implements one hook: ``_complete(messages) -> str``,
raising LLMUnavailable/LLMTimeout itself when it cannot answer.

Error messages (they become task reasons, DLQ headers and log lines) say what was wrong
with an answer, never what it said: model output may quote memory content.
"""

from __future__ import annotations

import json
import re
from abc import abstractmethod
from collections.abc import Callable, Sequence
from datetime import date
from typing import TypeVar

from pydantic import ValidationError

from core.compression import merged_text
from core.consolidation import bounded_join
from core.seams import LLMLike
from memstream.schemas.enums import OpType, Ownership
from memstream.schemas.events import Message, Strategy
from memstream.schemas.facts import ChatMessage, Decision, Fact, SimilarLike, as_similar
from memstream.schemas.json_types import JsonObject
from models.errors import InventedId, MalformedOutput
from models.prompts import consolidate as consolidate_prompt
from models.prompts import decide as decide_prompt
from models.prompts import extract_facts as extract_prompt
from models.prompts import profile_summary as profile_prompt

T = TypeVar("T")

_FENCE = re.compile(r"^```(?:json)?\s*|\s*```$", re.IGNORECASE)
_THINK = re.compile(r"<think>.*?</think>", re.DOTALL | re.IGNORECASE)


class LLM(LLMLike):
    """The shared behaviour of every provider of ``core.seams.LLMLike``: the
    summary's rules floor and a no-op ``close``. A provider gives ``name``,
    ``extract_facts`` and ``decide`` (``PromptedLLM`` gives the last two from prompts)."""

    uses_context: bool = True

    def summarize(self, texts: Sequence[str], max_chars: int) -> str:
        """ONE memory saying what ``texts`` (memories in time order) say, shorter.

        Consolidation before eviction
        (docs/architecture.md#consolidation-and-paged-out-memories). This default — the
        ``rules`` provider's behaviour and the floor of every provider — is
        :func:`core.compression.merged_text`: the same fact repeated becomes its most
        complete telling, the same frame with other values the frame with the values listed.
        Anything else is refused (:class:`MalformedOutput`): related statements are never
        joined. One text is returned as it is (clipped to ``max_chars``).
        """
        if len([t for t in texts if t.strip()]) < 2:
            return bounded_join(texts, max_chars)
        made = merged_text(texts, max_chars)
        if made is None:
            raise MalformedOutput(
                f"{len(texts)} memories neither repeat one fact nor share one frame within "
                f"{max_chars} chars: not merged"
            )
        return made[0]

    def summarize_profile(
        self, items: Sequence[str], max_chars: int
    ) -> list[tuple[str, list[int]]]:
        """The planned profile ``items`` said again as fewer statements, each with the
        indices (from 0) of the items it restates (docs/architecture.md#the-profile).

        This default — the ``rules`` provider's answer — is the plan unchanged: each
        item is its own statement. Rules have nothing to add to their own plan, and
        saying so is no failure (raising would count every rules profile as a degraded
        LLM call and log a warning per write); the caller sees the plan come back and
        keeps it (:func:`models.profile_summary.summary_or_plan`)."""
        return [(text, [i]) for i, text in enumerate(items)]

    def close(self) -> None:
        """Release clients or memory held by the provider (no-op by default)."""
        return None


def parse_json_object(raw: str) -> JsonObject:
    """The JSON object in a model's answer, tolerating code fences and <think> blocks."""
    text = _FENCE.sub("", _THINK.sub("", raw).strip()).strip()
    try:
        obj = json.loads(text)
    except json.JSONDecodeError:
        start, end = text.find("{"), text.rfind("}")
        if start < 0 or end <= start:
            raise MalformedOutput(f"no JSON object in an answer of {len(raw)} chars") from None
        try:
            obj = json.loads(text[start : end + 1])
        except json.JSONDecodeError as exc:
            raise MalformedOutput(f"the answer is not valid JSON: {exc}") from None
    if not isinstance(obj, dict):
        raise MalformedOutput("the answer is JSON but not an object")
    return obj


class PromptedLLM(LLM):
    """Prompts + JSON parsing + one re-ask; subclasses only talk to their model."""

    @abstractmethod
    def _complete(self, messages: list[ChatMessage]) -> str:
        """The model's raw answer to ``messages`` (expected to be a JSON object)."""

    def extract_facts(
        self,
        messages: Sequence[Message],
        ownership: Ownership | None,
        strategy: Strategy | None,
        today: date,
    ) -> list[Fact]:
        ctx = extract_prompt.build_context(messages, ownership, strategy, today)
        if not ctx.turns:
            return []  # nothing this variant may read: no call, honestly empty
        return self._ask(
            extract_prompt.to_messages(ctx),
            lambda obj: extract_prompt.to_facts(obj, ctx, messages),
        )

    def decide(self, new_fact: str | Fact, similar: Sequence[SimilarLike]) -> list[Decision]:
        text = new_fact.text if isinstance(new_fact, Fact) else new_fact
        candidates = as_similar(similar)
        if not candidates:
            return [Decision(op=OpType.ADD, text=text)]  # nothing to compare with
        ctx = decide_prompt.build_context(text, candidates)
        return self._ask(
            decide_prompt.to_messages(ctx), lambda obj: decide_prompt.to_decisions(obj, ctx)
        )

    def summarize(self, texts: Sequence[str], max_chars: int) -> str:
        ctx = consolidate_prompt.build_context(texts, max_chars)
        if len(ctx.memories) < 2:
            return bounded_join(ctx.memories, max_chars)  # nothing to consolidate: no call
        return self._ask(
            consolidate_prompt.to_messages(ctx),
            lambda obj: consolidate_prompt.to_summary(obj, ctx),
        )

    def summarize_profile(
        self, items: Sequence[str], max_chars: int
    ) -> list[tuple[str, list[int]]]:
        ctx = profile_prompt.build_context(items, max_chars)
        if len(ctx.items) < 2:
            return super().summarize_profile(ctx.items, max_chars)  # nothing to join: no call
        return self._ask(
            profile_prompt.to_messages(ctx),
            lambda obj: profile_prompt.to_statements(obj, ctx),
        )

    def _ask(self, messages: list[ChatMessage], convert: Callable[[JsonObject], T]) -> T:
        for attempt in (1, 2):
            raw = ""
            try:
                raw = self._complete(messages)
                return convert(parse_json_object(raw))
            except (MalformedOutput, ValidationError) as exc:
                reason = _reason(exc)
                if attempt == 2:
                    kind = InventedId if isinstance(exc, InventedId) else MalformedOutput
                    raise kind(f"{self.name}: unusable answer after a re-ask: {reason}") from exc
                shown = [{"role": "assistant", "content": raw[:4000]}] if raw.strip() else []
                messages = [
                    *messages,
                    *shown,
                    {
                        "role": "user",
                        "content": (
                            f"That answer could not be used: {reason}. Answer again with only "
                            "the JSON object in the requested shape, using only the given ids."
                        ),
                    },
                ]
        raise AssertionError("unreachable")  # pragma: no cover


def _reason(exc: Exception) -> str:
    if isinstance(exc, ValidationError):
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        return f"{where}: {first['msg']}" if where else first["msg"]
    return str(exc)
