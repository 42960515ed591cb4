"""LeaderAndIsr: request-wide epochs (KIP-380), leader epochs, topic ids (KIP-516), strays (KIP-550/516)."""

from __future__ import annotations

import uuid

import pytest

from kafka_epochs.epochs import (
    DELETE_STALE_TOPIC_DELAY_MS_DEFAULT,
    Errors,
    Fence,
    LeaderAndIsrType,
    ReplicaManager,
    ReplicaStatus,
    StagedDeletion,
    StagedReason,
    TopicPartition,
    leader_and_isr_epoch_error,
    topic_id_error,
)

from .builders import TOPIC_A, TOPIC_B, State, leader_and_isr, leader_and_isr_errors, local, over_the_wire

BROKER_EPOCH = 10
NOW = 1_000_000
HOURS_4 = 4 * 60 * 60 * 1000


@pytest.mark.parametrize(
    ("request_epoch", "expected"),
    [
        pytest.param(6, Errors.NONE, id="newer leader epoch applied"),
        pytest.param(5, Errors.STALE_CONTROLLER_EPOCH, id="equal epoch -> STALE_CONTROLLER_EPOCH, as Apache"),
        pytest.param(4, Errors.STALE_CONTROLLER_EPOCH, id="older epoch -> STALE_CONTROLLER_EPOCH, as Apache"),
    ],
)
def test_leader_epoch_must_be_newer(request_epoch: int, expected: Errors) -> None:
    assert leader_and_isr_epoch_error(request_epoch, 5) is expected


@pytest.mark.parametrize(
    ("request_id", "local_id", "expected"),
    [
        pytest.param(TOPIC_A, TOPIC_A, Errors.NONE, id="KIP-516: same topic id"),
        pytest.param(
            TOPIC_B, TOPIC_A, Errors.INCONSISTENT_TOPIC_ID, id="KIP-516: different id -> INCONSISTENT_TOPIC_ID"
        ),
        pytest.param(None, TOPIC_A, Errors.NONE, id="KIP-516: request without an id is not a conflict"),
        pytest.param(TOPIC_B, None, Errors.NONE, id="KIP-516: a log without an id is not a conflict"),
    ],
)
def test_topic_id_rule(request_id: uuid.UUID | None, local_id: uuid.UUID | None, expected: Errors) -> None:
    assert topic_id_error(request_id, local_id) is expected


def test_kip516_default_delay_is_four_hours() -> None:
    # Seed 004 prints "14400 (4 hours)" in a column whose unit is ms; 4 hours is 14,400,000 ms.
    assert DELETE_STALE_TOPIC_DELAY_MS_DEFAULT == 14_400_000 == HOURS_4


def broker(**options: int) -> ReplicaManager:
    """Broker 1 (broker epoch 10) hosting orders-0 of topic A as leader at epoch 5."""
    model = ReplicaManager(1, broker_epoch=BROKER_EPOCH, **options)  # type: ignore[arg-type]
    model.handle_leader_and_isr(leader_and_isr(5, State("orders", 0, 5, topic_id=TOPIC_A)), 5, now_ms=0)
    return model


@pytest.mark.parametrize(
    ("version", "state", "error", "epoch_after", "id_after"),
    [
        pytest.param(5, State("orders", 0, 6, topic_id=TOPIC_A), Errors.NONE, 6, TOPIC_A, id="newer epoch applied"),
        pytest.param(
            5,
            State("orders", 0, 5, topic_id=TOPIC_A),
            Errors.STALE_CONTROLLER_EPOCH,
            5,
            TOPIC_A,
            id="equal epoch refused (Apache becomeLeaderOrFollower)",
        ),
        pytest.param(
            5,
            State("orders", 0, 3, topic_id=TOPIC_A),
            Errors.STALE_CONTROLLER_EPOCH,
            5,
            TOPIC_A,
            id="older epoch refused",
        ),
        pytest.param(
            4, State("orders", 0, 6), Errors.NONE, 6, TOPIC_A, id="KIP-516: v4 has no topic id; the local id is kept"
        ),
        pytest.param(1, State("orders", 0, 6), Errors.NONE, 6, TOPIC_A, id="v1 (ungrouped states) works the same"),
        pytest.param(
            5,
            State("orders", 0, 7, replicas=(2, 3), topic_id=TOPIC_A),
            Errors.UNKNOWN_TOPIC_OR_PARTITION,
            5,
            TOPIC_A,
            id="broker not among the replicas -> UNKNOWN_TOPIC_OR_PARTITION (Apache)",
        ),
        pytest.param(
            7, State("orders", 0, 6, leader=2, topic_id=TOPIC_A), Errors.NONE, 6, TOPIC_A, id="v7: become a follower"
        ),
    ],
)
def test_leader_and_isr_through_the_model(
    version: int,
    state: State,
    error: Errors,
    epoch_after: int,
    id_after: uuid.UUID,
) -> None:
    model = broker()
    response = model.handle_leader_and_isr(leader_and_isr(version, state), version, now_ms=NOW)
    key = state.topic_id if version >= 5 else state.topic
    assert response.error_code == Errors.NONE
    assert leader_and_isr_errors(response, version) == {(key, state.partition): error}
    replica = model.replica("orders", 0)
    assert replica is not None
    assert (replica.leader_epoch, replica.topic_id, replica.status) == (epoch_after, id_after, ReplicaStatus.HOSTED)


