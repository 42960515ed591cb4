"""StopReplica: KIP-570's per-partition epoch rule, KIP-380's broker epoch, the controller epoch."""

from __future__ import annotations

import pytest

from kafka_epochs.epochs import (
    EqualEpochPolicy,
    Errors,
    Fence,
    ReplicaManager,
    ReplicaStatus,
    broker_epoch_error,
    controller_epoch_error,
    stop_replica_epoch_error,
)

from .builders import (
    TOPIC_A,
    TOPIC_B,
    State,
    Stop,
    leader_and_isr,
    local,
    over_the_wire,
    stop_replica,
    stop_replica_errors,
)

BROKER_EPOCH = 10

# -- the pure rules --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("request_epoch", "current", "policy", "expected"),
    [
        pytest.param(-2, 5, EqualEpochPolicy.ACCEPT, Errors.NONE, id="KIP-570: -2 (deletion) overrides any epoch"),
        pytest.param(-2, 1 << 30, EqualEpochPolicy.FENCE, Errors.NONE, id="KIP-570: -2 overrides even a huge epoch"),
        pytest.param(-1, 5, EqualEpochPolicy.ACCEPT, Errors.NONE, id="KIP-570: -1 (no epoch, older version) accepted"),
        pytest.param(6, 5, EqualEpochPolicy.ACCEPT, Errors.NONE, id="KIP-570: a newer epoch is accepted"),
        pytest.param(
            4,
            5,
            EqualEpochPolicy.ACCEPT,
            Errors.FENCED_LEADER_EPOCH,
            id="KIP-570: an older epoch -> FENCED_LEADER_EPOCH",
        ),
        pytest.param(
            5,
            5,
            EqualEpochPolicy.ACCEPT,
            Errors.NONE,
            id="KIP-570 equal epoch: accepted, as Apache's ReplicaManager.stopReplicas since KAFKA-13972",
        ),
        pytest.param(
            5,
            5,
            EqualEpochPolicy.FENCE,
            Errors.FENCED_LEADER_EPOCH,
            id="KIP-570 equal epoch: fenced, as Apache 2.6 to 3.4",
        ),
    ],
)
def test_stop_replica_epoch_rule(request_epoch: int, current: int, policy: EqualEpochPolicy, expected: Errors) -> None:
    assert stop_replica_epoch_error(request_epoch, current, policy) is expected


@pytest.mark.parametrize(
    ("request_epoch", "accept_newer", "expected"),
    [
        pytest.param(-1, False, Errors.NONE, id="KIP-380: -1 (not set) is not checked"),
        pytest.param(BROKER_EPOCH - 1, False, Errors.STALE_BROKER_EPOCH, id="KIP-380: older -> STALE_BROKER_EPOCH"),
        pytest.param(BROKER_EPOCH, False, Errors.NONE, id="KIP-380: the broker's own epoch"),
        pytest.param(BROKER_EPOCH + 1, False, Errors.STALE_BROKER_EPOCH, id="KIP-380: set and not ours -> stale"),
        pytest.param(BROKER_EPOCH + 1, True, Errors.NONE, id="KIP-380: newer accepted under Apache's rule"),
        pytest.param(BROKER_EPOCH - 1, True, Errors.STALE_BROKER_EPOCH, id="KIP-380: older stale under Apache's rule"),
    ],
)
def test_broker_epoch_rule(request_epoch: int, accept_newer: bool, expected: Errors) -> None:
    assert broker_epoch_error(request_epoch, BROKER_EPOCH, accept_newer=accept_newer) is expected


def test_broker_epoch_not_checked_while_ours_is_unknown() -> None:
    assert broker_epoch_error(BROKER_EPOCH, -1) is Errors.NONE


@pytest.mark.parametrize(
    ("request_epoch", "expected"),
    [
        pytest.param(
            2, Errors.STALE_CONTROLLER_EPOCH, id="controller epoch older than known -> STALE_CONTROLLER_EPOCH"
        ),
        pytest.param(3, Errors.NONE, id="the current controller"),
        pytest.param(4, Errors.NONE, id="a new controller"),
    ],
)
def test_controller_epoch_rule(request_epoch: int, expected: Errors) -> None:
    assert controller_epoch_error(request_epoch, 3) is expected


