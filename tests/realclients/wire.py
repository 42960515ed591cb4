"""Read a broker's recordings back with this project's code: what the clients really sent.

Nothing here trusts the broker's own bookkeeping: the client byte streams are re-framed with
:class:`~kafka_epochs.framing.FrameBuffer`, decoded with the given protocol, and the ``records``
of every Produce partition decoded with :mod:`kafka_epochs.records`.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from kafka_epochs.framing import Connection, FrameBuffer, RequestEvent, ResponseEvent, StreamLost
from kafka_epochs.records import Compression, RecordBatch, decode_records

from .broker import API_VERSIONS, PRODUCE, ConnectionRecording
from .drivers import Sent


@dataclass
class WireProduce:
    """Everything the Produce requests of a session carried, in wire order."""

    records: list[Sent] = field(default_factory=list)
    codecs: set[Compression] = field(default_factory=set)
    acks: set[int] = field(default_factory=set)
    versions: set[int] = field(default_factory=set)
    magics: set[int] = field(default_factory=set)
    batches: int = 0
    requests: int = 0
    #: (producer id, producer epoch) of every batch: (-1, -1) unless the producer is idempotent.
    producers: set[tuple[int, int]] = field(default_factory=set)
    #: Base sequences of each partition's batches, in order.
    sequences: dict[tuple[str, int], list[int]] = field(default_factory=dict)


def produced_on_the_wire(protocol: Any, recordings: Sequence[ConnectionRecording]) -> WireProduce:
    out = WireProduce()
    for recording in recordings:
        frames = FrameBuffer()
        frames.feed(recording.stream("client"))
        for frame in frames:
            api_key, version = struct.unpack_from(">hh", frame, 4)
            if api_key == API_VERSIONS and version not in protocol.versions(API_VERSIONS):
                continue  # a too-new ApiVersions, answered in v0; not ours to decode
            decoded = protocol.decode_request(frame)
            if decoded.api_key != PRODUCE:
                continue
            out.requests += 1
            out.versions.add(decoded.api_version)
            out.acks.add(decoded.body.acks)
            for topic in decoded.body.topic_data:
                for part in topic.partition_data:
                    for entry in decode_records(part.records or b"", allow_truncated_tail=False):
                        assert isinstance(entry, RecordBatch), f"a legacy message in {topic.name}[{part.index}]"
                        out.batches += 1
                        out.magics.add(entry.magic)
                        out.codecs.add(entry.compression)
                        out.producers.add((entry.producer_id, entry.producer_epoch))
                        out.sequences.setdefault((topic.name, part.index), []).append(entry.base_sequence)
                        out.records.extend(
                            Sent(topic.name, part.index, r.key, r.value, tuple(r.headers)) for r in entry.records
                        )
    return out


@dataclass
class Pairing:
    """The result of replaying recordings through :class:`~kafka_epochs.framing.Connection`."""

    requests: int = 0
    responses: int = 0
    problems: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    #: Requests never answered: (api key, version, acks for Produce else None).
    unanswered: list[tuple[int | None, int | None, int | None]] = field(default_factory=list)
    #: (api key, version) of every decoded request.
    used: set[tuple[int, int]] = field(default_factory=set)
    #: Requests that had bytes after their body: (api key, version, count).
    trailing: list[tuple[int, int, int]] = field(default_factory=list)


def replay(protocol: Any, recordings: Sequence[ConnectionRecording]) -> Pairing:
    """Feed each recording's chunks, in order, to a Connection; collect what it says."""
    result = Pairing()
    for n, recording in enumerate(recordings):
        connection = Connection(protocol)
        for timestamp, direction, data in recording.chunks:
            feed = connection.client_bytes if direction == "client" else connection.broker_bytes
            for event in feed(data, timestamp):
                _note(result, n, event)
        for request in connection.unanswered():
            body = request.decoded.body if request.decoded is not None else None
            acks = body.acks if request.api_key == PRODUCE and body is not None else None
            result.unanswered.append((request.api_key, request.api_version, acks))
    return result


def _note(result: Pairing, n: int, event: RequestEvent | ResponseEvent | StreamLost) -> None:
    if isinstance(event, StreamLost):
        result.problems.append(f"connection {n}: {event.direction} stream lost: {event.reason}")
        return
    if isinstance(event, RequestEvent):
        result.requests += 1
        if event.decoded is not None:
            result.used.add((event.decoded.api_key, event.decoded.api_version))
            if event.decoded.trailing:
                result.trailing.append((event.decoded.api_key, event.decoded.api_version, event.decoded.trailing))
    else:
        result.responses += 1
    if event.error is not None and not (isinstance(event, RequestEvent) and event.api_key == API_VERSIONS):
        result.problems.append(f"connection {n}: {type(event).__name__}: {event.error}")
    result.warnings.extend(f"connection {n}: {w}" for w in event.warnings)
