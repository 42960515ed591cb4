"""The epoch audit's events: what one Kafka frame says about leader epochs, as rows.

The audit reads each frame that can matter once and turns it into events (:data:`EVENT_SCHEMA`):
a partition's leader epoch seen in a Metadata response (v7+) or a LeaderAndIsr request, a
client request's ``CurrentLeaderEpoch``, a StopReplica partition's epoch, an epoch error in a
response, that a judged request was answered, the cluster id and brokers a Metadata or
DescribeCluster answer names, and frames that could carry an epoch but did not decode. Both
engines start here: the in-process one (:mod:`kafka_epochs.audit.local`) and Spark's
(:mod:`kafka_epochs.spark.epoch_audit`), which runs :func:`audit_events` in an Arrow UDF.

Frames are decoded here again (only those that can matter), because the rules read decoded
objects, not JSON; most responses are never decoded, their bytes holding none of the errors.
:func:`verdict` is the rule every judged check goes through, whichever engine judges.
"""

from __future__ import annotations

import functools
import struct
from collections.abc import Iterable, Iterator
from typing import Any

import pyarrow as pa  # type: ignore[import-untyped]  # pyarrow ships no type stubs

from kafka_epochs.epochs import (
    EPOCH_PATHS,
    EqualEpochPolicy,
    Errors,
    LeaderAndIsrType,
    check_leader_epoch,
    kafka_uuid_text,
    leader_and_isr_partitions,
    leader_and_isr_type,
    requested_from_columns,
    requested_leader_epochs,
    stop_replica_epoch_error,
    stop_replica_partitions,
)
from kafka_epochs.epochs.state import ZERO_UUID, known_topic_id
from kafka_epochs.errors import KafkaEpochsError
from kafka_epochs.exchanges import kafka_api_names
from kafka_epochs.projection import has_path, projection
from kafka_epochs.projection.bodies import projecting
from kafka_epochs.protocol import Protocol
from kafka_epochs.protocol_refs import ProtocolLike, resolve

PRODUCE, FETCH, LIST_OFFSETS, METADATA, LEADER_AND_ISR, STOP_REPLICA, OFFSET_FOR_LEADER_EPOCH = 0, 1, 2, 3, 4, 5, 23
DESCRIBE_CLUSTER = 60
#: The apis whose requests name a client leader epoch (what ``requested_leader_epochs`` reads).
CLIENT_EPOCH_APIS = frozenset({PRODUCE, FETCH, LIST_OFFSETS, OFFSET_FOR_LEADER_EPOCH})
#: The apis whose requests the audit judges, and so whose answers it compares with its verdicts.
JUDGED_APIS = CLIENT_EPOCH_APIS | {STOP_REPLICA}
#: Metadata responses carry each partition's leader epoch from v7 (KIP-320).
METADATA_FIRST_EPOCH_VERSION = 7
#: The response errors the audit lists.
EPOCH_ERRORS = (Errors.FENCED_LEADER_EPOCH, Errors.UNKNOWN_LEADER_EPOCH, Errors.STALE_CONTROLLER_EPOCH)
# Every error code is an int16 on the wire, so a response whose bytes hold none of these pairs
# cannot carry one of the errors, and is not decoded (most responses, most of the time).
_ERROR_BYTES = tuple(struct.pack(">h", int(e)) for e in EPOCH_ERRORS)
_ERROR_CODES = frozenset(int(e) for e in EPOCH_ERRORS)

# Event kinds, one row each, in the table the Spark side splits.
LEADER_EPOCH = "leader_epoch"  # a timeline observation
REQUEST_EPOCH = "request_epoch"  # a client request's CurrentLeaderEpoch for a partition
STOP_REPLICA_EPOCH = "stop_replica"  # a StopReplica partition's leader epoch
ERROR_RESPONSE = "error_response"  # one of EPOCH_ERRORS in a response
ANSWER = "answer"  # a response to a judged request was captured (its epoch errors are ERROR_RESPONSE events)
CLUSTER_INFO = "cluster_info"  # a Metadata or DescribeCluster answer: the cluster id and the brokers it lists
UNREADABLE = "unreadable"  # a frame that could carry an epoch and did not decode (``error`` says why)

