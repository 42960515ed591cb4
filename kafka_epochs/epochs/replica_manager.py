"""A broker's replica state, driven by decoded controller and produce requests (sans-IO).

:class:`ReplicaManager` is shaped after Apache Kafka's ``kafka.server.ReplicaManager`` (ZooKeeper
mode): it takes a decoded LeaderAndIsr, StopReplica or Produce request and answers with the
generated response object a broker would send. It reads no clock (time comes in as ``now_ms``)
and touches no disk (a log found on disk is announced with :meth:`load_local_log`).

Where it deliberately departs from Apache, docs/epochs.md says so; the main departure is the
*fences*: Apache forgets everything about a partition it deletes, while this model remembers,
per topic id, the newest epoch at which it stopped or deleted a replica, so that a delayed
older request cannot resurrect it.
"""

from __future__ import annotations

import dataclasses
import uuid
from typing import TYPE_CHECKING, NamedTuple

from kafka_epochs.epochs.control_epochs import UNKNOWN_BROKER_EPOCH, broker_epoch_error, controller_epoch_error
from kafka_epochs.epochs.errors import Errors
from kafka_epochs.epochs.leader_and_isr import (
    LeaderAndIsrPartition,
    LeaderAndIsrType,
    leader_and_isr_epoch_error,
    leader_and_isr_partitions,
    leader_and_isr_response,
    leader_and_isr_type,
    topic_id_error,
)
from kafka_epochs.epochs.leader_epoch import EPOCH_DURING_DELETE, NO_EPOCH, check_leader_epoch
from kafka_epochs.epochs.produce import ProducePartition, produce_partitions, produce_response
from kafka_epochs.epochs.state import (
    DELETE_STALE_TOPIC_DELAY_MS_DEFAULT,
    Fence,
    Replica,
    ReplicaStatus,
    StagedDeletion,
    StagedReason,
    TopicPartition,
)
from kafka_epochs.epochs.stop_replica import (
    EqualEpochPolicy,
    StopReplicaPartition,
    stop_replica_epoch_error,
    stop_replica_partitions,
    stop_replica_response,
)

if TYPE_CHECKING:
    from kafka_epochs.messages.LeaderAndIsrRequest import LeaderAndIsrRequest
    from kafka_epochs.messages.LeaderAndIsrResponse import LeaderAndIsrResponse
    from kafka_epochs.messages.ProduceRequest import ProduceRequest
    from kafka_epochs.messages.ProduceResponse import ProduceResponse
    from kafka_epochs.messages.StopReplicaRequest import StopReplicaRequest
    from kafka_epochs.messages.StopReplicaResponse import StopReplicaResponse
    from kafka_epochs.protocol import Decoded


PRODUCE, LEADER_AND_ISR, STOP_REPLICA = 0, 4, 5
#: Apache's KafkaController.InitialControllerEpoch: what a broker knows before any request.
INITIAL_CONTROLLER_EPOCH = 0


class PartitionView(NamedTuple):
    """Everything the model holds about one partition; equal views mean equal state."""

    replica: Replica | None
    fences: tuple[tuple[uuid.UUID, Fence], ...]
    staged: tuple[StagedDeletion, ...]


