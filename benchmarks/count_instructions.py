#!/usr/bin/env python
"""Instructions `kafka-epochs decode` executes on the real-shaped captures, this tree against
another: a before/after figure that a busy machine does not blur.

    python benchmarks/count_instructions.py --before /path/to/other/checkout [--real DIR]

CPU seconds on a shared machine move by 5% to 20% from run to run, more than most single
changes win; the number of instructions a run executes moves by well under 0.1%. This runs each
command under valgrind's cachegrind (``--cache-sim=no``: instructions only; about 20 times
slower than a plain run) once to compile bytecode and once to count, for ``decode``,
``--fields`` and ``--headers-only`` on each capture of ``benchmarks/real_shaped.py``'s set (x8
left out: it takes minutes), and prints both counts and their ratio. Instructions are not time:
a change that touches more memory (larger batches, say) can cost time with fewer instructions,
so a figure here backs a timed one (``bench_decode.py``, or paired whole-process runs), never replaces it.
Needs valgrind (``apt-get install valgrind``).
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from bench_decode import FIELDS, REAL  # noqa: E402  (after the path is set)

CAPTURES = ("kafka-python", "aiokafka", "confluent-kafka", "kafkajs")
MODES = {"decode": [], "--fields": ["--fields", FIELDS], "--headers-only": ["--headers-only"]}
#: what the ``kafka-epochs`` script runs (``cli.run``; a tree from before it existed: ``sys.exit(main())``)
_RUN = "import sys; from kafka_epochs import cli; cli.run() if hasattr(cli, 'run') else sys.exit(cli.main())"


def instructions(tree: Path, args: list[str], command: list[str] | None = None) -> int:
    """Instructions of ``kafka-epochs decode ARGS`` run from the source tree ``tree`` (with
    ``command``, of ``python COMMAND ARGS``)."""
    env = {**os.environ, "PYTHONPATH": str(tree)}
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # (an installed package has its bytecode)
    command = [
        "valgrind",
        "--tool=cachegrind",
        "--cache-sim=no",
        "--cachegrind-out-file=/dev/null",
        sys.executable,
        *(["-c", _RUN, "decode"] if command is None else command),
        *args,
    ]
    run = subprocess.run(command, cwd=tree, env=env, capture_output=True, text=True, check=False)
    found = re.search(r"I\s+refs:\s+([\d,]+)", run.stderr)
    if found is None:
        raise SystemExit(f"no instruction count from valgrind:\n{run.stderr[-2000:]}")
    return int(found.group(1).replace(",", ""))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--before", type=Path, required=True, help="another checkout of the project (a git worktree)")
    parser.add_argument("--real", type=Path, default=REAL, help="the real-shaped captures (benchmarks/real_shaped.py)")
    parser.add_argument("--captures", nargs="+", default=list(CAPTURES), help="which of them (default: all but x8)")
    args = parser.parse_args()
    if shutil.which("valgrind") is None:
        raise SystemExit("valgrind is not installed (apt-get install valgrind)")
    this = HERE.parent
    print(f"instructions (cachegrind), this tree ({this}) against {args.before}")
    for name in args.captures:
        capture = args.real / f"{name}.pcap"
        for mode, extra in MODES.items():
            counts = []
            for tree in (args.before, this):
                instructions(tree, [str(capture), *extra])  # compiles what the run imports
                counts.append(instructions(tree, [str(capture), *extra]))
            before, after = counts
            print(f"  {name:<16} {mode:<15} {before:>15,} {after:>15,}   {after / before:.4f}")


if __name__ == "__main__":
    main()
