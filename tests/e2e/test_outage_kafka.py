"""Stop the Kafka broker in the middle of an ingest, start it again; every fact once.

The node runs on a broker and a Redis of its own (tests.helpers.private_node). While the
broker is down the node is asked to add, add_structured, recall and read a task: each
answer must be true — 0 and the write lands, or 50301 and a resend with the same
request_id after the recovery gives exactly one memory — never a 500; an add answers
50301 within the write timeout (it is accepted only once Kafka acknowledged it). The producers
(the platform's and the node's) hold what they queued until the broker is back.
"""

from __future__ import annotations

import pytest

from tests.helpers.private_node import outage_mid_ingest, private_node, stored_counts

pytestmark = pytest.mark.e2e


def test_kafka_stopped_mid_ingest_then_restarted_stores_every_fact_once(tmp_path) -> None:
    with private_node(tmp_path) as node:
        load, calls, users = outage_mid_ingest(node, node.kafka_down, node.kafka_up)
        counts = stored_counts(node, users)
    codes = calls.codes()
    # recall and task reads need no broker; an add is accepted only once Kafka has it, so
    # it answers 50301 within the write timeout (10 s) and its resend lands (``landed``)
    assert codes["recall"] == codes["tasks"] == 0, codes
    assert codes["add"] == 50301 and calls.add_s < 10.0 + 1.0, (codes, calls.add_s)
    facts = len(load.tasks) + 2  # + the add and the add_structured of the outage
    assert counts == dict.fromkeys(("active", "memories", "hashes", "adds", "vectors"), facts)
