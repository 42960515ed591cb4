"""Counters of what a capture held and what became of it, filled in as the capture is read."""

from __future__ import annotations

from collections import Counter

from kafka_epochs.values import Value


class CaptureStats(Value):
    __slots__ = (
        "bad_packets",
        "detected_ports",
        "discarded_bytes",
        "evicted_connections",
        "flows",
        "gap_bytes",
        "gaps",
        "ignored",
        "late_segments",
        "out_of_order_segments",
        "packets",
        "resyncs",
        "retransmitted_bytes",
        "segments",
    )
    packets: int  # records read from the file, bad ones included
    bad_packets: int  # reported as PacketError
    ignored: Counter[str]  # packets not followed, by reason
    flows: int  # TCP connections followed as Kafka
    segments: int  # TCP segments of those connections
    retransmitted_bytes: int  # payload bytes seen before (first copy kept)
    out_of_order_segments: int  # segments that arrived ahead of a hole and waited
    gaps: int
    gap_bytes: int
    late_segments: int  # segments of a direction that had already ended
    evicted_connections: int  # given up to bound memory (idle, half-open, or the table full)
    discarded_bytes: int  # captured bytes skipped to find a frame boundary
    resyncs: int
    detected_ports: set[int]  # broker ports learnt from ApiVersions requests

    def __init__(
        self,
        packets: int = 0,
        bad_packets: int = 0,
        ignored: Counter[str] | None = None,
        flows: int = 0,
        segments: int = 0,
        retransmitted_bytes: int = 0,
        out_of_order_segments: int = 0,
        gaps: int = 0,
        gap_bytes: int = 0,
        late_segments: int = 0,
        evicted_connections: int = 0,
        discarded_bytes: int = 0,
        resyncs: int = 0,
        detected_ports: set[int] | None = None,
    ) -> None:
        self.packets = packets
        self.bad_packets = bad_packets
        self.ignored = Counter() if ignored is None else ignored
        self.flows = flows
        self.segments = segments
        self.retransmitted_bytes = retransmitted_bytes
        self.out_of_order_segments = out_of_order_segments
        self.gaps = gaps
        self.gap_bytes = gap_bytes
        self.late_segments = late_segments
        self.evicted_connections = evicted_connections
        self.discarded_bytes = discarded_bytes
        self.resyncs = resyncs
        self.detected_ports = set() if detected_ports is None else detected_ports
