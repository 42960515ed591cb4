#!/usr/bin/env python
"""Where a ``decode --fields`` run's work goes, per real-shaped capture: start-up, first use of
each (api, version), the capture layers, and the pairs with their lines.

    python benchmarks/fields_breakdown.py [--real DIR] [--only NAME] [--repeat 5] [--instructions]

Issue 20 asks ``--fields`` for 10x ``tshark -T json``'s rate. Profilers blur a run this short
(py-spy's samples fall on imports out of proportion; cProfile inflates every call), so this
splits the run by difference. Each piece is measured in processes of its own, each running the
command's ``main`` once or twice (the collector tuned as the command tunes it):

- **whole**: the command on the capture;
- **start-up**: the command on the capture's first 12 packets (Python, the imports, the parser);
- **warm**: a second run in one process, after a first (the message modules imported, the
  renderers and projections made): the work every exchange costs;
- **first use**: a first run less a second, less the start-up: what meeting each (api, version)
  the first time costs (importing its message module, making its frame reader, projection and
  renderers);
- **capture layers**: a warm run whose connections take every byte their lanes offer and do
  nothing with it (pcap records, TCP, alignment, the connections' set-up and tear-down, and the
  frames that cross packets, which still go the event way);
- **pairs**: warm - capture layers: frames cut, both headers and the projected body read, the
  pair matched, its line written and printed;
- **lines alone**: the writer's entries for the fused path's pairs (``LineWriter.answered_plainly``,
  ``answered``) replayed on the run's own pairs, nothing else.

By default each figure is the least CPU (user + sys) of ``--repeat`` processes; a shared machine
moves those by 10% to 30%, and differences of them by more. ``--instructions`` counts what each
process executes instead (valgrind's cachegrind, about 20 times slower, the same figure every
time): the shares are then of instructions, not of time. The differences are approximations (a
sink that takes whole packets leaves fewer frames to the event way than the real one does): they
say which share a change can hope to move, not what it will win.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import resource
import shutil
import struct
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from bench_decode import FIELDS, REAL, child_env  # noqa: E402  (after the path is set)

CAPTURES = ("kafka-python", "aiokafka", "confluent-kafka", "kafkajs")
_RECORD = struct.Struct("<IIII")
_VALGRIND = ["valgrind", "--tool=cachegrind", "--cache-sim=no", "--cachegrind-out-file=/dev/null"]


def first_packets(path: Path, count: int, out: Path) -> Path:
    """A classic pcap of ``path``'s first ``count`` records."""
    data = path.read_bytes()
    pos = 24
    for _ in range(count):
        pos += _RECORD.size + _RECORD.unpack_from(data, pos)[2]
    out.write_bytes(data[:pos])
    return out


# -- in the measured process ------------------------------------------------------------------


def _run(capture: str) -> None:
    """The command once, in this process (its output thrown away)."""
    from kafka_epochs.cli import main

    with open(os.devnull, "w") as sink, contextlib.redirect_stdout(sink):
        main(["decode", capture, "--quiet", "--fields", FIELDS])


def _null_sinks() -> None:
    """Connections whose lanes' sinks take every byte and make nothing of it."""
    from kafka_epochs import fused_lines

    def frame_sink(self: Any, direction: Any, max_frame_size: int) -> Any:
        return lambda data, timestamp_ns, out, inside: len(data)

    fused_lines.LineConnection.frame_sink = frame_sink  # type: ignore[method-assign]


def _recorded_pairs(capture: str) -> list[tuple[str, tuple[Any, ...]]]:
    """The command once, keeping the arguments of each call of the writer's two entries for a
    pair read by the fused path (``answered_plainly`` for nearly every one, ``answered``)."""
    from kafka_epochs import json_lines

    calls: list[tuple[str, tuple[Any, ...]]] = []
    entries = {name: getattr(json_lines.LineWriter, name) for name in _ENTRIES}

    def recording(name: str) -> Any:
        def record(self: Any, *args: Any) -> Any:
            calls.append((name, args))
            return entries[name](self, *args)

        return record

    for name in _ENTRIES:
        setattr(json_lines.LineWriter, name, recording(name))
    try:
        _run(capture)
    finally:
        for name, entry in entries.items():
            setattr(json_lines.LineWriter, name, entry)
    return calls


_ENTRIES = ("answered", "answered_plainly")


def _replay(calls: list[tuple[str, tuple[Any, ...]]]) -> None:
    from kafka_epochs.json_lines import LineWriter

    writer = LineWriter()
    entries = {name: getattr(writer, name) for name in _ENTRIES}
    for name, args in calls:
        entries[name](*args)


