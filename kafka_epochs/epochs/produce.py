"""Produce (api key 0): the partitions of a request and the response to them.

Only v12 of the bundled protocol carries ``CurrentLeaderEpoch`` (KIP-359); every earlier version
reads as -1, which skips the leader-epoch check, as KIP-359 says old versions must.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

from kafka_epochs.epochs._bundled import message_class
from kafka_epochs.epochs.errors import Errors
from kafka_epochs.epochs.leader_epoch import NO_EPOCH

if TYPE_CHECKING:
    from kafka_epochs.messages.ProduceRequest import ProduceRequest
    from kafka_epochs.messages.ProduceResponse import ProduceResponse


FIRST_VERSION_WITH_LEADER_EPOCH = 12

#: What Apache answers in ``BaseOffset`` when nothing was appended.
INVALID_OFFSET = -1


class ProducePartition(NamedTuple):
    """One partition of a Produce request."""

    topic: str
    partition: int
    current_leader_epoch: int


def produce_partitions(request: ProduceRequest, version: int) -> list[ProducePartition]:
    """Every partition of a decoded ProduceRequest, in request order."""
    with_epoch = version >= FIRST_VERSION_WITH_LEADER_EPOCH
    return [
        ProducePartition(t.name, p.index, p.current_leader_epoch if with_epoch else NO_EPOCH)
        for t in request.topic_data
        for p in t.partition_data
    ]


def produce_response(results: Sequence[tuple[ProducePartition, Errors]]) -> ProduceResponse:
    """A generated ProduceResponse with one entry per partition, grouped by topic.

    The model stores no records, so no offset is known: ``BaseOffset`` is -1 for every
    partition, appended or not.
    """
    response_cls: type[ProduceResponse] = message_class("ProduceResponse")
    topics: dict[str, Any] = {}
    for item, err in results:
        topic = topics.get(item.topic)
        if topic is None:
            topic = topics[item.topic] = response_cls.TopicProduceResponse(name=item.topic)
        topic.partition_responses.append(
            response_cls.PartitionProduceResponse(index=item.partition, error_code=int(err), base_offset=INVALID_OFFSET)
        )
    return response_cls(responses=list(topics.values()))
