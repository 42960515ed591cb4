#!/usr/bin/env python
"""Decode and encode speed of kafka-epochs against kio, kafka-python and a hand-written decoder.

Every codec is timed in this one process on the same bytes: each message is built with
kafka-epochs' generated classes from Apache Kafka 3.9's JSON specs and encoded once; each peer
must decode exactly those bytes and re-encode them to exactly the same bytes before it is timed.

    python benchmarks/bench_codec.py            # about 35 seconds
    python benchmarks/bench_codec.py --quick    # about 10 seconds, noisier
    python benchmarks/bench_codec.py --json results.json

Times are the best of several rounds (rounds interleave the codecs, so a burst of load from
elsewhere on the machine hits all of them alike); ``timeit`` switches the garbage collector
off while it times, for every codec. Ratios are "peer time / our time": above 1 means
kafka-epochs is faster. The hand-written ceiling is the exception: its target is stated as
"our time / ceiling time" (at most 1.15).
"""

from __future__ import annotations

import argparse
import io
import json
import os
import platform
import random
import struct
import sys
import time
import timeit
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

#: Apache Kafka 3.9.0's message specs (the same default as the test suite's).
DEFAULT_SPECS = Path(
    os.environ.get("KAFKA_EPOCHS_REFERENCE_SPECS", ROOT.parent / "shared" / "reference" / "kafka-3.9.0" / "message")
)

OURS = "kafka-epochs"
CEILING = "hand-written"
KIO = "kio 0.6.5"
KAFKA_PYTHON = "kafka-python 3.0.12"

# The targets.
CEILING_MAX = 1.15  # decode: our time / hand-written time
DECODE_VS_KAFKA_PYTHON = 2.5  # decode: kafka-python time / our time
ENCODE_VS_KIO = 8.0  # encode: kio time / our time
ENCODE_VS_KAFKA_PYTHON = 3.5  # encode: kafka-python time / our time
IMPORT_MAX_MS = 30.0


# -- building realistic messages ---------------------------------------------------------------

WORDS = (
    "orders",
    "payments",
    "clicks",
    "inventory",
    "users",
    "sessions",
    "shipments",
    "audit",
    "metrics",
    "invoices",
    "carts",
    "search",
    "ads",
    "fraud",
    "ledger",
    "notifications",
)


def topic_names(rng: random.Random, count: int) -> list[str]:
    names = []
    for i in range(count):
        domain, entity = rng.choice(WORDS), rng.choice(WORDS)
        names.append(f"{domain}.{entity}.events-v{i % 4 + 1}.{i:03d}")
    return names


def random_uuid(rng: random.Random) -> uuid.UUID:
    return uuid.UUID(int=rng.getrandbits(128), version=4)


def module_of(cls: type) -> ModuleType:
    """The generated module of a message class: it holds the nested struct classes too."""
    return sys.modules[cls.__module__]


def build_metadata_response(proto: Any, rng: random.Random, topics: int = 100, partitions: int = 10) -> Any:
    cls = proto.message("MetadataResponse")
    m = module_of(cls)
    brokers = [
        m.MetadataResponseBroker(
            node_id=b, host=f"b-{b}.kafka-prod.internal.example.com", port=9092, rack=f"use1-az{b % 3 + 1}"
        )
        for b in range(6)
    ]
    out = []
    for name in topic_names(rng, topics):
        parts = []
        for p in range(partitions):
            replicas = rng.sample(range(6), 3)
            isr = replicas if rng.random() > 0.05 else replicas[:2]
            parts.append(
                m.MetadataResponsePartition(
                    error_code=0,
                    partition_index=p,
                    leader_id=replicas[0],
                    leader_epoch=rng.randrange(60),
                    replica_nodes=replicas,
                    isr_nodes=list(isr),
                    offline_replicas=[],
                )
            )
        out.append(
            m.MetadataResponseTopic(
                error_code=0, name=name, topic_id=random_uuid(rng), is_internal=False, partitions=parts
            )
        )
    return cls(throttle_time_ms=0, brokers=brokers, cluster_id="Mk3OEXBSQ9eUQ5pzA5TiAQ", controller_id=2, topics=out)


# Record batches (magic v2) for ProduceRequest: opaque bytes to every codec here, but real ones.


def _crc32c_table() -> list[int]:
    table = []
    for n in range(256):
        c = n
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
        table.append(c)
    return table


_CRC32C = _crc32c_table()