#: The frame columns the extraction reads, after :func:`_normalized` filled in absent ones.
INPUT_FIELDS: list[tuple[str, str]] = [
    ("capture", "string"),
    ("seq", "bigint"),
    ("time_ns", "bigint"),
    ("client", "string"),
    ("broker", "string"),
    ("correlation_id", "int"),
    ("direction", "string"),
    ("request_api_key", "int"),
    ("request_api_version", "int"),
    ("frame", "binary"),
]
_CONTEXT = ["capture", "seq", "time_ns", "client", "broker", "correlation_id"]
#: The frame columns a table must have to be audited (the others are context, null when absent).
REQUIRED_INPUTS = ("frame", "direction", "request_api_key", "request_api_version")


def check_frame_columns(names: Iterable[str], where: str = "the frame table") -> None:
    """Raises ValueError unless ``names`` holds :data:`REQUIRED_INPUTS`: a table without them
    (``spark-decode``'s output without ``--keep-frames``, say) has no frames to judge, and would
    be audited as having no incidents."""
    have = set(names)
    missing = [name for name in REQUIRED_INPUTS if name not in have]
    if missing:
        raise ValueError(
            f"{where} has no {', '.join(repr(m) for m in missing)} column{'s' if len(missing) > 1 else ''}: "
            "the audit reads frames, with the columns the kafka-capture data source gives "
            "(a spark-decode output has them with --keep-frames)"
        )


EVENT_SCHEMA = pa.schema(
    [
        ("capture", pa.string()),
        ("seq", pa.int64()),
        ("time_ns", pa.int64()),
        ("client", pa.string()),
        ("broker", pa.string()),
        ("correlation_id", pa.int32()),
        ("kind", pa.string()),
        ("api", pa.string()),
        ("api_version", pa.int32()),
        ("topic", pa.string()),
        ("topic_id", pa.string()),
        ("partition", pa.int32()),
        ("epoch", pa.int32()),  # observed leader epoch, or the epoch a request names
        ("leader", pa.int32()),  # leader_epoch events
        ("delete", pa.bool_()),  # stop_replica events
        ("request_type", pa.string()),  # LeaderAndIsr v5+ leader_epoch events: FULL or INCREMENTAL (KIP-516)
        ("error_code", pa.int32()),
        ("error", pa.string()),
        ("path", pa.string()),  # error_response events
        ("cluster_id", pa.string()),
        ("members", pa.list_(pa.string())),  # cluster_info events
        # how the frame was read: the layout ("apache", "kip", ...) and what was tolerated (trailing bytes, ...)
        ("profile", pa.string()),
        ("warnings", pa.list_(pa.string())),
    ]
)
_EVENT_ONLY = EVENT_SCHEMA.names[len(_CONTEXT) :]
#: What an extractor fills in; the layout and warnings of the frame are added by ``_read_as``.
_EVENT_FIELDS = _EVENT_ONLY[:-2]


_EVENT_INDEX = {name: i for i, name in enumerate(_EVENT_FIELDS)}
_NO_EVENT: list[Any] = [None] * len(_EVENT_FIELDS)


def _event(kind: str, api: str | None, version: int, **fields: Any) -> tuple[Any, ...]:
    """One event tuple in schema order; fields not given are null."""
    out = _NO_EVENT.copy()  # one event per partition: filled by position, not looked up by name
    out[_EVENT_INDEX["kind"]], out[_EVENT_INDEX["api"]], out[_EVENT_INDEX["api_version"]] = kind, api, version
    for name, value in fields.items():
        out[_EVENT_INDEX[name]] = value
    return tuple(out)


# -- extraction: one frame -> events (no Spark needed) -----------------------------------------


