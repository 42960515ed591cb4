#!/usr/bin/env python
"""Where a ``decode --fields`` run's CPU goes, per real-shaped capture: start-up, first use of
each (api, version), the capture layers, and the pairs with their lines.

    python benchmarks/fields_breakdown.py [--real DIR] [--only NAME] [--repeat 3]

Issue 20 asks ``--fields`` for 10x ``tshark -T json``'s rate. Profilers blur a run this short
(py-spy's samples fall on imports out of proportion; cProfile inflates every call), so this
splits the run by difference, each figure the least CPU (user + sys) of ``--repeat`` runs:

- **whole**: the command on the capture, in a process of its own;
- **start-up**: the command on the capture's first 12 packets (Python, the imports, the parser);
- **warm**: a second run in the same process, after a first (the message modules imported, the
  renderers and projections made): the work every exchange costs;
- **first use**: the first of those two runs less the second: what meeting each (api, version)
  the first time costs (importing its message module, making its frame reader, projection and
  renderers);
- **capture layers**: a warm run whose connections take every byte their lanes offer and do
  nothing with it (pcap records, TCP, alignment, the connections' set-up and tear-down, and the
  frames that cross packets, which still go the event way);
- **pairs**: warm - capture layers: frames cut, both headers and the projected body read, the
  pair matched, its line written and printed;
- **lines alone**: ``LineWriter.answered`` replayed on the run's own pairs, without anything else.

The differences are approximations (a sink that takes whole packets leaves fewer frames to
the event way than the real one does), good to a few per cent of the whole: they say which
share a change can hope to move, not what it will win.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from bench_decode import FIELDS, REAL, child_env, cpu_seconds  # noqa: E402  (after the path is set)

CAPTURES = ("kafka-python", "aiokafka", "confluent-kafka", "kafkajs")
_RUN = "import sys; from kafka_epochs.cli import main; sys.exit(main())"
_RECORD = struct.Struct("<IIII")


def first_packets(path: Path, count: int, out: Path) -> Path:
    """A classic pcap of ``path``'s first ``count`` records."""
    data = path.read_bytes()
    pos = 24
    for _ in range(count):
        pos += _RECORD.size + _RECORD.unpack_from(data, pos)[2]
    out.write_bytes(data[:pos])
    return out


def _argv(capture: str) -> list[str]:
    return ["decode", capture, "--quiet", "--fields", FIELDS]


def _run(argv: list[str]) -> float:
    """CPU seconds of one in-process run of the command (its output thrown away)."""
    from kafka_epochs.cli import main

    started = time.process_time()
    with open(os.devnull, "w") as sink, contextlib.redirect_stdout(sink):
        main(argv)
    return time.process_time() - started


def child(mode: str, capture: str) -> None:
    """One measurement in this process (see the module docstring); prints CPU seconds."""
    argv = _argv(capture)
    if mode == "warm":
        cold = _run(argv)
        print(_run(argv), cold)
    elif mode == "layers":
        from kafka_epochs import fused_lines

        def frame_sink(self: Any, direction: Any, max_frame_size: int) -> Any:
            return lambda data, timestamp_ns, out: len(data)

        fused_lines.LineConnection.frame_sink = frame_sink  # type: ignore[method-assign]
        _run(argv)
        print(_run(argv))
    elif mode == "lines":
        from kafka_epochs import json_lines

        calls: list[tuple[Any, ...]] = []
        answered = json_lines.LineWriter.answered

        def recording(self: Any, *args: Any) -> Any:
            calls.append(args)
            return answered(self, *args)

        json_lines.LineWriter.answered = recording  # type: ignore[method-assign]
        _run(argv)
        json_lines.LineWriter.answered = answered  # type: ignore[method-assign]
        best = float("inf")
        for _ in range(5):
            write = json_lines.LineWriter().answered
            started = time.process_time()
            for args in calls:
                write(*args)
            best = min(best, time.process_time() - started)
        print(best, len(calls))
    else:
        raise SystemExit(f"unknown mode {mode}")


def in_process(mode: str, capture: Path, repeat: int) -> list[float]:
    """The least of ``repeat`` child measurements (each figure of the child's line)."""
    best: list[float] | None = None
    for _ in range(repeat):
        done = subprocess.run(
            [sys.executable, str(Path(__file__).resolve()), "--child", mode, str(capture)],
            capture_output=True,
            text=True,
            check=True,
            env=child_env(),
            cwd=tempfile.gettempdir(),
        )
        figures = [float(word) for word in done.stdout.split()]
        best = figures if best is None or figures[0] < best[0] else best
    assert best is not None
    return best


def breakdown(capture: Path, repeat: int, scratch: Path) -> None:
    command = [sys.executable, "-c", _RUN, *_argv(str(capture))]
    whole = cpu_seconds(command, repeat)
    small = first_packets(capture, 12, scratch / f"{capture.stem}-12.pcap")
    start = cpu_seconds([sys.executable, "-c", _RUN, *_argv(str(small))], repeat)
    warm, cold = in_process("warm", capture, repeat)
    layers = in_process("layers", capture, repeat)[0]
    lines, pairs = in_process("lines", capture, repeat)
    first = cold - warm
    rows = [
        ("start-up", start),
        ("rest of the whole", whole - start - first - warm),
        ("first use", first),
        ("capture layers", layers),
        ("pairs", warm - layers),
        ("  of which lines alone", lines),
    ]
    print(f"{capture.stem}: whole {whole:.3f} CPU s, {int(pairs):,} lines ({1e6 * lines / pairs:.2f} us each)")
    for label, seconds in rows:
        print(f"  {label:<24} {seconds:6.3f} s {100 * seconds / whole:5.1f}%")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--real", type=Path, default=REAL, help="the real-shaped captures' directory")
    parser.add_argument("--only", action="append", choices=CAPTURES, help="a capture (repeatable)")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--child", nargs=2, metavar=("MODE", "CAPTURE"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(*args.child)
        return
    print(f"decode --fields {FIELDS!r}; least CPU of {args.repeat} runs each")
    with tempfile.TemporaryDirectory() as scratch:
        for name in args.only or CAPTURES:
            path = args.real / f"{name}.pcap"
            if not path.exists():
                print(f"{name}: no capture at {path} (record them with benchmarks/real_shaped.py)")
                continue
            breakdown(path, args.repeat, Path(scratch))


if __name__ == "__main__":
    main()
