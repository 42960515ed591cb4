"""StopReplica (api key 5): reading any version into one shape, the epoch rule, the response.

Versions 0-2 carry no leader epoch and one ``DeletePartitions`` flag for the whole request.
From v3 (KIP-570) every partition carries its own ``LeaderEpoch`` and ``DeletePartition``, so
one request can stop some partitions and delete others. v4 (this project's, from the KIP-516
draft) adds the ``TopicId`` of each topic and groups the response's errors by topic.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from enum import Enum
from typing import TYPE_CHECKING, NamedTuple

from kafka_epochs.epochs._bundled import message_class
from kafka_epochs.epochs.errors import Errors
from kafka_epochs.epochs.leader_epoch import EPOCH_DURING_DELETE, NO_EPOCH
from kafka_epochs.epochs.state import ZERO_UUID, known_topic_id

if TYPE_CHECKING:
    from kafka_epochs.messages.StopReplicaRequest import StopReplicaRequest
    from kafka_epochs.messages.StopReplicaResponse import StopReplicaResponse, StopReplicaTopicError


FIRST_VERSION_WITH_EPOCHS = 3
FIRST_VERSION_WITH_TOPIC_IDS = 4


class StopReplicaPartition(NamedTuple):
    """One partition a StopReplica request names, whatever the request's version."""

    topic: str
    partition: int
    #: -1 before v3 (no epoch); -2 when the controller is deleting the topic.
    leader_epoch: int
    delete: bool
    #: v4 only; None when absent or the zero uuid.
    topic_id: uuid.UUID | None = None


class EqualEpochPolicy(Enum):
    """What a StopReplica whose epoch equals the replica's current epoch does.

    Apache changed its answer (KAFKA-13972, apache/kafka PR #13107, merged January 2023): a
    reassignment that is cancelled does not always bump the leader epoch, so the controller's
    StopReplica for the abandoned replica arrives with the epoch the replica already has, and
    rejecting it left the replica behind as a stray.
    """

    #: Equal counts as current: the stop is applied (Apache after KAFKA-13972; Kafka 3.6.1's
    #: ``ReplicaManager.stopReplicas`` tests ``requestLeaderEpoch >= currentLeaderEpoch``).
    ACCEPT = "accept"
    #: Equal is fenced with FENCED_LEADER_EPOCH (Apache 2.6 up to the fix; Kafka 2.7.2's
    #: ``ReplicaManager.stopReplicas`` tests ``requestLeaderEpoch > currentLeaderEpoch``).
    FENCE = "fence"


def stop_replica_epoch_error(
    request_epoch: int,
    current_epoch: int,
    policy: EqualEpochPolicy = EqualEpochPolicy.ACCEPT,
) -> Errors:
    """The KIP-570 check of one partition against the epoch of the local replica.

    -2 (the topic is being deleted) overrides any epoch, -1 (no epoch: versions before 3) skips
    the check, a newer epoch is accepted and an older one gets ``FENCED_LEADER_EPOCH``. An
    equal epoch follows ``policy``.
    """
    if request_epoch in (EPOCH_DURING_DELETE, NO_EPOCH) or request_epoch > current_epoch:
        return Errors.NONE
    if request_epoch == current_epoch and policy is EqualEpochPolicy.ACCEPT:
        return Errors.NONE
    return Errors.FENCED_LEADER_EPOCH


def stop_replica_partitions(request: StopReplicaRequest, version: int) -> list[StopReplicaPartition]:
    """Every partition of a decoded StopReplicaRequest, in request order.

    The version says which fields are real: a decoded object also has the fields of other
    versions, at their defaults.
    """
    if version == 0:
        return [
            StopReplicaPartition(p.topic_name, p.partition_index, NO_EPOCH, bool(request.delete_partitions))
            for p in request.ungrouped_partitions
        ]
    if version < FIRST_VERSION_WITH_EPOCHS:
        return [
            StopReplicaPartition(t.name, index, NO_EPOCH, bool(request.delete_partitions))
            for t in request.topics
            for index in t.partition_indexes
        ]
    with_ids = version >= FIRST_VERSION_WITH_TOPIC_IDS
    return [
        StopReplicaPartition(
            t.topic_name,
            p.partition_index,
            p.leader_epoch,
            bool(p.delete_partition),
            known_topic_id(t.topic_id) if with_ids else None,
        )
        for t in request.topic_states
        for p in t.partition_states
    ]


def stop_replica_response(
    version: int,
    results: Sequence[tuple[StopReplicaPartition, Errors]],
    error: Errors = Errors.NONE,
) -> StopReplicaResponse:
    """A generated StopReplicaResponse for ``version``: flat up to v3, grouped by topic in v4."""
    response_cls: type[StopReplicaResponse] = message_class("StopReplicaResponse")
    response = response_cls(error_code=int(error))
    partition_error = response_cls.StopReplicaPartitionError
    if version < FIRST_VERSION_WITH_TOPIC_IDS:
        response.partition_errors = [
            partition_error(topic_name=item.topic, partition_index=item.partition, error_code=int(err))
            for item, err in results
        ]
        return response
    groups: dict[tuple[str, uuid.UUID | None], StopReplicaTopicError] = {}
    for item, err in results:
        key = (item.topic, item.topic_id)
        group = groups.get(key)
        if group is None:
            group = response_cls.StopReplicaTopicError(topic_name=item.topic, topic_id=item.topic_id or ZERO_UUID)
            groups[key] = group
        group.partition_errors.append(partition_error(partition_index=item.partition, error_code=int(err)))
    response.topics = list(groups.values())
    return response