def test_kip516_different_topic_id_stages_the_local_partition_as_stale() -> None:
    model = broker()
    response = model.handle_leader_and_isr(leader_and_isr(5, State("orders", 0, 0, topic_id=TOPIC_B)), 5, now_ms=NOW)
    assert leader_and_isr_errors(response, 5) == {(TOPIC_B, 0): Errors.INCONSISTENT_TOPIC_ID}
    assert model.replica("orders", 0) is None
    stale = StagedDeletion(TopicPartition("orders", 0), TOPIC_A, StagedReason.STALE, NOW, NOW + HOURS_4)
    assert model.staged_deletions() == [stale]
    # the stale incarnation is fenced at its last epoch; the new one can be hosted right away
    assert model.fence("orders", 0, TOPIC_A) == Fence(5)
    retry = model.handle_leader_and_isr(leader_and_isr(5, State("orders", 0, 0, topic_id=TOPIC_B)), 5, now_ms=NOW)
    assert leader_and_isr_errors(retry, 5) == {(TOPIC_B, 0): Errors.NONE}
    assert local(model, "orders", 0).topic_id == TOPIC_B


def test_kip516_a_log_from_disk_with_another_topic_id_is_stale() -> None:
    # The broker restarted; partition.metadata says topic A, the controller says topic B.
    model = ReplicaManager(1)
    model.load_local_log("orders", 0, TOPIC_A)
    response = model.handle_leader_and_isr(leader_and_isr(5, State("orders", 0, 0, topic_id=TOPIC_B)), 5, now_ms=NOW)
    assert leader_and_isr_errors(response, 5) == {(TOPIC_B, 0): Errors.INCONSISTENT_TOPIC_ID}
    assert [s.reason for s in model.staged_deletions()] == [StagedReason.STALE]


def test_kip516_a_log_from_disk_with_the_same_topic_id_is_claimed() -> None:
    model = ReplicaManager(1)
    model.load_local_log("orders", 0, TOPIC_A)
    assert local(model, "orders", 0).status is ReplicaStatus.STOPPED
    response = model.handle_leader_and_isr(leader_and_isr(5, State("orders", 0, 0, topic_id=TOPIC_A)), 5, now_ms=NOW)
    assert leader_and_isr_errors(response, 5) == {(TOPIC_A, 0): Errors.NONE}
    assert local(model, "orders", 0).status is ReplicaStatus.HOSTED


def test_kip516_equal_epoch_may_hand_a_topic_id_to_a_log_without_one() -> None:
    # Apache's upgrade path: the controller starts sending ids without bumping the epoch.
    model = ReplicaManager(1)
    model.handle_leader_and_isr(leader_and_isr(4, State("orders", 0, 3)), 4, now_ms=0)
    assert local(model, "orders", 0).topic_id is None
    response = model.handle_leader_and_isr(leader_and_isr(5, State("orders", 0, 3, topic_id=TOPIC_A)), 5, now_ms=0)
    assert leader_and_isr_errors(response, 5) == {(TOPIC_A, 0): Errors.NONE}
    assert local(model, "orders", 0).topic_id == TOPIC_A


def test_kip516_a_fenced_topic_id_cannot_condemn_the_current_one() -> None:
    model = broker()
    model.handle_leader_and_isr(leader_and_isr(5, State("orders", 0, 0, topic_id=TOPIC_B)), 5, now_ms=NOW)
    model.handle_leader_and_isr(leader_and_isr(5, State("orders", 0, 0, topic_id=TOPIC_B)), 5, now_ms=NOW)
    # a delayed state of the old topic A arrives: A is fenced at epoch 5, so B stays
    late = model.handle_leader_and_isr(leader_and_isr(5, State("orders", 0, 4, topic_id=TOPIC_A)), 5, now_ms=NOW)
    assert leader_and_isr_errors(late, 5) == {(TOPIC_A, 0): Errors.STALE_CONTROLLER_EPOCH}
    assert local(model, "orders", 0).topic_id == TOPIC_B


@pytest.mark.parametrize(
    ("request_type", "staged"),
    [
        pytest.param(
            LeaderAndIsrType.FULL,
            {("orders", 1), ("audit", 0)},
            id="KIP-516/KIP-550: FULL -> every unlisted local partition is stray",
        ),
        pytest.param(LeaderAndIsrType.INCREMENTAL, set(), id="KIP-516: INCREMENTAL -> no strays"),
        pytest.param(LeaderAndIsrType.UNKNOWN, set(), id="KIP-516: type 0 (unknown) -> no strays"),
    ],
)
def test_full_request_stages_strays(request_type: LeaderAndIsrType, staged: set[tuple[str, int]]) -> None:
    model = broker()
    model.load_local_log("orders", 1, TOPIC_A)
    model.load_local_log("audit", 0, TOPIC_B)
    model.mark_offline("audit", 1)  # an offline log cannot be deleted, so it is not staged
    request = leader_and_isr(5, State("orders", 0, 6, topic_id=TOPIC_A), request_type=int(request_type))
    model.handle_leader_and_isr(request, 5, now_ms=NOW)
    assert {(s.topic_partition.topic, s.topic_partition.partition) for s in model.staged_deletions()} == staged
    assert all(s.reason is StagedReason.STRAY and s.due_ms == NOW + HOURS_4 for s in model.staged_deletions())
    assert (model.replica("orders", 1) is None) == bool(staged)


