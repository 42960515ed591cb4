"""Compare kafka-epochs' decoding of a capture with Wireshark's Kafka dissector (tshark).

    python benchmarks/tshark_conformance.py [--pcap FILE] [--port 9092] [--keep DIR]

Without ``--pcap`` it writes a capture of every bundled API at every version this tshark
dissects, each message with every field filled with a distinct value (record batches included),
then decodes it both ways. For every Kafka PDU tshark dissects without complaint, these must
agree: api key, api version, correlation id, client id, topic names, partition ids and the
non-zero error codes. Exit 0 when they all agree, 1 otherwise (each difference is printed).
"""

from __future__ import annotations

import argparse
import itertools
import shutil
import subprocess
import sys
import tempfile
import uuid
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from kafka_epochs import Protocol
from kafka_epochs.capture.synth import RecordedConnection, write_capture
from kafka_epochs.records import Record, encode_batch
from kafka_epochs.traffic import Kind, decode_capture

APIS = [
    "ApiVersions",
    "Metadata",
    "Produce",
    "Fetch",
    "ListOffsets",
    "OffsetForLeaderEpoch",
    "LeaderAndIsr",
    "StopReplica",
]
FIELDS = [
    "tcp.srcport",
    "tcp.dstport",
    "kafka.api_key",
    "kafka.api_version",
    "kafka.correlation_id",
    "kafka.client_id",
    "kafka.topic_name",
    "kafka.forgotten_topic_name",
    "kafka.partition_id",
    "kafka.error",
    "kafka.unsupported_api_version",
    "_ws.expert.message",
]
T0 = 1_700_000_000_000_000_000


def filled(cls: Any, version: int, counter: Iterator[int]) -> Any:
    """An instance with every field of ``version`` set to a distinct, printable value."""
    values: dict[str, Any] = {}
    for f in cls._FIELDS:
        if not f.present(version):
            continue
        if f.kind == "array":
            values[f.attr] = [_value(f, f.element, version, counter) for _ in range(2)]
        else:
            values[f.attr] = _value(f, f.kind, version, counter)
    return cls(**values)


def _value(f: Any, kind: str, version: int, counter: Iterator[int]) -> Any:
    n = next(counter)
    if kind == "struct":
        return filled(f.struct, version, counter)
    if kind == "string":
        return f"topic-{n}"
    if kind in ("int8", "int16"):
        return n % 100 + 1
    if kind in ("int32", "int64", "uint16", "uint32"):
        return n
    if kind == "float64":
        return n + 0.5
    if kind == "bool":
        return True
    if kind == "uuid":
        return uuid.UUID(int=n)
    if kind == "bytes":
        return b"b%d" % n
    if kind == "records":
        return encode_batch([Record(key=b"k%d" % n, value=b"v%d" % n)])
    raise ValueError(kind)


def tshark_versions(tshark: str, port: int) -> dict[str, set[int]]:
    """The versions of each API this tshark dissects, found by asking it about empty messages."""
    proto = Protocol.bundled()
    chunks, names, correlation = [], {}, itertools.count(1)
    for api in APIS:
        cls = proto.message(api + "Request")
        for v in cls.VALID_VERSIONS:
            cid = next(correlation)
            names[cid] = (api, v)
            chunks.append((T0 + cid, "client", proto.encode_request(cls(), v, correlation_id=cid, client_id="c")))
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "probe.pcap"
        write_capture(path, [RecordedConnection(("10.9.0.1", 40000), ("10.9.0.2", port), chunks)])
        rows = _tshark_rows(tshark, path, port)
    supported: dict[str, set[int]] = {api: set() for api in APIS}
    for row in rows:
        cid = int(row["kafka.correlation_id"])
        if cid in names and not row["kafka.unsupported_api_version"] and not row["_ws.expert.message"]:
            api, v = names[cid]
            supported[api].add(v)
    return supported


def write_sample(path: Path, port: int, supported: dict[str, set[int]]) -> int:
    proto = Protocol.bundled()
    counter = itertools.count(1)
    chunks: list[tuple[int, str, bytes]] = []
    correlation = itertools.count(1)
    for api in APIS:
        req_cls, resp_cls = proto.message(api + "Request"), proto.message(api + "Response")
        for v in sorted(supported[api]):
            cid = next(correlation)
            chunks.append(
                (
                    T0 + 10 * cid,
                    "client",
                    proto.encode_request(filled(req_cls, v, counter), v, correlation_id=cid, client_id="cli-1"),
                )
            )
            chunks.append(
                (
                    T0 + 10 * cid + 5,
                    "broker",
                    proto.encode_response(filled(resp_cls, v, counter), v, correlation_id=cid),
                )
            )
    return write_capture(path, [RecordedConnection(("10.9.0.1", 40001), ("10.9.0.2", port), chunks)], mss=700)


