#!/usr/bin/env python
"""What one connection costs `kafka-epochs decode`, beside what its exchanges cost.

    python benchmarks/connection_cost.py [--pairs 2000] [--before /path/to/other/checkout]

Real clients open a connection for a handful of exchanges (the real-shaped captures: about six
pairs a connection for kafka-python, sixteen for librdkafka), so what a connection's set-up and
tear-down cost counts as much as what a pair costs. This writes two captures of the same
``--pairs`` ApiVersions pairs: one connection per pair (a handshake, the request, the response,
the two FINs and the last ACK: eight packets), and all of them on one connection (two packets a
pair). The difference of the instructions `decode --fields` executes on them (valgrind's
cachegrind, as ``count_instructions.py`` counts), over the number of pairs, is what a connection
costs beyond its packets' bytes. With ``--before``, the same for another checkout. With
``--by-packet``, the capture pipeline alone (no decoding) is fed the first 0 to 8 packets of
each connection of the first capture, and the increments say what each packet of a connection
costs it (the SYN, the SYN-ACK, the ACK, the request, the response, the two FINs, the last ACK).
Needs valgrind (``apt-get install valgrind``).
"""

from __future__ import annotations

import argparse
import itertools
import shutil
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from count_instructions import instructions  # noqa: E402  (after the path is set)

from kafka_epochs import Protocol  # noqa: E402
from kafka_epochs.capture.synth import RecordedConnection, write_capture  # noqa: E402

T0 = 1_700_000_000_000_000_000
CLIENT, BROKER = "10.0.0.5", ("10.0.0.9", 9092)


def _pair(correlation_id: int) -> tuple[bytes, bytes]:
    apache = Protocol.apache()
    request = apache.message("ApiVersionsRequest")(client_software_name="bench", client_software_version="1")
    return (
        apache.encode_request(request, 3, correlation_id=correlation_id, client_id="bench"),
        apache.encode_response(apache.message("ApiVersionsResponse")(), 3, correlation_id=correlation_id),
    )


def write_captures(pairs: int, directory: Path) -> tuple[Path, Path]:
    """(a capture of ``pairs`` connections of one pair each, one of one connection of them all)."""
    many, one = directory / "many.pcap", directory / "one.pcap"
    connections = []
    for n in range(pairs):
        request, response = _pair(1)
        at = T0 + n * 1_000_000
        chunks = [(at, "client", request), (at + 1000, "broker", response)]
        connections.append(RecordedConnection((CLIENT, 10_000 + n), BROKER, chunks))
    write_capture(many, connections)
    chunks = []
    for n in range(pairs):
        request, response = _pair(n + 1)
        at = T0 + n * 1_000_000
        chunks += [(at, "client", request), (at + 1000, "broker", response)]
    write_capture(one, [RecordedConnection((CLIENT, 10_000), BROKER, chunks)])
    return many, one


def per_connection(tree: Path, many: Path, one: Path, pairs: int) -> tuple[int, int, float]:
    """(instructions on ``many``, on ``one``, the difference per connection), from ``tree``."""
    counts = []
    for capture in (many, one):
        args = [str(capture), "--quiet", "--fields", "error_code"]
        instructions(tree, args)  # compiles what the run imports
        counts.append(instructions(tree, args))
    return counts[0], counts[1], (counts[0] - counts[1]) / pairs


#: what ``--by-packet`` runs in a process of its own: the pipeline fed the first ``keep`` packets
#: of each connection (a connection's packets are consecutive in the first capture)
_PIPELINE = """
import gc, sys
from kafka_epochs.cli import COLLECTOR_THRESHOLD
from kafka_epochs.capture import read_packets
from kafka_epochs.capture.pipeline import StreamPipeline
gc.set_threshold(COLLECTOR_THRESHOLD, *gc.get_threshold()[1:])
records, keep = list(read_packets(sys.argv[1])), int(sys.argv[2])
taken = [r for start in range(0, len(records), 8) for r in records[start : start + keep]]
pipeline = StreamPipeline()
for start in range(0, len(taken), 256):
    pipeline.records(taken[start : start + 256])
"""
PACKETS = ("SYN", "SYN-ACK", "ACK", "request", "response", "FIN-ACK", "FIN-ACK", "last ACK")


def by_packet(tree: Path, many: Path, pairs: int) -> list[float]:
    """Instructions each packet of a connection costs the capture pipeline, in order."""
    counts = []
    for keep in range(len(PACKETS) + 1):
        args = ["-c", _PIPELINE, str(many), str(keep)]
        instructions(tree, args, command=[])  # compiles what the run imports
        counts.append(instructions(tree, args, command=[]))
    return [(after - before) / pairs for before, after in itertools.pairwise(counts)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pairs", type=int, default=2000, help="pairs in each capture (connections in the first)")
    parser.add_argument("--before", type=Path, help="another checkout of the project (a git worktree)")
    parser.add_argument("--by-packet", action="store_true", help="also each packet's cost to the pipeline")
    args = parser.parse_args()
    if shutil.which("valgrind") is None:
        raise SystemExit("valgrind is not installed (apt-get install valgrind)")
    trees = [HERE.parent] if args.before is None else [args.before, HERE.parent]
    with tempfile.TemporaryDirectory() as scratch:
        many, one = write_captures(args.pairs, Path(scratch))
        print(f"decode --fields, {args.pairs:,} ApiVersions pairs; instructions (cachegrind)")
        for tree in trees:
            on_many, on_one, each = per_connection(tree, many, one, args.pairs)
            print(f"  {tree}: a connection a pair {on_many:,}, one connection {on_one:,}: {each:,.0f} a connection")
            if args.by_packet:
                costs = by_packet(tree, many, args.pairs)
                print(
                    "    the pipeline alone, a packet: "
                    + ", ".join(f"{n} {c:,.0f}" for n, c in zip(PACKETS, costs, strict=True))
                )


if __name__ == "__main__":
    main()
