"""`kafka-epochs decode` against `tshark`, in CPU seconds, on real clients' captures first.

    python benchmarks/bench_decode.py [--real DIR] [--repeat 3] [--baseline CHECKOUT] [--synthetic-frames 100000]

The real-shaped set is what ``benchmarks/real_shaped.py`` records (``.cache/real-shaped/``):
kafka-python, aiokafka, confluent-kafka and kafkajs against an eight-broker loopback cluster,
thousands of exchanges over hundreds of short connections and dozens of apis each, and one
capture eight times over. The synthetic capture (8 long connections, five (api, version) pairs)
is measured beside it, as it was before the real-shaped set existed: the two shapes give very
different ratios, and a user's traffic looks like the first.

Each command runs as its own process, its output thrown away, and is timed by the CPU it used
(user + sys, from ``getrusage`` of the child): the machine is shared, so wall time misleads. The
best of ``--repeat`` runs counts, after one run that is not counted (it warms the OS's file
cache and kafka-epochs' cache of compiled renderers, as any second run on a machine would).
A capture's commands (ours and tshark's) run in rounds, one run of each in turn, so that a
shared machine's slow spells fall on all of them alike rather than on whichever ran then.
Bytecode is compiled first and ``PYTHONDONTWRITEBYTECODE`` is cleared for the children: an
installed package has its ``.pyc`` files, and without them every run would compile every module.

kafka-epochs is timed as a user runs it: each source tree is built into a wheel and installed
into a virtual environment of its own (its dependencies are the running environment's, through a
path file), and the ``kafka-epochs`` script pip writes is the command. An editable install of the
checkout, as a developer has, costs every start more: its import hook is set up by ``site``
before anything runs (pathlib and more; 50 million instructions of ``python -c pass``, about 10
ms), which no installed copy pays.

``--baseline CHECKOUT`` also times an older source tree (``git worktree add /tmp/old REV``),
installed the same way, for before/after ratios in one run. Before timing, the JSON lines of the
real captures as the command prints them (whole, --headers-only, --fields) are checked against the
reference renderer (the dict path), line by line, and every frame of their pairs is decoded both
the quick way (``decoded.frame_reader``) and the protocol's general way, and found alike.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from dataclasses import dataclass
from pathlib import Path

from kafka_epochs import Protocol
from kafka_epochs.capture.synth import RecordedConnection, write_capture
from kafka_epochs.exchanges import DecodeSummary, Kind
from kafka_epochs.framing import FrameDecoding, RequestEvent, ResponseEvent
from kafka_epochs.fused_lines import decode_lines
from kafka_epochs.json_lines import LineWriter
from kafka_epochs.projection.bodies import FieldsReader, ProjectedBody
from kafka_epochs.records import Compression, Record, encode_batch
from kafka_epochs.rendering import json_line
from kafka_epochs.traffic import decode_capture, exchange_json

ROOT = Path(__file__).resolve().parent.parent
REAL = ROOT / ".cache" / "real-shaped"
REAL_NAMES = ("kafka-python", "aiokafka", "confluent-kafka", "kafkajs", "x8")
FIELDS = "error_code,topics[].partitions[].error_code,topics[].partitions[].leader_epoch"
T0 = 1_700_000_000_000_000_000

# Targets of the issue that asked for this benchmark (tshark's CPU / ours, higher is better).
TARGET_JSON = 5.0
TARGET_FIELDS = 10.0
TARGET_HEADERS = 2.0
TARGET_FIXED_S = 0.2


def child_env() -> dict[str, str]:
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


#: Children run from here, not from the checkout: ``python -c`` puts its working directory first
#: on ``sys.path``, which would shadow a ``--baseline`` tree's package with the checkout's.
NEUTRAL_DIRECTORY = Path(tempfile.gettempdir())


def cpu_seconds(
    command: list[str], repeat: int, cwd: Path = NEUTRAL_DIRECTORY, env: dict[str, str] | None = None
) -> float:
    """The least user + sys CPU of ``repeat`` runs of ``command`` (after one uncounted run)."""
    cpu_of_run(command, cwd, env)  # (not counted: it warms the file cache and the code cache)
    return min(cpu_of_run(command, cwd, env) for _ in range(repeat))


def cpu_of_run(command: list[str], cwd: Path = NEUTRAL_DIRECTORY, env: dict[str, str] | None = None) -> float:
    """The user + sys CPU of one run of ``command``."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    done = subprocess.run(
        command,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        check=False,
        timeout=3600,
        cwd=cwd,
        env=env or child_env(),
    )
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode not in (0, 1):  # (1: our decode found exchanges with problems; a failed run times nothing)
        raise SystemExit(f"{' '.join(command)} failed ({done.returncode}): {done.stderr[-500:]!r}")
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def interleaved_cpu_seconds(
    commands: dict[str, tuple[list[str], dict[str, str] | None]], repeat: int
) -> dict[str, float]:
    """:func:`cpu_seconds` of each command, run in rounds (one run of each, in turn; the first
    round not counted), so that a machine whose speed drifts (a shared one) slows each alike
    rather than whichever was timed during a slow spell: the ratios are what is compared."""
    best = dict.fromkeys(commands, float("inf"))
    for attempt in range(repeat + 1):
        for label, (command, env) in commands.items():
            used = cpu_of_run(command, env=env)
            if attempt:
                best[label] = min(best[label], used)
    return best