def _uuid_text(value: Any) -> str | None:
    known = known_topic_id(value)
    return None if known is None else kafka_uuid_text(known)


class EventExtractor:
    """Decodes the frames that can matter and turns them into event tuples (``_EVENT_ONLY`` order)."""

    def __init__(self, protocol: Protocol) -> None:
        self.protocol = protocol

    def events(
        self, frame: bytes | None, direction: str | None, key: int | None, version: int | None
    ) -> list[tuple[Any, ...]]:
        if frame is None:
            return []
        try:
            if direction == "request":
                return self._request(frame)
            if direction == "response" and key is not None and version is not None:
                return self._response(frame, key, version)
        except Exception as error:  # only frames that could carry an epoch are decoded: say which did not
            if direction == "request" and len(frame) >= 8:
                key, version = struct.unpack_from(">hh", frame, 4)
            name = kafka_api_names().get(key) if key is not None else None
            reason = str(error) if isinstance(error, KafkaEpochsError) else f"{type(error).__name__}: {error}"
            return [(*_event(UNREADABLE, name, version, error=reason), None, None)]  # type: ignore[arg-type]
        return []

    def _request(self, frame: bytes) -> list[tuple[Any, ...]]:
        if len(frame) < 6:
            return []
        key = struct.unpack_from(">h", frame, 4)[0]
        if key not in CLIENT_EPOCH_APIS and key not in (LEADER_AND_ISR, STOP_REPLICA):
            return []  # decode nothing that cannot name an epoch
        if key in CLIENT_EPOCH_APIS:  # partitions and epochs only, by projection
            decoded = self.protocol.decode_request(frame, body_reader=_read_requested_epochs)
            api = decoded.message.__name__.removesuffix("Request")
            requested = requested_from_columns(key, decoded.api_version, decoded.body)
            return _read_as(decoded, [_requested_event(api, decoded.api_version, p) for p in requested])
        decoded = self.protocol.decode_request(frame)
        return _read_as(decoded, self._request_events(key, decoded.body, decoded.api_version))

    def _request_events(self, key: int, body: Any, version: int) -> list[tuple[Any, ...]]:
        api = _api_name(body)
        if key in CLIENT_EPOCH_APIS:
            return [_requested_event(api, version, p) for p in requested_leader_epochs(body, version)]
        if key == LEADER_AND_ISR:
            kind = leader_and_isr_type(body, version)
            request_type = kind.name if kind != LeaderAndIsrType.UNKNOWN else None
            return [
                _event(
                    LEADER_EPOCH,
                    api,
                    version,
                    topic=p.topic,
                    topic_id=_uuid_text(p.topic_id),
                    partition=p.partition,
                    epoch=p.leader_epoch,
                    leader=p.leader,
                    request_type=request_type,
                )
                for p in leader_and_isr_partitions(body, version)
            ]
        return [
            _event(
                STOP_REPLICA_EPOCH,
                api,
                version,
                topic=p.topic,
                topic_id=_uuid_text(p.topic_id),
                partition=p.partition,
                epoch=p.leader_epoch,
                delete=p.delete,
            )
            for p in stop_replica_partitions(body, version)
        ]

    def _response(self, frame: bytes, key: int, version: int) -> list[tuple[Any, ...]]:
        # a judged request's answer is noted without decoding: a response whose bytes hold none of
        # the epoch error codes cannot carry one, which is itself the broker's verdict
        # (a frame too short for a response header and an error code answers nothing)
        answered = [(*_event(ANSWER, None, version), None, None)] if key in JUDGED_APIS and len(frame) >= 10 else []
        # bytes that look like an epoch error code are often something else (an offset, a record):
        # the error_code fields alone, read by projection, say whether one is really there
        fenced = any(code in frame for code in _ERROR_BYTES) and self._has_epoch_error(frame, key, version)
        if not (fenced or key in (METADATA, DESCRIBE_CLUSTER)):
            return answered
        if key == METADATA and not fenced:
            # the common case, and the largest bodies: read just the brokers, the cluster id and
            # the partitions' leader epochs (projections), not the whole body into objects
            decoded = self.protocol.decode_response(frame, key, version, body_reader=_read_metadata)
            return answered + _read_as(decoded, _metadata_events(decoded.body, version))
        decoded = self.protocol.decode_response(frame, key, version)
        return answered + _read_as(decoded, self._response_events(decoded, key, version))

    def _has_epoch_error(self, frame: bytes, key: int, version: int) -> bool:
        decoded = self.protocol.decode_response(frame, key, version, body_reader=_read_epoch_errors)
        return bool(decoded.body)

    def _response_events(self, decoded: Any, key: int, version: int) -> list[tuple[Any, ...]]:
        api = _api_name(decoded.body)
        body = decoded.body
        out: list[tuple[Any, ...]] = []
        if key in (METADATA, DESCRIBE_CLUSTER):
            members = sorted({_endpoint(b.host, b.port) for b in body.brokers})
            cluster_id = body.cluster_id if version >= (2 if key == METADATA else 0) else None
            out.append(_event(CLUSTER_INFO, api, version, cluster_id=cluster_id or None, members=members))
        if key == METADATA and version >= METADATA_FIRST_EPOCH_VERSION:
            for topic in body.topics:
                topic_id = _uuid_text(topic.topic_id)
                for p in topic.partitions:
                    if p.leader_epoch >= 0:  # -1: no leader known (e.g. LEADER_NOT_AVAILABLE)
                        out.append(
                            _event(
                                LEADER_EPOCH,
                                api,
                                version,
                                topic=topic.name,
                                topic_id=topic_id,
                                partition=p.partition_index,
                                epoch=p.leader_epoch,
                                leader=p.leader_id,
                            )
                        )
        for path, context, code in _epoch_errors(body.to_dict(decoded.api_version)):
            out.append(
                _event(
                    ERROR_RESPONSE,
                    api,
                    version,
                    topic=context.get("topic"),
                    topic_id=context.get("topic_id"),
                    partition=context.get("partition"),
                    error_code=code,
                    error=Errors.for_code(code).name,
                    path=path,
                )
            )
        return out


