"""A random controller history, as seen by one broker, and the property its delivery must keep.

The controller manages one topic name with two partitions on brokers 1, 2 and 3; broker 1 is
the broker under test, and only the requests sent to it are kept. The history is built from
events the ZooKeeper controller really sends requests for:

- ``create``: a new topic id, a replica set per partition, leader epoch 0: LeaderAndIsr.
- ``elect``: a new leader among the replicas, epoch + 1: LeaderAndIsr to the replicas.
- ``reassign``: a new replica set, epoch + 1: LeaderAndIsr to the replicas that stay or join,
  StopReplica (stop, then delete) at the new epoch to a replica that leaves.
- ``cancel``: broker 1 is added (LeaderAndIsr at epoch + 1), then the reassignment is cancelled
  *without* an epoch bump, so its StopReplica (delete) carries the same epoch (KAFKA-13972).
- ``delete``: StopReplica (stop, then delete) with the deletion sentinel -2 (KIP-570).
- a ``create`` after a ``delete`` re-creates the topic under a new topic id.

Every (request, partition) pair gets a :class:`Stamp`: the topic id and the leader epoch the
controller decided it in, the deletion counting as newer than every epoch of its topic. The
stamp is the truth the test knows; the wire carries it only as far as the version allows
(StopReplica v0-v2 carry no epoch, v3 no topic id).
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from hypothesis import strategies as st

from kafka_epochs.epochs import Errors, ReplicaManager, ReplicaStatus
from kafka_epochs.epochs.replica_manager import PartitionView

from .builders import State, Stop, leader_and_isr, leader_and_isr_errors, stop_replica, stop_replica_errors

TOPIC = "orders"
PARTITIONS = (0, 1)
BROKERS = (1, 2, 3)
UNDER_TEST = 1
#: A deletion is newer than any epoch of its topic.
DELETION = 1 << 40


@dataclass(frozen=True)
class Stamp:
    """When the controller made the decision a request carries for one partition."""

    topic_id: uuid.UUID
    epoch: int  # DELETION for the topic-deletion sentinel

    def newer_than(self, other: Stamp) -> bool:
        """Strictly newer, within one topic id; different topic ids are not comparable."""
        return self.topic_id == other.topic_id and self.epoch > other.epoch


@dataclass(frozen=True)
class Sent:
    """One request the controller sent to broker 1, before a version is chosen."""

    index: int  # position in the controller's send order
    kind: str  # "LeaderAndIsr" or "StopReplica"
    partitions: tuple[int, ...]
    stamps: tuple[Stamp, ...]
    leaders: tuple[int, ...] = ()
    replicas: tuple[tuple[int, ...], ...] = ()
    delete: bool = False

    def describe(self) -> str:
        what = self.kind + (" (delete)" if self.delete else "")
        parts = ", ".join(
            f"p{p} {_epoch_text(s.epoch)} of topic #{s.topic_id.int}"
            for p, s in zip(self.partitions, self.stamps, strict=True)
        )
        return f"#{self.index} {what}: {parts}"


def _epoch_text(epoch: int) -> str:
    return "deletion" if epoch == DELETION else f"epoch {epoch}"


@dataclass
class _Partition:
    epoch: int
    leader: int
    replicas: tuple[int, ...]


EVENTS = ("create", "elect", "reassign", "cancel", "delete")


@st.composite
def histories(draw: st.DrawFn, *, recreate: bool = True, max_events: int = 8) -> list[Sent]:
    """The requests broker 1 receives over a random sequence of controller events."""
    sent: list[Sent] = []
    topic_id: uuid.UUID | None = None
    generations = 0
    parts: dict[int, _Partition] = {}

    def send(kind: str, items: list[tuple[int, int]], delete: bool = False) -> None:
        # items: (partition, epoch of the decision) for the partitions broker 1 is told about
        if not items:
            return
        assert topic_id is not None
        sent.append(
            Sent(
                len(sent),
                kind,
                tuple(p for p, _ in items),
                tuple(Stamp(topic_id, epoch) for _, epoch in items),
                tuple(parts[p].leader for p, _ in items),
                tuple(parts[p].replicas for p, _ in items),
                delete,
            )
        )

    def replica_set() -> tuple[int, ...]:
        return tuple(sorted(draw(st.sets(st.sampled_from(BROKERS), min_size=2, max_size=2))))

    for _ in range(draw(st.integers(1, max_events))):
        event = draw(st.sampled_from(EVENTS))
        if topic_id is None:
            if generations and not recreate:
                break
            event = "create"
        if event == "create":
            if topic_id is not None:
                continue
            generations += 1
            topic_id = uuid.UUID(int=generations)
            parts = {}
            for p in PARTITIONS:
                replicas = replica_set()
                parts[p] = _Partition(0, replicas[0], replicas)
            send("LeaderAndIsr", [(p, 0) for p in PARTITIONS if UNDER_TEST in parts[p].replicas])
        elif event == "elect":
            p = draw(st.sampled_from(PARTITIONS))
            parts[p].epoch += 1
            parts[p].leader = draw(st.sampled_from(parts[p].replicas))
            if UNDER_TEST in parts[p].replicas:
                send("LeaderAndIsr", [(p, parts[p].epoch)])
        elif event == "reassign":
            p = draw(st.sampled_from(PARTITIONS))
            before, after = parts[p].replicas, replica_set()
            parts[p].epoch += 1
            parts[p].replicas = after
            if parts[p].leader not in after:
                parts[p].leader = after[0]
            if UNDER_TEST in after:
                send("LeaderAndIsr", [(p, parts[p].epoch)])
            elif UNDER_TEST in before:
                send("StopReplica", [(p, parts[p].epoch)])
                send("StopReplica", [(p, parts[p].epoch)], delete=True)
        elif event == "cancel":
            p = draw(st.sampled_from(PARTITIONS))
            if UNDER_TEST in parts[p].replicas:
                continue
            parts[p].epoch += 1
            original = parts[p].replicas
            parts[p].replicas = (*original, UNDER_TEST)
            send("LeaderAndIsr", [(p, parts[p].epoch)])
            parts[p].replicas = original  # cancelled: no epoch bump for the removal
            send("StopReplica", [(p, parts[p].epoch)], delete=True)
        elif event == "delete":
            hosted = [p for p in PARTITIONS if UNDER_TEST in parts[p].replicas]
            send("StopReplica", [(p, DELETION) for p in hosted])
            send("StopReplica", [(p, DELETION) for p in hosted], delete=True)
            topic_id = None
    return sent


def encode(sent: Sent, lai_version: int, stop_version: int) -> tuple[Any, int]:
    """The request ``sent`` as broker 1 decodes it, at the given versions."""
    if sent.kind == "LeaderAndIsr":
        states = [
            State(TOPIC, p, s.epoch, leader=leader, replicas=replicas, topic_id=s.topic_id)
            for p, s, leader, replicas in zip(sent.partitions, sent.stamps, sent.leaders, sent.replicas, strict=True)
        ]
        return leader_and_isr(lai_version, *states), lai_version
    stops = [
        Stop(TOPIC, p, -2 if s.epoch == DELETION else s.epoch, sent.delete, s.topic_id)
        for p, s in zip(sent.partitions, sent.stamps, strict=True)
    ]
    return stop_replica(stop_version, *stops), stop_version


@dataclass(frozen=True)
class Violation:
    """An older decision that changed a partition after a newer one had changed it."""

    partition: int
    newer: Sent
    older: Sent
    delivered: tuple[Sent, ...]

    def __str__(self) -> str:
        order = "\n  ".join(s.describe() for s in self.delivered)
        return (
            f"partition {self.partition}: {self.older.describe()} changed the partition after "
            f"{self.newer.describe()} had.\nDelivery order:\n  {order}"
        )


def first_violation(delivered: list[tuple[Sent, tuple[Any, int]]], **model_options: Any) -> Violation | None:
    """Deliver ``(request, version)`` pairs in order to a fresh model; the first breach of the property.

    The property: let y and x be two requests for the same partition with the same topic id,
    y's epoch strictly newer than x's (a deletion being newer than every epoch). If y, when
    delivered, was accepted for the partition (error NONE) and changed the model's state of it
    (its replica, its fences, its staged deletions), then x, delivered at any later point,
    must leave that state unchanged. Requests of different topic ids are not compared: no
    epoch orders two incarnations of a topic.
    """
    model = ReplicaManager(UNDER_TEST, **model_options)
    effective: dict[int, list[tuple[Stamp, Sent]]] = {p: [] for p in PARTITIONS}
    so_far: list[Sent] = []
    for sent, (request, version) in delivered:
        so_far.append(sent)
        before = {p: _view(model, p) for p in sent.partitions}
        if sent.kind == "LeaderAndIsr":
            errors = _by_partition(leader_and_isr_errors(model.handle_leader_and_isr(request, version, 0), version))
        else:
            errors = _by_partition(stop_replica_errors(model.handle_stop_replica(request, version), version))
        for p, stamp in zip(sent.partitions, sent.stamps, strict=True):
            if _view(model, p) == before[p]:
                continue
            for newer_stamp, newer in effective[p]:
                if newer_stamp.newer_than(stamp):
                    return Violation(p, newer, sent, tuple(so_far))
            if errors[p] == Errors.NONE:
                effective[p].append((stamp, sent))
    return None


def intended_replicas(history: list[Sent]) -> dict[int, tuple[ReplicaStatus, int, uuid.UUID] | None]:
    """What the controller wants broker 1 to hold once everything arrived: its last word per partition.

    ``(status, leader epoch, topic id)`` for a partition it should host or keep stopped, None
    for one it should not have.
    """
    intent: dict[int, tuple[ReplicaStatus, int, uuid.UUID] | None] = {p: None for p in PARTITIONS}
    for sent in history:
        for p, stamp in zip(sent.partitions, sent.stamps, strict=True):
            if sent.kind == "LeaderAndIsr":
                intent[p] = (ReplicaStatus.HOSTED, stamp.epoch, stamp.topic_id)
            elif sent.delete:
                intent[p] = None
            else:
                current = intent[p]
                if current is not None:
                    # a stop remembers its own epoch unless it is the deletion sentinel
                    epoch = current[1] if stamp.epoch == DELETION else max(current[1], stamp.epoch)
                    intent[p] = (ReplicaStatus.STOPPED, epoch, current[2])
    return intent


def final_replicas(
    delivered: list[tuple[Sent, tuple[Any, int]]],
    **model_options: Any,
) -> dict[int, tuple[ReplicaStatus, int, uuid.UUID | None] | None]:
    """Deliver everything to a fresh model; what it then holds, in the shape of :func:`intended_replicas`."""
    model = ReplicaManager(UNDER_TEST, **model_options)
    for sent, (request, version) in delivered:
        if sent.kind == "LeaderAndIsr":
            model.handle_leader_and_isr(request, version, 0)
        else:
            model.handle_stop_replica(request, version)
    held: dict[int, tuple[ReplicaStatus, int, uuid.UUID | None] | None] = {}
    for p in PARTITIONS:
        replica = model.replica(TOPIC, p)
        held[p] = None if replica is None else (replica.status, replica.leader_epoch, replica.topic_id)
    return held


def _view(model: ReplicaManager, partition: int) -> PartitionView:
    return model.partition_view(TOPIC, partition)


def _by_partition(errors: Mapping[tuple[Any, int], int]) -> dict[int, int]:
    return {partition: code for (_, partition), code in errors.items()}
