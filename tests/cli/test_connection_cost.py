"""``benchmarks/connection_cost.py`` divides the instructions of two captures' difference by
their pairs: these tests hold the captures to the shapes that makes a connection's cost (the
same pairs, decoding whole; one connection a pair of eight packets, against one connection)."""

from __future__ import annotations

import sys
from pathlib import Path

from kafka_epochs import Protocol
from kafka_epochs.capture import read_packets
from kafka_epochs.exchanges import Kind
from kafka_epochs.traffic import decode_capture

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

from connection_cost import write_captures


def test_the_two_captures_hold_the_same_pairs_on_many_connections_and_on_one(tmp_path: Path) -> None:
    many, one = write_captures(40, tmp_path)
    for capture, connections, packets in ((many, 40, 40 * 8), (one, 1, 40 * 2 + 6)):
        exchanges = list(decode_capture(capture, Protocol.auto()))
        assert [e.kind for e in exchanges] == [Kind.PAIR] * 40
        assert all(e.problem is None for e in exchanges)
        assert len({e.flow for e in exchanges}) == connections
        assert sum(1 for _ in read_packets(capture)) == packets