# -- through the model -----------------------------------------------------------------------------


def broker(policy: EqualEpochPolicy = EqualEpochPolicy.ACCEPT) -> ReplicaManager:
    """Broker 1 hosting orders-0 and orders-1 of topic A at leader epoch 5 (controller epoch 1)."""
    model = ReplicaManager(1, broker_epoch=BROKER_EPOCH, stop_replica_equal_epoch=policy)
    model.handle_leader_and_isr(
        leader_and_isr(5, State("orders", 0, 5, topic_id=TOPIC_A), State("orders", 1, 5, topic_id=TOPIC_A)), 5, now_ms=0
    )
    return model


HOSTED, STOPPED, GONE = ReplicaStatus.HOSTED, ReplicaStatus.STOPPED, None


@pytest.mark.parametrize(
    ("version", "stop", "error", "status"),
    [
        pytest.param(3, Stop("orders", 0, 6), Errors.NONE, STOPPED, id="KIP-570 v3: newer epoch stops"),
        pytest.param(3, Stop("orders", 0, 4), Errors.FENCED_LEADER_EPOCH, HOSTED, id="KIP-570 v3: older epoch fenced"),
        pytest.param(
            3,
            Stop("orders", 0, 4, delete=True),
            Errors.FENCED_LEADER_EPOCH,
            HOSTED,
            id="KIP-570 v3: an older deletion is fenced too",
        ),
        pytest.param(3, Stop("orders", 0, 5), Errors.NONE, STOPPED, id="KIP-570 v3: equal epoch accepted (3.5+)"),
        pytest.param(3, Stop("orders", 0, -2, delete=True), Errors.NONE, GONE, id="KIP-570 v3: -2 deletes"),
        pytest.param(3, Stop("orders", 0, -1), Errors.NONE, STOPPED, id="KIP-570 v3: -1 skips the check"),
        pytest.param(2, Stop("orders", 0, delete=True), Errors.NONE, GONE, id="KIP-570: v2 has no epoch, not checked"),
        pytest.param(1, Stop("orders", 0), Errors.NONE, STOPPED, id="KIP-570: v1 has no epoch, not checked"),
        pytest.param(0, Stop("orders", 0, delete=True), Errors.NONE, GONE, id="KIP-570: v0 has no epoch, not checked"),
        pytest.param(
            4, Stop("orders", 0, 6, topic_id=TOPIC_A), Errors.NONE, STOPPED, id="KIP-570 v4: same topic id, same rule"
        ),
        pytest.param(
            4,
            Stop("orders", 0, 4, topic_id=TOPIC_A),
            Errors.FENCED_LEADER_EPOCH,
            HOSTED,
            id="KIP-570 v4: same topic id, older epoch fenced",
        ),
        pytest.param(
            4,
            Stop("orders", 0, -2, delete=True, topic_id=TOPIC_B),
            Errors.NONE,
            HOSTED,
            id="KIP-516 draft v4: a stop for another topic id leaves the local replica alone",
        ),
        pytest.param(
            3,
            Stop("orders", 7, 3, delete=True),
            Errors.NONE,
            GONE,
            id="KIP-570: a partition the broker lacks is stopped trivially (Apache HostedPartition.None)",
        ),
    ],
)
def test_stop_replica_through_the_model(version: int, stop: Stop, error: Errors, status: ReplicaStatus | None) -> None:
    model = broker()
    response = model.handle_stop_replica(stop_replica(version, stop), version)
    assert response.error_code == Errors.NONE
    assert stop_replica_errors(response, version) == {(stop.topic, stop.partition): error}
    replica = model.replica(stop.topic, stop.partition)
    assert (replica.status if replica else None) is status


def test_kip570_equal_epoch_fenced_under_the_older_policy() -> None:
    model = broker(EqualEpochPolicy.FENCE)
    response = model.handle_stop_replica(stop_replica(3, Stop("orders", 0, 5, delete=True)), 3)
    assert stop_replica_errors(response, 3) == {("orders", 0): Errors.FENCED_LEADER_EPOCH}
    assert local(model, "orders", 0).status is ReplicaStatus.HOSTED


