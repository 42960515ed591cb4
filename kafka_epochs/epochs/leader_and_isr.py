"""LeaderAndIsr (api key 4): reading any version into one shape, its rules, the response.

v0-v1 list partition states one by one; v2 adds the broker epoch (KIP-380) and groups the
states by topic; v5 adds the request ``Type`` and a ``TopicId`` per topic (KIP-516), and its
response groups errors under topic ids.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from enum import IntEnum
from typing import TYPE_CHECKING, Any, NamedTuple

from kafka_epochs.epochs._bundled import message_class
from kafka_epochs.epochs.errors import Errors
from kafka_epochs.epochs.state import ZERO_UUID, known_topic_id

if TYPE_CHECKING:
    from kafka_epochs.messages.LeaderAndIsrRequest import LeaderAndIsrPartitionState, LeaderAndIsrRequest
    from kafka_epochs.messages.LeaderAndIsrResponse import LeaderAndIsrResponse


FIRST_GROUPED_VERSION = 2
FIRST_VERSION_WITH_TOPIC_IDS = 5


class LeaderAndIsrType(IntEnum):
    """The v5+ request ``Type`` (KIP-516); the numbers are Apache's."""

    UNKNOWN = 0
    #: Only some of the broker's partitions are listed.
    INCREMENTAL = 1
    #: Every partition the broker should host is listed; any other local partition is stray.
    #: This is what KIP-550's proposed ``ContainsAllReplicas`` flag meant.
    FULL = 2


class LeaderAndIsrPartition(NamedTuple):
    """One partition state of a LeaderAndIsr request, whatever the request's version."""

    topic: str
    partition: int
    leader_epoch: int
    leader: int
    isr: tuple[int, ...]
    replicas: tuple[int, ...]
    #: v5+ only; None when absent or the zero uuid.
    topic_id: uuid.UUID | None = None


def leader_and_isr_partitions(request: LeaderAndIsrRequest, version: int) -> list[LeaderAndIsrPartition]:
    """Every partition state of a decoded LeaderAndIsrRequest, in request order."""
    if version < FIRST_GROUPED_VERSION:
        return [_partition(s.topic_name, None, s) for s in request.ungrouped_partition_states]
    with_ids = version >= FIRST_VERSION_WITH_TOPIC_IDS
    return [
        _partition(t.topic_name, known_topic_id(t.topic_id) if with_ids else None, s)
        for t in request.topic_states
        for s in t.partition_states
    ]


def leader_and_isr_type(request: LeaderAndIsrRequest, version: int) -> LeaderAndIsrType:
    """The request's type; UNKNOWN before v5 and for numbers Kafka does not define."""
    if version < FIRST_VERSION_WITH_TOPIC_IDS:
        return LeaderAndIsrType.UNKNOWN
    try:
        return LeaderAndIsrType(request.type)
    except ValueError:
        return LeaderAndIsrType.UNKNOWN


def topic_id_error(request_topic_id: uuid.UUID | None, local_topic_id: uuid.UUID | None) -> Errors:
    """``INCONSISTENT_TOPIC_ID`` when both ids are known and differ (KIP-516).

    An id missing on either side is not a conflict: the request may predate topic ids, and a
    log may not have been given one yet (Apache ``ReplicaManager.hasConsistentTopicId``).
    """
    if request_topic_id is not None and local_topic_id is not None and request_topic_id != local_topic_id:
        return Errors.INCONSISTENT_TOPIC_ID
    return Errors.NONE


def leader_and_isr_epoch_error(request_epoch: int, current_epoch: int) -> Errors:
    """A partition state is applied only when its leader epoch is newer than the replica's.

    An older or equal epoch gets ``STALE_CONTROLLER_EPOCH``, the code Apache uses here
    (``ReplicaManager.becomeLeaderOrFollower``): the state comes from a decision the broker has
    already applied or that a later one replaced. (Apache lets one equal-epoch case through,
    the one-off assignment of a topic id to a log that has none; the replica model handles it.)
    """
    if request_epoch > current_epoch:
        return Errors.NONE
    return Errors.STALE_CONTROLLER_EPOCH


def leader_and_isr_response(
    version: int,
    results: Sequence[tuple[LeaderAndIsrPartition, Errors]],
    error: Errors = Errors.NONE,
) -> Any:
    """A generated LeaderAndIsrResponse: flat up to v4, grouped under topic ids from v5."""
    response_cls: type[LeaderAndIsrResponse] = message_class("LeaderAndIsrResponse")
    response = response_cls(error_code=int(error))
    partition_error = response_cls.LeaderAndIsrPartitionError
    if version < FIRST_VERSION_WITH_TOPIC_IDS:
        response.partition_errors = [
            partition_error(topic_name=item.topic, partition_index=item.partition, error_code=int(err))
            for item, err in results
        ]
        return response
    groups: dict[uuid.UUID, Any] = {}
    for item, err in results:
        topic_id = item.topic_id or ZERO_UUID
        group = groups.get(topic_id)
        if group is None:
            group = groups[topic_id] = response_cls.LeaderAndIsrTopicError(topic_id=topic_id)
        group.partition_errors.append(partition_error(partition_index=item.partition, error_code=int(err)))
    response.topics = list(groups.values())
    return response


def _partition(topic: str, topic_id: uuid.UUID | None, state: LeaderAndIsrPartitionState) -> LeaderAndIsrPartition:
    return LeaderAndIsrPartition(
        topic,
        state.partition_index,
        state.leader_epoch,
        state.leader,
        tuple(state.isr),
        tuple(state.replicas),
        topic_id,
    )
