"""One record at a time: packet -> TCP segment -> Kafka flow -> reassembled, aligned stream events.

:class:`StreamPipeline` is the state a capture's reading carries from one record to the next;
:class:`~kafka_epochs.capture.streams.CaptureStreams` drives it over a whole file. It is also
driven over a *share* of a file's records (the packets of some connections, in file order),
which is how a large capture is read in parallel: connections never share state, except that a
port learnt from one connection's ApiVersions handshake makes others on that port Kafka, and
:meth:`StreamPipeline.learn_port` is how a share is told about ports learnt elsewhere.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

from kafka_epochs.capture.alignment.aligner import FrameAligner
from kafka_epochs.capture.alignment.flows import FlowClassifier
from kafka_epochs.capture.alignment.rules import FrameRule, default_frame_rule
from kafka_epochs.capture.errors import UnsupportedPacket
from kafka_epochs.capture.events import Direction, Flow, FlowEvent, PacketError, StreamEnd, StreamEvent, StreamStart
from kafka_epochs.capture.files.packets import BadRecord, Packet
from kafka_epochs.capture.network.dissect import Dissector
from kafka_epochs.capture.network.tcp import Segment
from kafka_epochs.capture.reassembly.connections import DEFAULT_MAX_BUFFERED_BYTES, StreamReassembler
from kafka_epochs.capture.stats import CaptureStats
from kafka_epochs.errors import DecodeError

FrameRules = Callable[[Flow, Direction], FrameRule]


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
    ) -> None:
        self.stats = stats if stats is not None else CaptureStats()
        self.dissector = Dissector()
        self.classifier = FlowClassifier(ports, auto_detect=auto_detect_ports, stats=self.stats)
        self.reassembler = StreamReassembler(max_buffered_bytes=max_buffered_bytes, stats=self.stats)
        self.frame_rules = frame_rules
        self.align_frames = align_frames
        self._aligners: dict[tuple[Flow, Direction], FrameAligner] = {}
        #: the time of the last readable packet and the index of the last record (what the end
        #: of the capture is stamped with)
        self.last_timestamp_ns = 0
        self.last_index = -1

    def record(self, record: Packet | BadRecord) -> Sequence[StreamEvent]:
        """The events one record of the file completes."""
        stats = self.stats
        stats.packets += 1
        self.last_index = record.index
        if isinstance(record, BadRecord):
            stats.bad_packets += 1
            return [PacketError(record.index, self.last_timestamp_ns, record.error)]
        self.last_timestamp_ns = record.timestamp_ns
        try:
            segment = self.dissector.segment(record)
        except (DecodeError, UnsupportedPacket) as exc:
            stats.bad_packets += 1
            return [PacketError(record.index, record.timestamp_ns, exc)]
        if isinstance(segment, str):
            stats.ignored[segment] += 1
            return []
        return self.segment(segment)

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
        out: list[FlowEvent] = []
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
        return out
