"""The one local SparkSession every Spark test shares (start-up costs ~10-20 s, so once per run)."""

from __future__ import annotations

import json
import random
import struct
import uuid
from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any

import pytest

MISSING = "the spark extra is not installed (pip install -e '.[spark]')"

# This folder is a package (its __init__.py), so pytest imports this file as ``spark.conftest``:
# as a plain "conftest" it would replace tests/conftest.py in sys.modules, and the tests in
# tests/ that import helpers from theirs would get this one. Shared builders live in importable
# modules at tests/ (``epoch_story``, ``sasl_sessions``), which tests/conftest.py's directory on
# sys.path makes reachable from here.


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    """A local[2] session on loopback, UI off, workers on this interpreter.

    Skips (rather than failing at collection) without pyspark, so the modules that need only
    pyarrow, or neither, still run.
    """
    pytest.importorskip("pyspark", reason=MISSING)
    pytest.importorskip("pyarrow", reason=MISSING)
    from kafka_epochs.spark.session import local_session

    session = local_session(
        "local[2]",
        "kafka-epochs-tests",
        **{
            # small tables: a few partitions keep tests quick on 2 cores
            "spark.sql.shuffle.partitions": "2",
            "spark.default.parallelism": "2",
        },
    )
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


# -- a generated table of frames -----------------------------------------------------------------

#: Rows per (message, version): enough to vary values, few enough to keep Spark tests quick.
PER_VERSION = 2
_INT_RANGES = {
    "int8": (-(1 << 7), (1 << 7) - 1),
    "int16": (-(1 << 15), (1 << 15) - 1),
    "uint16": (0, (1 << 16) - 1),
    "int32": (-(1 << 31), (1 << 31) - 1),
    "uint32": (0, (1 << 32) - 1),
    "int64": (-(1 << 63), (1 << 63) - 1),
}
_WORDS = ["", "a", "orders", "topic-é", "client_1", "ümlaut"]


def random_message(cls: Any, version: int, rng: random.Random, flexible: bool) -> Any:
    """A valid ``cls`` object for ``version``, every present field drawn from ``rng``.

    Seeded rather than Hypothesis-driven: the same table every run, so a Spark failure
    reproduces, and built once per session for every test that wants it.
    """
    obj = cls()
    for f in cls._FIELDS:
        if f.present(version):
            setattr(obj, f.attr, _random_value(f, f.kind, version, rng, flexible))
    if flexible and rng.random() < 0.2:
        obj._unknown_tags = {rng.randint(1000, 1100): rng.randbytes(rng.randint(0, 4))}
    return obj


def _random_value(f: Any, kind: str, version: int, rng: random.Random, flexible: bool, element: bool = False) -> Any:
    if not element and f.is_nullable(version) and rng.random() < 0.15:
        return None
    if kind == "array":
        return [_random_value(f, f.element, version, rng, flexible, element=True) for _ in range(rng.randint(0, 2))]
    if kind == "struct":
        return random_message(f.struct, version, rng, flexible)
    if kind in _INT_RANGES:
        low, high = _INT_RANGES[kind]
        return rng.choice([low, high, 0, -1 if low else 1, rng.randint(low, high)])
    if kind == "bool":
        return rng.random() < 0.5
    if kind == "float64":
        return rng.uniform(-1e6, 1e6)
    if kind == "string":
        return rng.choice(_WORDS)
    if kind in ("bytes", "records"):
        return rng.randbytes(rng.randint(0, 12))
    if kind == "uuid":
        return uuid.UUID(int=rng.getrandbits(128))
    raise AssertionError(kind)


def generated_rows(protocol: Any, seed: int = 5) -> list[dict[str, Any]]:
    """Request and response frames of every api and version of ``protocol``, ``PER_VERSION`` each.

    Each row: id, direction, frame, and (for responses) the request's api key and version,
    as a capture pairs them.
    """
    rng = random.Random(seed)
    rows: list[dict[str, Any]] = []
    for api_key in protocol.api_keys():
        for kind in ("request", "response"):
            cls = protocol.message_for(api_key, kind)
            for version in cls.VALID_VERSIONS:
                flexible = version in cls.FLEXIBLE_VERSIONS
                for _ in range(PER_VERSION):
                    body = random_message(cls, version, rng, flexible)
                    correlation_id = len(rows)
                    if kind == "request":
                        frame = protocol.encode_request(body, version, correlation_id, rng.choice([*_WORDS, None]))
                    else:
                        frame = protocol.encode_response(body, version, correlation_id)
                    rows.append(
                        {
                            "id": len(rows),
                            "direction": kind,
                            "frame": frame,
                            "request_api_key": api_key if kind == "response" else None,
                            "request_api_version": version if kind == "response" else None,
                        }
                    )
    return rows


@pytest.fixture(scope="session")
def frame_rows() -> list[dict[str, Any]]:
    """Every bundled api (request and response) at every version, with random field values."""
    from kafka_epochs import Protocol

    return generated_rows(Protocol.bundled())


