"""Kafka's epoch-fencing rules, sans-IO (KIP-320, 359, 380, 516, 550, 570).

Pure functions for each rule, and :class:`ReplicaManager`, a small model of a broker's replica
state that answers decoded LeaderAndIsr, StopReplica and Produce requests with generated
response objects. Nothing here reads a clock or a socket; only the partition.metadata helpers
touch files. See docs/epochs.md.

Importing this package loads nothing else: each name is imported from its module on first use
(``Errors``, say, without the replica model), and the generated message classes are looked up the
first time a response is built.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kafka_epochs.epochs.client_epochs import (
        EPOCH_PATHS,
        RequestedLeaderEpoch,
        requested_from_columns,
        requested_leader_epochs,
    )
    from kafka_epochs.epochs.client_reaction import (
        DEFAULT_JITTER,
        METADATA_MAX_AGE_MS_DEFAULT,
        RETRY_BACKOFF_MS_DEFAULT,
        STALE_METADATA_ERRORS,
        ClientAction,
        client_action,
        jittered_interval_ms,
        next_metadata_refresh_ms,
    )
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
    from kafka_epochs.epochs.partition_metadata import (
        PartitionMetadata,
        PartitionMetadataError,
        format_partition_metadata,
        kafka_uuid_text,
        parse_kafka_uuid,
        parse_partition_metadata,
        read_partition_metadata,
        write_partition_metadata,
    )
    from kafka_epochs.epochs.produce import ProducePartition, produce_partitions, produce_response
    from kafka_epochs.epochs.replica_manager import PartitionView, ReplicaManager
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

#: name -> the module of this package that defines it
_HOMES = {
    "ClientAction": "client_reaction",
    "DEFAULT_JITTER": "client_reaction",
    "DELETE_STALE_TOPIC_DELAY_MS_DEFAULT": "state",
    "EPOCH_DURING_DELETE": "leader_epoch",
    "EPOCH_PATHS": "client_epochs",
    "EqualEpochPolicy": "stop_replica",
    "Errors": "errors",
    "Fence": "state",
    "LeaderAndIsrPartition": "leader_and_isr",
    "LeaderAndIsrType": "leader_and_isr",
    "METADATA_MAX_AGE_MS_DEFAULT": "client_reaction",
    "NO_EPOCH": "leader_epoch",
    "PartitionMetadata": "partition_metadata",
    "PartitionMetadataError": "partition_metadata",
    "PartitionView": "replica_manager",
    "ProducePartition": "produce",
    "RETRY_BACKOFF_MS_DEFAULT": "client_reaction",
    "Replica": "state",
    "ReplicaManager": "replica_manager",
    "ReplicaStatus": "state",
    "RequestedLeaderEpoch": "client_epochs",
    "STALE_METADATA_ERRORS": "client_reaction",
    "StagedDeletion": "state",
    "StagedReason": "state",
    "StopReplicaPartition": "stop_replica",
    "TopicPartition": "state",
    "UNKNOWN_BROKER_EPOCH": "control_epochs",
    "broker_epoch_error": "control_epochs",
    "check_leader_epoch": "leader_epoch",
    "client_action": "client_reaction",
    "controller_epoch_error": "control_epochs",
    "format_partition_metadata": "partition_metadata",
    "jittered_interval_ms": "client_reaction",
    "kafka_uuid_text": "partition_metadata",
    "leader_and_isr_epoch_error": "leader_and_isr",
    "leader_and_isr_partitions": "leader_and_isr",
    "leader_and_isr_response": "leader_and_isr",
    "leader_and_isr_type": "leader_and_isr",
    "next_metadata_refresh_ms": "client_reaction",
    "parse_kafka_uuid": "partition_metadata",
    "parse_partition_metadata": "partition_metadata",
    "produce_partitions": "produce",
    "produce_response": "produce",
    "read_partition_metadata": "partition_metadata",
    "requested_from_columns": "client_epochs",
    "requested_leader_epochs": "client_epochs",
    "stop_replica_epoch_error": "stop_replica",
    "stop_replica_partitions": "stop_replica",
    "stop_replica_response": "stop_replica",
    "topic_id_error": "leader_and_isr",
    "write_partition_metadata": "partition_metadata",
}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{home}"), name)
    globals()[name] = value  # the next lookup finds it without coming here
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_HOMES))


__all__ = [
    "DEFAULT_JITTER",
    "DELETE_STALE_TOPIC_DELAY_MS_DEFAULT",
    "EPOCH_DURING_DELETE",
    "EPOCH_PATHS",
    "METADATA_MAX_AGE_MS_DEFAULT",
    "NO_EPOCH",
    "RETRY_BACKOFF_MS_DEFAULT",
    "STALE_METADATA_ERRORS",
    "UNKNOWN_BROKER_EPOCH",
    "ClientAction",
    "EqualEpochPolicy",
    "Errors",
    "Fence",
    "LeaderAndIsrPartition",
    "LeaderAndIsrType",
    "PartitionMetadata",
    "PartitionMetadataError",
    "PartitionView",
    "ProducePartition",
    "Replica",
    "ReplicaManager",
    "ReplicaStatus",
    "RequestedLeaderEpoch",
    "StagedDeletion",
    "StagedReason",
    "StopReplicaPartition",
    "TopicPartition",
    "broker_epoch_error",
    "check_leader_epoch",
    "client_action",
    "controller_epoch_error",
    "format_partition_metadata",
    "jittered_interval_ms",
    "kafka_uuid_text",
    "leader_and_isr_epoch_error",
    "leader_and_isr_partitions",
    "leader_and_isr_response",
    "leader_and_isr_type",
    "next_metadata_refresh_ms",
    "parse_kafka_uuid",
    "parse_partition_metadata",
    "produce_partitions",
    "produce_response",
    "read_partition_metadata",
    "requested_from_columns",
    "requested_leader_epochs",
    "stop_replica_epoch_error",
    "stop_replica_partitions",
    "stop_replica_response",
    "topic_id_error",
    "write_partition_metadata",
]
