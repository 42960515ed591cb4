"""The values the replica model keeps per partition. All immutable, so a snapshot is a copy."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from enum import Enum
from typing import NamedTuple

#: The delay before a stale or stray partition staged for deletion is actually deleted
#: (KIP-516's ``delete.stale.topic.delay.ms``): 4 hours. Seed 004 prints "14400 (4 hours)" in
#: a column whose unit is ms; 14,400 ms is 14.4 seconds, so that figure is read as a unit slip
#: (14,400 seconds) and the value is the stated 4 hours.
DELETE_STALE_TOPIC_DELAY_MS_DEFAULT = 4 * 60 * 60 * 1000

#: The protocol's "no topic id" (Apache's ``Uuid.ZERO_UUID``).
ZERO_UUID = uuid.UUID(int=0)


def known_topic_id(topic_id: uuid.UUID | None) -> uuid.UUID | None:
    """``topic_id``, or None when it is absent or the zero uuid that stands for "absent"."""
    return None if topic_id is None or topic_id == ZERO_UUID else topic_id


class TopicPartition(NamedTuple):
    topic: str
    partition: int


class ReplicaStatus(Enum):
    """What the broker is doing with a local replica."""

    #: Leader or follower, as the last accepted LeaderAndIsr said.
    HOSTED = "hosted"
    #: The log exists, but the replica serves nothing: stopped by StopReplica without deletion,
    #: or found on disk and not yet claimed by a LeaderAndIsr.
    STOPPED = "stopped"
    #: Its log directory failed; every request about it gets KAFKA_STORAGE_ERROR.
    OFFLINE = "offline"


@dataclass(frozen=True, slots=True)
class Replica:
    """A partition the broker has locally."""

    status: ReplicaStatus
    leader_epoch: int
    #: None when unknown: hosted through a LeaderAndIsr older than v5, or a log without
    #: partition.metadata.
    topic_id: uuid.UUID | None = None
    #: Broker id of the leader, -1 when unknown.
    leader: int = -1
    isr: tuple[int, ...] = ()
    replicas: tuple[int, ...] = ()


@dataclass(frozen=True, slots=True)
class Fence:
    """What the broker remembers of a replica that is no longer local, per topic id.

    Apache forgets a deleted partition entirely; the model keeps its topic id and last epoch so
    that a delayed, older LeaderAndIsr cannot bring it back (see docs/epochs.md, "Fences").
    """

    leader_epoch: int
    #: The topic itself was deleted (StopReplica with epoch -2): no epoch of this topic id is
    #: ever new enough again.
    topic_deleted: bool = False

    def admits(self, leader_epoch: int) -> bool:
        """Whether a LeaderAndIsr with ``leader_epoch`` is newer than what was fenced."""
        return not self.topic_deleted and leader_epoch > self.leader_epoch

    def raised_to(self, leader_epoch: int, topic_deleted: bool = False) -> Fence:
        """This fence, never lowered: fences only move forward."""
        return Fence(max(self.leader_epoch, leader_epoch), self.topic_deleted or topic_deleted)


class StagedReason(Enum):
    #: The local topic id differs from the one a LeaderAndIsr names (KIP-516).
    STALE = "stale"
    #: A FULL LeaderAndIsr does not list the partition (KIP-516, superseding KIP-550).
    STRAY = "stray"


@dataclass(frozen=True, slots=True)
class StagedDeletion:
    """A local log set aside to be deleted once ``due_ms`` has passed."""

    topic_partition: TopicPartition
    topic_id: uuid.UUID | None
    reason: StagedReason
    staged_at_ms: int
    due_ms: int
