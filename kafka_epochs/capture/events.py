"""The vocabulary of captured Kafka traffic: endpoints, flows, directions and the stream events.

Each TCP connection to a broker carries two byte streams, one per :class:`Direction`. For each,
the capture yields ``StreamStart``, then ``StreamData`` in stream order, with ``Gap`` where bytes
were never captured, and ``StreamEnd``. When frame alignment is on (the default of
:func:`kafka_epochs.capture.iter_streams`), ``Resync`` marks where data starts at a Kafka frame
boundary again after a gap or a mid-stream start, and ``Discarded`` counts the captured bytes
skipped to get there. ``PacketError`` reports a packet or file record that could not be read.
"""

# No ``from __future__ import annotations``: with it, each field of Endpoint and Flow (NamedTuples)
# would be annotated by a string, which typing compiles as the class is made, at every start.

from enum import StrEnum
from typing import NamedTuple

from kafka_epochs.direction import Direction
from kafka_epochs.errors import KafkaEpochsError
from kafka_epochs.values import FrozenValue, Value, slot_setters

_set = object.__setattr__  # how a frozen value's __init__ sets its fields


class Endpoint(NamedTuple):
    """An IP address (as text, e.g. ``10.0.0.1`` or ``fe80::1``) and a TCP port."""

    address: str
    port: int

    def __str__(self) -> str:
        if ":" in self.address:
            return f"[{self.address}]:{self.port}"
        return f"{self.address}:{self.port}"


class Flow(NamedTuple):
    """A TCP connection between a Kafka client and a broker (a 4-tuple with its roles decided)."""

    client: Endpoint
    broker: Endpoint

    def __str__(self) -> str:
        return f"{self.client} -> {self.broker}"


class GapReason(StrEnum):
    ACKED_UNSEEN = "acked_unseen"  # the receiver acknowledged bytes the capture never saw
    BUFFER_FULL = "buffer_full"  # waiting for the missing bytes would exceed the out-of-order buffer
    SNAPLEN = "snaplen"  # the capture's snapshot length cut the segment
    CLOSED = "closed"  # the stream ended (FIN, RST, end of capture) with the bytes still missing


class EndReason(StrEnum):
    FIN = "fin"
    RST = "rst"
    NEW_CONNECTION = "new_connection"  # a SYN reused the 4-tuple before this connection was seen to close
    CAPTURE_END = "capture_end"
    EVICTED = "evicted"  # given up to bound memory: idle too long, or the table of connections was full


class ResyncReason(StrEnum):
    MIDSTREAM_START = "midstream_start"  # the capture began after the connection's first bytes
    GAP_INSIDE_FRAME = "gap_inside_frame"  # the frame hit by a gap was skipped; its size gave the next boundary
    AFTER_GAP = "after_gap"  # a gap swallowed a frame boundary (or hit while searching): found by search
    IMPLAUSIBLE_SIZE = "implausible_size"  # a frame size made no sense: the stream is searched again


class StreamStart(FrozenValue):
    """A direction of a flow begins. ``seq`` is the TCP sequence number of stream offset 0.

    ``midstream`` is true when the capture missed the start (no SYN, and no SYN-ACK that would
    tell where it was): offset 0 is then the first byte captured, usually not a frame boundary.
    """

    __slots__ = ("direction", "flow", "midstream", "packet", "seq", "timestamp_ns")
    flow: Flow
    direction: Direction
    timestamp_ns: int
    packet: int
    seq: int
    midstream: bool

    def __init__(
        self, flow: Flow, direction: Direction, timestamp_ns: int, packet: int, seq: int, midstream: bool
    ) -> None:
        set_flow, set_direction, set_timestamp_ns, set_packet, set_seq, set_midstream = _START_SETTERS
        set_flow(self, flow)
        set_direction(self, direction)
        set_timestamp_ns(self, timestamp_ns)
        set_packet(self, packet)
        set_seq(self, seq)
        set_midstream(self, midstream)


#: (two per connection, as StreamEnd: set through their slots, at half object.__setattr__'s cost)
_START_SETTERS = slot_setters(StreamStart, "flow", "direction", "timestamp_ns", "packet", "seq", "midstream")


# Not frozen: one is built per packet, a frozen one (object.__setattr__ per field) costs more.
class StreamData(Value):
    """Bytes of a direction, from the packet ``packet`` (its index in the file), at ``stream_offset``.

    Consecutive ``StreamData`` of one direction are contiguous unless a ``Gap``, ``Discarded`` or
    ``Resync`` of that direction comes between them.
    """

    __slots__ = ("data", "direction", "flow", "packet", "stream_offset", "timestamp_ns")
    flow: Flow
    direction: Direction
    timestamp_ns: int
    packet: int
    stream_offset: int
    data: bytes

    def __init__(
        self, flow: Flow, direction: Direction, timestamp_ns: int, packet: int, stream_offset: int, data: bytes
    ) -> None:
        self.flow = flow
        self.direction = direction
        self.timestamp_ns = timestamp_ns
        self.packet = packet
        self.stream_offset = stream_offset
        self.data = data