@projecting
def _read_epoch_errors(
    cls: Any, data: bytes, pos: int, version: int, end: int | None, explain: bool
) -> tuple[bool, int]:
    """Whether any ``error_code`` field of the body holds one of :data:`EPOCH_ERRORS`.

    One projection per error_code field (each alone, so an empty array elsewhere hides nothing).
    """
    stop = len(data) if end is None else end
    found = False
    for path in _error_code_paths(cls):
        wanted = projection(cls, [path])
        columns = wanted.empty()
        stop = wanted.read(columns, data, version, pos, end, explain=explain)
        found = found or not _ERROR_CODES.isdisjoint(columns[0])
    return found, stop


_ERROR_CODE_PATHS: dict[Any, tuple[str, ...]] = {}


def _error_code_paths(cls: Any) -> tuple[str, ...]:
    """Every path to an ``error_code`` field of ``cls``, through structs and arrays of structs."""
    found = _ERROR_CODE_PATHS.get(cls)
    if found is None:
        paths: list[str] = []
        stack: list[tuple[Any, str, int]] = [(cls, "", 0)]
        while stack:
            struct_cls, prefix, depth = stack.pop()
            for f in struct_cls._FIELDS:
                if f.attr == "error_code" and f.kind == "int16":
                    paths.append(prefix + f.attr)
                elif f.struct is not None and depth < 16:  # specs do not nest deeper; a guard all the same
                    stack.append((f.struct, f"{prefix}{f.attr}{'[]' if f.kind == 'array' else ''}.", depth + 1))
        found = _ERROR_CODE_PATHS[cls] = tuple(sorted(paths))
    return found


