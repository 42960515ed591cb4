"""Produce through the replica model: KIP-359's leader-epoch check, then leadership."""

from __future__ import annotations

import pytest

from kafka_epochs import Protocol
from kafka_epochs.epochs import ClientAction, Errors, ReplicaManager, client_action

from .builders import TOPIC_A, State, Stop, leader_and_isr, over_the_wire, produce, produce_errors, stop_replica


def broker() -> ReplicaManager:
    """Broker 1: leader of orders-0 (epoch 5), follower of orders-1 (epoch 3), orders-2 stopped."""
    model = ReplicaManager(1)
    model.handle_leader_and_isr(
        leader_and_isr(
            5,
            State("orders", 0, 5, topic_id=TOPIC_A),
            State("orders", 1, 3, leader=2, topic_id=TOPIC_A),
            State("orders", 2, 1, topic_id=TOPIC_A),
        ),
        5,
        now_ms=0,
    )
    model.handle_stop_replica(stop_replica(3, Stop("orders", 2, 1)), 3)
    model.load_local_log("orders", 3, TOPIC_A)
    model.mark_offline("orders", 3)
    return model


@pytest.mark.parametrize(
    ("version", "partition", "epoch", "error"),
    [
        pytest.param(12, 0, 5, Errors.NONE, id="KIP-359: the leader's epoch -> NONE"),
        pytest.param(12, 0, 4, Errors.FENCED_LEADER_EPOCH, id="KIP-359: older epoch -> FENCED_LEADER_EPOCH"),
        pytest.param(12, 0, 6, Errors.UNKNOWN_LEADER_EPOCH, id="KIP-359: newer epoch -> UNKNOWN_LEADER_EPOCH"),
        pytest.param(12, 0, -1, Errors.NONE, id="KIP-359: -1 skips the check"),
        pytest.param(11, 0, 4, Errors.NONE, id="KIP-359: older versions carry no epoch and skip the check"),
        pytest.param(3, 0, 99, Errors.NONE, id="KIP-359: v3 as well"),
        pytest.param(12, 1, 3, Errors.NOT_LEADER_OR_FOLLOWER, id="KIP-359: a follower refuses the write"),
        pytest.param(
            12,
            1,
            2,
            Errors.FENCED_LEADER_EPOCH,
            id="KIP-359: epoch checked before leadership (as Apache Partition.localLogWithEpochOrThrow)",
        ),
        pytest.param(12, 2, 1, Errors.NOT_LEADER_OR_FOLLOWER, id="KIP-570 context: a stopped replica refuses"),
        pytest.param(12, 3, -1, Errors.KAFKA_STORAGE_ERROR, id="offline log directory -> KAFKA_STORAGE_ERROR"),
        pytest.param(12, 9, -1, Errors.UNKNOWN_TOPIC_OR_PARTITION, id="no such replica -> UNKNOWN_TOPIC_OR_PARTITION"),
    ],
)
def test_produce_through_the_model(version: int, partition: int, epoch: int, error: Errors) -> None:
    model = broker()
    before = model.replicas()
    response = model.handle_produce(produce(version, "orders", partition, epoch), version)
    assert produce_errors(response, version) == {("orders", partition): error}
    assert model.replicas() == before  # producing never changes replica state


def test_response_is_a_real_produce_response_with_no_offset() -> None:
    model = broker()
    response = model.handle_produce(produce(12, "orders", 0, 5), 12)
    assert type(response) is Protocol.bundled().message("ProduceResponse")
    [partition] = over_the_wire(response, 12).responses[0].partition_responses
    assert (partition.index, partition.error_code, partition.base_offset) == (0, Errors.NONE, -1)


def test_kip359_producer_loop_refreshes_on_fenced_and_backs_off_on_unknown() -> None:
    model = broker()
    fenced = produce_errors(model.handle_produce(produce(12, "orders", 0, 4), 12), 12)[("orders", 0)]
    ahead = produce_errors(model.handle_produce(produce(12, "orders", 0, 6), 12), 12)[("orders", 0)]
    assert client_action(fenced) is ClientAction.REFRESH_METADATA_AND_RETRY
    assert client_action(ahead) is ClientAction.BACKOFF_AND_RETRY
