#!/usr/bin/env python
"""Rendering decoded bodies as JSON: generated renderers against ``to_dict`` + ``json.dumps``, in one run.

For each message of ``bench_codec.py`` (and every frame of the bundled real-client capture),
both ways must give the same text before anything is timed, in the two styles the project
writes: Spark's ``body_json`` (compact, ASCII) and the CLI's JSON lines.

    python benchmarks/bench_render.py [--quick]

"vs renderer" = the ``to_dict`` + ``json.dumps`` time / the renderer's: above 1, the renderer is faster.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from bench_codec import (  # noqa: E402  (after the path is set)
    FULL,
    QUICK,
    build_fetch_request,
    build_leader_and_isr_request,
    build_metadata_response,
    build_produce_request,
    build_stop_replica_request,
    time_all,
)

from kafka_epochs import Protocol  # noqa: E402
from kafka_epochs.traffic import decode_capture  # noqa: E402
from kafka_epochs.wire.json_text import json_renderer  # noqa: E402

CASES = [
    ("MetadataResponse", 12, build_metadata_response),
    ("ProduceRequest", 9, build_produce_request),
    ("FetchRequest", 13, build_fetch_request),
    ("StopReplicaRequest", 3, build_stop_replica_request),
    ("LeaderAndIsrRequest", 5, build_leader_and_isr_request),
]
STYLES = {
    "body_json (compact, ASCII)": ({"compact": True, "ascii": True}, json.JSONEncoder(separators=(",", ":"))),
    "CLI line (spaced, UTF-8)": ({"compact": False, "ascii": False}, json.JSONEncoder(ensure_ascii=False)),
}


def capture_bodies() -> list[tuple[Any, int]]:
    sample = HERE.parent / "kafka_epochs" / "samples" / "clients.pcap"
    bodies = []
    for exchange in decode_capture(sample, Protocol.auto()):
        for event in (exchange.request, exchange.response):
            if event is not None and event.decoded is not None:
                bodies.append((event.decoded.body, event.decoded.api_version))
    return bodies


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="fewer, shorter rounds")
    args = parser.parse_args(argv)
    settings = QUICK if args.quick else FULL
    proto = Protocol.apache()
    subjects: list[tuple[str, list[tuple[Any, int]]]] = []
    for name, version, build in CASES:
        cls = proto.message(name)
        body = cls.decode(build(proto, random.Random(7)).encode(version), version)
        subjects.append((f"{name} v{version}", [(body, version)]))
    bodies = capture_bodies()
    subjects.append((f"clients.pcap: all {len(bodies)} bodies", bodies))

    header = f"{'bodies':<34} {'style':<28} {'renderer µs':>12} {'to_dict+dumps µs':>17} {'vs renderer':>12}"
    print(header)
    print("-" * len(header))
    for label, items in subjects:
        for style, (options, encoder) in STYLES.items():
            renderers = [(json_renderer(type(b), v, **options), b) for b, v in items]
            for (render, body), (_, version) in zip(renderers, items, strict=True):
                if render(body) != encoder.encode(body.to_dict(version)):
                    raise SystemExit(f"{label}: the renderer and json.dumps differ")
            times = time_all(
                {
                    "renderer": lambda renderers=renderers: [render(body) for render, body in renderers],
                    "dumps": lambda items=items, encoder=encoder: [encoder.encode(b.to_dict(v)) for b, v in items],
                },
                settings,
            )
            print(
                f"{label:<34} {style:<28} {times['renderer'] * 1e6:>12.1f} {times['dumps'] * 1e6:>17.1f} "
                f"{times['dumps'] / times['renderer']:>11.2f}x"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
