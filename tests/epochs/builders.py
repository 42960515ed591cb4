"""Requests as a controller or client would send them, passed through the wire at a version.

Every builder encodes the request at the requested version and decodes it again, so the code
under test sees exactly what that version can carry (a StopReplica v2 loses its epochs, a
LeaderAndIsr v4 its topic ids), never a Python object with fields the wire would drop.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

from kafka_epochs import Protocol
from kafka_epochs.epochs import Replica, ReplicaManager

PROTO = Protocol.bundled()
StopReplicaRequest: Any = PROTO.message("StopReplicaRequest")
LeaderAndIsrRequest: Any = PROTO.message("LeaderAndIsrRequest")
ProduceRequest: Any = PROTO.message("ProduceRequest")
FetchRequest: Any = PROTO.message("FetchRequest")
ListOffsetsRequest: Any = PROTO.message("ListOffsetsRequest")
OffsetForLeaderEpochRequest: Any = PROTO.message("OffsetForLeaderEpochRequest")

TOPIC_A = uuid.UUID("465ac677-6e70-4639-96d2-34e591b169b5")
TOPIC_B = uuid.UUID("9f1c3e2a-0b5d-4c8e-a7f6-1d2e3f4a5b6c")
ZERO = uuid.UUID(int=0)


def local(model: ReplicaManager, topic: str, partition: int) -> Replica:
    """The model's replica of a partition, which the test expects to exist."""
    replica = model.replica(topic, partition)
    assert replica is not None, f"no local replica of {topic}-{partition}"
    return replica


def over_the_wire(message: Any, version: int) -> Any:
    """``message`` as a peer decodes it after it was sent at ``version``."""
    return type(message).decode(message.encode(version), version)


@dataclass(frozen=True)
class Stop:
    """One partition of a StopReplica request."""

    topic: str
    partition: int
    epoch: int = -1
    delete: bool = False
    topic_id: uuid.UUID | None = None


def stop_replica(version: int, *partitions: Stop, controller_epoch: int = 1, broker_epoch: int = -1) -> Any:
    """A StopReplicaRequest at ``version``; v0-v2 share one delete flag, so all must agree."""
    req = StopReplicaRequest(controller_id=0, controller_epoch=controller_epoch, broker_epoch=broker_epoch)
    if version < 3:
        flags = {p.delete for p in partitions}
        assert len(flags) <= 1, "StopReplica v0-v2 has one DeletePartitions flag for the whole request"
        req.delete_partitions = flags.pop() if flags else False
    if version == 0:
        req.ungrouped_partitions = [
            StopReplicaRequest.StopReplicaPartitionV0(topic_name=p.topic, partition_index=p.partition)
            for p in partitions
        ]
    elif version < 3:
        by_topic: dict[str, list[int]] = {}
        for p in partitions:
            by_topic.setdefault(p.topic, []).append(p.partition)
        req.topics = [
            StopReplicaRequest.StopReplicaTopicV1(name=name, partition_indexes=indexes)
            for name, indexes in by_topic.items()
        ]
    else:
        groups: dict[tuple[str, uuid.UUID | None], Any] = {}
        for p in partitions:
            key = (p.topic, p.topic_id)
            if key not in groups:
                groups[key] = StopReplicaRequest.StopReplicaTopicState(topic_name=p.topic, topic_id=p.topic_id or ZERO)
            groups[key].partition_states.append(
                StopReplicaRequest.StopReplicaPartitionState(
                    partition_index=p.partition, leader_epoch=p.epoch, delete_partition=p.delete
                )
            )
        req.topic_states = list(groups.values())
    return over_the_wire(req, version)


@dataclass(frozen=True)
class State:
    """One partition state of a LeaderAndIsr request (broker 1 is the broker under test)."""

    topic: str
    partition: int
    leader_epoch: int
    leader: int = 1
    replicas: tuple[int, ...] = (1, 2, 3)
    topic_id: uuid.UUID | None = None


def leader_and_isr(
    version: int, *states: State, controller_epoch: int = 1, broker_epoch: int = -1, request_type: int = 0
) -> Any:
    """A LeaderAndIsrRequest at ``version``; ``request_type`` (v5+) is 1 INCREMENTAL, 2 FULL."""
    req = LeaderAndIsrRequest(
        controller_id=0,
        controller_epoch=controller_epoch,
        broker_epoch=broker_epoch,
        type=request_type if version >= 5 else 0,
    )

    def partition_state(s: State) -> Any:
        return LeaderAndIsrRequest.LeaderAndIsrPartitionState(
            topic_name=s.topic,
            partition_index=s.partition,
            controller_epoch=controller_epoch,
            leader=s.leader,
            leader_epoch=s.leader_epoch,
            isr=list(s.replicas),
            replicas=list(s.replicas),
        )

    if version < 2:
        req.ungrouped_partition_states = [partition_state(s) for s in states]
    else:
        groups: dict[tuple[str, uuid.UUID | None], Any] = {}
        for s in states:
            key = (s.topic, s.topic_id)
            if key not in groups:
                groups[key] = LeaderAndIsrRequest.LeaderAndIsrTopicState(
                    topic_name=s.topic, topic_id=s.topic_id or ZERO
                )
            groups[key].partition_states.append(partition_state(s))
        req.topic_states = list(groups.values())
    return over_the_wire(req, version)


def produce(version: int, topic: str, partition: int, current_leader_epoch: int = -1) -> Any:
    req = ProduceRequest(
        acks=-1,
        timeout_ms=1000,
        topic_data=[
            ProduceRequest.TopicProduceData(
                name=topic,
                partition_data=[
                    ProduceRequest.PartitionProduceData(
                        index=partition, current_leader_epoch=current_leader_epoch, records=b""
                    )
                ],
            )
        ],
    )
    return over_the_wire(req, version)


# -- reading responses back -----------------------------------------------------------------------


def stop_replica_errors(response: Any, version: int) -> dict[tuple[str, int], int]:
    """``{(topic, partition): error code}`` of a StopReplicaResponse, flat or grouped."""
    response = over_the_wire(response, version)
    if version < 4:
        return {(e.topic_name, e.partition_index): e.error_code for e in response.partition_errors}
    return {(t.topic_name, e.partition_index): e.error_code for t in response.topics for e in t.partition_errors}


def leader_and_isr_errors(response: Any, version: int) -> dict[tuple[object, int], int]:
    """``{(topic name, or topic id from v5, partition): error code}`` of a LeaderAndIsrResponse."""
    response = over_the_wire(response, version)
    if version < 5:
        return {(e.topic_name, e.partition_index): e.error_code for e in response.partition_errors}
    return {(t.topic_id, e.partition_index): e.error_code for t in response.topics for e in t.partition_errors}


def produce_errors(response: Any, version: int) -> dict[tuple[str, int], int]:
    response = over_the_wire(response, version)
    return {(t.name, p.index): p.error_code for t in response.responses for p in t.partition_responses}