def test_kip550_full_request_listing_a_stale_version_keeps_the_listed_partition() -> None:
    # A partition listed with a stale epoch is refused, but it is listed, so it is not stray.
    model = broker()
    request = leader_and_isr(5, State("orders", 0, 2, topic_id=TOPIC_A), request_type=int(LeaderAndIsrType.FULL))
    model.handle_leader_and_isr(request, 5, now_ms=NOW)
    assert model.staged_deletions() == []
    assert local(model, "orders", 0).status is ReplicaStatus.HOSTED


def test_staged_deletions_fall_due_after_the_delay() -> None:
    model = broker(delete_stale_topic_delay_ms=60_000)
    model.load_local_log("orders", 1, TOPIC_A)
    full = leader_and_isr(5, State("orders", 0, 6, topic_id=TOPIC_A), request_type=int(LeaderAndIsrType.FULL))
    model.handle_leader_and_isr(full, 5, now_ms=NOW)
    assert model.due(NOW + 59_999) == []
    [due] = model.due(NOW + 60_000)
    assert due.topic_partition == TopicPartition("orders", 1)
    assert model.pop_due(NOW + 60_000) == [due]
    assert model.staged_deletions() == []


def test_staging_twice_does_not_postpone_the_deletion() -> None:
    model = broker()
    model.load_local_log("orders", 1, TOPIC_A)
    full = leader_and_isr(5, State("orders", 0, 6, topic_id=TOPIC_A), request_type=int(LeaderAndIsrType.FULL))
    model.handle_leader_and_isr(full, 5, now_ms=NOW)
    model.load_local_log("orders", 1, TOPIC_A)  # found on disk again, e.g. after a restart
    model.handle_leader_and_isr(full, 5, now_ms=NOW + 5_000)
    [staged] = model.staged_deletions()
    assert staged.due_ms == NOW + HOURS_4


def test_negative_delay_is_refused() -> None:
    with pytest.raises(ValueError):
        ReplicaManager(1, delete_stale_topic_delay_ms=-1)


@pytest.mark.parametrize(
    ("controller_epoch", "broker_epoch", "error"),
    [
        pytest.param(0, -1, Errors.STALE_CONTROLLER_EPOCH, id="stale controller epoch fails the whole request"),
        pytest.param(1, BROKER_EPOCH - 1, Errors.STALE_BROKER_EPOCH, id="KIP-380: stale broker epoch fails it"),
    ],
)
@pytest.mark.parametrize("version", [2, 4, 5, 7])
def test_request_wide_errors_mark_every_partition(
    version: int,
    controller_epoch: int,
    broker_epoch: int,
    error: Errors,
) -> None:
    model = broker()
    model.load_local_log("orders", 1, TOPIC_A)
    request = leader_and_isr(
        version,
        State("orders", 0, 9, topic_id=TOPIC_A),
        State("orders", 1, 9, topic_id=TOPIC_A),
        controller_epoch=controller_epoch,
        broker_epoch=broker_epoch,
        request_type=int(LeaderAndIsrType.FULL),
    )
    response = model.handle_leader_and_isr(request, version, now_ms=NOW)
    key = TOPIC_A if version >= 5 else "orders"
    assert response.error_code == error
    assert leader_and_isr_errors(response, version) == {(key, 0): error, (key, 1): error}
    assert local(model, "orders", 0).leader_epoch == 5
    assert model.staged_deletions() == []


def test_offline_replica_gets_kafka_storage_error() -> None:
    model = broker()
    model.mark_offline("orders", 0)
    response = model.handle_leader_and_isr(leader_and_isr(5, State("orders", 0, 9, topic_id=TOPIC_A)), 5, now_ms=0)
    assert leader_and_isr_errors(response, 5) == {(TOPIC_A, 0): Errors.KAFKA_STORAGE_ERROR}


def test_v5_response_groups_by_topic_id() -> None:
    model = broker()
    request = leader_and_isr(
        5,
        State("orders", 0, 6, topic_id=TOPIC_A),
        State("audit", 0, 0, topic_id=TOPIC_B),
        State("orders", 1, 0, topic_id=TOPIC_A),
    )
    response = over_the_wire(model.handle_leader_and_isr(request, 5, now_ms=0), 5)
    assert [t.topic_id for t in response.topics] == [TOPIC_A, TOPIC_B]
    assert [e.partition_index for e in response.topics[0].partition_errors] == [0, 1]