def _requested_event(api: str, version: int, p: Any) -> tuple[Any, ...]:
    return _event(
        REQUEST_EPOCH,
        api,
        version,
        topic=p.topic,
        topic_id=_uuid_text(p.topic_id),
        partition=p.partition,
        epoch=p.current_leader_epoch,
    )


_EPOCH_PROJECTIONS: dict[Any, Any] = {}  # per request class: its EPOCH_PATHS and their projection


@projecting
def _read_requested_epochs(
    cls: Any, data: bytes, pos: int, version: int, end: int | None, explain: bool
) -> tuple[dict[str, Any], int]:
    """The columns of :data:`EPOCH_PATHS` a client request's layout has (a missing one maps to None)."""
    found = _EPOCH_PROJECTIONS.get(cls)
    if found is None:
        found = [p for p in EPOCH_PATHS[cls.API_KEY] if p is not None and has_path(cls, p)]
        found = _EPOCH_PROJECTIONS[cls] = (found, projection(cls, found))
    paths, wanted = found
    columns = wanted.empty()
    stop = wanted.read(columns, data, version, pos, end, explain=explain)
    return dict(zip(paths, columns, strict=True)), stop


_METADATA_BROKERS = ["brokers[].host", "brokers[].port"]
_METADATA_CLUSTER = ["cluster_id"]
_METADATA_PARTITIONS = [
    "topics[].name",
    "topics[].topic_id",
    "topics[].partitions[].partition_index",
    "topics[].partitions[].leader_epoch",
    "topics[].partitions[].leader_id",
]


@projecting
def _read_metadata(cls: Any, data: bytes, pos: int, version: int, end: int | None, explain: bool) -> tuple[Any, int]:
    """A MetadataResponse body as three sets of columns (brokers, cluster id, partitions)."""
    found = []
    stop = pos
    for paths in (_METADATA_BROKERS, _METADATA_CLUSTER, _METADATA_PARTITIONS):
        wanted = projection(cls, paths)
        columns = wanted.empty()
        stop = wanted.read(columns, data, version, pos, end, explain=explain)
        found.append(columns)
    return found, stop


def _metadata_events(body: Any, version: int) -> list[tuple[Any, ...]]:
    """What ``_response_events`` makes of a MetadataResponse, from :func:`_read_metadata`'s columns."""
    (hosts, ports), (cluster_ids,), (topics, topic_ids, partitions, epochs, leaders) = body
    members = sorted({_endpoint(host, port) for host, port in zip(hosts, ports, strict=True)})
    cluster_id = cluster_ids[0] if version >= 2 else None
    out = [_event(CLUSTER_INFO, "Metadata", version, cluster_id=cluster_id or None, members=members)]
    if version >= METADATA_FIRST_EPOCH_VERSION:
        out += [
            _event(
                LEADER_EPOCH,
                "Metadata",
                version,
                topic=topic,
                topic_id=_uuid_text(topic_id),
                partition=partition,
                epoch=epoch,
                leader=leader,
            )
            for topic, topic_id, partition, epoch, leader in zip(
                topics, topic_ids, partitions, epochs, leaders, strict=True
            )
            if epoch >= 0  # -1: no leader known (e.g. LEADER_NOT_AVAILABLE)
        ]
    return out


