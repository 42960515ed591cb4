"""One record at a time: packet -> TCP segment -> Kafka flow -> reassembled, aligned stream events.

:class:`StreamPipeline` is the state a capture's reading carries from one record to the next;
:class:`~kafka_epochs.capture.streams.CaptureStreams` drives it over a whole file. It is also
driven over a *share* of a file's records (the packets of some connections, in file order),
which is how a large capture is read in parallel: connections never share state, except that a
port learnt from one connection's ApiVersions handshake makes others on that port Kafka, and
:meth:`StreamPipeline.learn_port` is how a share is told about ports learnt elsewhere.

Nearly every packet of a capture is the next data of a direction already followed, with nothing
waiting in its reassembly and its frames in sync. For those the pipeline keeps a *lane* per
direction (keyed by the packet's raw addresses and ports): the packet's headers are read in one
unpack, the bytes are delivered and aligned, and the other direction's acknowledgement noted, with
no segment, classification or per-layer event in between. The direction's other segments (a FIN,
an RST, bytes out of order or while something waits) go to the reassembler straight, with the
flow and halves the lane knows; so does a SYN-ACK answering a SYN whose direction has its lane;
and a segment of a connection already closed (its last ACK) is only counted, as the reassembler
would. A SYN that opens a connection on a Kafka port, of a 4-tuple nothing is known of, is
classified and opened without a segment, and makes its direction's lane. Whatever else (other
links, IPv6, a SYN of a known 4-tuple, a packet of a direction with no lane) goes the layered
way, which also makes the lanes; the two give the same events (a test holds them equal
over real, damaged, reordered and misbehaving captures).

A reader that cuts frames itself can be given :class:`Sinks`: a lane's data that starts a frame
with nothing pending in its aligner is then offered to the direction's sink, which takes the
frames it holds whole and puts what it makes of them in the list of events, in their place, and
may take the start of a frame the packet's end cuts (to buffer it; it says where that frame
ends); the aligner follows on from where the sink stopped, and the rest (a frame the sink
refuses, a size field cut in two) is a :class:`StreamData` event as before. Data that goes on
with a frame begun in an earlier packet, and ends no later than it, is offered too (a large
response comes in many packets): the sink takes it as the event's reader would take the event,
or refuses it whole. No event is made for the bytes a sink took, and their sizes are walked once. So that a
sink sees its connection as the events before it left it, the events not yet handed on are
delivered (:meth:`Sinks.deliver`) before it is called.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Iterable, Sequence
from typing import Any, Final, Protocol

from kafka_epochs.capture.alignment.aligner import FrameAligner
from kafka_epochs.capture.alignment.flows import FlowClassifier
from kafka_epochs.capture.alignment.rules import FrameRule, default_frame_rule
from kafka_epochs.capture.errors import UnsupportedPacket
from kafka_epochs.capture.events import (
    Direction,
    Flow,
    FlowEvent,
    PacketError,
    StreamData,
    StreamEnd,
    StreamEvent,
    StreamStart,
)
from kafka_epochs.capture.files.packets import BadRecord, Packet
from kafka_epochs.capture.files.runs import RecordRun
from kafka_epochs.capture.network.dissect import (
    ETHERNET_IPV4_TCP_KEYED,
    ETHERNET_IPV4_TCP_MIN,
    FRAGMENT_BITS,
    TCP_START,
    Dissector,
)
from kafka_epochs.capture.network.ip import PROTO_TCP
from kafka_epochs.capture.network.link import ETHERTYPE_IPV4, LINKTYPE_ETHERNET
from kafka_epochs.capture.network.tcp import ACK, FIN, RST, SYN, Segment
from kafka_epochs.capture.reassembly.connections import (
    DEFAULT_MAX_BUFFERED_BYTES,
    DEFAULT_MAX_CONNECTIONS,
    StreamReassembler,
    TcpConnection,
)
from kafka_epochs.capture.reassembly.halfstream import HALF_SEQ_SPACE, SEQ_MASK, HalfStream
from kafka_epochs.capture.stats import CaptureStats
from kafka_epochs.errors import DecodeError

FrameRules = Callable[[Flow, Direction], FrameRule]
#: A lane's key: a packet's source and destination addresses and ports, its 12 bytes as they are
#: in the packet (one string is hashed faster than a tuple of four is made and hashed).
_LaneKey = bytes
#: A direction's sink (see the module docstring): ``sink(data, timestamp_ns, out, inside)`` takes
#: the frames ``data`` holds whole from its start, appends what it makes of them to ``out``, and
#: returns how many bytes it took (0 to ``len(data)``, a frame boundary); or, having taken those
#: and the start of a frame that goes on past ``data``'s end (of a size the aligner allows), where
#: that frame ends, counted from ``data``'s start (more than ``len(data)``). With ``inside``,
#: ``data`` goes on with a frame begun before, and ends no later than it: the sink takes it all
#: (as the :class:`StreamData` event of it would be taken) and returns ``len(data)``, or takes
#: none (0).
FrameSink = Callable[[bytes, int, list[Any], bool], int]


class Sinks(Protocol):
    """What a reader that cuts frames itself gives the pipeline (see the module docstring)."""

    def sink(self, flow: Flow, direction: Direction, max_frame_size: int) -> FrameSink | None:
        """The direction's sink (None: its data goes as events), for frames of at most
        ``max_frame_size`` bytes (a larger size is the aligner's to judge). Asked once per lane,
        when all events before have been delivered."""
        ...

    def deliver(self, events: list[Any], start: int) -> None:
        """Hand ``events[start:]`` on now, replacing them with what was made of them."""
        ...


#: A lane: the direction's half-stream, the other direction's, the direction's aligner, the
#: direction's flow and direction (what a StreamData of it carries), the connection (whose time
#: of last activity it keeps), and the direction's sink (None, or _UNASKED until first needed).
_Lane = tuple[HalfStream, HalfStream, FrameAligner, Flow, Direction, TcpConnection, Any]
#: The TCP flags (and data offset) bits a lane looks at: ACK must be set, SYN, FIN and RST clear.
_LANE_FLAGS: Final = SYN | FIN | RST | ACK
_UNASKED: Final = object()  # a lane's sink not yet asked for
#: Ended lanes remembered (see ``StreamPipeline._ended_lanes``); one forgotten sends its
#: connection's late segments the layered way, to the same count.
ENDED_LANES_KEPT: Final = 256
_SYN_ACK: Final = SYN | ACK
_CLIENT, _BROKER = Direction.CLIENT_TO_BROKER, Direction.BROKER_TO_CLIENT


class StreamPipeline:
    """Turns records into stream events; see :class:`~kafka_epochs.capture.streams.CaptureStreams`
    for the options."""

    def __init__(
        self,
        *,
        ports: Iterable[int] | None = None,
        auto_detect_ports: bool = True,
        align_frames: bool = True,
        frame_rules: FrameRules = default_frame_rule,
        max_buffered_bytes: int = DEFAULT_MAX_BUFFERED_BYTES,
        stats: CaptureStats | None = None,
        lanes: bool = True,
        max_connections: int = DEFAULT_MAX_CONNECTIONS,
        sinks: Sinks | None = None,
    ) -> None:
        self.stats = stats if stats is not None else CaptureStats()
        self.dissector = Dissector()
        self.classifier = FlowClassifier(ports, auto_detect=auto_detect_ports, stats=self.stats)
        self.reassembler = StreamReassembler(
            max_buffered_bytes=max_buffered_bytes, stats=self.stats, max_connections=max_connections
        )
        self.frame_rules = frame_rules
        self.align_frames = align_frames
        self._aligners: dict[tuple[Flow, Direction], FrameAligner] = {}
        # The lanes (see the module docstring); with ``lanes=False`` every packet goes the
        # layered way (what the tests compare the lanes with).
        self._use_lanes = lanes and align_frames
        self._lanes: dict[_LaneKey, _Lane] = {}
        self._lane_keys: dict[tuple[Flow, Direction], _LaneKey] = {}  # to drop a lane when its direction ends
        # The flows of lanes dropped when their direction ended, by lane key, the most recent
        # (a connection's last ACK comes right after its FINs: a late segment of a closed flow).
        self._ended_lanes: OrderedDict[_LaneKey, Flow] = OrderedDict()
        self._sinks = sinks if self._use_lanes else None
        #: the time of the last readable packet and the index of the last record (what the end
        #: of the capture is stamped with)
        self.last_timestamp_ns = 0
        self.last_index = -1

    def record(self, record: Packet | BadRecord) -> Sequence[StreamEvent]:
        """The events one record of the file completes."""
        if type(record) is Packet:
            out: list[StreamEvent] = []
            self._run(RecordRun.holding([record]), out, 0)
            return out
        return self.records((record,))

    def records(self, records: Sequence[Packet | BadRecord]) -> list[StreamEvent]:
        """The events some records of the file complete, in order (:meth:`record` of each, in one
        loop: a lane's packet costs no call of its own); with sinks, what they made is among them,
        and the events before the last thing a sink made have been delivered already. A
        :class:`~kafka_epochs.capture.files.runs.RecordRun` (what the file readers give) is read
        from its buffer, with no packet made for a lane's record; other packets are held in runs
        of their own."""
        out: list[StreamEvent] = []
        if type(records) is RecordRun:
            self._run(records, out, 0)
            return out
        delivered_to = 0  # out[:delivered_to] is delivered (or was made by a sink)
        packets: list[Packet] = []
        for record in records:
            if type(record) is Packet:
                if packets and record.link_type != packets[0].link_type:
                    delivered_to = self._run(RecordRun.holding(packets), out, delivered_to)
                    packets = []
                packets.append(record)
                continue
            if packets:
                delivered_to = self._run(RecordRun.holding(packets), out, delivered_to)
                packets = []
            self.stats.packets += 1
            self.stats.bad_packets += 1
            self.last_index = record.index
            out.append(PacketError(record.index, self.last_timestamp_ns, record.error))  # type: ignore[union-attr]
        if packets:
            self._run(RecordRun.holding(packets), out, delivered_to)
        return out

    def run_by_record(self, run: RecordRun) -> tuple[list[StreamEvent], list[int]]:
        """``(events, starts)``: the events a run's records complete, and where each record's
        begin among them (the ``i``-th record's are ``events[starts[i]:starts[i + 1]]``, the last
        one's go to the end), for a reader that keys what each record makes, with no packet made
        and no call per record. Not with sinks (they replace events as they go)."""
        if self._sinks is not None:
            raise ValueError("run_by_record is for a pipeline without sinks")
        out: list[StreamEvent] = []
        marks: list[int] = []
        self._run(run, out, 0, marks)
        return out, marks

    def _run(self, run: RecordRun, out: list[StreamEvent], delivered_to: int, marks: list[int] | None = None) -> int:
        """The events of a run of records, appended to ``out``, whose first ``delivered_to`` are
        delivered (or made by a sink); how many of it are, after. With ``marks``, where each
        record's events begin in ``out`` is appended to it."""
        times = run.times
        if not times:
            return delivered_to
        stats = self.stats
        stats.packets += len(times)
        packets = run.packets
        self.last_index = run.first_index + len(times) - 1 if packets is None else packets[-1].index
        self.last_timestamp_ns = times[-1]
        reassembler = self.reassembler
        lanes = self._lanes if self._use_lanes and run.link_type == LINKTYPE_ETHERNET else None
        sinks = self._sinks
        unpack_headers = ETHERNET_IPV4_TCP_KEYED.unpack_from
        buf = run.buf
        lane_segments = 0  # (the lanes' segments, counted here and added to the stats once)
        for i, timestamp_ns, first, last in zip(range(len(times)), times, run.starts, run.ends, strict=True):
            # the packet is buf[first:last]
            if marks is not None:
                marks.append(len(out))
            key = None
            if lanes is not None and last - first >= ETHERNET_IPV4_TCP_MIN:
                ethertype, version_ihl, total, fragment, protocol, ends, seq, ack, offset_flags = unpack_headers(
                    buf, first
                )
                if ethertype == ETHERTYPE_IPV4 and version_ihl == 0x45 and protocol == PROTO_TCP:
                    key = ends
                    lane = lanes.get(key)
                    tcp_header = (offset_flags >> 12) * 4
                    start = first + TCP_START + tcp_header
                    end = first + 14 + total
                    if (
                        lane is not None
                        and offset_flags & _LANE_FLAGS == ACK
                        and not fragment & FRAGMENT_BITS
                        and tcp_header >= 20
                        and start <= end <= last
                    ):
                        half, other, aligner, flow, direction, connection, sink = lane
                        if (
                            not (half.ended or half.waiting or other.waiting or half.fin_offset is not None)
                            and timestamp_ns < reassembler.next_sweep_ns
                        ):
                            connection.last_ns = timestamp_ns
                            delivered = half.delivered
                            if start == end or seq == (half.base_seq + delivered) & SEQ_MASK:
                                lane_segments += 1
                                if start != end:  # the next bytes (else a bare acknowledgement)
                                    payload = buf[start:end]
                                    half.delivered = delivered + len(payload)
                                    taken = 0
                                    # A sink is offered the bytes when they start a frame, or lie
                                    # inside the frame being followed, with nothing else pending in
                                    # the aligner (its state read, not asked: FrameAligner.clean).
                                    if sink is not None and aligner.clean:
                                        frame_end = aligner.frame_end
                                        inside = frame_end != delivered
                                        if not inside or delivered + len(payload) <= frame_end:
                                            if len(out) > delivered_to:
                                                sinks.deliver(out, delivered_to)  # type: ignore[union-attr]
                                            if sink is _UNASKED:
                                                sink = self._ask_sink(key, lane)
                                            if sink is not None:
                                                taken = sink(payload, timestamp_ns, out, inside)
                                                if taken and not inside:  # (inside: the frame's end stands)
                                                    aligner.frame_end = delivered + taken  # (whole frames passed)
                                            delivered_to = len(out)
                                    if taken < len(payload):
                                        event = StreamData(
                                            flow,
                                            direction,
                                            timestamp_ns,
                                            run.index_of(i),
                                            delivered + taken,
                                            payload[taken:] if taken else payload,
                                        )
                                        aligner.take(event, out)
                                # How far the peer acknowledged the other direction moves; with
                                # nothing waiting there (a lane's condition) nothing is released.
                                if other.started and not other.ended:
                                    # the acknowledged offset nearest the bytes delivered (the sequence
                                    # number expected next is base_seq + delivered, modulo 2**32)
                                    delivered = other.delivered
                                    acked = (
                                        delivered
                                        + ((ack - other.base_seq - delivered + HALF_SEQ_SPACE) & SEQ_MASK)
                                        - HALF_SEQ_SPACE
                                    )
                                    if other.fin_offset is not None and acked > other.fin_offset:
                                        acked = other.fin_offset  # the FIN takes a sequence number, not a byte
                                    if acked > other.peer_acked:  # noqa: PLR1730 (max() is a call)
                                        other.peer_acked = acked
                                continue
                    if (
                        not offset_flags & SYN
                        and not fragment & FRAGMENT_BITS
                        and tcp_header >= 20
                        and start <= end <= last
                        and timestamp_ns < reassembler.next_sweep_ns
                    ):
                        if lane is not None:
                            # The direction's other segments (a FIN, an RST, bytes out of order):
                            # the reassembler takes them as it would from the layered way, with
                            # the flow and halves the lane knows (no dissecting, no classifying).
                            half, other, _, flow, _, connection, _ = lane
                            stats.segments += 1
                            connection.last_ns = timestamp_ns
                            events: list[FlowEvent] = []
                            reassembler.carry(
                                flow,
                                connection,
                                half,
                                other,
                                seq,
                                ack,
                                offset_flags & 0xFF,
                                buf[start:end],
                                0,
                                timestamp_ns,
                                run.index_of(i),
                                events,
                            )
                            out += self._aligned(events)
                            continue
                        ended = self._ended_lanes.get(key)
                        if ended is not None and reassembler.is_closed(ended):
                            # a segment of a connection closed (its last ACK): feed only counts it
                            stats.segments += 1
                            stats.late_segments += 1
                            continue
                    elif (
                        lane is None
                        and offset_flags & _LANE_FLAGS == _SYN_ACK
                        and start == end
                        and not fragment & FRAGMENT_BITS
                        and tcp_header >= 20
                        and start <= last
                        and timestamp_ns < reassembler.next_sweep_ns
                    ):
                        # the answer to a SYN whose direction has its lane (made by the SYN)
                        opposite = lanes.get(ends[4:8] + ends[:4] + ends[10:] + ends[8:10])
                        if opposite is not None and not opposite[1].started:
                            out += self._syn_answered(key, opposite, seq, ack, timestamp_ns, run.index_of(i))
                            continue
                    elif (
                        lane is None
                        and offset_flags & _LANE_FLAGS == SYN
                        and start == end
                        and not fragment & FRAGMENT_BITS
                        and tcp_header >= 20
                        and start <= last
                    ):
                        opened = self._syn_opens(key, seq, timestamp_ns, run.index_of(i))
                        if opened is not None:
                            out += opened
                            continue
            out += self._layered(run.packet(i), key)
        stats.segments += lane_segments
        return delivered_to

    def _layered(self, record: Packet, key: _LaneKey | None) -> Sequence[StreamEvent]:
        """A record the lanes do not take, the layered way."""
        try:
            segment = self.dissector.segment(record)
        except (DecodeError, UnsupportedPacket) as exc:
            self.stats.bad_packets += 1
            return [PacketError(record.index, record.timestamp_ns, exc)]
        if isinstance(segment, str):
            self.stats.ignored[segment] += 1
            return []
        events = self.segment(segment)
        if key is not None:
            self._lay(key, segment)
        return events

    def _syn_opens(self, key: _LaneKey, seq: int, timestamp_ns: int, packet: int) -> Sequence[StreamEvent] | None:
        """A SYN (no ACK, no bytes, no FIN) that opens a Kafka connection nothing is known of:
        what the layered way makes of it (its direction's start and lane), without a segment.
        None where it is anything else (a known 4-tuple, another port, a full table): nothing
        was changed, and the layered way takes it."""
        source, destination = self.dissector.endpoints(key)
        decision = self.classifier.opening(source, destination)
        if decision is None:
            return None
        flow, direction = decision
        events: list[FlowEvent] = []
        connection = self.reassembler.open_by_syn(flow, direction, seq, timestamp_ns, packet, events)
        if connection is None:
            return None  # (the classifier's decision stands: the layered way finds it made)
        aligned = self._aligned(events)
        self._make_lane(key, flow, direction, connection)
        return aligned

    def _syn_answered(
        self, key: _LaneKey, opposite: _Lane, seq: int, ack: int, timestamp_ns: int, packet: int
    ) -> Sequence[StreamEvent]:
        """A SYN-ACK (no bytes, no FIN) answering a SYN whose direction has a lane (``opposite``)
        and whose own direction has not started: what feed makes of it, with the flow and halves
        the lane knows, and the direction's lane."""
        other, half, _, flow, opposite_direction, connection, _ = opposite  # (the halves the other way round)
        direction = _BROKER if opposite_direction is _CLIENT else _CLIENT
        self.stats.segments += 1
        connection.last_ns = timestamp_ns
        seq = (seq + 1) & SEQ_MASK  # the SYN takes one sequence number
        events: list[FlowEvent] = []
        half.start(seq, False, timestamp_ns, packet, events)
        self.reassembler.carry(flow, connection, half, other, seq, ack, _SYN_ACK, b"", 0, timestamp_ns, packet, events)
        aligned = self._aligned(events)
        self._make_lane(key, flow, direction, connection)
        return aligned

    def _lay(self, key: _LaneKey, segment: Segment) -> None:
        """After a packet went the layered way: make its direction's lane, or drop one that ended."""
        lane = self._lanes.get(key)
        if lane is not None:
            if not lane[0].ended:
                return
            del self._lanes[key]
        decision = self.classifier.decided(segment)
        if decision is None:
            return
        flow, direction = decision
        connection = self.reassembler.connection(flow)
        if connection is not None:
            self._make_lane(key, flow, direction, connection)

    def _make_lane(self, key: _LaneKey, flow: Flow, direction: Direction, connection: TcpConnection) -> None:
        """The lane of a direction of an open connection, once it has started (and not ended)."""
        aligner = self._aligners.get((flow, direction))
        if aligner is None:
            return
        half, other = connection.halves(direction)
        if half.started and not half.ended:
            sink = None if self._sinks is None else _UNASKED
            self._lanes[key] = (half, other, aligner, flow, direction, connection, sink)
            self._lane_keys[flow, direction] = key

    def _ask_sink(self, key: _LaneKey, lane: _Lane) -> FrameSink | None:
        """A lane's sink, asked for when first needed (when the events before are delivered, so
        that the reader has seen its connection start)."""
        half, other, aligner, flow, direction, connection, _ = lane
        sink = self._sinks.sink(flow, direction, aligner.max_size)  # type: ignore[union-attr]
        self._lanes[key] = (half, other, aligner, flow, direction, connection, sink)
        return sink

    def segment(self, segment: Segment) -> Sequence[StreamEvent]:
        """The events a record's TCP segment completes (what :meth:`record` does after
        dissecting; a reader that dissected elsewhere starts here)."""
        decision = self.classifier.classify(segment)
        if decision is not None:
            return self._aligned(self.reassembler.feed(decision[0], decision[1], segment))
        return self._released()

    def learn_port(self, port: int) -> Sequence[StreamEvent]:
        """A Kafka port learnt from another share of the capture, and the events it releases."""
        self.classifier.learn_port(port)
        return self._released()

    def finish(self, last_timestamp_ns: int | None = None, last_index: int | None = None) -> Sequence[StreamEvent]:
        """The capture is over: every stream still open ends (stamped with the last packet's time
        and the last record's index, unless given: a share's are the whole file's)."""
        self.classifier.finish()
        when = self.last_timestamp_ns if last_timestamp_ns is None else last_timestamp_ns
        index = self.last_index if last_index is None else last_index
        return self._aligned(self.reassembler.finish_all(when, index))

    def _released(self) -> Sequence[StreamEvent]:
        released = self.classifier.take_released()
        if not released:
            return []
        feed = self.reassembler.feed
        events: list[FlowEvent] = []
        for flow, direction, held in released:
            events += feed(flow, direction, held)
        return self._aligned(events)

    def _aligned(self, events: list[FlowEvent]) -> Sequence[StreamEvent]:
        if not self.align_frames or not events:
            return events
        aligners = self._aligners
        out: list[StreamEvent] = []
        for event in events:
            key = (event.flow, event.direction)
            if type(event) is StreamStart:
                aligner = aligners[key] = FrameAligner(
                    event.flow, event.direction, self.frame_rules(event.flow, event.direction), self.stats
                )
            else:
                aligner = aligners[key]
            aligner.feed(event, out)
            if type(event) is StreamEnd:
                del aligners[key]
                lane = self._lane_keys.pop(key, None)
                if lane is not None:
                    self._lanes.pop(lane, None)
                    ended = self._ended_lanes
                    ended[lane] = event.flow
                    if len(ended) > ENDED_LANES_KEPT:
                        ended.popitem(last=False)
        return out