def _tshark_rows(tshark: str, path: Path, port: int) -> list[dict[str, str]]:
    command = [
        tshark,
        "-r",
        str(path),
        "-d",
        f"tcp.port=={port},kafka",
        "-Y",
        "kafka",
        "-T",
        "fields",
        "-E",
        "occurrence=a",
        "-E",
        "aggregator=|",
        "-E",
        "separator=\t",
    ]
    for name in FIELDS:
        command += ["-e", name]
    out = subprocess.run(command, capture_output=True, text=True, check=True, timeout=300).stdout
    return [dict(zip(FIELDS, line.split("\t"), strict=True)) for line in out.splitlines() if line]


def _split(value: str) -> list[str]:
    return [v for v in value.split("|") if v]


def _walk(plain: Any, key: str) -> Iterator[Any]:
    """Every value under ``key`` anywhere in a ``to_dict`` tree (list values are flattened)."""
    if isinstance(plain, dict):
        for k, v in plain.items():
            if k == key and isinstance(v, list) and all(not isinstance(i, (dict, list)) for i in v):
                yield from v
            elif k == key and not isinstance(v, (dict, list)):
                yield v
            else:
                yield from _walk(v, key)
    elif isinstance(plain, list):
        for item in plain:
            yield from _walk(item, key)


def ours(path: Path, port: int) -> dict[tuple[int, int, str], dict[str, Any]]:
    """(client port, correlation id, direction) -> what we decoded."""
    found: dict[tuple[int, int, str], dict[str, Any]] = {}
    for exchange in decode_capture(path, Protocol.bundled(), ports={port}):
        if exchange.kind not in (Kind.PAIR, Kind.REQUEST) or exchange.flow is None:
            continue
        client_port = exchange.flow.client.port
        for direction, event in (("request", exchange.request), ("response", exchange.response)):
            if event is None or event.decoded is None:
                continue
            body = event.decoded.body.to_dict()
            names = [n for n in _walk(body, "name") if isinstance(n, str)]
            names += [n for n in _walk(body, "topic") if isinstance(n, str)]
            names += [n for n in _walk(body, "topic_name") if isinstance(n, str)]
            partitions = [
                p
                for k in ("partition_index", "partition", "index", "partition_id", "partition_indexes")
                for p in _walk(body, k)
                if isinstance(p, int)
            ]
            found[(client_port, event.correlation_id or 0, direction)] = {
                "api_key": event.decoded.api_key,
                "api_version": event.decoded.api_version,
                "client_id": getattr(event.decoded.header, "client_id", None),
                "topics": Counter(n for n in names if n.startswith("topic-")),
                "partitions": Counter(partitions),
                "errors": Counter(e for e in _walk(body, "error_code") if e),
            }
    return found


def compare(path: Path, port: int, tshark: str) -> tuple[int, list[str]]:
    """How many PDUs were compared, and every difference."""
    mine = ours(path, port)
    differences: list[str] = []
    compared = 0
    for row in _tshark_rows(tshark, path, port):
        if row["kafka.unsupported_api_version"] or row["_ws.expert.message"]:
            continue  # tshark itself did not dissect this PDU fully
        response = row["tcp.srcport"] == str(port)
        client_port = int(row["tcp.dstport"] if response else row["tcp.srcport"])
        key = (client_port, int(row["kafka.correlation_id"]), "response" if response else "request")
        decoded = mine.get(key)
        if decoded is None:
            differences.append(f"{key}: tshark dissected it, we have no decoded frame")
            continue
        compared += 1
        theirs = {
            "api_key": int(row["kafka.api_key"]),
            "topics": Counter(
                n
                for n in _split(row["kafka.topic_name"]) + _split(row["kafka.forgotten_topic_name"])
                if n.startswith("topic-")
            ),
            "partitions": Counter(int(p) for p in _split(row["kafka.partition_id"])),
            "errors": Counter(int(e) for e in _split(row["kafka.error"]) if int(e)),
        }
        if not response:
            theirs["api_version"] = int(row["kafka.api_version"])
            theirs["client_id"] = row["kafka.client_id"] or None
        for field, value in theirs.items():
            if field == "partitions" and not value:
                continue  # tshark leaves some partition lists unlabelled
            if decoded[field] != value:
                differences.append(f"{key} {field}: ours {decoded[field]!r}, tshark {value!r}")
    return compared, differences


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pcap", type=Path)
    parser.add_argument("--port", type=int, default=9092)
    parser.add_argument("--keep", type=Path, help="keep the generated capture in this directory")
    args = parser.parse_args()
    tshark = shutil.which("tshark")
    if tshark is None:
        print("tshark is not installed (Debian: apt-get install tshark)", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory() as tmp:
        path = args.pcap
        if path is None:
            supported = tshark_versions(tshark, args.port)
            path = (args.keep or Path(tmp)) / "tshark-conformance.pcap"
            packets = write_sample(path, args.port, supported)
            print(
                f"wrote {packets} packets covering "
                + ", ".join(f"{api} v{min(vs)}-{max(vs)}" for api, vs in supported.items() if vs)
            )
        compared, differences = compare(path, args.port, tshark)
    for line in differences:
        print(line)
    print(f"{compared} PDUs compared with tshark, {len(differences)} differences")
    return 1 if differences or not compared else 0


if __name__ == "__main__":
    sys.exit(main())
