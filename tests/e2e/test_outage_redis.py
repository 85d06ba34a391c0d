"""Stop Redis in the middle of an ingest, start it again; every fact once, tasks all done.

Redis holds task statuses, switches, command results and the reconcile queue. The
ingest records ``processing`` and ``done`` there, so an outage fails the flow, which the
runner restarts (hot cache dropped) until Redis answers, resuming from its snapshot;
the replayed batches write nothing twice and the statuses they record say what each
task did. While Redis is down the node is asked to add, add_structured, recall and read
a task: each answer must be true — 0 and the write lands, or 50301 and a resend with
the same request_id after the recovery gives exactly one memory — never a 500.
"""

from __future__ import annotations

import pytest

from tests.helpers.private_node import outage_mid_ingest, private_node, stored_counts

pytestmark = pytest.mark.e2e


def test_redis_stopped_mid_ingest_then_restarted_stores_every_fact_once(tmp_path) -> None:
    with private_node(tmp_path) as node:
        load, calls, users = outage_mid_ingest(node, node.redis_down, node.redis_up)
        codes = calls.codes()
        counts = stored_counts(node, users)
    # an add's status cannot be recorded, nor a task's read: said, with a request_id
    assert codes["add"] == codes["tasks"] == 50301, codes
    facts = len(load.tasks) + 2  # + the add (resent) and the add_structured of the outage
    assert counts == dict.fromkeys(("active", "memories", "hashes", "adds", "vectors"), facts)
