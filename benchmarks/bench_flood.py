"""Floods of connections: what ``kafka-epochs decode`` costs on captures that open many and finish none.

    python benchmarks/bench_flood.py [--connections 300000] [--cut-off 100000]

Two captures are written to a temporary directory: SYNs from ``--connections`` clients that never
go further (a SYN flood, or a capture that began with a scan), and ``--cut-off`` connections whose
client sends the first 40 bytes of a 1,000-byte request and nothing more. Each is decoded by the
command line in its own process; the figures are its CPU seconds (user + sys) and peak resident
memory, with what it said on standard error. Issue 21's target: 300,000 half-open connections in
at most 300 MB; every cut-off request reported as a problem.
"""

from __future__ import annotations

import argparse
import struct
import subprocess
import sys
import tempfile
from pathlib import Path

_ETHERNET = b"\x02\0\0\0\0\x02\x02\0\0\0\0\x01\x08\x00"
_BROKER = bytes([10, 9, 0, 2])
_CUT_REQUEST = struct.pack(">ihhih", 996, 3, 12, 1, 6) + b"client" + b"\0" * 30  # 40 bytes of 1,000


def _packet(client: bytes, port: int, seq: int, flags: int, payload: bytes = b"") -> bytes:
    tcp = struct.pack(">HHIIBBHHH", port, 9092, seq, 0, 5 << 4, flags, 65535, 0, 0) + payload
    ip = struct.pack(">BBHHHBBH4s4s", 0x45, 0, 20 + len(tcp), 1, 0x4000, 64, 6, 0, client, _BROKER)
    return _ETHERNET + ip + tcp


def write_flood(path: Path, connections: int, *, cut_off: bool) -> None:
    with path.open("wb") as out:
        out.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1))
        for n in range(connections):
            client = bytes([10, 9 + (n >> 16) % 200, (n >> 8) & 255, n & 255])
            port = 20000 + n % 40000
            frames = [_packet(client, port, 1000, 0x02)]
            if cut_off:
                frames.append(_packet(client, port, 1001, 0x18, _CUT_REQUEST[:40]))
            for frame in frames:
                record = struct.pack("<IIII", 1_700_000_000 + n // 1_000_000, n % 1_000_000, len(frame), len(frame))
                out.write(record + frame)


_MEASURE = """
import resource, subprocess, sys
done = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
usage = resource.getrusage(resource.RUSAGE_CHILDREN)
print(usage.ru_utime + usage.ru_stime, usage.ru_maxrss, done.returncode)
print(done.stderr.strip())
"""


def measure(capture: Path) -> tuple[float, int, str]:
    """(CPU seconds, peak resident KiB, standard error) of decoding ``capture``, in a fresh process."""
    command = [sys.executable, "-c", _MEASURE, sys.executable, "-m", "kafka_epochs.cli", "decode", str(capture)]
    lines = subprocess.run(command, capture_output=True, text=True, check=True).stdout.splitlines()
    cpu, peak, _ = lines[0].split()
    return float(cpu), int(peak), "\n".join(lines[1:])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--connections", type=int, default=300_000)
    parser.add_argument("--cut-off", type=int, default=100_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as directory:
        for name, count, cut in (("half-open", args.connections, False), ("cut-off", args.cut_off, True)):
            capture = Path(directory) / f"{name}.pcap"
            write_flood(capture, count, cut_off=cut)
            cpu, peak, said = measure(capture)
            print(f"{name}: {count:,} connections, {capture.stat().st_size / 1e6:.0f} MB capture")
            print(f"  {cpu:.1f} CPU s, peak {peak / 1024:.0f} MiB resident")
            print("  " + said.replace("\n", "\n  "))
    return 0


if __name__ == "__main__":
    sys.exit(main())
