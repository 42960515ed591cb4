"""``kafka-epochs audit`` on both engines: wall and CPU seconds, and the same rows from each.

    python benchmarks/bench_audit_engines.py [--real DIR] [--repeat 3] [--spark]

Each audit runs as its own process, as a user runs it, timed by wall clock (what the user waits
for, and what the targets are about; the machine's load is printed beside it) and, for the
in-process engine, by the CPU it used (user + sys; Spark's JVM is not reaped by the command, so
its CPU cannot be counted this way). The inputs: the bundled sample, and the four
real-client captures ``benchmarks/real_shaped.py`` records (``.cache/real-shaped/``) together.
Before timing, each input's ``--format jsonl --timeline`` rows are compared between the engines
(``--spark`` also times the Spark engine; it takes minutes under load).
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
REAL = ROOT / ".cache" / "real-shaped"
SAMPLE = ROOT / "kafka_epochs" / "samples" / "sample.pcap"
REAL_NAMES = ("kafka-python", "aiokafka", "confluent-kafka", "kafkajs")
COMMAND = [sys.executable, "-m", "kafka_epochs.cli", "audit"]

#: The targets of the issue that asked for the in-process engine (wall seconds, idle 2 cores).
TARGET_SAMPLE_S = 5.0
TARGET_REAL_S = 15.0


def run(argv: list[str]) -> tuple[float, float, str]:
    """Wall seconds, CPU seconds (children), and standard output of one run."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.monotonic()
    done = subprocess.run([*COMMAND, *argv, "--quiet"], capture_output=True, text=True, check=False)
    wall = time.monotonic() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode not in (0, 1):
        raise SystemExit(f"audit {' '.join(argv)} failed ({done.returncode}): {done.stderr[-2000:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, done.stdout


def best(argv: list[str], repeat: int) -> tuple[float, float]:
    runs = [run(argv)[:2] for _ in range(repeat)]
    return min(w for w, _ in runs), min(c for _, c in runs)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--real", type=Path, default=REAL, help="the real-shaped captures (benchmarks/real_shaped.py)")
    parser.add_argument("--repeat", type=int, default=3, help="runs of each command (the best counts)")
    parser.add_argument("--spark", action="store_true", help="also time the Spark engine (local[*])")
    args = parser.parse_args()
    inputs = {"sample (37 exchanges)": [str(SAMPLE)]}
    real = [str(args.real / f"{name}.pcap") for name in REAL_NAMES if (args.real / f"{name}.pcap").exists()]
    if len(real) == len(REAL_NAMES):
        inputs["four real-client captures"] = real
    else:
        print(f"(no real-shaped captures in {args.real}: run benchmarks/real_shaped.py for them)")
    print(f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores; best of {args.repeat}\n")
    targets = {"sample (37 exchanges)": TARGET_SAMPLE_S, "four real-client captures": TARGET_REAL_S}
    verdicts = []
    for label, paths in inputs.items():
        rows = {}
        engines = ("local", "spark") if args.spark else ("local",)
        for engine in engines:
            rows[engine] = run([*paths, "--engine", engine, "--format", "jsonl", "--timeline"])[2]
        if args.spark:
            same = rows["local"] == rows["spark"]
            print(f"{label}: {len(rows['local'].splitlines()):,} rows, engines {'agree' if same else 'DIFFER'}")
            if not same:
                return 1
        for engine in engines:
            wall, cpu = best([*paths, "--engine", engine], args.repeat)
            # the JVM is not reaped by the command, so Spark's CPU is not in its rusage: wall only
            cpu_text = f"{cpu:7.2f} CPU s" if engine == "local" else "(the JVM's CPU is not counted)"
            print(f"  {label:<28} {engine:<6} {wall:7.2f} s wall {cpu_text}")
            if engine == "local":
                verdicts.append((label, wall, targets[label]))
    print("\nTargets (in-process engine, wall)")
    for label, wall, target in verdicts:
        print(f"  {'PASS' if wall <= target else 'MISS'}  {label:<28} {wall:6.2f} s  (target <= {target:.0f} s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
