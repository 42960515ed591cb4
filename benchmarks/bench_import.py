#!/usr/bin/env python
"""Start-up cost: ``import kafka_epochs``, load one message class, decode one message.

Each run is a fresh interpreter. The child times, with ``time.perf_counter``, exactly what a
user's program does first:

    import kafka_epochs
    proto = kafka_epochs.Protocol.auto()           # or .apache(), .kip(), .bundled(), .from_specs(dir)
    cls = proto.message("MetadataResponse")
    cls.decode(data, 12)                           # a 3-broker, 1-topic, 3-partition response

and the median over the runs is reported, with the median of each step. It also runs
``python -X importtime -c "import kafka_epochs"`` and reports the cumulative time of the
``kafka_epochs`` package, and the modules that cost most in the whole scenario.

Bytecode: an installed package has ``.pyc`` files (pip compiles them), so the main figure is
measured with a warm bytecode cache. The children write theirs under a private temporary
``PYTHONPYCACHEPREFIX``, so nothing is written into the source tree, and
``PYTHONDONTWRITEBYTECODE`` is cleared for them. A second figure shows the cost when
kafka-epochs' own modules (and the generated ones) have no ``.pyc`` and are compiled on import.

    python benchmarks/bench_import.py [--runs 15] [--json PATH]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent

DEFAULT_SPECS = Path(
    os.environ.get("KAFKA_EPOCHS_REFERENCE_SPECS", ROOT.parent / "shared" / "reference" / "kafka-3.9.0" / "message")
)

# The child: everything before t0 is set-up that a real program would not do.
CHILD = r"""
import os, sys, time  # os: site imports it at start-up anyway, so it is not ours to pay for
mode, data = sys.argv[1], bytes.fromhex(sys.argv[2])
specs, cache = (sys.argv[3], sys.argv[4]) if mode == "from_specs" else (None, None)
t0 = time.perf_counter()
import kafka_epochs
t1 = time.perf_counter()
P = kafka_epochs.Protocol
proto = P.from_specs(specs, cache) if mode == "from_specs" else getattr(P, mode)()
t2 = time.perf_counter()
cls = proto.message("MetadataResponse")
t3 = time.perf_counter()
msg = cls.decode(data, 12)
t4 = time.perf_counter()
assert msg.topics[0].name == "orders.events", msg
print(repr({"total": t4 - t0, "import": t1 - t0, "protocol": t2 - t1, "message class": t3 - t2,
           "decode": t4 - t3}))
