"""Counters of what a capture held and what became of it, filled in as the capture is read."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field


@dataclass
class CaptureStats:
    packets: int = 0  # records read from the file, bad ones included
    bad_packets: int = 0  # reported as PacketError
    ignored: Counter[str] = field(default_factory=Counter)  # packets not followed, by reason
    flows: int = 0  # TCP connections followed as Kafka
    segments: int = 0  # TCP segments of those connections
    retransmitted_bytes: int = 0  # payload bytes seen before (first copy kept)
    out_of_order_segments: int = 0  # segments that arrived ahead of a hole and waited
    gaps: int = 0
    gap_bytes: int = 0
    late_segments: int = 0  # segments of a direction that had already ended
    evicted_connections: int = 0  # given up to bound memory (idle, half-open, or the table full)
    discarded_bytes: int = 0  # captured bytes skipped to find a frame boundary
    resyncs: int = 0
    detected_ports: set[int] = field(default_factory=set)  # broker ports learnt from ApiVersions requests