def test_kip570_v3_one_request_stops_some_partitions_and_deletes_others() -> None:
    model = broker()
    request = stop_replica(3, Stop("orders", 0, 6), Stop("orders", 1, 6, delete=True))
    assert stop_replica_errors(model.handle_stop_replica(request, 3), 3) == {
        ("orders", 0): Errors.NONE,
        ("orders", 1): Errors.NONE,
    }
    assert local(model, "orders", 0).status is ReplicaStatus.STOPPED
    assert model.replica("orders", 1) is None


def test_kip570_a_stop_remembers_its_epoch_so_an_older_leader_and_isr_cannot_restart_it() -> None:
    model = broker()
    model.handle_stop_replica(stop_replica(3, Stop("orders", 0, 7)), 3)
    assert local(model, "orders", 0).leader_epoch == 7
    late = model.handle_leader_and_isr(leader_and_isr(5, State("orders", 0, 6, topic_id=TOPIC_A)), 5, now_ms=0)
    assert late.topics[0].partition_errors[0].error_code == Errors.STALE_CONTROLLER_EPOCH
    assert local(model, "orders", 0).status is ReplicaStatus.STOPPED


def test_kip570_a_topic_deletion_fences_every_later_request_of_that_topic_id() -> None:
    model = broker()
    model.handle_stop_replica(stop_replica(4, Stop("orders", 0, -2, delete=True, topic_id=TOPIC_A)), 4)
    assert model.fence("orders", 0, TOPIC_A) == Fence(5, topic_deleted=True)
    # a stale stop of the deleted topic, then a stale LeaderAndIsr: both refused
    stale_stop = model.handle_stop_replica(stop_replica(4, Stop("orders", 0, 9, topic_id=TOPIC_A)), 4)
    assert stop_replica_errors(stale_stop, 4) == {("orders", 0): Errors.FENCED_LEADER_EPOCH}
    stale_lai = model.handle_leader_and_isr(leader_and_isr(5, State("orders", 0, 9, topic_id=TOPIC_A)), 5, now_ms=0)
    assert stale_lai.topics[0].partition_errors[0].error_code == Errors.STALE_CONTROLLER_EPOCH
    assert model.replica("orders", 0) is None
    # the topic created again under a new id is welcome
    fresh = model.handle_leader_and_isr(leader_and_isr(5, State("orders", 0, 0, topic_id=TOPIC_B)), 5, now_ms=0)
    assert fresh.topics[0].partition_errors[0].error_code == Errors.NONE


def test_kip516_v4_stop_for_another_topic_id_fences_that_id_only() -> None:
    model = broker()
    model.handle_stop_replica(stop_replica(4, Stop("orders", 0, -2, delete=True, topic_id=TOPIC_B)), 4)
    assert model.fence("orders", 0, TOPIC_B) == Fence(-1, topic_deleted=True)
    assert local(model, "orders", 0).topic_id == TOPIC_A


@pytest.mark.parametrize(
    ("controller_epoch", "broker_epoch", "error"),
    [
        pytest.param(0, -1, Errors.STALE_CONTROLLER_EPOCH, id="stale controller epoch fails the whole request"),
        pytest.param(1, BROKER_EPOCH - 1, Errors.STALE_BROKER_EPOCH, id="KIP-380: stale broker epoch fails it"),
        pytest.param(
            0,
            BROKER_EPOCH - 1,
            Errors.STALE_BROKER_EPOCH,
            id="KIP-380: the broker epoch is checked first, as Apache's KafkaApis does",
        ),
    ],
)
@pytest.mark.parametrize("version", [1, 2, 3, 4])
def test_request_wide_errors(version: int, controller_epoch: int, broker_epoch: int, error: Errors) -> None:
    model = broker()
    request = stop_replica(
        version, Stop("orders", 0, 9, topic_id=TOPIC_A), controller_epoch=controller_epoch, broker_epoch=broker_epoch
    )
    response = model.handle_stop_replica(request, version)
    assert response.error_code == error
    assert stop_replica_errors(response, version) == {}  # Apache lists no partitions then
    assert local(model, "orders", 0).status is ReplicaStatus.HOSTED
    assert model.controller_epoch == 1


