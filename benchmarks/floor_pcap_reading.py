"""What a pcap reader sharing one loop with the capture's lanes could save, at most.

The command reads a pcap file's records as ``Packet`` objects (a copy of each record's bytes),
and the pipeline's lanes then unpack each packet's Ethernet/IPv4/TCP headers and slice its
payload. A reader fused with the lanes would do the same from one buffer, with no ``Packet`` and
no copy of the record. This times both halves of that work on a capture, in one process, CPU
seconds, best of ``--repeat``:

- ``packets``: the reader's batches of ``Packet``, each one's headers unpacked and payload sliced;
- ``one buffer``: the record headers, the packet headers and the payloads read straight from the
  file's bytes (not exact: no record checks, Ethernet/IPv4/TCP assumed, as a lane assumes).

The difference bounds what fusing the two could save (the rest of a lane's work is the same
either way)::

    .venv/bin/python benchmarks/floor_pcap_reading.py .cache/real-shaped/x8.pcap
"""

from __future__ import annotations

import argparse
import struct
import time
from pathlib import Path

from kafka_epochs.capture.files.reader import read_packet_batches
from kafka_epochs.capture.network.dissect import ETHERNET_IPV4_TCP_KEYED, ETHERNET_IPV4_TCP_MIN, TCP_START

_RECORD = struct.Struct("<IIII")  # seconds, fraction, captured length, original length (little-endian pcap)


def through_packets(path: Path) -> int:
    unpack = ETHERNET_IPV4_TCP_KEYED.unpack_from
    payload_bytes = 0
    with path.open("rb") as stream:
        for batch in read_packet_batches(stream):
            for packet in batch:
                data = packet.data
                if len(data) >= ETHERNET_IPV4_TCP_MIN:
                    *_, total, _, _, _, _, _, offset_flags = unpack(data)
                    payload_bytes += len(data[TCP_START + (offset_flags >> 12) * 4 : 14 + total])
    return payload_bytes


def one_buffer(path: Path) -> int:
    unpack = ETHERNET_IPV4_TCP_KEYED.unpack_from
    record = _RECORD.unpack_from
    data = path.read_bytes()
    pos, length, payload_bytes = 24, len(data), 0
    while pos + 16 <= length:
        _, _, captured, _ = record(data, pos)
        start = pos + 16
        if captured >= ETHERNET_IPV4_TCP_MIN:
            *_, total, _, _, _, _, _, offset_flags = unpack(data, start)
            payload_bytes += len(data[start + TCP_START + (offset_flags >> 12) * 4 : start + 14 + total])
        pos = start + captured
    return payload_bytes


def best(work: object, path: Path, repeat: int) -> tuple[float, int]:
    times, result = [], 0
    for _ in range(repeat):
        began = time.process_time()
        result = work(path)  # type: ignore[operator]
        times.append(time.process_time() - began)
    return min(times), result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("capture", type=Path, help="a little-endian pcap file of Ethernet/IPv4/TCP packets")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    packets, seen = best(through_packets, args.capture, args.repeat)
    fused, seen_fused = best(one_buffer, args.capture, args.repeat)
    assert seen == seen_fused, (seen, seen_fused)  # the same payload bytes both ways
    print(f"{args.capture.name}: {seen:,} payload bytes")
    print(f"  packets     {packets:.3f} CPU s")
    print(f"  one buffer  {fused:.3f} CPU s   (at most {packets - fused:.3f} CPU s to save)")


if __name__ == "__main__":
    main()
