#!/usr/bin/env python
"""The floor of ``--headers-only``: one straight loop from pcap records to JSON lines, beside the
command and tshark, in CPU seconds.

    python benchmarks/floor_headers_only.py [--real DIR] [--repeat 3]

Issue 20 asks ``decode --headers-only`` for twice ``tshark -T fields -e kafka.api_key``'s rate on
the real-shaped captures (``benchmarks/real_shaped.py``). The command goes through layers, each
with its own objects: packets, TCP streams, frames, pairs, exchanges, lines. :func:`floor` is what
the same work costs as one loop with no layer: classic pcap records read from one buffer,
Ethernet/IPv4/TCP in one unpack, in-order segments appended to a buffer per direction, frames
cut, requests' headers read and held by correlation id, each answer rendered as a line. It is
not exact and is not meant to be (no reassembly of segments out of order, no SASL, no gaps, no
leftovers, a request header's tagged fields ignored): it says how much of the command's time the
layering costs, which is the case for fusing them. It prints how many pairs it found beside the
command's count, so a capture it cannot follow shows.
"""

from __future__ import annotations

import argparse
import json
import math
import struct
import sys
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from bench_decode import REAL, Kafka, cpu_seconds, tshark_commands  # noqa: E402  (after the path is set)

from kafka_epochs import Protocol  # noqa: E402
from kafka_epochs.exchanges import Kind, decode_capture  # noqa: E402
from kafka_epochs.projection.bodies import FieldsReader  # noqa: E402

_PACKET = struct.Struct(">12xHBxHxxHxB2x4s4sHHIIH")  # Ethernet, IPv4 (20 bytes), TCP: what a lane reads
_RECORD = struct.Struct("<IIII")  # a little-endian pcap record header
_REQUEST = struct.Struct(">ihhih")  # size, api key, api version, correlation id, client id length
_INT32 = struct.Struct(">i")
_ESCAPE = json.encoder.encode_basestring
KAFKA_PORT = 9092


class _Side:
    """One direction of a connection: its unframed bytes, the next sequence number, whose it is."""

    __slots__ = ("broker", "buffer", "client", "from_client", "next_seq", "pending")

    def __init__(self, next_seq: int, pending: dict[int, tuple[int, int, str | None, int]], from_client: bool) -> None:
        self.buffer = bytearray()
        self.next_seq = next_seq
        self.pending = pending
        self.from_client = from_client
        self.client = self.broker = ""


def floor(path: Path, write: Callable[[str], object]) -> int:
    """Pairs of the capture at ``path`` as header lines, written in batches; returns how many."""
    out: list[str] = []
    data = path.read_bytes()
    sides: dict[tuple[bytes, int, bytes, int], _Side] = {}
    second, second_text = math.nan, ""
    pairs = 0
    pos = 24
    while pos + 16 <= len(data):
        seconds, micros, captured, _ = _RECORD.unpack_from(data, pos)
        start, pos = pos + 16, pos + 16 + captured
        if captured < 54:
            continue
        ethertype, _, total, _, protocol, src, dst, sport, dport, seq, _, offset = _PACKET.unpack_from(data, start)
        payload, end = start + 34 + (offset >> 12) * 4, start + 14 + total
        if ethertype != 0x0800 or protocol != 6 or end <= payload:
            continue
        side = sides.get((src, sport, dst, dport))
        if side is None:
            if KAFKA_PORT not in (sport, dport):
                continue
            other = sides.get((dst, dport, src, sport))
            side = sides[src, sport, dst, dport] = _Side(seq, other.pending if other else {}, dport == KAFKA_PORT)
            ends = (f"{'.'.join(map(str, src))}:{sport}", f"{'.'.join(map(str, dst))}:{dport}")
            side.client, side.broker = ends if side.from_client else ends[::-1]
        if seq != side.next_seq:
            continue  # out of order: the floor does not reassemble
        buffer = side.buffer
        buffer += data[payload:end]
        side.next_seq = (seq + end - payload) & 0xFFFFFFFF
        at = 0
        while len(buffer) - at >= 8:
            size = _INT32.unpack_from(buffer, at)[0]
            if len(buffer) - at - 4 < size:
                break
            frame, at = at, at + 4 + size
            if size < 10:
                continue
            if side.from_client:
                _, key, version, correlation_id, length = _REQUEST.unpack_from(buffer, frame)
                client_id = None if length < 0 else buffer[frame + 14 : frame + 14 + length].decode()
                side.pending[correlation_id] = (key, version, client_id, seconds * 1_000_000 + micros)
                continue
            correlation_id = _INT32.unpack_from(buffer, frame + 4)[0]
            request = side.pending.pop(correlation_id, None)
            if request is None:
                continue
            key, version, client_id, sent = request
            whole, micro = divmod(sent, 1_000_000)
            if whole != second:
                second = whole
                iso = datetime.fromtimestamp(whole, UTC).isoformat(timespec="seconds").removesuffix("+00:00")
                second_text = f'"{iso}.'
            client = "null" if client_id is None else _ESCAPE(client_id)
            out.append(
                f'{{"kind": "pair", "time": {second_text}{micro:06d}Z", "client": "{side.client}", '
                f'"broker": "{side.broker}", "correlation_id": {correlation_id}, "api_key": {key}, '
                f'"api_version": {version}, "request_header": {{"request_api_key": {key}, '
                f'"request_api_version": {version}, "correlation_id": {correlation_id}, "client_id": {client}}}, '
                f'"response_header": {{"correlation_id": {correlation_id}}}}}'
            )
            pairs += 1
        if at:
            del buffer[:at]
        if len(out) >= 256:
            write("\n".join(out) + "\n")
            out.clear()
    write("\n".join(out) + "\n")
    return pairs


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--real", type=Path, default=REAL, help="the real-shaped captures (benchmarks/real_shaped.py)")
    parser.add_argument("--repeat", type=int, default=3, help="counted runs of each command (best counts)")
    parser.add_argument("--floor", type=Path, help=argparse.SUPPRESS)  # the child: run the loop over one capture
    args = parser.parse_args()
    if args.floor is not None:
        floor(args.floor, sys.stdout.write)
        return 0
    captures = sorted(p for p in args.real.glob("*.pcap") if p.stem != "x8")
    if not captures:
        print(f"no captures under {args.real}: run benchmarks/real_shaped.py first", file=sys.stderr)
        return 2
    kafka = Kafka("kafka-epochs", None)
    print(f"CPU seconds (user + sys), best of {args.repeat} runs after a warm-up")
    for path in captures:
        found = floor(path, lambda text: None)  # (only the count is wanted here)
        paired = sum(e.kind is Kind.PAIR for e in decode_capture(path, Protocol.auto(), body_reader=FieldsReader([])))
        print(f"{path.name}: the loop pairs {found:,} exchanges, the command {paired:,}")
        ours = cpu_seconds(kafka.command("decode", "--headers-only", "--quiet", str(path)), args.repeat)
        loop = cpu_seconds([sys.executable, __file__, "--floor", str(path)], args.repeat)
        tshark = tshark_commands(path).get("headers")
        theirs = cpu_seconds(tshark, args.repeat) if tshark else math.nan
        print(
            f"  --headers-only {ours:.2f}, one loop {loop:.2f}, tshark fields {theirs:.2f} "
            f"(each against tshark: {theirs / ours:.2f}x, {theirs / loop:.2f}x)"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
