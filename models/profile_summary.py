"""The profile's LLM summary, or the plan: never a profile that states what its
memories do not (docs/architecture.md#the-profile).

The writer plans the profile by rules (:func:`core.profile.plan_profile`) and then
asks the configured LLM to say the plan again as fewer, tighter statements
(``summarize_profile``). The answer replaces the plan only when
:func:`core.profile_summary.check_summary` accepts it: every statement cites planned
items, states no name, number or date they do not hold, and all fit the budget whole.
Otherwise the plan is the profile — a model that is down, slow, malformed or inventive
included — as consolidation keeps its plan's text (``dataflows.ingest.consolidate``).
The rules provider answers with the plan itself; that is no degradation.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from core import metrics
from core.logs import log_fields
from core.profile import ProfileItem
from core.profile_summary import check_summary
from core.seams import LLMLike
from models.errors import ModelError

log = logging.getLogger(__name__)

PLAN = "plan"  # ``how`` when the plan is the profile and nothing went wrong


def summary_or_plan(
    llm: LLMLike, planned: Sequence[ProfileItem], max_chars: int
) -> tuple[list[ProfileItem], str]:
    """The profile's items and how they were made, for the change row's reason:
    ``"plan"``; ``"summarized by <llm name>"``; ``"plan, <Error>: <why>"`` when the
    model failed; ``"plan, summary refused: <why>"`` when its answer was not grounded.

    Fewer than two planned items need no summary: no call. Any ModelError degrades
    (counted in ``memstream_llm_degraded_total{task="profile"}``): a profile must be
    written whatever the model does."""
    plan = list(planned)
    if len(plan) < 2:
        return plan, PLAN
    try:
        with metrics.llm_call(llm, "profile"):
            answer = llm.summarize_profile([p.text for p in plan], max_chars)
    except ModelError as exc:
        metrics.DEGRADED_PROFILE.inc()
        log.warning(
            "profile summary degraded to the plan", extra=log_fields(error=type(exc).__name__)
        )
        return plan, f"{PLAN}, {type(exc).__name__}: {str(exc)[:120]}"
    if _is_plan(answer, plan):
        return plan, PLAN
    checked = check_summary(plan, answer, max_chars)
    if checked.items is None:
        metrics.DEGRADED_PROFILE.inc()
        log.warning("profile summary refused", extra=log_fields(reason=checked.reason))
        return plan, f"{PLAN}, summary refused: {checked.reason}"
    return checked.items, f"summarized by {llm.name}"


def _is_plan(answer: Sequence[tuple[str, Sequence[int]]], plan: list[ProfileItem]) -> bool:
    """Does ``answer`` say the plan unchanged, item by item (the rules' answer)?"""
    return len(answer) == len(plan) and all(
        text.strip() == p.text and list(cited) == [i]
        for i, ((text, cited), p) in enumerate(zip(answer, plan, strict=True))
    )
