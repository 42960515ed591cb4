#!/usr/bin/env python
"""A long mutation campaign over the bundled real captures: damaged files must decode packet by packet.

Each round picks one of the real captures (pcap, the same packets as pcapng in nanoseconds and
in whole seconds, and gzip-compressed), damages it (bit flips, absurd 32- and 64-bit values,
cuts, removed, repeated or zeroed ranges; see ``tests/capture_mutations.py``), decodes every
exchange and renders it as ``kafka-epochs decode --records`` prints it. It counts

* tracebacks: any exception but ``CaptureFormatError`` (must be 0);
* whole-file failures where only packets were damaged (must be 0);
* whole-file refusals after damage to the file's own header (allowed: the file cannot be read);
* exchanges and the problems reported in them.

Exit status 1 if either must-be-zero count is not; the first few cases are printed to rerun.

    python benchmarks/capture_campaign.py [--count 10000] [--seed 1]
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from capture_mutations import decode_all, mutate, real_captures


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--count", type=int, default=10_000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--show", type=int, default=5, help="failing cases to print")
    args = parser.parse_args(argv)
    captures = real_captures()
    names = sorted(captures)
    rng = random.Random(args.seed)
    counts: Counter[str] = Counter()
    kinds: Counter[str] = Counter()
    shown = 0
    start = time.perf_counter()
    for number in range(args.count):
        name = rng.choice(names)
        data, what, header = mutate(captures[name], rng)
        kinds[what.split()[0]] += 1
        outcome = decode_all(data)
        counts["exchanges"] += outcome.exchanges
        counts["problems"] += outcome.problems
        failed = None
        if outcome.crash is not None:
            counts["tracebacks"] += 1
            failed = outcome.crash.strip().splitlines()[-1]
        elif outcome.whole_file is not None:
            if header:
                counts["header refusals"] += 1
            else:
                counts["whole-file failures (packets only damaged)"] += 1
                failed = outcome.whole_file
        if failed is not None and shown < args.show:
            shown += 1
            print(f"case {number} (seed {args.seed}): {name}, {what}: {failed}")
    seconds = time.perf_counter() - start
    print(f"{args.count:,} mutated captures in {seconds:.1f} s ({args.count / seconds:,.0f}/s), seed {args.seed}")
    print("mutations: " + ", ".join(f"{k} {v:,}" for k, v in sorted(kinds.items())))
    for key in ("tracebacks", "whole-file failures (packets only damaged)", "header refusals", "exchanges", "problems"):
        print(f"  {key}: {counts[key]:,}")
    bad = counts["tracebacks"] + counts["whole-file failures (packets only damaged)"]
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
