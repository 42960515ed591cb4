"""The leader epochs a client request names, for the requests that carry one.

Fetch, ListOffsets, OffsetForLeaderEpoch (KIP-320) and Produce v12 (KIP-359) send, per
partition, the leader epoch the client last learned from Metadata. This reads them out of a
decoded request, whatever its version, so that :func:`check_leader_epoch` can be applied to
each partition, e.g. to annotate captured traffic or to drive a broker model.
"""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING, Any, NamedTuple, cast

from kafka_epochs.epochs.leader_epoch import NO_EPOCH
from kafka_epochs.epochs.state import known_topic_id

if TYPE_CHECKING:
    from kafka_epochs.messages.FetchRequest import FetchRequest
    from kafka_epochs.messages.ListOffsetsRequest import ListOffsetsRequest
    from kafka_epochs.messages.OffsetForLeaderEpochRequest import OffsetForLeaderEpochRequest
    from kafka_epochs.messages.ProduceRequest import ProduceRequest

    #: The requests that carry a client's leader epoch per partition.
    EpochRequest = ProduceRequest | FetchRequest | ListOffsetsRequest | OffsetForLeaderEpochRequest


PRODUCE, FETCH, LIST_OFFSETS, OFFSET_FOR_LEADER_EPOCH = 0, 1, 2, 23

# The first version of each api that carries CurrentLeaderEpoch, and the first that names a
# topic by id (Fetch from v13 names it by id only; the bundled ListOffsets v6 and
# OffsetForLeaderEpoch v4 send both).
_FIRST_EPOCH_VERSION = {PRODUCE: 12, FETCH: 9, LIST_OFFSETS: 4, OFFSET_FOR_LEADER_EPOCH: 2}
_FIRST_TOPIC_ID_VERSION = {PRODUCE: None, FETCH: 13, LIST_OFFSETS: 6, OFFSET_FOR_LEADER_EPOCH: 4}
_FETCH_LAST_NAMED_VERSION = 12


class RequestedLeaderEpoch(NamedTuple):
    """The epoch a client request names for one partition."""

    #: "" when the version names topics by id only (Fetch v13+).
    topic: str
    partition: int
    #: -1 when the version has no such field or the client knows no epoch.
    current_leader_epoch: int
    topic_id: uuid.UUID | None = None


def requested_leader_epochs(request: EpochRequest, version: int) -> list[RequestedLeaderEpoch]:
    """Every partition of a Produce, Fetch, ListOffsets or OffsetForLeaderEpoch request.

    Raises ``ValueError`` for any other request: the others carry no client leader epoch.
    """
    api_key = getattr(type(request), "API_KEY", None)
    if api_key not in _FIRST_EPOCH_VERSION:
        raise ValueError(f"{type(request).__name__} carries no client leader epoch")
    has_epoch = version >= _FIRST_EPOCH_VERSION[api_key]
    first_id_version = _FIRST_TOPIC_ID_VERSION[api_key]
    has_id = first_id_version is not None and version >= first_id_version

    def epoch(partition: Any) -> int:
        return int(partition.current_leader_epoch) if has_epoch else NO_EPOCH

    # the api key, not the class, says which request this is: any protocol's class may come here
    if api_key == PRODUCE:
        produce = cast("ProduceRequest", request)
        return [RequestedLeaderEpoch(t.name, p.index, epoch(p)) for t in produce.topic_data for p in t.partition_data]

    def topic_id(topic: Any) -> uuid.UUID | None:
        return known_topic_id(topic.topic_id) if has_id else None

    if api_key == LIST_OFFSETS:
        list_offsets = cast("ListOffsetsRequest", request)
        return [
            RequestedLeaderEpoch(t.name, p.partition_index, epoch(p), topic_id(t))
            for t in list_offsets.topics
            for p in t.partitions
        ]
    by_topic = cast("FetchRequest | OffsetForLeaderEpochRequest", request)
    named = api_key != FETCH or version <= _FETCH_LAST_NAMED_VERSION
    return [
        RequestedLeaderEpoch(t.topic if named else "", p.partition, epoch(p), topic_id(t))
        for t in by_topic.topics
        for p in t.partitions
    ]