class Gap(FrozenValue):
    """``length`` bytes of the stream, from ``stream_offset`` (TCP sequence number ``seq``), were not captured.

    ``timestamp_ns`` and ``packet`` are those of the packet that made the loss certain (the last
    packet of the capture for losses found at its end).
    """

    __slots__ = ("direction", "flow", "length", "packet", "reason", "seq", "stream_offset", "timestamp_ns")
    flow: Flow
    direction: Direction
    timestamp_ns: int
    packet: int
    stream_offset: int
    length: int
    seq: int
    reason: GapReason

    def __init__(
        self,
        flow: Flow,
        direction: Direction,
        timestamp_ns: int,
        packet: int,
        stream_offset: int,
        length: int,
        seq: int,
        reason: GapReason,
    ) -> None:
        _set(self, "flow", flow)
        _set(self, "direction", direction)
        _set(self, "timestamp_ns", timestamp_ns)
        _set(self, "packet", packet)
        _set(self, "stream_offset", stream_offset)
        _set(self, "length", length)
        _set(self, "seq", seq)
        _set(self, "reason", reason)


class Discarded(FrozenValue):
    """Captured bytes skipped because they could not be placed in a frame (frame alignment only)."""

    __slots__ = ("direction", "flow", "length", "stream_offset", "timestamp_ns")
    flow: Flow
    direction: Direction
    timestamp_ns: int
    stream_offset: int
    length: int

    def __init__(self, flow: Flow, direction: Direction, timestamp_ns: int, stream_offset: int, length: int) -> None:
        _set(self, "flow", flow)
        _set(self, "direction", direction)
        _set(self, "timestamp_ns", timestamp_ns)
        _set(self, "stream_offset", stream_offset)
        _set(self, "length", length)


class Resync(FrozenValue):
    """The next ``StreamData`` of this direction starts a Kafka frame at ``stream_offset``.

    Any partial frame the consumer holds for this direction is incomplete and must be dropped.
    """

    __slots__ = ("direction", "flow", "reason", "stream_offset", "timestamp_ns")
    flow: Flow
    direction: Direction
    timestamp_ns: int
    stream_offset: int
    reason: ResyncReason

    def __init__(
        self, flow: Flow, direction: Direction, timestamp_ns: int, stream_offset: int, reason: ResyncReason
    ) -> None:
        _set(self, "flow", flow)
        _set(self, "direction", direction)
        _set(self, "timestamp_ns", timestamp_ns)
        _set(self, "stream_offset", stream_offset)
        _set(self, "reason", reason)


class StreamEnd(FrozenValue):
    """A direction of a flow ends; ``stream_offset`` is where it ended (its length, gaps included)."""

    __slots__ = ("direction", "flow", "reason", "stream_offset", "timestamp_ns")
    flow: Flow
    direction: Direction
    timestamp_ns: int
    stream_offset: int
    reason: EndReason

    def __init__(
        self, flow: Flow, direction: Direction, timestamp_ns: int, stream_offset: int, reason: EndReason
    ) -> None:
        set_flow, set_direction, set_timestamp_ns, set_stream_offset, set_reason = _END_SETTERS
        set_flow(self, flow)
        set_direction(self, direction)
        set_timestamp_ns(self, timestamp_ns)
        set_stream_offset(self, stream_offset)
        set_reason(self, reason)


_END_SETTERS = slot_setters(StreamEnd, "flow", "direction", "timestamp_ns", "stream_offset", "reason")


class PacketError(FrozenValue):
    """A packet (or file record) at index ``packet`` that could not be decoded or followed.

    ``error`` is a :class:`~kafka_epochs.errors.DecodeError` for malformed bytes (its
    ``offset`` is inside the packet, or inside the file for a broken record) or an
    :class:`~kafka_epochs.capture.errors.UnsupportedPacket`. ``timestamp_ns`` is the packet's, or
    the previous packet's when the record was too broken to have one.
    """

    __slots__ = ("error", "packet", "timestamp_ns")
    packet: int
    timestamp_ns: int
    error: KafkaEpochsError

    def __init__(self, packet: int, timestamp_ns: int, error: KafkaEpochsError) -> None:
        _set(self, "packet", packet)
        _set(self, "timestamp_ns", timestamp_ns)
        _set(self, "error", error)


#: An event about one direction of one flow.
FlowEvent = StreamStart | StreamData | Gap | Discarded | Resync | StreamEnd
#: Everything :func:`kafka_epochs.capture.iter_streams` yields.
StreamEvent = FlowEvent | PacketError
