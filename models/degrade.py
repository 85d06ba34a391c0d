"""Evolution that never stops ingest: LLM down or confused → append + hash dedup.

A degrade switch (docs/architecture.md#dedup-and-evolution): when the evolution LLM is
unavailable or times out, the fact is appended (ADD) and the content-hash dedup step
keeps exact repeats out. The result says so, so the dataflow can record the reason in
the changelog and count it in metrics.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from core import metrics
from core.logs import log_fields
from core.seams import LLMLike
from memstream.schemas.enums import OpType
from memstream.schemas.facts import Decision, DecisionResult, Fact, SimilarLike
from models.errors import ModelError

log = logging.getLogger(__name__)


def decide_or_degrade(
    llm: LLMLike, fact: str | Fact, similar: Sequence[SimilarLike]
) -> DecisionResult:
    """``llm.decide``, or a single ADD with ``degraded=True`` when the model fails.

    Any ModelError degrades (unavailable, timeout, malformed, invented id, even a bad
    configuration): writes must go on, and the reason is kept for whoever looks later.
    """
    try:
        with metrics.llm_call(llm, "decide"):
            return DecisionResult(decisions=llm.decide(fact, similar))
    except ModelError as exc:
        metrics.DEGRADED_DECIDE.inc()
        reason = f"{type(exc).__name__}: {exc}"
        log.warning(
            "evolution degraded to append",
            extra=log_fields(llm=llm.name, error=type(exc).__name__),
        )
        text = fact.text if isinstance(fact, Fact) else fact
        return DecisionResult(
            decisions=[Decision(op=OpType.ADD, text=text)], degraded=True, reason=reason
        )
