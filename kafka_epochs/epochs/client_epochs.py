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
# topic by id (Fetch and Produce from v13 name it by id only; the bundled ListOffsets v6 and
# OffsetForLeaderEpoch v4 send both).
_FIRST_EPOCH_VERSION = {PRODUCE: 12, FETCH: 9, LIST_OFFSETS: 4, OFFSET_FOR_LEADER_EPOCH: 2}
_FIRST_TOPIC_ID_VERSION = {PRODUCE: 13, FETCH: 13, LIST_OFFSETS: 6, OFFSET_FOR_LEADER_EPOCH: 4}
_FETCH_LAST_NAMED_VERSION = 12


class RequestedLeaderEpoch(NamedTuple):
    """The epoch a client request names for one partition."""

    #: "" when the version names topics by id only (Fetch v13+).
    topic: str
    partition: int
    #: -1 when the version has no such field or the client knows no epoch.
    current_leader_epoch: int
    topic_id: uuid.UUID | None = None


#: Where each request keeps what :func:`requested_leader_epochs` reads, as field paths (topic name,
#: topic id, partition, current leader epoch; None: the api has no such field): for readers that
#: take columns rather than objects (projections, see :func:`requested_from_columns`).
EPOCH_PATHS: dict[int, tuple[str, str | None, str, str]] = {
    PRODUCE: (
        "topic_data[].name",
        "topic_data[].topic_id",
        "topic_data[].partition_data[].index",
        "topic_data[].partition_data[].current_leader_epoch",
    ),
    FETCH: (
        "topics[].topic",
        "topics[].topic_id",
        "topics[].partitions[].partition",
        "topics[].partitions[].current_leader_epoch",
    ),
    LIST_OFFSETS: (
        "topics[].name",
        "topics[].topic_id",
        "topics[].partitions[].partition_index",
        "topics[].partitions[].current_leader_epoch",
    ),
    OFFSET_FOR_LEADER_EPOCH: (
        "topics[].topic",
        "topics[].topic_id",
        "topics[].partitions[].partition",
        "topics[].partitions[].current_leader_epoch",
    ),
}


def _carries(api_key: int | None, version: int, name: str) -> tuple[bool, bool]:
    """(has a CurrentLeaderEpoch, names topics by id) for an api's version; ValueError if neither api."""
    if api_key not in _FIRST_EPOCH_VERSION:
        raise ValueError(f"{name} carries no client leader epoch")
    first_id_version = _FIRST_TOPIC_ID_VERSION[api_key]
    return version >= _FIRST_EPOCH_VERSION[api_key], first_id_version is not None and version >= first_id_version


def requested_from_columns(
    api_key: int, version: int, columns: dict[str, list[Any] | None]
) -> list[RequestedLeaderEpoch]:
    """:func:`requested_leader_epochs` from columns read along :data:`EPOCH_PATHS` (one row per
    partition; a path the request's layout lacks maps to None, and reads as the field's absence)."""
    has_epoch, has_id = _carries(api_key, version, f"api key {api_key}")
    topic_path, id_path, partition_path, epoch_path = EPOCH_PATHS[api_key]
    partitions = columns.get(partition_path) or []
    rows = len(partitions)
    named = not ((api_key == FETCH and version > _FETCH_LAST_NAMED_VERSION) or (api_key == PRODUCE and has_id))
    topics = columns.get(topic_path) if named else None
    ids = columns.get(id_path) if id_path is not None and has_id else None
    epochs = columns.get(epoch_path) if has_epoch else None
    return [
        RequestedLeaderEpoch(
            topics[i] if topics is not None and topics[i] is not None else "",
            int(partitions[i]),
            int(epochs[i]) if epochs is not None and epochs[i] is not None else NO_EPOCH,
            known_topic_id(ids[i]) if ids is not None else None,
        )
        for i in range(rows)
    ]


def requested_leader_epochs(request: EpochRequest, version: int) -> list[RequestedLeaderEpoch]:
    """Every partition of a Produce, Fetch, ListOffsets or OffsetForLeaderEpoch request.

    Raises ``ValueError`` for any other request: the others carry no client leader epoch.
    """
    api_key = getattr(type(request), "API_KEY", None)
    has_epoch, has_id = _carries(api_key, version, type(request).__name__)

    def epoch(partition: Any) -> int:
        # a layout of that version may lack the field (Apache's Produce v12 has none): no epoch
        return int(getattr(partition, "current_leader_epoch", NO_EPOCH)) if has_epoch else NO_EPOCH

    # the api key, not the class, says which request this is: any protocol's class may come here
    def topic_id(topic: Any) -> uuid.UUID | None:
        # Apache's ListOffsets v6+ and OffsetForLeaderEpoch v4+ have no topic id (the KIP layouts do)
        return known_topic_id(getattr(topic, "topic_id", None)) if has_id else None

    if api_key == PRODUCE:
        produce = cast("ProduceRequest", request)
        named_produce = not has_id  # Produce v13+ names topics by id only
        return [
            RequestedLeaderEpoch(t.name if named_produce else "", p.index, epoch(p), topic_id(t))
            for t in produce.topic_data
            for p in t.partition_data
        ]

    if api_key == LIST_OFFSETS:
        list_offsets = cast("ListOffsetsRequest", request)
        return [
            RequestedLeaderEpoch(t.name, p.partition_index, epoch(p), topic_id(t))
            for t in list_offsets.topics
            for p in t.partitions
        ]
    by_topic = cast("FetchRequest | OffsetForLeaderEpochRequest", request)
    named = not ((api_key == FETCH and version > _FETCH_LAST_NAMED_VERSION) or (api_key == PRODUCE and has_id))
    return [
        RequestedLeaderEpoch(t.topic if named else "", p.partition, epoch(p), topic_id(t))
        for t in by_topic.topics
        for p in t.partitions
    ]
