#!/usr/bin/env python
"""The generator before and after a change: generated size, and decode/encode speed, in one run.

The "before" package is the generated ``kafka_epochs/apache`` of a git revision (default
``HEAD``, i.e. what is committed), extracted into a temporary directory and imported as a
second package next to the working tree's. Both run on the same wire runtime. Each benchmark
message is built twice from one seed, once with each package's classes; the two encodings must
be the same bytes before anything is timed.

    python benchmarks/bench_generator.py                 # HEAD against the working tree
    python benchmarks/bench_generator.py --before e2095b2

Ratios are "before time / after time": above 1 means the working tree is faster.
"""

from __future__ import annotations

import argparse
import functools
import io
import random
import subprocess
import sys
import tarfile
import tempfile
import timeit
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

from bench_codec import (  # noqa: E402  (after the path is set)
    build_fetch_request,
    build_leader_and_isr_request,
    build_metadata_response,
    build_produce_request,
    build_stop_replica_request,
)

from kafka_epochs import Protocol  # noqa: E402

CASES: list[tuple[str, int, Callable[[Any, random.Random], Any]]] = [
    ("MetadataResponse", 12, build_metadata_response),
    ("ProduceRequest", 9, build_produce_request),
    ("FetchRequest", 13, build_fetch_request),
    ("StopReplicaRequest", 3, build_stop_replica_request),
    ("LeaderAndIsrRequest", 5, build_leader_and_isr_request),
]


def extract_package(revision: str, into: Path, name: str) -> Path:
    """``kafka_epochs/apache`` as of ``revision``, written as the package ``name`` under ``into``."""
    archive = subprocess.run(
        ["git", "-C", str(ROOT), "archive", revision, "kafka_epochs/apache"], check=True, capture_output=True
    ).stdout
    target = into / name
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        for member in tar.getmembers():
            if member.isfile():
                data = tar.extractfile(member).read()  # type: ignore[union-attr]
                path = target / Path(member.name).relative_to("kafka_epochs/apache")
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_bytes(data)
    return target


def generated_size(directory: Path, protocol: Protocol) -> tuple[int, int, int, int]:
    """(lines, code lines, (message, version) pairs, reader + writer functions) of a generated package.

    Code lines are the non-blank lines of the module-level functions (readers, writers, tag
    readers): the code generated per version, without the classes' docstrings and annotations.
    """
    texts = [p.read_text() for p in directory.glob("*.py")]
    lines = sum(len(text.splitlines()) for text in texts)
    versions = sum(len(protocol.message(name).VALID_VERSIONS) for name in protocol.names())
    functions = sum(text.count("\ndef _read_v") + text.count("\ndef _write_v") for text in texts)
    return lines, sum(map(function_lines, texts)), versions, functions


def function_lines(text: str) -> int:
    """Non-blank lines of a module's top-level functions, ``def`` lines included."""
    count, inside = 0, False
    for line in text.splitlines():
        if line.startswith("def "):
            inside = True
        elif line and not line[0].isspace():
            inside = False
        count += inside and bool(line.strip())
    return count


def best(fn: Callable[[], Any], number: int, repeat: int) -> float:
    return min(timeit.repeat(fn, number=number, repeat=repeat)) / number


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--before", default="HEAD", help="git revision of the 'before' package (default HEAD)")
    parser.add_argument("--repeat", type=int, default=7, help="rounds per measurement (best is kept)")
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args(argv)

    with tempfile.TemporaryDirectory() as tmp:
        before_dir = extract_package(args.before, Path(tmp), "before_apache")
        sys.path.insert(0, tmp)
        before, after = Protocol.from_package("before_apache"), Protocol.apache()
        after_dir = ROOT / "kafka_epochs" / "apache"
        sizes = {"before": generated_size(before_dir, before), "after": generated_size(after_dir, after)}
        print(f"generated kafka_epochs/apache, {args.before} (before) against the working tree (after):")
        for label, (lines, code, versions, functions) in sizes.items():
            print(
                f"  {label:<6} {lines:>7} lines, {versions} (message, version) pairs: {lines / versions:.1f} lines "
                f"each, {code / versions:.1f} of them function code; {functions} reader/writer functions"
            )
        print()
        print(
            f"{'message':<24} {'decode before':>14} {'after':>9} {'ratio':>6}   {'encode before':>14} "
            f"{'after':>9} {'ratio':>6}"
        )
        for name, version, build in CASES:
            built = {
                label: build(proto, random.Random(args.seed)) for label, proto in (("before", before), ("after", after))
            }
            data = built["after"].encode(version)
            if built["before"].encode(version) != data:
                raise SystemExit(f"{name} v{version}: the two packages encode different bytes")
            times: dict[str, float] = {}
            number = max(1, 20_000 // max(1, len(data) // 50))
            for label, proto in (("before", before), ("after", after)):
                cls = proto.message(name)
                decode = functools.partial(cls.decode, data, version)
                times[f"decode {label}"] = best(decode, number, args.repeat)
                times[f"encode {label}"] = best(functools.partial(built[label].encode, version), number, args.repeat)
            print(
                f"{name + ' v' + str(version):<24} {times['decode before'] * 1e6:>12.1f}us "
                f"{times['decode after'] * 1e6:>7.1f}us {times['decode before'] / times['decode after']:>6.2f}"
                f"   {times['encode before'] * 1e6:>12.1f}us {times['encode after'] * 1e6:>7.1f}us "
                f"{times['encode before'] / times['encode after']:>6.2f}"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