"""


def bundled_available() -> bool:
    """Whether ``kafka_epochs/messages/`` has been generated and has MetadataResponse v12."""
    index = ROOT / "kafka_epochs" / "messages" / "_index.py"
    if not index.exists():
        return False
    namespace: dict[str, Any] = {}
    exec(compile(index.read_text(encoding="utf-8"), str(index), "exec"), namespace)
    row = namespace.get("MESSAGES", {}).get("MetadataResponse")
    return row is not None and row[2] <= 12 <= row[3]


def sample_bytes(proto: Any) -> bytes:
    """A small MetadataResponse v12: what a client reads first when it bootstraps."""
    import uuid

    cls = proto.message("MetadataResponse")
    m = sys.modules[cls.__module__]
    brokers = [
        m.MetadataResponseBroker(node_id=b, host=f"b-{b}.kafka.example.com", port=9092, rack=f"az{b}") for b in range(3)
    ]
    parts = [
        m.MetadataResponsePartition(
            partition_index=p, leader_id=p, leader_epoch=4, replica_nodes=[0, 1, 2], isr_nodes=[0, 1, 2]
        )
        for p in range(3)
    ]
    topic = m.MetadataResponseTopic(
        name="orders.events", topic_id=uuid.UUID(int=0x1234_5678_9ABC_DEF0 << 64 | 42), partitions=parts
    )
    return cls(brokers=brokers, cluster_id="Mk3OEXBSQ9eUQ5pzA5TiAQ", controller_id=1, topics=[topic]).encode(12)


def child_env(prefix: Path, write_bytecode: bool) -> dict[str, str]:
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    if not write_bytecode:
        env["PYTHONDONTWRITEBYTECODE"] = "1"
    env["PYTHONPYCACHEPREFIX"] = str(prefix)
    return env


def run_child(args: list[str], env: dict[str, str], no_site: bool = False) -> dict[str, float]:
    # The children run in a scratch directory, as a user's program would: not from the checkout.
    flags = ["-S"] if no_site else []
    proc = subprocess.run(
        [sys.executable, *flags, "-c", CHILD, *args],
        env=env,
        capture_output=True,
        text=True,
        check=False,
        cwd=env["PYTHONPYCACHEPREFIX"],
    )
    if proc.returncode != 0:
        raise RuntimeError(f"the import benchmark's child failed:\n{proc.stderr}")
    return {k: v * 1000 for k, v in eval(proc.stdout).items()}  # our own child's repr


def importtime(env: dict[str, str], code: str) -> list[tuple[str, int, int]]:
    """``-X importtime`` rows: (module, self us, cumulative us)."""
    proc = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", code],
        env=env,
        capture_output=True,
        text=True,
        check=True,
        cwd=env["PYTHONPYCACHEPREFIX"],
    )
    rows = []
    for line in proc.stderr.splitlines():
        if not line.startswith("import time:") or "self [us]" in line:
            continue
        self_us, cumulative, name = line[len("import time:") :].split("|")
        rows.append((name.strip(), int(self_us), int(cumulative)))
    return rows


def medians(samples: list[dict[str, float]]) -> dict[str, float]:
    return {key: statistics.median(s[key] for s in samples) for key in samples[0]}


def forget_bytecode(prefix: Path, *sources: Path) -> None:
    """Remove the cached ``.pyc`` files of the modules under each source directory."""
    for source in sources:
        shutil.rmtree(prefix / str(source.resolve()).lstrip(os.sep), ignore_errors=True)


def measure(runs: int = 11, specs: Path = DEFAULT_SPECS) -> dict[str, Any]:
    from kafka_epochs import Protocol

    modes = []
    if bundled_available():
        modes += ["auto", "apache", "kip", "bundled"]  # auto first: what every command uses
    if specs.is_dir():
        modes.append("from_specs")
    if not modes:
        raise RuntimeError("neither kafka_epochs/messages/ nor the reference specs are available")

    with tempfile.TemporaryDirectory(prefix="kafka-epochs-bench-") as tmp:
        cache = Path(tmp) / "generated"
        prefix = Path(tmp) / "pycache"
        prefix.mkdir()
        report: dict[str, Any] = {"runs": runs, "python": sys.version.split()[0], "modes": {}}
        for mode in modes:
            if mode != "from_specs":
                proto = getattr(Protocol, mode)()
                data = sample_bytes(proto)
                args = [mode, data.hex()]
            else:
                proto = Protocol.from_specs(specs, cache_dir=cache)  # warms the generated-code cache
                data = sample_bytes(proto)
                args = [mode, data.hex(), str(specs), str(cache)]
            warm = child_env(prefix, write_bytecode=True)
            for _ in range(2):  # write every .pyc
                run_child(args, warm)
            samples = [run_child(args, warm) for _ in range(runs)]

            cold = child_env(prefix, write_bytecode=False)
            cold_samples = []
            for _ in range(max(3, runs // 3)):
                forget_bytecode(prefix, ROOT / "kafka_epochs", cache)
                cold_samples.append(run_child(args, cold))
            for _ in range(2):  # restore the warm cache for the next measurements
                run_child(args, warm)

            report["modes"][mode] = {
                "message_bytes": len(data),
                "median_ms": medians(samples),
                "min_total_ms": min(s["total"] for s in samples),
                "no_pyc_median_ms": medians(cold_samples),
            }

            if mode == modes[0]:
                # An editable install (``pip install -e .``, as in development) runs a finder from a
                # .pth file at start-up that imports pathlib, re, urllib.parse, importlib.util ...,
                # so those come free to kafka_epochs. A regular install has no such finder: this
                # runs without site (-S) and with the checkout on PYTHONPATH to see that cost.
                plain = child_env(prefix, write_bytecode=True)
                plain["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), plain.get("PYTHONPATH")]))
                run_child(args, plain, no_site=True)
                plain_samples = [run_child(args, plain, no_site=True) for _ in range(runs)]
                report["modes"][mode]["no_site_median_ms"] = medians(plain_samples)

        bare = [importtime(child_env(prefix, True), "import kafka_epochs") for _ in range(runs)]
        report["importtime_kafka_epochs_cumulative_ms"] = (
            statistics.median(next(c for name, _, c in rows if name == "kafka_epochs") for rows in bare) / 1000
        )
        mode = modes[0]
        scenario = (
            f"import kafka_epochs; p = kafka_epochs.Protocol.{mode}(); p.message('MetadataResponse')"
            if mode != "from_specs"
            else f"import kafka_epochs; p = kafka_epochs.Protocol.from_specs({str(specs)!r}, {str(cache)!r}); "
            "p.message('MetadataResponse')"
        )
        rows = importtime(child_env(prefix, True), scenario)
        report["importtime_scenario_top"] = [
            {"module": name, "self_ms": s / 1000, "cumulative_ms": c / 1000}
            for name, s, c in sorted(rows, key=lambda r: -r[1])[:10]
        ]

    report["primary_mode"] = modes[0]
    report["median_ms"] = report["modes"][modes[0]]["median_ms"]["total"]
    return report


def print_report(report: dict[str, Any]) -> None:
    print(f"Start-up (fresh interpreter, median of {report['runs']} runs, .pyc present)")
    for mode, r in report["modes"].items():
        m = r["median_ms"]
        how = f"Protocol.{mode}()" if mode != "from_specs" else "Protocol.from_specs(dir), cache warm"
        print(
            f"  {how}: import + load MetadataResponse + decode {r['message_bytes']} bytes = "
            f"{m['total']:.1f} ms (best {r['min_total_ms']:.1f})"
        )
        print("    " + ", ".join(f"{k} {v:.2f}" for k, v in m.items() if k != "total") + " ms")
        cold = r["no_pyc_median_ms"]
        print(f"    without kafka-epochs' .pyc files (compiled on import): {cold['total']:.1f} ms")
        if "no_site_median_ms" in r:
            plain = r["no_site_median_ms"]
            print(
                f"    as a regular install sees it (python -S, no editable-install finder): {plain['total']:.1f} ms"
                f" (import {plain['import']:.2f}, protocol {plain['protocol']:.2f} ms)"
            )
    if "bundled" not in report["modes"]:
        print("  (kafka_epochs/messages/ is not generated yet: measured with from_specs instead)")
    print(
        f"  python -X importtime -c 'import kafka_epochs': kafka_epochs cumulative "
        f"{report['importtime_kafka_epochs_cumulative_ms']:.2f} ms (median)"
    )
    print("  costliest imports in the scenario (-X importtime, self time):")
    for row in report["importtime_scenario_top"][:6]:
        print(f"    {row['self_ms']:6.2f} ms  {row['module']}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--specs", type=Path, default=DEFAULT_SPECS)
    parser.add_argument("--json", metavar="PATH")
    args = parser.parse_args(argv)
    report = measure(args.runs, args.specs)
    print_report(report)
    verdict = "PASS" if report["median_ms"] < 30 else "MISS"
    print(f"{verdict}: {report['median_ms']:.1f} ms (target < 30 ms)")
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
