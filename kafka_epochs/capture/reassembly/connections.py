"""TCP connections: pairs of half-streams, opened by SYNs (or by data, mid-stream) and closed by FIN or RST.

The byte-level policy (ordering, retransmissions, overlaps, gaps) is :mod:`.halfstream`'s. Here:

* A SYN sets its direction's initial sequence number; a SYN-ACK also gives the other direction's
  (its acknowledgment number), so a capture that missed the SYN still starts that direction exactly.
* A direction whose first captured segment carries data without a SYN starts *mid-stream* at it.
* The ACK of each segment tells the other direction how far its bytes were received.
* A SYN that is not a retransmission of the one that opened the connection starts a new
  connection on the same 4-tuple (the old one ends with ``NEW_CONNECTION``).
* RST ends both directions; each FIN ends its own; the end of the capture ends the rest.
  Segments of a closed connection are counted as late and dropped.
"""

from __future__ import annotations

from kafka_epochs.capture.events import Direction, EndReason, Flow, FlowEvent
from kafka_epochs.capture.network.tcp import ACK, FIN, RST, SYN, Segment
from kafka_epochs.capture.reassembly.halfstream import SEQ_MASK, HalfStream
from kafka_epochs.capture.stats import CaptureStats

#: Out-of-order bytes one direction may hold while waiting for a hole to fill.
DEFAULT_MAX_BUFFERED_BYTES = 8 * 1024 * 1024
#: Out-of-order segments one direction may hold (whatever their size).
DEFAULT_MAX_BUFFERED_SEGMENTS = 16384


class _Connection:
    __slots__ = ("broker_to_client", "client_to_broker")

    def __init__(self, flow: Flow, stats: CaptureStats, max_buffered_bytes: int, max_buffered_segments: int) -> None:
        self.client_to_broker = HalfStream(
            flow, Direction.CLIENT_TO_BROKER, stats, max_buffered_bytes, max_buffered_segments
        )
        self.broker_to_client = HalfStream(
            flow, Direction.BROKER_TO_CLIENT, stats, max_buffered_bytes, max_buffered_segments
        )

    def halves(self, direction: Direction) -> tuple[HalfStream, HalfStream]:
        """(the half ``direction`` sends on, the other one)."""
        if direction is Direction.CLIENT_TO_BROKER:
            return self.client_to_broker, self.broker_to_client
        return self.broker_to_client, self.client_to_broker

    def is_reopened_by(self, half: HalfStream, syn_seq: int) -> bool:
        """Whether a SYN on ``half`` begins a new connection rather than repeating this one's."""
        return half.started and (half.midstream or half.base_seq != (syn_seq + 1) & SEQ_MASK)

    @property
    def closed(self) -> bool:
        return self.client_to_broker.ended and self.broker_to_client.ended

    def finish(self, reason: EndReason, timestamp_ns: int, packet: int, out: list[FlowEvent]) -> None:
        self.client_to_broker.finish(reason, timestamp_ns, packet, out)
        self.broker_to_client.finish(reason, timestamp_ns, packet, out)


class StreamReassembler:
    """Reassembles the byte streams of many connections from their segments, in capture order."""

    def __init__(
        self,
        *,
        max_buffered_bytes: int = DEFAULT_MAX_BUFFERED_BYTES,
        max_buffered_segments: int = DEFAULT_MAX_BUFFERED_SEGMENTS,
        stats: CaptureStats | None = None,
    ) -> None:
        self.stats = stats if stats is not None else CaptureStats()
        self._max_buffered = max_buffered_bytes
        self._max_segments = max_buffered_segments
        # None marks a connection that closed: its late segments are dropped, a new SYN reopens it.
        self._connections: dict[Flow, _Connection | None] = {}

    def feed(self, flow: Flow, direction: Direction, segment: Segment) -> list[FlowEvent]:
        """Take one segment of ``flow`` sent in ``direction``; returns the events it completes."""
        out: list[FlowEvent] = []
        stats = self.stats
        stats.segments += 1
        flags = segment.flags
        timestamp_ns, packet = segment.timestamp_ns, segment.packet
        connection = self._connections.get(flow)
        if flags & SYN:
            if connection is not None and connection.is_reopened_by(connection.halves(direction)[0], segment.seq):
                connection.finish(EndReason.NEW_CONNECTION, timestamp_ns, packet, out)
                connection = None
            if connection is None:
                connection = self._open(flow)
        elif connection is None:
            if flow in self._connections:
                stats.late_segments += 1
                return out
            connection = self._open(flow)

        half, other = connection.halves(direction)
        payload_seq = segment.seq
        if flags & SYN:
            payload_seq = (payload_seq + 1) & SEQ_MASK  # the SYN takes one sequence number
            if not half.started:
                half.start(payload_seq, False, timestamp_ns, packet, out)
            if flags & ACK and not other.started:
                other.start(segment.ack, False, timestamp_ns, packet, out)
        if segment.payload or segment.missing or flags & FIN:
            if not half.started:
                half.start(payload_seq, True, timestamp_ns, packet, out)
            half.segment(payload_seq, segment.payload, segment.missing, bool(flags & FIN), timestamp_ns, packet, out)
        if flags & ACK:
            other.peer_ack(segment.ack, timestamp_ns, packet, out)
        if flags & RST:
            connection.finish(EndReason.RST, timestamp_ns, packet, out)
        if connection.closed or flags & RST:
            self._connections[flow] = None
        return out

    def halves(self, flow: Flow, direction: Direction) -> tuple[HalfStream, HalfStream] | None:
        """(the half ``direction`` sends on, the other) of ``flow``'s open connection, if it has one."""
        connection = self._connections.get(flow)
        return None if connection is None else connection.halves(direction)

    def finish_all(self, timestamp_ns: int, packet: int) -> list[FlowEvent]:
        """End every connection still open (the capture is over)."""
        out: list[FlowEvent] = []
        for flow, connection in self._connections.items():
            if connection is not None:
                connection.finish(EndReason.CAPTURE_END, timestamp_ns, packet, out)
                self._connections[flow] = None
        return out

    def _open(self, flow: Flow) -> _Connection:
        connection = self._connections[flow] = _Connection(flow, self.stats, self._max_buffered, self._max_segments)
        self.stats.flows += 1
        return connection