class ReplicaManager:
    """Per-partition replica state of one broker, and the rules that change it."""

    def __init__(
        self,
        broker_id: int,
        *,
        broker_epoch: int = UNKNOWN_BROKER_EPOCH,
        controller_epoch: int = INITIAL_CONTROLLER_EPOCH,
        delete_stale_topic_delay_ms: int = DELETE_STALE_TOPIC_DELAY_MS_DEFAULT,
        stop_replica_equal_epoch: EqualEpochPolicy = EqualEpochPolicy.ACCEPT,
        accept_newer_broker_epoch: bool = False,
    ) -> None:
        if delete_stale_topic_delay_ms < 0:
            raise ValueError(f"delete_stale_topic_delay_ms must not be negative, got {delete_stale_topic_delay_ms}")
        self.broker_id = broker_id
        #: This broker's registration epoch (KIP-380); -1 when unknown, which fences nothing.
        self.broker_epoch = broker_epoch
        #: The newest controller epoch seen in an accepted request.
        self.controller_epoch = controller_epoch
        self.delete_stale_topic_delay_ms = delete_stale_topic_delay_ms
        self.stop_replica_equal_epoch = stop_replica_equal_epoch
        #: False: any set broker epoch other than ours is stale (the issue's rule); True: Apache's.
        self.accept_newer_broker_epoch = accept_newer_broker_epoch
        self._replicas: dict[TopicPartition, Replica] = {}
        self._fences: dict[tuple[TopicPartition, uuid.UUID], Fence] = {}
        self._staged: dict[tuple[TopicPartition, uuid.UUID | None], StagedDeletion] = {}

    # -- what the broker holds ----------------------------------------------------------------

    def replica(self, topic: str, partition: int) -> Replica | None:
        """The local replica of a partition, or None when the broker has none."""
        return self._replicas.get(TopicPartition(topic, partition))

    def replicas(self) -> dict[TopicPartition, Replica]:
        """A copy of every local replica."""
        return dict(self._replicas)

    def fence(self, topic: str, partition: int, topic_id: uuid.UUID) -> Fence | None:
        return self._fences.get((TopicPartition(topic, partition), topic_id))

    def partition_view(self, topic: str, partition: int) -> PartitionView:
        """The replica, fences and staged deletions of one partition, as one comparable value."""
        tp = TopicPartition(topic, partition)
        fences = tuple(
            sorted(((tid, f) for (key, tid), f in self._fences.items() if key == tp), key=lambda pair: pair[0].int)
        )
        staged = tuple(
            sorted((s for (key, _), s in self._staged.items() if key == tp), key=lambda s: (s.due_ms, str(s.topic_id)))
        )
        return PartitionView(self._replicas.get(tp), fences, staged)

    def staged_deletions(self) -> list[StagedDeletion]:
        """Every local log set aside for deletion, soonest due first."""
        return sorted(self._staged.values(), key=lambda s: (s.due_ms, s.topic_partition, str(s.topic_id)))

    def due(self, now_ms: int) -> list[StagedDeletion]:
        """The staged deletions whose delay has passed at ``now_ms``."""
        return [s for s in self.staged_deletions() if s.due_ms <= now_ms]

    def pop_due(self, now_ms: int) -> list[StagedDeletion]:
        """Like :meth:`due`, and forget them: the caller is about to delete those logs."""
        ready = self.due(now_ms)
        for s in ready:
            del self._staged[(s.topic_partition, s.topic_id)]
        return ready

    # -- what the disk says -------------------------------------------------------------------

    def load_local_log(self, topic: str, partition: int, topic_id: uuid.UUID | None = None) -> None:
        """Announce a log found on disk at startup, with the topic id of its partition.metadata.

        Like a broker that has just restarted, the model knows no epoch for it (-1) and serves
        nothing from it until a LeaderAndIsr claims it.
        """
        self._replicas[TopicPartition(topic, partition)] = Replica(ReplicaStatus.STOPPED, NO_EPOCH, topic_id)

    def mark_offline(self, topic: str, partition: int) -> None:
        """The log directory of this partition failed: requests about it get KAFKA_STORAGE_ERROR."""
        tp = TopicPartition(topic, partition)
        local = self._replicas.get(tp) or Replica(ReplicaStatus.OFFLINE, NO_EPOCH)
        self._replicas[tp] = dataclasses.replace(local, status=ReplicaStatus.OFFLINE)

    # -- requests -----------------------------------------------------------------------------

    def handle(self, decoded: Decoded, now_ms: int) -> LeaderAndIsrResponse | StopReplicaResponse | ProduceResponse:
        """Answer a ``Decoded`` request frame (from ``Protocol.decode_request``)."""
        api_key, version, body = decoded.api_key, decoded.api_version, decoded.body
        if api_key == LEADER_AND_ISR:
            return self.handle_leader_and_isr(body, version, now_ms)
        if api_key == STOP_REPLICA:
            return self.handle_stop_replica(body, version)
        if api_key == PRODUCE:
            return self.handle_produce(body, version)
        raise ValueError(f"the replica model answers LeaderAndIsr, StopReplica and Produce, not api key {api_key}")

    def handle_leader_and_isr(self, request: LeaderAndIsrRequest, version: int, now_ms: int) -> LeaderAndIsrResponse:
        """Apply a LeaderAndIsr request; returns the LeaderAndIsrResponse for ``version``."""
        items = leader_and_isr_partitions(request, version)
        error = self._admit_control_request(request.controller_epoch, request.broker_epoch if version >= 2 else None)
        if error is not Errors.NONE:
            # As Apache's LeaderAndIsrRequest.getErrorResponse: the error for the request and
            # for every partition in it.
            return leader_and_isr_response(version, [(item, error) for item in items], error)
        results = [(item, self._become_leader_or_follower(item, now_ms)) for item in items]
        if leader_and_isr_type(request, version) is LeaderAndIsrType.FULL:
            listed = {TopicPartition(item.topic, item.partition) for item in items}
            for tp, local in list(self._replicas.items()):
                if tp not in listed and local.status is not ReplicaStatus.OFFLINE:
                    self._stage(tp, local, StagedReason.STRAY, now_ms)
        return leader_and_isr_response(version, results)

    def handle_stop_replica(self, request: StopReplicaRequest, version: int) -> StopReplicaResponse:
        """Apply a StopReplica request; returns the StopReplicaResponse for ``version``."""
        items = stop_replica_partitions(request, version)
        error = self._admit_control_request(request.controller_epoch, request.broker_epoch if version >= 1 else None)
        if error is not Errors.NONE:
            # Apache answers a rejected StopReplica with the error alone, no partitions.
            return stop_replica_response(version, [], error)
        return stop_replica_response(version, [(item, self._stop_replica(item)) for item in items])

    def handle_produce(self, request: ProduceRequest, version: int) -> ProduceResponse:
        """Check a Produce request partition by partition; returns the ProduceResponse.

        The model keeps no records: an accepted partition changes nothing and is answered with
        ``NONE`` and base offset -1.
        """
        return produce_response([(item, self._append_error(item)) for item in produce_partitions(request, version)])

    # -- the rules ----------------------------------------------------------------------------

    def _admit_control_request(self, controller_epoch: int, broker_epoch: int | None) -> Errors:
        if broker_epoch is not None:
            error = broker_epoch_error(broker_epoch, self.broker_epoch, accept_newer=self.accept_newer_broker_epoch)
            if error is not Errors.NONE:
                return error
        error = controller_epoch_error(controller_epoch, self.controller_epoch)
        if error is Errors.NONE:
            self.controller_epoch = controller_epoch
        return error

    def _known_epoch(self, tp: TopicPartition, topic_id: uuid.UUID | None, local: Replica | None) -> tuple[int, bool]:
        """The newest epoch known for this incarnation of the partition, and whether it was deleted."""
        epoch = local.leader_epoch if local is not None else NO_EPOCH
        fence = self._fences.get((tp, topic_id)) if topic_id is not None else None
        if fence is None:
            return epoch, False
        return max(epoch, fence.leader_epoch), fence.topic_deleted

    def _become_leader_or_follower(self, item: LeaderAndIsrPartition, now_ms: int) -> Errors:
        tp = TopicPartition(item.topic, item.partition)
        local = self._replicas.get(tp)
        if local is not None and local.status is ReplicaStatus.OFFLINE:
            return Errors.KAFKA_STORAGE_ERROR
        # The local replica counts only if it is of the incarnation the request names.
        same = local if local is not None and topic_id_error(item.topic_id, local.topic_id) is Errors.NONE else None
        topic_id = item.topic_id or (same.topic_id if same is not None else None)
        known_epoch, deleted = self._known_epoch(tp, topic_id, same)
        if deleted:
            return Errors.STALE_CONTROLLER_EPOCH
        error = leader_and_isr_epoch_error(item.leader_epoch, known_epoch)
        if error is not Errors.NONE:
            if same is not None and item.leader_epoch == same.leader_epoch == known_epoch:
                return self._same_epoch_topic_id_update(tp, same, item, error)
            return error
        if local is not None and same is None:
            # KIP-516: another id means the topic was deleted and created again while this
            # broker was not told, so the local log is stale. Checked after the request's own
            # epoch, so that a request of an incarnation this broker already let go of (and
            # fenced) cannot condemn the current one.
            self._stage(tp, local, StagedReason.STALE, now_ms)
            return Errors.INCONSISTENT_TOPIC_ID
        if self.broker_id not in item.replicas:
            return Errors.UNKNOWN_TOPIC_OR_PARTITION
        self._replicas[tp] = Replica(
            ReplicaStatus.HOSTED, item.leader_epoch, topic_id, item.leader, item.isr, item.replicas
        )
        return Errors.NONE

    def _same_epoch_topic_id_update(
        self,
        tp: TopicPartition,
        local: Replica,
        item: LeaderAndIsrPartition,
        stale: Errors,
    ) -> Errors:
        # Apache accepts a state with the replica's own epoch in two cases, both about topic ids
        # and neither a leadership change: the controller hands an id to a log that had none
        # (upgrading to topic ids without bumping the epoch), or a follower is told of the
        # topic without its id (a downgrade; the log keeps its id).
        if item.topic_id is not None and local.topic_id is None:
            self._replicas[tp] = dataclasses.replace(local, topic_id=item.topic_id)
            return Errors.NONE
        if item.topic_id is None and local.topic_id is not None and item.leader != self.broker_id:
            return Errors.NONE
        return stale

    def _stop_replica(self, item: StopReplicaPartition) -> Errors:
        tp = TopicPartition(item.topic, item.partition)
        local = self._replicas.get(tp)
        if local is not None and local.status is ReplicaStatus.OFFLINE:
            return Errors.KAFKA_STORAGE_ERROR
        if local is not None and topic_id_error(item.topic_id, local.topic_id) is not Errors.NONE:
            # A v4 stop for another incarnation of the topic: that replica is not here, so (as
            # for any absent replica) there is nothing to stop; the local one is left alone.
            local = None
        topic_id = item.topic_id or (local.topic_id if local is not None else None)
        known_epoch, deleted = self._known_epoch(tp, topic_id, local)
        deleting_topic = item.leader_epoch == EPOCH_DURING_DELETE
        if deleted and not deleting_topic and item.leader_epoch != NO_EPOCH:
            # After the topic's deletion nothing of that topic id is current any more.
            return Errors.FENCED_LEADER_EPOCH
        error = stop_replica_epoch_error(item.leader_epoch, known_epoch, self.stop_replica_equal_epoch)
        if error is not Errors.NONE:
            return error
        new_epoch = max(known_epoch, item.leader_epoch)
        if topic_id is not None and (item.leader_epoch >= 0 or deleting_topic or (local is not None and item.delete)):
            self._raise_fence(tp, topic_id, new_epoch, deleting_topic)
        if local is not None:
            if item.delete:
                del self._replicas[tp]
            else:
                # Remember the stop's epoch: an older LeaderAndIsr must not start it again.
                self._replicas[tp] = dataclasses.replace(local, status=ReplicaStatus.STOPPED, leader_epoch=new_epoch)
        return Errors.NONE

    def _append_error(self, item: ProducePartition) -> Errors:
        local = self._replicas.get(TopicPartition(item.topic, item.partition))
        if local is None:
            return Errors.UNKNOWN_TOPIC_OR_PARTITION
        if local.status is ReplicaStatus.OFFLINE:
            return Errors.KAFKA_STORAGE_ERROR
        # Epoch before leadership, as Apache's Partition.localLogWithEpochOrThrow does for the
        # requests that carry an epoch there (Fetch, ListOffsets): a client with stale metadata
        # learns that first, and refreshes.
        error = check_leader_epoch(item.current_leader_epoch, local.leader_epoch)
        if error is not Errors.NONE:
            return error
        if local.status is not ReplicaStatus.HOSTED or local.leader != self.broker_id:
            return Errors.NOT_LEADER_OR_FOLLOWER
        return Errors.NONE

    # -- bookkeeping --------------------------------------------------------------------------

    def _raise_fence(self, tp: TopicPartition, topic_id: uuid.UUID, epoch: int, topic_deleted: bool) -> None:
        key = (tp, topic_id)
        current = self._fences.get(key)
        self._fences[key] = (current or Fence(epoch, topic_deleted)).raised_to(epoch, topic_deleted)

    def _stage(self, tp: TopicPartition, local: Replica, reason: StagedReason, now_ms: int) -> None:
        """Set a local log aside for deletion after ``delete.stale.topic.delay.ms``."""
        del self._replicas[tp]
        if local.topic_id is not None:
            self._raise_fence(tp, local.topic_id, local.leader_epoch, False)
        key = (tp, local.topic_id)
        if key not in self._staged:  # staging again must not push the deletion further out
            self._staged[key] = StagedDeletion(
                tp, local.topic_id, reason, now_ms, now_ms + self.delete_stale_topic_delay_ms
            )