@pytest.mark.parametrize("broker_epoch", [-1, BROKER_EPOCH])
def test_kip380_broker_epochs_that_pass(broker_epoch: int) -> None:
    model = broker()
    response = model.handle_stop_replica(stop_replica(3, Stop("orders", 0, 6), broker_epoch=broker_epoch), 3)
    assert response.error_code == Errors.NONE


def test_kip380_newer_broker_epoch_is_stale_unless_apache_rule() -> None:
    request = stop_replica(3, Stop("orders", 0, 6), broker_epoch=BROKER_EPOCH + 1)
    assert broker().handle_stop_replica(request, 3).error_code == Errors.STALE_BROKER_EPOCH
    apache = broker()
    apache.accept_newer_broker_epoch = True
    assert apache.handle_stop_replica(request, 3).error_code == Errors.NONE


def test_a_newer_controller_epoch_is_adopted() -> None:
    model = broker()
    model.handle_stop_replica(stop_replica(3, Stop("orders", 0, 6), controller_epoch=4), 3)
    assert model.controller_epoch == 4
    old = model.handle_stop_replica(stop_replica(3, Stop("orders", 1, 6), controller_epoch=3), 3)
    assert old.error_code == Errors.STALE_CONTROLLER_EPOCH


def test_offline_replica_gets_kafka_storage_error() -> None:
    model = broker()
    model.mark_offline("orders", 0)
    response = model.handle_stop_replica(stop_replica(3, Stop("orders", 0, 9, delete=True)), 3)
    assert stop_replica_errors(response, 3) == {("orders", 0): Errors.KAFKA_STORAGE_ERROR}
    assert local(model, "orders", 0).status is ReplicaStatus.OFFLINE


def test_v4_response_groups_errors_by_topic_with_name_and_id() -> None:
    model = broker()
    request = stop_replica(
        4,
        Stop("orders", 0, 6, topic_id=TOPIC_A),
        Stop("orders", 1, 4, topic_id=TOPIC_A),
        Stop("audit", 0, 1, topic_id=TOPIC_B),
    )
    response = over_the_wire(model.handle_stop_replica(request, 4), 4)
    assert [(t.topic_name, t.topic_id) for t in response.topics] == [("orders", TOPIC_A), ("audit", TOPIC_B)]
    assert [(e.partition_index, e.error_code) for e in response.topics[0].partition_errors] == [
        (0, Errors.NONE),
        (1, Errors.FENCED_LEADER_EPOCH),
    ]
    assert response.partition_errors == []


def test_v3_response_is_flat_and_names_each_topic() -> None:
    model = broker()
    response = over_the_wire(model.handle_stop_replica(stop_replica(3, Stop("orders", 1, 4)), 3), 3)
    [entry] = response.partition_errors
    assert (entry.topic_name, entry.partition_index, entry.error_code) == ("orders", 1, Errors.FENCED_LEADER_EPOCH)


@pytest.mark.parametrize(
    ("policy", "left_behind"),
    [
        pytest.param(EqualEpochPolicy.ACCEPT, False, id="KAFKA-13972 fix: the abandoned replica is deleted"),
        pytest.param(EqualEpochPolicy.FENCE, True, id="before KAFKA-13972: it is left behind as a stray"),
    ],
)
def test_cancelled_reassignment_sends_a_stop_with_the_same_epoch(policy: EqualEpochPolicy, left_behind: bool) -> None:
    # A reassignment adds broker 1 at epoch 6 and is cancelled without an epoch bump, so the
    # controller's StopReplica (delete) for the abandoned replica carries epoch 6 too.
    model = ReplicaManager(1, stop_replica_equal_epoch=policy)
    model.handle_leader_and_isr(leader_and_isr(5, State("orders", 0, 6, topic_id=TOPIC_A)), 5, now_ms=0)
    model.handle_stop_replica(stop_replica(3, Stop("orders", 0, 6, delete=True)), 3)
    assert (model.replica("orders", 0) is not None) is left_behind