def mixed_bad_rows(
    good: list[dict[str, Any]],
    pool: list[dict[str, Any]],
    seed: int = 11,
) -> list[dict[str, Any]]:
    """``good`` with broken frames (made from ``pool``'s) mixed in: each kind of damage a capture
    can hold, in random places."""
    rng = random.Random(seed)
    requests = [r for r in pool if r["direction"] == "request"]
    responses = [r for r in pool if r["direction"] == "response"]
    some = rng.choice(requests)["frame"]
    produce_v12 = next(r["frame"] for r in requests if r["frame"][4:8] == b"\x00\x00\x00\x0c")

    def resized(frame: bytes) -> bytes:  # a consistent size prefix, so the body is what breaks
        return struct.pack(">i", len(frame) - 4) + frame[4:]

    bad = [
        {"frame": some[: len(some) // 2], "why": "truncated (size prefix too large)"},
        {"frame": resized(produce_v12[:-3]), "why": "truncated body, consistent size"},
        {"frame": rng.randbytes(40), "why": "garbage"},
        {"frame": resized(b"\0\0\0\0" + struct.pack(">hhih", 999, 0, 1, 0)), "why": "unknown api key"},
        {"frame": resized(b"\0\0\0\0" + struct.pack(">hhih", 0, 99, 1, 0)), "why": "unknown version"},
        {"frame": b"", "why": "empty"},
        {"frame": b"\0\0", "why": "shorter than a size"},
        {"frame": None, "why": "null"},
        {"frame": resized(b"\0\0\0\0" + struct.pack(">hhih", 18, 0, 1, 2) + b"\xff\xfe"), "why": "client id not UTF-8"},
        {"frame": rng.choice(responses)["frame"], "why": "response without its request", "direction": "response"},
        {"frame": some, "why": "unknown direction", "direction": "sideways"},
        {
            "frame": rng.choice(responses)["frame"][:7],
            "why": "truncated response",
            "direction": "response",
            "request_api_key": 3,
            "request_api_version": 12,
        },
    ]
    rows = [dict(r) for r in good]
    for damage in bad:
        row = {"direction": "request", "request_api_key": None, "request_api_version": None, **damage}
        rows.insert(rng.randint(0, len(rows)), row)
    # librdkafka's 3 bytes after a Metadata v11-v13 request are a warning, not an error; trailing
    # bytes no client is known to send make a problem row that keeps its body and warning
    metadata = [r for r in requests if r["frame"][4:6] == b"\x00\x03" and 11 <= r["frame"][7] <= 13]
    quirk = {**rng.choice(metadata), "why": "trailing bytes"}
    quirk["frame"] = resized(quirk["frame"] + b"\1\0\0")
    rows.insert(rng.randint(0, len(rows)), quirk)
    others = [r for r in requests if r["frame"][4:6] not in (b"\x00\x03", b"\x00\x33")]
    unknown = {**rng.choice(others), "why": "unknown trailing bytes"}
    unknown["frame"] = resized(unknown["frame"] + b"\0\0\0")
    rows.insert(rng.randint(0, len(rows)), unknown)
    for i, row in enumerate(rows):
        row["id"] = i
    return rows


@pytest.fixture(scope="session")
def bad_rows(frame_rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A small slice of the generated table with every kind of bad frame mixed in (``why`` says which)."""
    return mixed_bad_rows(frame_rows[::7], frame_rows)


NOT_DECODABLE = "<rejected before decoding>"


def reference_row(row: dict[str, Any], protocol: Any = None) -> dict[str, Any]:
    """What the single-process decoder makes of one row, in decode_batch's columns (body as a dict)."""
    from kafka_epochs import KafkaEpochsError, Protocol
    from kafka_epochs.traffic import error_codes

    protocol = protocol or Protocol.auto()
    frame, direction = row["frame"], row["direction"]
    try:
        if frame is None or direction not in ("request", "response"):
            raise ValueError(NOT_DECODABLE)
        if direction == "request":
            decoded = protocol.decode_request(frame)
        elif row["request_api_key"] is None:
            raise ValueError(NOT_DECODABLE)
        else:
            decoded = protocol.decode_response(frame, row["request_api_key"], row["request_api_version"])
    except (KafkaEpochsError, ValueError) as e:
        return {"error": str(e), "body": None}
    if decoded.problem is not None:  # read, but doubtful: a problem row (its body is kept, not compared)
        return {"error": decoded.problem, "body": None}
    body = decoded.to_dict()["body"]  # the fields of the version read, as body_json holds
    return {
        "direction": direction,
        "api_key": decoded.api_key,
        "api_version": decoded.api_version,
        "api_name": type(decoded.body).__name__.removesuffix(direction.capitalize()),
        "correlation_id": decoded.correlation_id,
        "header_version": decoded.header_version,
        "client_id": decoded.header.client_id if direction == "request" else None,
        "body": body,
        "error": None,
        "error_codes": error_codes(body) if direction == "response" else None,
        "warnings": decoded.warnings,
        "profile": decoded.profile,
    }


def comparable(decoded: dict[str, Any]) -> dict[str, Any]:
    """A decode_batch row in reference_row's shape: the JSON body parsed; on error, only the error."""
    if decoded["error"] is not None:
        return {"error": decoded["error"], "body": None}
    out = {k: v for k, v in decoded.items() if k not in ("body_json", "id", "why")}
    out["body"] = json.loads(decoded["body_json"])
    return out


@pytest.fixture(scope="session")
def reference() -> Any:
    """The helpers above for test modules: ``reference.row``, ``reference.comparable``, ``reference.same``."""
    return SimpleNamespace(row=reference_row, comparable=comparable, same=same)


def same(expected: dict[str, Any], decoded: dict[str, Any]) -> bool:
    """Whether a decode_batch row matches the reference: equal, or both errors where the reference
    never reached the decoder (null frame, unknown direction, no request: ours says more)."""
    got = comparable(decoded)
    if expected["error"] == NOT_DECODABLE:
        return got["error"] is not None
    return got == expected
