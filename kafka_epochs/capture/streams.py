"""The whole pipeline: capture file -> packets -> TCP segments -> Kafka flows -> ordered, aligned stream events."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence

from kafka_epochs.capture.alignment.rules import default_frame_rule
from kafka_epochs.capture.events import StreamEvent
from kafka_epochs.capture.files.reader import DEFAULT_MAX_RECORD_SIZE, CaptureSource, read_packet_batches
from kafka_epochs.capture.pipeline import FrameRules, Sinks, StreamPipeline
from kafka_epochs.capture.reassembly.connections import DEFAULT_MAX_BUFFERED_BYTES, DEFAULT_MAX_CONNECTIONS
from kafka_epochs.capture.stats import CaptureStats


class CaptureStreams:
    """The Kafka byte streams of a capture, as an iterable of events; :attr:`stats` fills in as it is read.

    ``ports``: broker ports (default ``{9092}``); ``auto_detect_ports``: also learn ports from
    ApiVersions handshakes. ``align_frames``: keep data on frame boundaries (``Resync`` and
    ``Discarded`` events), with ``frame_rules(flow, direction)`` giving each direction's
    :class:`FrameRule`; when false, the raw reassembled bytes are yielded with their gaps.
    ``max_buffered_bytes``: out-of-order bytes held per direction before a hole is given up.
    ``max_connections``: connections followed at once (the oldest is given up to open one more;
    idle ones are given up too, see :mod:`~kafka_epochs.capture.reassembly.connections`).
    ``sinks``: a reader that cuts frames itself takes them straight from the lanes (see
    :mod:`~kafka_epochs.capture.pipeline`); :meth:`batches` then holds what it made.
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
        max_connections: int = DEFAULT_MAX_CONNECTIONS,
        sinks: Sinks | None = None,
    ) -> None:
        self.source = source
        self.sinks = sinks
        self.max_connections = max_connections
        self.ports = None if ports is None else frozenset(ports)
        self.auto_detect_ports = auto_detect_ports
        self.align_frames = align_frames
        self.frame_rules = frame_rules
        self.max_buffered_bytes = max_buffered_bytes
        self.max_record_size = max_record_size
        self.stats = CaptureStats()

    def __iter__(self) -> Iterator[StreamEvent]:
        for events in self.batches():
            yield from events

    def batches(self) -> Iterator[Sequence[StreamEvent]]:
        """The same events, as the sequences each batch of records completes (a batch: what the
        file reader had before it next read the stream, so a live capture's events come as its
        packets arrive; none for a batch that completes nothing): a consumer that loops over each
        saves a step per event."""
        pipeline = StreamPipeline(
            ports=self.ports,
            auto_detect_ports=self.auto_detect_ports,
            align_frames=self.align_frames,
            frame_rules=self.frame_rules,
            max_buffered_bytes=self.max_buffered_bytes,
            stats=self.stats,
            max_connections=self.max_connections,
            sinks=self.sinks,
        )
        for records in read_packet_batches(self.source, max_record_size=self.max_record_size):
            events = pipeline.records(records)
            if events:
                yield events
        yield pipeline.finish()


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
