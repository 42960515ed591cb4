"""The whole pipeline: capture file -> packets -> TCP segments -> Kafka flows -> ordered, aligned stream events."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator

from kafka_epochs.capture.alignment.aligner import FrameAligner
from kafka_epochs.capture.alignment.flows import FlowClassifier
from kafka_epochs.capture.alignment.rules import FrameRule, default_frame_rule
from kafka_epochs.capture.errors import UnsupportedPacket
from kafka_epochs.capture.events import (
    Direction,
    Flow,
    FlowEvent,
    PacketError,
    StreamEnd,
    StreamEvent,
    StreamStart,
)
from kafka_epochs.capture.files.packets import BadRecord
from kafka_epochs.capture.files.reader import DEFAULT_MAX_RECORD_SIZE, CaptureSource, read_packets
from kafka_epochs.capture.network.dissect import Dissector
from kafka_epochs.capture.reassembly.connections import DEFAULT_MAX_BUFFERED_BYTES, StreamReassembler
from kafka_epochs.capture.stats import CaptureStats
from kafka_epochs.errors import DecodeError

FrameRules = Callable[[Flow, Direction], FrameRule]


class CaptureStreams:
    """The Kafka byte streams of a capture, as an iterable of events; :attr:`stats` fills in as it is read.

    ``ports``: broker ports (default ``{9092}``); ``auto_detect_ports``: also learn ports from
    ApiVersions handshakes. ``align_frames``: keep data on frame boundaries (``Resync`` and
    ``Discarded`` events), with ``frame_rules(flow, direction)`` giving each direction's
    :class:`FrameRule`; when false, the raw reassembled bytes are yielded with their gaps.
    ``max_buffered_bytes``: out-of-order bytes held per direction before a hole is given up.
    """

    def __init__(
        self,
        source: CaptureSource,
        *,
        ports: Iterable[int] | None = None,
        auto_detect_ports: bool = True,
        align_frames: bool = True,
        frame_rules: FrameRules = default_frame_rule,
        max_buffered_bytes: int = DEFAULT_MAX_BUFFERED_BYTES,
        max_record_size: int = DEFAULT_MAX_RECORD_SIZE,
    ) -> None:
        self.source = source
        self.ports = None if ports is None else frozenset(ports)
        self.auto_detect_ports = auto_detect_ports
        self.align_frames = align_frames
        self.frame_rules = frame_rules
        self.max_buffered_bytes = max_buffered_bytes
        self.max_record_size = max_record_size
        self.stats = CaptureStats()

    def __iter__(self) -> Iterator[StreamEvent]:
        stats = self.stats
        dissector = Dissector()
        classifier = FlowClassifier(self.ports, auto_detect=self.auto_detect_ports, stats=stats)
        reassembler = StreamReassembler(max_buffered_bytes=self.max_buffered_bytes, stats=stats)
        align = self._aligner_stage() if self.align_frames else None
        feed = reassembler.feed
        last_timestamp_ns = 0
        last_index = -1

        for record in read_packets(self.source, max_record_size=self.max_record_size):
            stats.packets += 1
            last_index = record.index
            if isinstance(record, BadRecord):
                stats.bad_packets += 1
                yield PacketError(record.index, last_timestamp_ns, record.error)
                continue
            last_timestamp_ns = record.timestamp_ns
            try:
                segment = dissector.segment(record)
            except (DecodeError, UnsupportedPacket) as exc:
                stats.bad_packets += 1
                yield PacketError(record.index, last_timestamp_ns, exc)
                continue
            if isinstance(segment, str):
                stats.ignored[segment] += 1
                continue
            decision = classifier.classify(segment)
            if decision is not None:
                events = feed(decision[0], decision[1], segment)
            else:
                released = classifier.take_released()
                if not released:
                    continue
                events = []
                for flow, direction, held in released:
                    events += feed(flow, direction, held)
            if align is None:
                yield from events
            else:
                yield from align(events)

        classifier.finish()
        events = reassembler.finish_all(last_timestamp_ns, last_index)
        yield from (events if align is None else align(events))

    def _aligner_stage(self) -> Callable[[list[FlowEvent]], list[FlowEvent]]:
        aligners: dict[tuple[Flow, Direction], FrameAligner] = {}
        rules = self.frame_rules
        stats = self.stats

        def align(events: list[FlowEvent]) -> list[FlowEvent]:
            out: list[FlowEvent] = []
            for event in events:
                key = (event.flow, event.direction)
                if type(event) is StreamStart:
                    aligner = aligners[key] = FrameAligner(
                        event.flow, event.direction, rules(event.flow, event.direction), stats
                    )
                else:
                    aligner = aligners[key]
                aligner.feed(event, out)
                if type(event) is StreamEnd:
                    del aligners[key]
            return out

        return align


def iter_streams(
    source: CaptureSource,
    *,
    ports: Iterable[int] | None = None,
    auto_detect_ports: bool = True,
    align_frames: bool = True,
    frame_rules: FrameRules = default_frame_rule,
    max_buffered_bytes: int = DEFAULT_MAX_BUFFERED_BYTES,
    max_record_size: int = DEFAULT_MAX_RECORD_SIZE,
) -> Iterator[StreamEvent]:
    """The events of every Kafka connection in a capture, in capture order (see :class:`CaptureStreams`)."""
    return iter(
        CaptureStreams(
            source,
            ports=ports,
            auto_detect_ports=auto_detect_ports,
            align_frames=align_frames,
            frame_rules=frame_rules,
            max_buffered_bytes=max_buffered_bytes,
            max_record_size=max_record_size,
        )
    )