def crc32c(data: bytes) -> int:
    crc = 0xFFFFFFFF
    table = _CRC32C
    for b in data:
        crc = table[(crc ^ b) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


def _varint(value: int) -> bytes:
    """A zig-zag signed varint, as record fields use."""
    v = (value << 1) ^ (value >> 63)
    out = bytearray()
    while v >= 0x80:
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    out.append(v)
    return bytes(out)


def record_batch(rng: random.Random, records: int, value_size: int, base_timestamp: int) -> bytes:
    """An uncompressed magic-v2 record batch with keyed records and no headers."""
    body = bytearray()
    for i in range(records):
        key = f"user-{rng.randrange(10**6):06d}".encode()
        text = f'{{"id":{rng.randrange(10**9)},"event":"{rng.choice(WORDS)}","payload":"'
        value = (text + "x" * max(0, value_size - len(text) - 2) + '"}').encode()
        rec = b"\x00" + _varint(i * 3) + _varint(i) + _varint(len(key)) + key + _varint(len(value)) + value + _varint(0)
        body += _varint(len(rec)) + rec
    after_crc = struct.pack(
        ">hiqqqhii", 0, records - 1, base_timestamp, base_timestamp + 3 * (records - 1), -1, -1, -1, records
    ) + bytes(body)
    crc = crc32c(after_crc)
    after_length = struct.pack(">ibI", -1, 2, crc) + after_crc
    return struct.pack(">qi", 0, len(after_length)) + after_length


def build_produce_request(proto: Any, rng: random.Random, topics: int = 10, partitions: int = 5) -> Any:
    cls = proto.message("ProduceRequest")
    m = module_of(cls)
    data = []
    for name in topic_names(rng, topics):
        data.append(
            m.TopicProduceData(
                name=name,
                partition_data=[
                    m.PartitionProduceData(index=p, records=record_batch(rng, 7, 120, 1_732_000_000_000 + p))
                    for p in range(partitions)
                ],
            )
        )
    return cls(transactional_id=None, acks=-1, timeout_ms=30_000, topic_data=data)


def build_fetch_request(proto: Any, rng: random.Random, topics: int = 10, partitions: int = 10) -> Any:
    """A consumer's full fetch (new session) of 100 partitions."""
    cls = proto.message("FetchRequest")
    m = module_of(cls)
    out = []
    for _ in range(topics):
        out.append(
            m.FetchTopic(
                topic_id=random_uuid(rng),
                partitions=[
                    m.FetchPartition(
                        partition=p,
                        current_leader_epoch=rng.randrange(60),
                        fetch_offset=rng.randrange(10**10),
                        last_fetched_epoch=rng.randrange(60),
                        log_start_offset=-1,
                        partition_max_bytes=1_048_576,
                    )
                    for p in range(partitions)
                ],
            )
        )
    return cls(
        replica_id=-1,
        max_wait_ms=500,
        min_bytes=1,
        max_bytes=52_428_800,
        isolation_level=1,
        session_id=0,
        session_epoch=0,
        topics=out,
        forgotten_topics_data=[],
        rack_id="use1-az1",
    )


def build_fetch_response(proto: Any, rng: random.Random, topics: int = 10, partitions: int = 10) -> Any:
    """A broker's answer to a consumer's fetch: half the partitions have a batch, half nothing new.

    No diverging epoch, leader or snapshot (tagged structs that only a follower or a stale
    consumer gets): the shape nearly every fetch response has.
    """
    cls = proto.message("FetchResponse")
    m = module_of(cls)
    base = 1_700_000_000_000
    out = []
    for name in topic_names(rng, topics):
        parts = []
        for p in range(partitions):
            high = rng.randrange(10**9)
            records = record_batch(rng, 5, 200, base) if p % 2 else b""
            parts.append(
                m.PartitionData(
                    partition_index=p,
                    high_watermark=high,
                    last_stable_offset=high,
                    log_start_offset=rng.randrange(high + 1),
                    aborted_transactions=[],
                    preferred_read_replica=-1,
                    records=records,
                )
            )
        out.append(m.FetchableTopicResponse(topic=name, partitions=parts))
    return cls(throttle_time_ms=0, error_code=0, session_id=rng.randrange(1, 2**31), responses=out)


def build_stop_replica_request(proto: Any, rng: random.Random, topics: int = 20, partitions: int = 50) -> Any:
    cls = proto.message("StopReplicaRequest")
    m = module_of(cls)
    states = []
    for name in topic_names(rng, topics):
        delete = rng.random() < 0.5
        states.append(
            m.StopReplicaTopicState(
                topic_name=name,
                partition_states=[
                    m.StopReplicaPartitionState(
                        partition_index=p, leader_epoch=rng.randrange(60), delete_partition=delete
                    )
                    for p in range(partitions)
                ],
            )
        )
    return cls(controller_id=1, controller_epoch=17, broker_epoch=4_294_967_407, topic_states=states)


def build_leader_and_isr_request(proto: Any, rng: random.Random, topics: int = 20, partitions: int = 50) -> Any:
    cls = proto.message("LeaderAndIsrRequest")
    m = module_of(cls)
    states = []
    for name in topic_names(rng, topics):
        parts = []
        for p in range(partitions):
            replicas = rng.sample(range(6), 3)
            parts.append(
                m.LeaderAndIsrPartitionState(
                    partition_index=p,
                    controller_epoch=17,
                    leader=replicas[0],
                    leader_epoch=rng.randrange(60),
                    isr=list(replicas),
                    partition_epoch=rng.randrange(200),
                    replicas=replicas,
                    adding_replicas=[],
                    removing_replicas=[],
                    is_new=False,
                )
            )
        states.append(m.LeaderAndIsrTopicState(topic_name=name, topic_id=random_uuid(rng), partition_states=parts))
    leaders = [
        m.LeaderAndIsrLiveLeader(broker_id=b, host_name=f"b-{b}.kafka-prod.internal.example.com", port=9092)
        for b in range(6)
    ]
    return cls(
        controller_id=1,
        controller_epoch=17,
        broker_epoch=4_294_967_407,
        type=0,
        topic_states=states,
        live_leaders=leaders,
    )


# -- the codecs ----------------------------------------------------------------------------------


class Unavailable(Exception):
    """This codec has no such message (or version)."""


@dataclass
class Codec:
    """One codec's decode and encode of one message, both on the benchmark's bytes."""

    decode: Callable[[], Any]
    encode: Callable[[], bytes] | None


@dataclass
class Case:
    name: str
    version: int
    description: str
    build: Callable[[Any, random.Random], Any]
    kio_module: str | None  # kio.schema.<...> module holding the class, when kio has the message
    kafka_python: tuple[str, str] | None  # (module, class), when kafka-python has the message
    ceiling: bool = False
    #: (decode, encode) goals against kafka-python where the issue that added the case set its own
    goals_vs_kafka_python: tuple[float, float] | None = None


CASES = [
    Case(
        "MetadataResponse",
        12,
        "100 topics x 10 partitions, 6 brokers",
        build_metadata_response,
        "kio.schema.metadata.v12.response",
        ("kafka.protocol.metadata", "MetadataResponse"),
        ceiling=True,
    ),
    Case(
        "ProduceRequest",
        9,
        "10 topics x 5 partitions, ~1 KiB record batches",
        build_produce_request,
        "kio.schema.produce.v9.request",
        ("kafka.protocol.producer", "ProduceRequest"),
    ),
    Case(
        "FetchRequest",
        13,
        "10 topics x 10 partitions (a consumer's full fetch)",
        build_fetch_request,
        "kio.schema.fetch.v13.request",
        ("kafka.protocol.consumer", "FetchRequest"),
    ),
    Case(
        "FetchResponse",
        12,
        "10 topics x 10 partitions, half with a ~1 KiB record batch, no tagged fields",
        build_fetch_response,
        "kio.schema.fetch.v12.response",
        ("kafka.protocol.consumer", "FetchResponse"),
        goals_vs_kafka_python=(2.0, 5.0),
    ),
    Case("StopReplicaRequest", 3, "20 topics x 50 partitions", build_stop_replica_request, None, None),
    Case(
        "LeaderAndIsrRequest", 5, "20 topics x 50 partitions, 6 live leaders", build_leader_and_isr_request, None, None
    ),
]


def ours_codec(cls: Any, message: Any, data: bytes, version: int) -> Codec:
    decoded = cls.decode(data, version)
    if decoded != message:
        raise AssertionError(f"kafka-epochs: decode(encode(x)) != x for {cls.__name__} v{version}")
    decode = cls.decode
    return Codec(lambda: decode(data, version), lambda: message.encode(version))


def ceiling_codec(ours: Any, data: bytes) -> Codec:
    import ceiling_metadata_v12

    decoded = ceiling_metadata_v12.decode(data)
    same_fields(ours, decoded, "MetadataResponse")
    decode = ceiling_metadata_v12.decode
    return Codec(lambda: decode(data), None)


def same_fields(ours: Any, other: Any, path: str) -> None:
    """Field-by-field equality of one of our objects and another slotted object, with types."""
    for name in type(ours).__slots__:
        a, b = getattr(ours, name), getattr(other, name)
        where = f"{path}.{name}"
        if isinstance(a, list):
            if type(b) is not list or len(a) != len(b):
                raise AssertionError(f"hand-written decoder differs at {where}: {b!r:.80} vs {a!r:.80}")
            for i, (x, y) in enumerate(zip(a, b, strict=True)):
                if hasattr(type(x), "__slots__") and type(x).__slots__:
                    same_fields(x, y, f"{where}[{i}]")
                elif type(x) is not type(y) or x != y:
                    raise AssertionError(f"hand-written decoder differs at {where}[{i}]: {y!r} vs {x!r}")
        elif type(a) is not type(b) or a != b:
            raise AssertionError(f"hand-written decoder differs at {where}: {b!r} vs {a!r}")


def kio_codec(module_name: str, class_name: str, data: bytes) -> Codec:
    import importlib

    try:
        from kio.serial import entity_reader, entity_writer

        cls = getattr(importlib.import_module(module_name), class_name)
    except (ImportError, AttributeError) as e:
        raise Unavailable(str(e)) from e
    read = entity_reader(cls)
    write = entity_writer(cls)
    obj, size = read(data, 0)
    if size != len(data):
        raise AssertionError(f"kio read {size} of {len(data)} bytes of {class_name}")

    def encode() -> bytes:
        buf = io.BytesIO()
        write(buf, obj)
        return buf.getvalue()

    if encode() != data:
        raise AssertionError(f"kio re-encodes {class_name} to different bytes")
    return Codec(lambda: read(data, 0), encode)


def kafka_python_codec(where: tuple[str, str], version: int, data: bytes) -> Codec:
    import importlib

    module_name, class_name = where
    try:
        cls = getattr(importlib.import_module(module_name), class_name)
    except (ImportError, AttributeError) as e:
        raise Unavailable(str(e)) from e
    if not cls.min_version <= version <= cls.max_version:
        raise Unavailable(f"kafka-python's {class_name} has versions {cls.min_version}-{cls.max_version}")
    obj = cls.decode(data, version=version)
    # A decoded ApiMessage lacks the _header slot that encode() reads; a constructed one has it.
    obj._header = None
    encoded = obj.encode(version=version)
    if bytes(encoded) != data:
        raise AssertionError(f"kafka-python re-encodes {class_name} v{version} to different bytes")
    decode = cls.decode
    return Codec(lambda: decode(data, version=version), lambda: obj.encode(version=version))


# -- timing --------------------------------------------------------------------------------------


@dataclass
class Settings:
    rounds: int
    min_time: float  # seconds per timed batch


FULL = Settings(rounds=9, min_time=0.08)
QUICK = Settings(rounds=3, min_time=0.015)


def batch_size(fn: Callable[[], Any], min_time: float) -> int:
    """How many calls make one timed batch of at least ``min_time`` seconds."""
    timer = timeit.Timer(fn)
    number = 1
    while True:
        if timer.timeit(number) >= min_time:
            return number
        number *= 2


def time_all(fns: dict[str, Callable[[], Any]], settings: Settings) -> dict[str, float]:
    """Seconds per call of each function: the best batch over interleaved rounds."""
    sizes = {key: batch_size(fn, settings.min_time) for key, fn in fns.items()}
    timers = {key: timeit.Timer(fn) for key, fn in fns.items()}
    best = dict.fromkeys(fns, float("inf"))
    for _ in range(settings.rounds):
        for key, timer in timers.items():
            best[key] = min(best[key], timer.timeit(sizes[key]) / sizes[key])
    return best


# -- running -------------------------------------------------------------------------------------


@dataclass
class Result:
    name: str
    version: int
    description: str
    size: int
    decode_us: dict[str, float | None] = field(default_factory=dict)
    encode_us: dict[str, float | None] = field(default_factory=dict)
    notes: dict[str, str] = field(default_factory=dict)
    goals_vs_kafka_python: tuple[float, float] | None = None


def run_case(proto: Any, case: Case, settings: Settings, seed: int) -> Result:
    rng = random.Random(f"{seed}:{case.name}")
    message = case.build(proto, rng)
    cls = type(message)
    data = message.encode(case.version)
    result = Result(case.name, case.version, case.description, len(data))
    result.goals_vs_kafka_python = case.goals_vs_kafka_python

    codecs: dict[str, Codec | None] = {OURS: ours_codec(cls, message, data, case.version)}
    if case.ceiling:
        codecs[CEILING] = ceiling_codec(codecs[OURS].decode(), data)  # type: ignore[union-attr]
    if case.kio_module is None:
        codecs[KIO] = None
        result.notes[KIO] = f"kio 0.6.5 has no {case.name} (removed with ZooKeeper)"
    else:
        try:
            codecs[KIO] = kio_codec(case.kio_module, case.name, data)
        except Unavailable as e:
            codecs[KIO] = None
            result.notes[KIO] = str(e)
    if case.kafka_python is None:
        codecs[KAFKA_PYTHON] = None
        result.notes[KAFKA_PYTHON] = f"kafka-python 3.0.12 has no {case.name}"
    else:
        try:
            codecs[KAFKA_PYTHON] = kafka_python_codec(case.kafka_python, case.version, data)
        except Unavailable as e:
            codecs[KAFKA_PYTHON] = None
            result.notes[KAFKA_PYTHON] = str(e)

    fns: dict[str, Callable[[], Any]] = {}
    for codec_name, codec in codecs.items():
        if codec is None:
            continue
        fns[f"decode {codec_name}"] = codec.decode
        if codec.encode is not None:
            fns[f"encode {codec_name}"] = codec.encode
    times = time_all(fns, settings)
    for codec_name in codecs:
        dec, enc = times.get(f"decode {codec_name}"), times.get(f"encode {codec_name}")
        result.decode_us[codec_name] = None if dec is None else dec * 1e6
        result.encode_us[codec_name] = None if enc is None else enc * 1e6
    return result


def ratio(peer: float | None, ours: float | None) -> float | None:
    if peer is None or ours is None:
        return None
    return peer / ours


@dataclass
class Target:
    what: str
    value: float | None
    goal: str
    passed: bool | None  # None: not measurable (a peer lacks the message)

    def verdict(self) -> str:
        return "n/a" if self.passed is None else ("PASS" if self.passed else "MISS")


def targets_for(result: Result) -> list[Target]:
    label = f"{result.name} v{result.version}"
    d, e = result.decode_us, result.encode_us
    out = []
    if CEILING in d:
        value = ratio(d[OURS], d[CEILING])
        out.append(
            Target(
                f"decode {label}: ours / hand-written",
                value,
                f"<= {CEILING_MAX}",
                None if value is None else value <= CEILING_MAX,
            )
        )
    decode_goal, encode_goal = result.goals_vs_kafka_python or (DECODE_VS_KAFKA_PYTHON, ENCODE_VS_KAFKA_PYTHON)
    checks = [
        ("decode", d, KAFKA_PYTHON, decode_goal),
        ("encode", e, KIO, ENCODE_VS_KIO),
        ("encode", e, KAFKA_PYTHON, encode_goal),
    ]
    for op, times, peer, goal in checks:
        value = ratio(times.get(peer), times[OURS])
        out.append(
            Target(f"{op} {label}: {peer} / ours", value, f">= {goal}", None if value is None else value >= goal)
        )
    return out


def fmt_us(value: float | None) -> str:
    return "n/a" if value is None else f"{value:,.1f}"


def fmt_ratio(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.2f}x"


def print_result(result: Result) -> None:
    print(f"\n{result.name} v{result.version}: {result.description}; {result.size:,} bytes")
    print(f"  {'codec':<22}{'decode us':>12}{'vs ours':>10}{'encode us':>12}{'vs ours':>10}")
    for codec_name in result.decode_us:
        d, e = result.decode_us[codec_name], result.encode_us[codec_name]
        if codec_name == OURS:
            dr = er = "1.00x"
        else:
            dr = fmt_ratio(ratio(d, result.decode_us[OURS]))
            er = fmt_ratio(ratio(e, result.encode_us[OURS]))
        if d is None and e is None:
            dr = er = "n/a"
        print(f"  {codec_name:<22}{fmt_us(d):>12}{dr:>10}{fmt_us(e):>12}{er:>10}")
    for codec_name, note in result.notes.items():
        print(f"  note: {codec_name}: {note}")


def machine() -> dict[str, Any]:
    return {
        "python": platform.python_version(),
        "implementation": platform.python_implementation(),
        "platform": platform.platform(),
        "processor": platform.processor() or platform.machine(),
        "cpus": os.cpu_count(),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer, shorter rounds: a smoke run")
    parser.add_argument("--json", metavar="PATH", help="also write the results as JSON to PATH")
    parser.add_argument(
        "--specs",
        metavar="DIR",
        type=Path,
        default=DEFAULT_SPECS,
        help="Kafka's JSON message specs (default: %(default)s)",
    )
    parser.add_argument(
        "--cache-dir",
        metavar="DIR",
        help="where generated code is cached (default: $KAFKA_EPOCHS_CACHE, else ~/.cache/kafka-epochs)",
    )
    parser.add_argument("--only", metavar="NAME", action="append", help="run only this message (repeatable)")
    parser.add_argument("--no-import", action="store_true", help="skip the import-time measurement")
    parser.add_argument("--seed", type=int, default=2024, help="seed of the generated message contents")
    args = parser.parse_args(argv)
    settings = QUICK if args.quick else FULL

    if not args.specs.is_dir():
        parser.error(f"no Kafka specs at {args.specs}: pass --specs or set KAFKA_EPOCHS_REFERENCE_SPECS")
    from kafka_epochs import Protocol

    proto = Protocol.from_specs(args.specs, cache_dir=args.cache_dir)
    started = time.perf_counter()
    info = machine()
    print(
        f"CPython {info['python']} on {info['platform']}, {info['cpus']} CPUs; "
        f"{'quick' if args.quick else 'full'} run: best of {settings.rounds} rounds"
    )
    print("'vs ours' is that codec's time / our time: above 1.00x, kafka-epochs is faster")

    results = []
    for case in CASES:
        if args.only and case.name not in args.only:
            continue
        result = run_case(proto, case, settings, args.seed)
        print_result(result)
        results.append(result)

    import_result = None
    if not args.no_import:
        import bench_import

        import_result = bench_import.measure(runs=5 if args.quick else 11)
        print()
        bench_import.print_report(import_result)

    targets = [t for r in results for t in targets_for(r)]
    if import_result is not None:
        ms = import_result["median_ms"]
        how = "bundled" if import_result["primary_mode"] == "bundled" else "from_specs, cache warm"
        targets.append(
            Target(
                f"start-up: import + load one message + decode it, ms ({how})",
                ms,
                f"< {IMPORT_MAX_MS:g}",
                ms < IMPORT_MAX_MS,
            )
        )
        plain = import_result["modes"].get("bundled", {}).get("no_site_median_ms")
        if plain is not None:
            targets.append(
                Target(
                    "start-up as a regular (non-editable) install would see it, ms",
                    plain["total"],
                    f"< {IMPORT_MAX_MS:g}",
                    plain["total"] < IMPORT_MAX_MS,
                )
            )
    print("\nTargets")
    for t in targets:
        if t.passed is not None:
            print(f"  {t.verdict():<5} {t.what:<62} {t.value:>8.2f}  (target {t.goal})")
    unmeasurable = sorted({t.what.split(":")[0].split(" ", 1)[1] for t in targets if t.passed is None})
    if unmeasurable:
        print(f"  n/a   no peer to compare with: {', '.join(unmeasurable)}")
    print(f"\n({time.perf_counter() - started:.0f} s)")

    if args.json:
        payload = {
            "machine": info,
            "settings": {
                "rounds": settings.rounds,
                "min_batch_seconds": settings.min_time,
                "seed": args.seed,
                "specs": str(args.specs),
            },
            "results": [
                {
                    "message": r.name,
                    "version": r.version,
                    "description": r.description,
                    "bytes": r.size,
                    "decode_us": r.decode_us,
                    "encode_us": r.encode_us,
                    "notes": r.notes,
                    "decode_ratio_vs_ours": {k: ratio(v, r.decode_us[OURS]) for k, v in r.decode_us.items()},
                    "encode_ratio_vs_ours": {k: ratio(v, r.encode_us[OURS]) for k, v in r.encode_us.items()},
                }
                for r in results
            ],
            "import": import_result,
            "targets": [{"what": t.what, "value": t.value, "goal": t.goal, "verdict": t.verdict()} for t in targets],
        }
        Path(args.json).write_text(json.dumps(payload, indent=2) + "\n", encoding="utf-8")
        print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
