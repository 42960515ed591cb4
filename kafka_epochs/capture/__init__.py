"""Kafka traffic from packet captures: pcap/pcapng files to ordered, frame-aligned byte streams.

>>> from kafka_epochs.capture import StreamData, Gap, Resync, iter_streams
>>> for event in iter_streams("broker.pcapng", ports={9092}):        # doctest: +SKIP
...     if isinstance(event, StreamData):
...         framer.feed(event.flow, event.direction, event.timestamp_ns, event.data)
...     elif isinstance(event, (Gap, Resync)):
...         framer.reset(event.flow, event.direction)

Four layers, one subpackage each: :mod:`.files` (pcap, pcapng) -> :mod:`.network` (link, IP,
TCP) -> :mod:`.reassembly` (TCP streams in order) -> :mod:`.alignment` (which connections are
Kafka, frame boundaries, resync); :mod:`.streams` is the pipeline through them.
See docs/captures.md. Not imported by ``import kafka_epochs``.
"""

from __future__ import annotations

from kafka_epochs.capture.alignment.rules import FrameRule, default_frame_rule
from kafka_epochs.capture.errors import CaptureError, CaptureFormatError, UnsupportedPacket
from kafka_epochs.capture.events import (
    Direction,
    Discarded,
    Endpoint,
    EndReason,
    Flow,
    FlowEvent,
    Gap,
    GapReason,
    PacketError,
    Resync,
    ResyncReason,
    StreamData,
    StreamEnd,
    StreamEvent,
    StreamStart,
)
from kafka_epochs.capture.files.packets import BadRecord, Packet
from kafka_epochs.capture.files.reader import CaptureSource, read_packets
from kafka_epochs.capture.files.writer import write_pcap
from kafka_epochs.capture.stats import CaptureStats
from kafka_epochs.capture.streams import CaptureStreams, iter_streams
from kafka_epochs.resync import find_frame_start, plausible_request, plausible_response

__all__ = [
    "BadRecord",
    "CaptureError",
    "CaptureFormatError",
    "CaptureSource",
    "CaptureStats",
    "CaptureStreams",
    "Direction",
    "Discarded",
    "EndReason",
    "Endpoint",
    "Flow",
    "FlowEvent",
    "FrameRule",
    "Gap",
    "GapReason",
    "Packet",
    "PacketError",
    "Resync",
    "ResyncReason",
    "StreamData",
    "StreamEnd",
    "StreamEvent",
    "StreamStart",
    "UnsupportedPacket",
    "default_frame_rule",
    "find_frame_start",
    "iter_streams",
    "plausible_request",
    "plausible_response",
    "read_packets",
    "write_pcap",
]
