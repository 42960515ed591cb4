"""Incidents in words: the rule and KIP each one names, and what the words say should follow."""

from __future__ import annotations

import dataclasses

import pytest
from report_story import fetch_unknown, produce_fenced, stale_controller, stop_fenced

from kafka_epochs.report.explain import explain, rule_of
from kafka_epochs.report.model import DISAGREEMENT, FENCED_RESPONSE


@pytest.mark.parametrize(
    ("api", "rule"),
    [("Produce", "KIP-359"), ("Fetch", "KIP-320"), ("ListOffsets", "KIP-320"), ("OffsetForLeaderEpoch", "KIP-320")],
)
def test_client_requests_are_judged_by_their_kip(api: str, rule: str) -> None:
    assert rule_of(dataclasses.replace(produce_fenced(), api=api)) == rule


def test_controller_requests_are_judged_by_kip_570_or_the_controller_epoch() -> None:
    assert rule_of(stop_fenced()) == "KIP-570"
    assert rule_of(stale_controller()) == "controller epoch"


def test_unknown_epoch_says_the_broker_is_behind() -> None:
    text = explain(fetch_unknown())
    assert text == (
        "Fetch v12 from 10.0.0.1:50001 carried leader epoch 4 for orders-1, newer than the leader's 3 as far as "
        "the capture shows → UNKNOWN_LEADER_EPOCH (KIP-320): the broker has not caught up with the client's "
        "metadata; the client retries after a backoff."
    )


def test_a_deleting_stop_replica_says_what_was_not_done() -> None:
    assert "instead of stopping the replica and deleted the partition." in explain(stop_fenced())
    kept = dataclasses.replace(stop_fenced(), delete=False)
    assert "instead of stopping the replica." in explain(kept)


def test_a_disagreement_says_the_verdict_is_not_trusted() -> None:
    text = explain(dataclasses.replace(produce_fenced(), kind=DISAGREEMENT, broker_error=None))
    assert text.startswith("The audit judged Produce v12 from 10.0.0.1:50001 (orders-0, epoch 4, leader's 5)")
    assert "but the broker answered without an epoch error" in text and "not trusted" in text


def test_a_fenced_response_names_who_answered_what() -> None:
    answer = dataclasses.replace(produce_fenced(), kind=FENCED_RESPONSE, path="responses[0].error_code")
    assert explain(answer) == (
        "The broker 10.0.0.10:9092 answered Produce (correlation id 4) from 10.0.0.1:50001 with "
        "FENCED_LEADER_EPOCH for orders-0 at responses[0].error_code (KIP-359): the client's epoch was older "
        "than the leader's; it must refresh its metadata."
    )