def _endpoint(host: str, port: int) -> str:
    """A broker as the capture source names one: ``host:port``, ``[v6]:port``."""
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def _read_as(decoded: Any, events: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    """Each event with the layout that read its frame and the frame's warnings (a reading in
    doubt, such as bytes left that no client sends, among them)."""
    warnings = decoded.warnings if decoded.problem is None else [*decoded.warnings, decoded.problem]
    how = (decoded.profile, warnings or None)
    return [event + how for event in events]


def _api_name(body: Any) -> str:
    return type(body).__name__.removesuffix("Request").removesuffix("Response")


# Field names that say which topic or partition the errors below them are about, across apis.
_TOPIC_KEYS = ("topic", "name", "topic_name")
_PARTITION_KEYS = ("partition_index", "partition", "index")
_ZERO_UUID_TEXT = kafka_uuid_text(ZERO_UUID)  # how to_dict shows "no topic id"


def _epoch_errors(plain: Any) -> Iterator[tuple[str, dict[str, Any], int]]:
    """(path, topic/partition context, code) of each epoch error in a ``to_dict`` body.

    Iterative, with an explicit stack, so a deeply nested body cannot exhaust Python's recursion
    limit; the walk visits each value once, so it is bounded by the body's size.
    """
    stack: list[tuple[Any, str, dict[str, Any]]] = [(plain, "", {})]
    found: list[tuple[str, dict[str, Any], int]] = []
    while stack:
        value, path, context = stack.pop()
        if isinstance(value, dict):
            context = _narrowed(value, context)
            for key, item in value.items():
                where = f"{path}.{key}" if path else key
                if key == "error_code" and item in _ERROR_CODES:
                    found.append((where, context, item))
                elif isinstance(item, (dict, list)):
                    stack.append((item, where, context))
        elif isinstance(value, list):
            stack.extend((item, f"{path}[{i}]", context) for i, item in enumerate(value))
    return iter(sorted(found, key=lambda f: f[0]))


def _narrowed(obj: dict[str, Any], context: dict[str, Any]) -> dict[str, Any]:
    narrowed = context
    for key in _TOPIC_KEYS:
        if isinstance(obj.get(key), str) and obj[key]:
            narrowed = {**narrowed, "topic": obj[key]}
            break
    if isinstance(obj.get("topic_id"), str) and obj["topic_id"] != _ZERO_UUID_TEXT:
        narrowed = {**narrowed, "topic_id": obj["topic_id"]}
    for key in _PARTITION_KEYS:
        if isinstance(obj.get(key), int) and not isinstance(obj[key], bool):
            narrowed = {**narrowed, "partition": obj[key]}
            break
    return narrowed


def audit_events(batch: pa.RecordBatch, protocol: ProtocolLike = None) -> pa.RecordBatch:
    """The events of a batch of frames with the :data:`INPUT_FIELDS` columns (:data:`EVENT_SCHEMA`)."""
    extractor = EventExtractor(resolve(protocol))
    columns = {name: batch.column(name).to_pylist() for name in batch.schema.names}
    rows: list[tuple[Any, ...]] = []
    for i, frame in enumerate(columns["frame"]):
        found = extractor.events(
            frame, columns["direction"][i], columns["request_api_key"][i], columns["request_api_version"][i]
        )
        if found:
            context = tuple(columns[name][i] for name in _CONTEXT)
            rows.extend(context + event for event in found)
    arrays = [pa.array([row[j] for row in rows], f.type) for j, f in enumerate(EVENT_SCHEMA)]
    return pa.RecordBatch.from_arrays(arrays, schema=EVENT_SCHEMA)


#: ``agreement`` values: how a verdict compares with what the broker answered.
AGREES = "agrees"
DISAGREES = "disagrees with the broker"
NO_RESPONSE = "no response captured"
NO_EPOCH = "no leader epoch known"
NO_PAIRING = "answer unknown (no correlation ids in the table)"


# A pure function of few distinct arguments (a check's epoch and the leader's are near each other),
# called once per judged partition of every request: remembered, within a bound hostile epochs cannot grow.
@functools.lru_cache(maxsize=4096)
def verdict(kind: str, requested: int | None, current: int | None, equal_epoch: EqualEpochPolicy) -> str | None:
    """The error name the epochs rules give a check (``kind`` a request's or a StopReplica's)
    naming ``requested`` while the leader is at ``current``; None when either is unknown."""
    if requested is None or current is None:
        return None
    if kind == STOP_REPLICA_EPOCH:
        return stop_replica_epoch_error(requested, current, equal_epoch).name
    return check_leader_epoch(requested, current).name
