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
* Memory is bounded whatever the capture holds (a SYN flood, a scan): connections idle for
  :data:`IDLE_NS` of capture time (:data:`HALF_OPEN_IDLE_NS` for one that never carried a byte)
  are evicted, and so is the oldest when :data:`DEFAULT_MAX_CONNECTIONS` are open; both
  directions end with ``EVICTED`` (counted in ``stats.evicted_connections``). Kafka itself closes
  connections idle for 9-10 minutes (``connections.max.idle.ms``). A closed connection is
  remembered (to count its late segments) among the last :data:`DEFAULT_MAX_CONNECTIONS` closed.
"""

from __future__ import annotations

from collections import OrderedDict

from kafka_epochs.capture.events import Direction, EndReason, Flow, FlowEvent
from kafka_epochs.capture.network.tcp import ACK, FIN, RST, SYN, Segment
from kafka_epochs.capture.reassembly.halfstream import SEQ_MASK, HalfStream
from kafka_epochs.capture.stats import CaptureStats

#: Out-of-order bytes one direction may hold while waiting for a hole to fill.
DEFAULT_MAX_BUFFERED_BYTES = 8 * 1024 * 1024
#: Out-of-order segments one direction may hold (whatever their size).
DEFAULT_MAX_BUFFERED_SEGMENTS = 16384
#: Connections followed at once; opening one more evicts the oldest.
DEFAULT_MAX_CONNECTIONS = 65_536
#: Capture time after which a connection with no segment is evicted (longer than Kafka's
#: connections.max.idle.ms, so a live Kafka connection is never given up for being idle) ...
IDLE_NS = 15 * 60 * 1_000_000_000
#: ... and a connection that never carried a byte (a SYN flood's).
HALF_OPEN_IDLE_NS = 60 * 1_000_000_000
#: How often, in capture time, idle connections are looked for.
SWEEP_EVERY_NS = 30 * 1_000_000_000


class TcpConnection:
    """Both directions of one connection, and when it last carried a segment."""

    __slots__ = ("broker_to_client", "client_to_broker", "last_ns")

    def __init__(self, flow: Flow, stats: CaptureStats, max_buffered_bytes: int, max_buffered_segments: int) -> None:
        self.last_ns = 0  # the time of its last segment
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

    @property
    def carried_bytes(self) -> bool:
        return bool(self.client_to_broker.delivered or self.broker_to_client.delivered)

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
        max_connections: int = DEFAULT_MAX_CONNECTIONS,
    ) -> None:
        self.stats = stats if stats is not None else CaptureStats()
        self._max_buffered = max_buffered_bytes
        self._max_segments = max_buffered_segments
        self._max_connections = max(1, max_connections)
        # the open ones, oldest first (an OrderedDict: giving up the oldest is O(1), where a dict
        # would scan past every entry deleted from its front)
        self._connections: OrderedDict[Flow, TcpConnection] = OrderedDict()
        # Connections that closed (their late segments are dropped; a new SYN reopens one), the
        # most recent ones only.
        self._closed: OrderedDict[Flow, None] = OrderedDict()
        #: the capture time of the next look for idle connections (a shortcut taker must let
        #: :meth:`feed` have the first segment at or after it)
        self.next_sweep_ns = -(1 << 63)

    def feed(self, flow: Flow, direction: Direction, segment: Segment) -> list[FlowEvent]:
        """Take one segment of ``flow`` sent in ``direction``; returns the events it completes."""
        out: list[FlowEvent] = []
        stats = self.stats
        stats.segments += 1
        flags = segment.flags
        timestamp_ns, packet = segment.timestamp_ns, segment.packet
        if timestamp_ns >= self.next_sweep_ns:
            self._sweep(timestamp_ns, packet, out)
        connection = self._connections.get(flow)
        if flags & SYN:
            if connection is not None and connection.is_reopened_by(connection.halves(direction)[0], segment.seq):
                connection.finish(EndReason.NEW_CONNECTION, timestamp_ns, packet, out)
                del self._connections[flow]
                connection = None
            if connection is None:
                connection = self._open(flow, timestamp_ns, packet, out)
        elif connection is None:
            if flow in self._closed:
                stats.late_segments += 1
                return out
            connection = self._open(flow, timestamp_ns, packet, out)
        connection.last_ns = timestamp_ns

        half, other = connection.halves(direction)
        payload_seq = segment.seq
        if flags & SYN:
            payload_seq = (payload_seq + 1) & SEQ_MASK  # the SYN takes one sequence number
            if not half.started:
                half.start(payload_seq, False, timestamp_ns, packet, out)
            if flags & ACK and not other.started:
                other.start(segment.ack, False, timestamp_ns, packet, out)
        self.carry(
            flow,
            connection,
            half,
            other,
            payload_seq,
            segment.ack,
            flags,
            segment.payload,
            segment.missing,
            timestamp_ns,
            packet,
            out,
        )
        return out

    def open_by_syn(
        self, flow: Flow, direction: Direction, seq: int, timestamp_ns: int, packet: int, out: list[FlowEvent]
    ) -> TcpConnection | None:
        """:meth:`feed` of a SYN without ACK, bytes, FIN or RST, where it opens a connection with
        nothing else to do: none is open on ``flow``, the table has room and no sweep is due
        (else None, and nothing changed). The new connection; its direction's start is in ``out``."""
        if flow in self._connections or len(self._connections) >= self._max_connections:
            return None
        if timestamp_ns >= self.next_sweep_ns:
            return None
        self.stats.segments += 1
        connection = self._open(flow, timestamp_ns, packet, out)
        connection.last_ns = timestamp_ns
        half = connection.client_to_broker if direction is Direction.CLIENT_TO_BROKER else connection.broker_to_client
        half.start((seq + 1) & SEQ_MASK, False, timestamp_ns, packet, out)  # the SYN takes one sequence number
        return connection

    def carry(
        self,
        flow: Flow,
        connection: TcpConnection,
        half: HalfStream,
        other: HalfStream,
        seq: int,
        ack: int,
        flags: int,
        payload: bytes,
        missing: int,
        timestamp_ns: int,
        packet: int,
        out: list[FlowEvent],
    ) -> None:
        """The rest of :meth:`feed`, once the segment's connection is found (open) and its SYN,
        if any, taken: its bytes (from ``seq``; ``missing`` more not captured), FIN, ACK and RST.
        A reader that knows the connection of a segment with no SYN (counted in ``stats.segments``,
        its time in ``connection.last_ns``, no sweep due) may call this instead of :meth:`feed`."""
        if payload or missing or flags & FIN:
            if not half.started:
                half.start(seq, True, timestamp_ns, packet, out)
            half.segment(seq, payload, missing, bool(flags & FIN), timestamp_ns, packet, out)
        if flags & ACK:
            other.peer_ack(ack, timestamp_ns, packet, out)
        if flags & RST:
            connection.finish(EndReason.RST, timestamp_ns, packet, out)
        if connection.closed or flags & RST:
            self._close(flow)

    def connection(self, flow: Flow) -> TcpConnection | None:
        """``flow``'s open connection, if it has one (a reader that takes a segment by a shortcut
        sets its ``last_ns`` as :meth:`feed` would)."""
        return self._connections.get(flow)

    def is_closed(self, flow: Flow) -> bool:
        """Whether ``flow``'s last connection closed, with none open since: :meth:`feed` counts
        a segment of it without a SYN as late, and does nothing else."""
        return flow in self._closed and flow not in self._connections

    def finish_all(self, timestamp_ns: int, packet: int) -> list[FlowEvent]:
        """End every connection still open (the capture is over)."""
        out: list[FlowEvent] = []
        for connection in self._connections.values():
            connection.finish(EndReason.CAPTURE_END, timestamp_ns, packet, out)
        self._connections.clear()
        return out

    def _open(self, flow: Flow, timestamp_ns: int, packet: int, out: list[FlowEvent]) -> TcpConnection:
        if len(self._connections) >= self._max_connections:
            oldest = next(iter(self._connections))  # O(1): an OrderedDict's iteration follows its links
            self._evict(oldest, timestamp_ns, packet, out)
        self._closed.pop(flow, None)
        connection = self._connections[flow] = TcpConnection(flow, self.stats, self._max_buffered, self._max_segments)
        self.stats.flows += 1
        return connection

    def _close(self, flow: Flow) -> None:
        del self._connections[flow]
        closed = self._closed
        closed[flow] = None
        if len(closed) > self._max_connections:
            closed.popitem(last=False)

    def _evict(self, flow: Flow, timestamp_ns: int, packet: int, out: list[FlowEvent]) -> None:
        self._connections[flow].finish(EndReason.EVICTED, timestamp_ns, packet, out)
        self._close(flow)
        self.stats.evicted_connections += 1

    def _sweep(self, timestamp_ns: int, packet: int, out: list[FlowEvent]) -> None:
        """Evict the connections idle too long (see the module docstring)."""
        self.next_sweep_ns = timestamp_ns + SWEEP_EVERY_NS
        idle = [
            flow
            for flow, connection in self._connections.items()
            if timestamp_ns - connection.last_ns > (IDLE_NS if connection.carried_bytes else HALF_OPEN_IDLE_NS)
        ]
        for flow in idle:
            self._evict(flow, timestamp_ns, packet, out)
