#!/usr/bin/env python
"""Capture reading speed: packets per second through each stage of ``kafka_epochs.capture``.

Builds a capture of 100,000 packets (by default) in a temporary directory: 50 Kafka connections
on port 9092, each a handshake then requests and responses of 100 to 1,400 bytes over
Ethernet/IPv4/TCP, segments interleaved across connections, with one in 200 segments sent
twice (a retransmission). It is written both as pcap (with ``write_pcap``) and as pcapng, then
timed (best of a few rounds, wall clock):

* ``read_packets`` alone, pcap and pcapng;
* ``iter_streams`` with frame alignment (the default) and without.

    python benchmarks/bench_capture.py [--packets 100000] [--rounds 3] [--json PATH]
"""

from __future__ import annotations

import argparse
import json
import platform
import random
import struct
import sys
import tempfile
import time
from collections.abc import Callable, Iterable
from pathlib import Path

from kafka_epochs.capture import iter_streams, read_packets, write_pcap

ACK, PSH, SYN = 0x10, 0x08, 0x02
BROKER = (b"\x0a\x00\x00\x02", 9092)


def _frame(src: tuple[bytes, int], dst: tuple[bytes, int], seq: int, ack: int, flags: int, payload: bytes) -> bytes:
    tcp = struct.pack(">HHIIBBHHH", src[1], dst[1], seq & 0xFFFFFFFF, ack & 0xFFFFFFFF, 5 << 4, flags, 65535, 0, 0)
    ip = struct.pack(">BBHHHBBH4s4s", 0x45, 0, 20 + len(tcp) + len(payload), 0, 0x4000, 64, 6, 0, src[0], dst[0])
    return b"\x02\x00\x00\x00\x00\x02\x02\x00\x00\x00\x00\x01\x08\x00" + ip + tcp + payload


def _kafka_request(rng: random.Random, correlation_id: int) -> bytes:
    body = rng.randbytes(rng.randrange(80, 1380))
    payload = struct.pack(">hhih", 0, 9, correlation_id, 8) + b"producer" + body
    return struct.pack(">i", len(payload)) + payload


def _kafka_response(rng: random.Random, correlation_id: int) -> bytes:
    payload = struct.pack(">i", correlation_id) + rng.randbytes(rng.randrange(100, 1400))
    return struct.pack(">i", len(payload)) + payload


def build_frames(packets: int, connections: int = 50, seed: int = 1) -> list[tuple[int, bytes]]:
    """About ``packets`` frames of Kafka traffic (see the module docstring)."""
    rng = random.Random(seed)
    per_connection: list[list[bytes]] = []
    for number in range(connections):
        client = (bytes([10, 0, 1, number + 1]), 40000 + number)
        seq = {"c": rng.randrange(1 << 32), "b": rng.randrange(1 << 32)}
        frames = [
            _frame(client, BROKER, seq["c"], 0, SYN, b""),
            _frame(BROKER, client, seq["b"], seq["c"] + 1, SYN | ACK, b""),
        ]
        seq = {"c": seq["c"] + 1, "b": seq["b"] + 1}
        correlation_id = 0
        while len(frames) < packets // connections:
            correlation_id += 1
            exchange = (("c", _kafka_request(rng, correlation_id)), ("b", _kafka_response(rng, correlation_id)))
            for side, frame in exchange:
                other = "b" if side == "c" else "c"
                src, dst = (client, BROKER) if side == "c" else (BROKER, client)
                segment = _frame(src, dst, seq[side], seq[other], ACK | PSH, frame)
                frames.append(segment)
                if rng.random() < 0.005:
                    frames.append(segment)
                seq[side] += len(frame)
        per_connection.append(frames)
    out: list[tuple[int, bytes]] = []
    timestamp = 1_700_000_000_000_000_000
    cursors = [0] * connections
    while len(out) < packets and any(c < len(f) for c, f in zip(cursors, per_connection, strict=True)):
        number = rng.randrange(connections)
        if cursors[number] < len(per_connection[number]):
            timestamp += rng.randrange(1000, 20000)
            out.append((timestamp, per_connection[number][cursors[number]]))
            cursors[number] += 1
    return out


def write_pcapng(path: Path, frames: Iterable[tuple[int, bytes]]) -> None:
    def block(kind: int, body: bytes) -> bytes:
        body += b"\x00" * (-len(body) % 4)
        return struct.pack("<II", kind, len(body) + 12) + body + struct.pack("<I", len(body) + 12)

    with open(path, "wb") as f:
        f.write(block(0x0A0D0D0A, struct.pack("<IHHq", 0x1A2B3C4D, 1, 0, -1)))
        f.write(block(1, struct.pack("<HHI", 1, 0, 0) + struct.pack("<HHB3x", 9, 1, 9) + b"\x00" * 4))
        for timestamp, data in frames:
            f.write(
                block(6, struct.pack("<IIIII", 0, timestamp >> 32, timestamp & 0xFFFFFFFF, len(data), len(data)) + data)
            )


def best_time(run: Callable[[], int], rounds: int) -> tuple[float, int]:
    best = float("inf")
    count = 0
    for _ in range(rounds):
        start = time.perf_counter()
        count = run()
        best = min(best, time.perf_counter() - start)
    return best, count


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--packets", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)

    build_start = time.perf_counter()
    frames = build_frames(args.packets)
    with tempfile.TemporaryDirectory() as tmp:
        pcap, pcapng = Path(tmp) / "bench.pcap", Path(tmp) / "bench.pcapng"
        write_pcap(pcap, frames, 1)
        write_pcapng(pcapng, frames)
        print(
            f"{len(frames):,} packets, {pcap.stat().st_size / 1e6:.1f} MB pcap, built in "
            f"{time.perf_counter() - build_start:.1f} s; Python {platform.python_version()}, best of {args.rounds}"
        )

        def count(events: Iterable[object]) -> int:
            return sum(1 for _ in events)

        cases: dict[str, Callable[[], int]] = {
            "read_packets (pcap)": lambda: count(read_packets(pcap)),
            "read_packets (pcapng)": lambda: count(read_packets(pcapng)),
            "iter_streams, frame-aligned (pcap)": lambda: count(iter_streams(pcap)),
            "iter_streams, raw (pcap)": lambda: count(iter_streams(pcap, align_frames=False)),
        }
        results = {}
        for name, run in cases.items():
            seconds, items = best_time(run, args.rounds)
            rate = len(frames) / seconds
            results[name] = {"seconds": seconds, "packets_per_second": rate, "items": items}
            print(f"  {name:<36} {seconds * 1000:8.1f} ms  {rate:>12,.0f} packets/s  ({items:,} items)")
    if args.json:
        args.json.write_text(json.dumps({"packets": len(frames), "results": results}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