@dataclass
class Kafka:
    """How to run one kafka-epochs source tree's command line: an installed copy's script."""

    label: str
    environment: Path  # the virtual environment it is installed in
    current: bool  # the tree the targets are about (not a --baseline)

    def command(self, *args: str) -> list[str]:
        return [str(self.environment / "bin" / "kafka-epochs"), *args]

    def python(self) -> str:
        return str(self.environment / "bin" / "python")

    def env(self) -> dict[str, str]:
        return child_env()


#: what is copied of a source tree to be installed (a build writes into the tree it builds)
_BUILD_IGNORES = shutil.ignore_patterns(".*", "__pycache__", "build", "*.egg-info", "tests", "benchmarks", "out")


def _quiet(command: list[str]) -> None:
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL)


def install_copy(tree: Path, scratch: Path, label: str, current: bool) -> Kafka:
    """``tree`` installed into a new virtual environment under ``scratch`` as ``pip install``
    puts it on a user's machine (built in isolation, compiled to bytecode, no editable hook). Its
    dependencies come from the running environment (a path file naming its site-packages)."""
    name = label.replace(" ", "-")
    source, environment = scratch / f"{name}-src", scratch / f"{name}-venv"
    shutil.copytree(tree, source, ignore=_BUILD_IGNORES)
    _quiet([getattr(sys, "_base_executable", sys.executable), "-m", "venv", str(environment)])
    python = str(environment / "bin" / "python")
    _quiet([python, "-m", "pip", "--disable-pip-version-check", "-q", "install", "--no-deps", str(source)])
    where = "import sysconfig; print(sysconfig.get_paths()['purelib'])"
    site = subprocess.run([python, "-c", where], check=True, capture_output=True, text=True).stdout.strip()
    Path(site, "bench_dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    return Kafka(label, environment, current)


def tshark_commands(path: Path) -> dict[str, list[str]]:
    tshark = shutil.which("tshark")
    if tshark is None:
        return {}
    # Every capture here talks to port 9092, Wireshark's default Kafka port; said anyway.
    base = [tshark, "-r", str(path), "-d", "tcp.port==9092,kafka"]
    return {"json": [*base, "-T", "json"], "headers": [*base, "-T", "fields", "-e", "kafka.api_key"]}


def exchange_count(path: Path) -> tuple[int, int, int]:
    """(exchanges, connections, apis) of a capture, from the library itself."""
    exchanges = 0
    flows = set()
    apis = set()
    for exchange in decode_capture(path, Protocol.auto()):
        exchanges += 1
        flows.add(exchange.flow)
        if exchange.request is not None and exchange.request.api_key is not None:
            apis.add(exchange.request.api_key)
    return exchanges, len(flows), len(apis)


def check_frame_readers(path: Path) -> int:
    """Every frame of the capture's pairs decodes alike the quick way (a reader made once per (api
    key, version, kind)) and the protocol's general way, with each body reader of the three modes;
    returns how many frames were compared. (:func:`check_lines` goes the quick way on both sides.)"""
    pairs = [
        (exchange.request, exchange.response)
        for exchange in decode_capture(path, Protocol.auto())
        if exchange.kind is Kind.PAIR and exchange.request is not None and exchange.response is not None
    ]
    for reader in (None, FieldsReader([]), FieldsReader(FIELDS.split(","))):
        ways = (FrameDecoding(Protocol.auto(), reader), FrameDecoding(Protocol.auto(), reader, quick=False))
        for request, response in pairs:
            head = (request.frame, 0, 0, request.api_key, request.api_version, request.correlation_id)
            quick, general = (way.request_event(*head) for way in ways)
            answers = [way.response_event(response.frame, 0, 0, request.correlation_id, quick) for way in ways]
            for a, b in ((quick, general), tuple(answers)):
                if event_facts(a) != event_facts(b):
                    raise AssertionError(f"{path.name}: frame {a.stream_offset} decodes otherwise the quick way")
    return 2 * 3 * len(pairs)


def event_facts(event: RequestEvent | ResponseEvent) -> tuple[object, ...]:
    """What a request or response event says, comparable (a projected body by its values)."""
    decoded = event.decoded
    body = None if decoded is None else decoded.body
    if isinstance(body, ProjectedBody):
        body = (body.to_dict(), body.control, body.note)
    facts = () if decoded is None else (decoded.header, decoded.api_version, decoded.header_version)
    more = () if decoded is None else (decoded.trailing, decoded.profile, decoded.warnings, decoded.message)
    return (*facts, *more, body, str(event.error), event.warnings)


def check_lines(path: Path) -> int:
    """Every line the command prints (the fused path's, :mod:`kafka_epochs.fused_lines`) equals the
    reference renderer's, in order, for a whole decode, ``--headers-only`` and ``--fields``;
    returns how many lines were compared."""
    checked = 0
    for reader in (None, FieldsReader([]), FieldsReader(FIELDS.split(","))):
        expected = [
            json_line(exchange_json(exchange, bodies_as_text=True))
            for exchange in decode_capture(path, Protocol.auto(), body_reader=reader)
        ]
        writer = LineWriter()
        got = []
        summary = DecodeSummary()
        for batch in decode_lines(path, Protocol.auto(), writer, summary=summary, body_reader=reader):
            for item in batch:
                line = item if isinstance(item, str) else writer.line(item)
                got.append(line or json_line(exchange_json(item, bodies_as_text=True)))  # type: ignore[arg-type]
        if got != expected:
            at = next(
                (n for n, (a, b) in enumerate(zip(got, expected, strict=False)) if a != b), min(len(got), len(expected))
            )
            raise AssertionError(
                f"{path.name}: line {at} differs from the reference ({len(got)} vs {len(expected)} lines)"
            )
        checked += len(got)
    return checked


def synthetic_capture(path: Path, frames: int, connections: int) -> None:
    """8 long connections cycling through five (api, version) pairs: the old benchmark's shape."""
    p = Protocol.bundled()
    produce, produce_resp = p.message("ProduceRequest"), p.message("ProduceResponse")
    fetch, fetch_resp, metadata = p.message("FetchRequest"), p.message("FetchResponse"), p.message("MetadataResponse")
    batch = encode_batch(
        [Record(key=b"key-%d" % i, value=b"x" * 200, headers=[("h", b"1")]) for i in range(5)],
        compression=Compression.GZIP,
    )
    topics = [f"topic-{i}" for i in range(4)]
    samples = [
        (
            produce(
                acks=1,
                timeout_ms=30000,
                topic_data=[
                    produce.TopicProduceData(
                        name=t, partition_data=[produce.PartitionProduceData(index=i, records=batch) for i in range(3)]
                    )
                    for t in topics
                ],
            ),
            produce_resp(
                responses=[
                    produce_resp.TopicProduceResponse(
                        name=t,
                        partition_responses=[
                            produce_resp.PartitionProduceResponse(index=i, base_offset=42) for i in range(3)
                        ],
                    )
                    for t in topics
                ]
            ),
            8,
        ),
        (
            fetch(
                max_wait_ms=500,
                topics=[
                    fetch.FetchTopic(
                        topic=t, partitions=[fetch.FetchPartition(partition=i, fetch_offset=1000) for i in range(3)]
                    )
                    for t in topics
                ],
            ),
            fetch_resp(
                responses=[
                    fetch_resp.FetchableTopicResponse(
                        topic=t,
                        partitions=[fetch_resp.PartitionData(partition_index=i, records=batch) for i in range(3)],
                    )
                    for t in topics
                ]
            ),
            11,
        ),
        (
            p.message("MetadataRequest")(topics=None),
            metadata(
                brokers=[metadata.MetadataResponseBroker(node_id=b, host=f"broker-{b}", port=9092) for b in range(3)],
                topics=[
                    metadata.MetadataResponseTopic(
                        name=t,
                        partitions=[
                            metadata.MetadataResponsePartition(
                                partition_index=i, leader_id=i % 3, leader_epoch=5, replica_nodes=[0, 1, 2]
                            )
                            for i in range(3)
                        ],
                    )
                    for t in topics
                ],
            ),
            9,
        ),
    ]
    per_connection = frames // (2 * connections)
    recorded = []
    for c in range(connections):
        chunks = []
        for n in range(per_connection):
            request, response, version = samples[n % len(samples)]
            when = T0 + (n * connections + c) * 1000
            frame = p.encode_request(request, version, correlation_id=n + 1, client_id="bench")
            chunks.append((when, "client", frame))
            chunks.append((when + 500, "broker", p.encode_response(response, version, correlation_id=n + 1)))
        recorded.append(RecordedConnection((f"10.0.1.{c + 1}", 40000 + c), ("10.0.0.1", 9092), chunks))
    write_capture(path, recorded)


def one_exchange_capture(path: Path) -> None:
    p = Protocol.apache()
    request, response = p.message("ApiVersionsRequest"), p.message("ApiVersionsResponse")
    chunks = [
        (T0, "client", p.encode_request(request(), 3, correlation_id=1, client_id="c")),
        (T0 + 1000, "broker", p.encode_response(response(), 3, correlation_id=1)),
    ]
    write_capture(path, [RecordedConnection(("10.0.0.1", 50000), ("10.0.0.2", 9092), chunks)])


def ratio_text(anchor: float | None, ours: float) -> str:
    return f"{anchor / ours:6.2f}x" if anchor else "     -"


def measure(path: Path, trees: list[Kafka], repeat: int) -> dict[str, float]:
    commands: dict[str, tuple[list[str], dict[str, str] | None]] = {}
    for tree in trees:
        ways = {
            "decode": [],
            "--fields": ["--fields", FIELDS],
            "--headers-only": ["--headers-only"],
        }
        for way, options in ways.items():
            commands[f"{tree.label} {way}"] = (tree.command("decode", str(path), "--quiet", *options), tree.env())
    for way, command in tshark_commands(path).items():
        commands[f"tshark {way}"] = (command, None)
    return interleaved_cpu_seconds(commands, repeat)


def report(name: str, exchanges: int, times: dict[str, float], trees: list[Kafka]) -> list[tuple[str, float, float]]:
    """Prints one capture's rows; returns (what, ratio, target) for the target list."""
    json_anchor, header_anchor = times.get("tshark json"), times.get("tshark headers")
    if json_anchor is not None:
        print(f"  {'tshark -T json':<34} {json_anchor:7.2f} CPU s {exchanges / json_anchor:9,.0f} exchanges/CPU s")
    if header_anchor is not None:
        rate = exchanges / header_anchor
        print(f"  {'tshark -T fields -e kafka.api_key':<34} {header_anchor:7.2f} CPU s {rate:9,.0f} exchanges/CPU s")
    checks = []
    for tree in trees:
        for way in ("decode", "--fields", "--headers-only"):
            ours = times[f"{tree.label} {way}"]
            anchor = header_anchor if way == "--headers-only" else json_anchor
            what = f"{tree.label} {way}"
            rate = exchanges / ours
            vs = "fields" if way == "--headers-only" else "json"
            print(
                f"  {what:<34} {ours:7.2f} CPU s {rate:9,.0f} exchanges/CPU s  {ratio_text(anchor, ours)} tshark {vs}"
            )
            if tree.current and anchor:
                target = {"decode": TARGET_JSON, "--fields": TARGET_FIELDS, "--headers-only": TARGET_HEADERS}[way]
                checks.append((f"{name}: {way}", anchor / ours, target))
    return checks


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--real", type=Path, default=REAL, help="the real-shaped captures (benchmarks/real_shaped.py)")
    parser.add_argument("--repeat", type=int, default=3, help="counted runs of each command (best counts)")
    parser.add_argument("--baseline", type=Path, help="an older kafka-epochs source tree to time beside this one")
    parser.add_argument("--synthetic-frames", type=int, default=100_000)
    parser.add_argument("--json", type=Path, help="write the figures here too")
    parser.add_argument("--only", action="append", choices=REAL_NAMES, help="these real-shaped captures only")
    parser.add_argument("--no-synthetic", action="store_true", help="skip the synthetic and one-exchange captures")
    parser.add_argument(
        "--pcapng",
        action="store_true",
        help="also each real-shaped capture as pcapng, what Wireshark and dumpcap write (converted by editcap)",
    )
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as scratch:
        trees = [install_copy(ROOT, Path(scratch), "kafka-epochs", current=True)]
        if args.baseline is not None:
            trees.append(install_copy(args.baseline, Path(scratch), f"baseline {args.baseline.name}", current=False))
        return run(args, trees, Path(scratch))


def run(args: argparse.Namespace, trees: list[Kafka], tmp: Path) -> int:
    print(f"CPU seconds (user + sys), best of {args.repeat} rounds after a warm-up; {os.cpu_count()} CPUs")
    print("kafka-epochs as pip installs it (its `kafka-epochs` script in a new environment; not editable)")
    if not shutil.which("tshark"):
        print("tshark is not installed (apt-get install tshark): no ratios")
    figures: dict[str, object] = {}
    checks: list[tuple[str, float, float]] = []

    names = args.only or REAL_NAMES
    real = args.real.resolve()  # (the commands run from another directory: a relative path would fail them)
    captures = [real / f"{name}.pcap" for name in names if (real / f"{name}.pcap").exists()]
    if not captures:
        print(f"no real-shaped captures in {args.real}: run benchmarks/real_shaped.py first")
    print("\n== real-shaped captures (real clients, an 8-broker cluster) ==")
    for path in captures:
        exchanges, flows, apis = exchange_count(path)
        checked = check_lines(path) if path.stem != "x8" else 0
        frames = check_frame_readers(path) if path.stem != "x8" else 0
        size = path.stat().st_size / 1e6
        lines = f", {checked:,} lines (3 modes) checked against the reference" if checked else ""
        lines += f", {frames:,} frames read alike both ways" if frames else ""
        print(f"{path.name}: {exchanges:,} exchanges, {flows:,} connections, {apis} apis, {size:.1f} MB{lines}")
        times = measure(path, trees, args.repeat)
        checks += report(path.stem, exchanges, times, trees)
        figures[path.name] = {"exchanges": exchanges, "connections": flows, "apis": apis, "cpu_s": times}

    if args.pcapng and captures:
        print("\n== the same captures as pcapng (what Wireshark and dumpcap write; editcap -F pcapng) ==")
        for path in captures:
            copy = tmp / f"{path.stem}.pcapng"
            subprocess.run(["editcap", "-F", "pcapng", str(path), str(copy)], check=True, capture_output=True)
            exchanges, _, _ = exchange_count(copy)
            checked = check_lines(copy) if path.stem != "x8" else 0
            lines = f", {checked:,} lines (3 modes) checked against the reference" if checked else ""
            print(f"{copy.name}: {exchanges:,} exchanges, {copy.stat().st_size / 1e6:.1f} MB{lines}")
            times = measure(copy, trees, args.repeat)
            checks += report(copy.name, exchanges, times, trees)
            figures[copy.name] = {"exchanges": exchanges, "cpu_s": times}

    if args.no_synthetic:
        return finish(checks, figures, args.json)
    synthetic = tmp / "synthetic.pcap"
    synthetic_capture(synthetic, args.synthetic_frames, 8)
    exchanges, flows, apis = exchange_count(synthetic)
    print(f"\n== synthetic capture (the old shape: {flows} long connections, {apis} apis) ==")
    print(f"synthetic.pcap: {exchanges:,} exchanges, {synthetic.stat().st_size / 1e6:.1f} MB")
    times = measure(synthetic, trees, args.repeat)
    report("synthetic", exchanges, times, trees)
    figures["synthetic.pcap"] = {"exchanges": exchanges, "cpu_s": times}

    one = tmp / "one.pcap"
    one_exchange_capture(one)
    print("\n== fixed cost: a one-exchange capture, against `python -c pass` ==")
    floor = cpu_seconds([trees[0].python(), "-c", "pass"], args.repeat * 3)
    print(f"  {'python -c pass':<34} {floor:7.3f} CPU s")
    for tree in trees:
        used = cpu_seconds(tree.command("decode", str(one), "--quiet"), args.repeat * 3, env=tree.env())
        print(f"  {tree.label + ' decode':<34} {used:7.3f} CPU s  (+{used - floor:.3f})")
        if tree.current:
            checks.append(("one exchange: CPU s above python -c pass", used - floor, TARGET_FIXED_S))
        figures[f"one exchange {tree.label}"] = used - floor

    return finish(checks, figures, args.json)


def finish(checks: list[tuple[str, float, float]], figures: dict[str, object], out: Path | None) -> int:
    print("\nTargets")
    for what, value, target in checks:
        fixed = what.startswith("one exchange")
        passed = value <= target if fixed else value >= target
        goal = f"<= {target}" if fixed else f">= {target}x"
        print(f"  {'PASS' if passed else 'MISS'}  {what:<44} {value:6.2f}  (target {goal})")
    if out is not None:
        out.write_text(json.dumps(figures, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