def child(mode: str, capture: str) -> None:
    """One measured process: ``MODE`` is ``once``, ``twice``, ``layers-once``, ``layers-twice``,
    ``record`` or ``replay`` (see :func:`breakdown`). Prints the CPU seconds of its last step
    and, for the replays, how many pairs it wrote."""
    from kafka_epochs.cli import _tune_collector

    _tune_collector()  # as the command's own process has it (main(argv) leaves a caller's alone)
    if mode.startswith("layers-"):
        _null_sinks()
        mode = mode.removeprefix("layers-")
    if mode in ("record", "replay"):
        calls = _recorded_pairs(capture)
        started = time.process_time()
        if mode == "replay":
            _replay(calls)
        print(time.process_time() - started, len(calls))
        return
    runs = {"once": 1, "twice": 2}[mode]
    for _ in range(runs):
        started = time.process_time()
        _run(capture)
    print(time.process_time() - started)


# -- the measuring process --------------------------------------------------------------------


def _child_command(mode: str, capture: Path) -> list[str]:
    return [sys.executable, str(Path(__file__).resolve()), "--child", mode, str(capture)]


def _command(capture: Path) -> list[str]:
    run = "import sys; from kafka_epochs.cli import main; sys.exit(main())"
    return [sys.executable, "-c", run, "decode", str(capture), "--quiet", "--fields", FIELDS]


def _process(command: list[str]) -> subprocess.CompletedProcess[str]:
    """``command`` run as every measured process is: bytecode written (as an installed package
    has it), from a directory that shadows no package. A decode exits 1 when some exchange has
    a problem (a cut capture's requests unanswered): that is not a failure here."""
    done = subprocess.run(
        command, capture_output=True, text=True, check=False, env=child_env(), cwd=tempfile.gettempdir()
    )
    if done.returncode not in (0, 1):
        raise SystemExit(f"{' '.join(command)} exited {done.returncode}:\n{done.stderr[-2000:]}")
    return done


def cpu(command: list[str], repeat: int) -> float:
    """The least user + sys CPU of ``repeat`` runs of ``command`` (after one uncounted)."""
    best = float("inf")
    for attempt in range(repeat + 1):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        _process(command)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        if attempt:
            best = min(best, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime))
    return best


def instructions(command: list[str], repeat: int) -> float:
    """What ``command`` executes, in instructions (after one uncounted run that compiles)."""
    _process(command)
    done = _process([*_VALGRIND, *command])
    found = re.search(r"I\s+refs:\s+([\d,]+)", done.stderr)
    if found is None:
        raise SystemExit(f"no instruction count from valgrind:\n{done.stderr[-2000:]}")
    return float(found.group(1).replace(",", ""))


def pairs_of(capture: Path) -> int:
    return int(_process(_child_command("record", capture)).stdout.split()[1])


def breakdown(capture: Path, measure: Callable[[list[str], int], float], repeat: int, scratch: Path) -> None:
    def of(mode: str) -> float:
        return measure(_child_command(mode, capture), repeat)

    small = first_packets(capture, 12, scratch / f"{capture.stem}-12.pcap")
    whole = measure(_command(capture), repeat)
    start = measure(_command(small), repeat)
    once, twice = of("once"), of("twice")
    layers = of("layers-twice") - of("layers-once")
    lines = of("replay") - of("record")
    warm = twice - once
    first = whole - start - warm  # (not ``once``: the measuring script's own imports are in it)
    pairs = pairs_of(capture)
    unit = "instructions" if measure is instructions else "CPU s"
    shown = (lambda n: f"{n / 1e6:8.0f}M") if measure is instructions else (lambda n: f"{n:8.3f} ")
    print(f"{capture.stem}: whole {shown(whole).strip()} {unit}, {pairs:,} pairs")
    for label, amount in (
        ("start-up", start),
        ("first use", first),
        ("capture layers", layers),
        ("pairs", warm - layers),
        ("  of which lines alone", lines),
    ):
        print(f"  {label:<24}{shown(amount)} {100 * amount / whole:5.1f}%")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--real", type=Path, default=REAL, help="the real-shaped captures' directory")
    parser.add_argument("--only", action="append", choices=CAPTURES, help="a capture (repeatable)")
    parser.add_argument("--repeat", type=int, default=5, help="processes per CPU figure (the least counts)")
    parser.add_argument("--instructions", action="store_true", help="count instructions (valgrind) instead of CPU")
    parser.add_argument("--child", nargs=2, metavar=("MODE", "CAPTURE"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(*args.child)
        return
    if args.instructions and shutil.which("valgrind") is None:
        raise SystemExit("valgrind is not installed (apt-get install valgrind)")
    measure = instructions if args.instructions else cpu
    how = "instructions (cachegrind)" if args.instructions else f"least CPU of {args.repeat} processes each"
    print(f"decode --fields {FIELDS!r}; {how}")
    with tempfile.TemporaryDirectory() as scratch:
        for name in args.only or CAPTURES:
            path = args.real / f"{name}.pcap"
            if not path.exists():
                print(f"{name}: no capture at {path} (record them with benchmarks/real_shaped.py)")
                continue
            breakdown(path, measure, args.repeat, Path(scratch))


if __name__ == "__main__":
    main()
