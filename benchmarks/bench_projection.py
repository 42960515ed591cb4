#!/usr/bin/env python
"""Projected decoding against full decoding (ours and kio's), in one run.

Each case decodes the same bytes four ways: our projection of a few fields into columns, our
full decode, our full decode followed by pulling the same fields out of the objects (what a
user without projections writes), and kio 0.6.5's full decode (native code) where kio has the
message. Before timing, the projection's columns are checked against the values pulled out of
kio's objects (an independent decoder) and out of ours.

    python benchmarks/bench_projection.py            # full run (about a minute)
    python benchmarks/bench_projection.py --quick

Ratios are "that way's time / projection time": above 1 means the projection is faster.
"""

from __future__ import annotations

import argparse
import random
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from bench_codec import (  # noqa: E402  (after the path is set)
    FULL,
    QUICK,
    build_fetch_request,
    build_metadata_response,
    build_produce_request,
    time_all,
)

from kafka_epochs import Protocol  # noqa: E402
from kafka_epochs.projection import projection  # noqa: E402


@dataclass
class Case:
    name: str
    version: int
    description: str
    build: Callable[[Any, random.Random], Any]
    paths: list[str]
    rows: Callable[[Any], list[tuple[Any, ...]]]  # the wanted values from a decoded object (ours or kio's)
    kio: str | None


def metadata_rows(obj: Any) -> list[tuple[Any, ...]]:
    return [(t.name, p.partition_index, p.leader_epoch) for t in obj.topics for p in t.partitions]


def fetch_rows(obj: Any) -> list[tuple[Any, ...]]:
    return [(str(t.topic_id), p.partition, p.current_leader_epoch) for t in obj.topics for p in t.partitions]


def produce_rows(obj: Any) -> list[tuple[Any, ...]]:
    return [(t.name, p.index) for t in obj.topic_data for p in t.partition_data]


CASES = [
    Case(
        "MetadataResponse",
        12,
        "100 topics x 10 partitions: topic name, partition index, leader epoch",
        build_metadata_response,
        ["topics[].name", "topics[].partitions[].partition_index", "topics[].partitions[].leader_epoch"],
        metadata_rows,
        "kio.schema.metadata.v12.response",
    ),
    Case(
        "FetchRequest",
        13,
        "10 topics x 10 partitions: topic id, partition, current leader epoch",
        build_fetch_request,
        ["topics[].topic_id", "topics[].partitions[].partition", "topics[].partitions[].current_leader_epoch"],
        fetch_rows,
        "kio.schema.fetch.v13.request",
    ),
    Case(
        "ProduceRequest",
        9,
        "10 topics x 5 partitions of ~1 KiB batches: topic, partition (batches skipped)",
        build_produce_request,
        ["topic_data[].name", "topic_data[].partition_data[].index"],
        produce_rows,
        "kio.schema.produce.v9.request",
    ),
]


def kio_reader(module_name: str, class_name: str) -> Callable[[bytes, int], tuple[Any, int]] | None:
    import importlib

    try:
        from kio.serial import entity_reader

        return entity_reader(getattr(importlib.import_module(module_name), class_name))  # type: ignore[no-any-return]
    except (ImportError, AttributeError):
        return None


def projected_rows(case: Case, columns: dict[str, list[Any]]) -> list[tuple[Any, ...]]:
    values = [columns[p] for p in case.paths]
    if case.name == "FetchRequest":
        values[0] = [str(u) for u in values[0]]
    return list(zip(*values, strict=True))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="fewer, shorter rounds")
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args(argv)
    settings = QUICK if args.quick else FULL
    proto = Protocol.apache()

    header = f"{'message':<22} {'way':<34} {'µs':>9} {'vs projection':>14}"
    print(header)
    print("-" * len(header))
    for case in CASES:
        cls = proto.message(case.name)
        data = case.build(proto, random.Random(args.seed)).encode(case.version)
        wanted = projection(cls, case.paths)
        rows = projected_rows(case, wanted.decode(data, case.version))
        if rows != case.rows(cls.decode(data, case.version)):
            raise SystemExit(f"{case.name}: projection and full decode disagree")
        ways: dict[str, Callable[[], Any]] = {
            "projection": lambda wanted=wanted, data=data, case=case: wanted.decode(data, case.version),
            "full decode": lambda cls=cls, data=data, case=case: cls.decode(data, case.version),
            "full decode + pick the fields": lambda cls=cls, data=data, case=case: case.rows(
                cls.decode(data, case.version)
            ),
        }
        read = kio_reader(case.kio, case.name) if case.kio else None
        if read is not None:
            obj, size = read(data, 0)
            if size != len(data) or case.rows(obj) != rows:
                raise SystemExit(f"{case.name}: kio 0.6.5 reads other values than the projection")
            ways["kio 0.6.5 full decode"] = lambda read=read, data=data: read(data, 0)
        times = time_all(ways, settings)
        label = f"{case.name} v{case.version}"
        print(f"{label:<22} ({case.description}; {len(data):,} B, {len(rows):,} rows)")
        for way, seconds in times.items():
            print(f"{'':<22} {way:<34} {seconds * 1e6:>9.1f} {seconds / times['projection']:>13.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
