"""Leader-epoch audit of captured traffic: who knew which epoch when, and who was fenced for it.

``audit(frames)`` takes frames as the ``kafka-capture`` data source gives them (``frame``,
``direction``, ``request_api_key``, ``request_api_version``; ``time``/``time_ns``, ``client``,
``broker``, ``correlation_id``, ``capture`` and ``seq`` are used when present) and returns five
DataFrames (:class:`AuditResult`), each row with the ``cluster`` it belongs to:

- ``timeline``: per cluster and topic partition, each leader epoch seen in Metadata responses
  (v7+) and LeaderAndIsr requests, with when it was first and last seen and from where;
- ``stale_requests``: every Produce, Fetch, ListOffsets or OffsetForLeaderEpoch partition whose
  ``CurrentLeaderEpoch`` is older or newer than the leader's epoch at that time (the highest epoch
  its cluster's timeline had seen by then), judged by :func:`kafka_epochs.epochs.check_leader_epoch`;
- ``fenced_responses``: every FENCED_LEADER_EPOCH, UNKNOWN_LEADER_EPOCH or STALE_CONTROLLER_EPOCH
  in a response, with the topic and partition it is about when the response names them;
- ``stop_replica_fenced``: every StopReplica partition that the KIP-570 rule
  (:func:`kafka_epochs.epochs.stop_replica_epoch_error`) would fence against that epoch;
- ``disagreements``: the requests and StopReplicas whose verdict the broker's own answer
  contradicts (judged stale but answered without that error, or judged fine but fenced).

Clusters: epochs belong to one cluster's partitions, so traffic of independent clusters is
split first (:mod:`kafka_epochs.spark.clusters`; ``cluster_key``). Verdicts against the broker:
each judged request is paired with its response (same connection, same correlation id);
``broker_error`` is the epoch error the broker gave for that partition, and ``agreement`` says
``agrees``, ``disagrees with the broker``, ``no response captured``, or why it cannot tell. A
verdict the broker contradicts goes to ``disagreements``, not to the stale tables.

Every row of the last four says how its frame was read: ``profile`` (the layout: ``apache``,
``kip`` or a spec directory) and ``warnings`` (trailing bytes, an ApiVersions v0 answer, an
unstable version, a frame that two layouts read differently), so a verdict resting on a tolerated
or ambiguous frame says so.

The rules are the ``kafka_epochs.epochs`` functions; this module only finds their inputs in the
traffic. Frames are decoded again here (only those that can matter) because the rules read
decoded objects, not JSON. A frame that could carry an epoch and does not decode is an
``unreadable`` event (``error`` says why): it contributes no verdict, and the audit's summary,
report and exit status count it, so an all-clear never rests on frames it could not read.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa  # type: ignore[import-untyped]  # pyarrow ships no type stubs
from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

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
from kafka_epochs.report.model import Summary
from kafka_epochs.spark.clusters import CLUSTER_KEYS, ClusterAssigner, ClusterInfo
from kafka_epochs.spark.protocols import ProtocolLike, protocol_ref, resolve
from kafka_epochs.spark.shipping import ship_package
from kafka_epochs.spark.spark_types import spark_schema

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


# -- Spark: the tables ---------------------------------------------------------------------------


@dataclass(frozen=True)
class AuditResult:
    timeline: DataFrame
    stale_requests: DataFrame
    fenced_responses: DataFrame
    stop_replica_fenced: DataFrame
    #: requests and StopReplicas whose verdict the broker's own answer contradicts
    disagreements: DataFrame
    #: every extracted event, with its cluster (cached: the tables are built from it)
    events: DataFrame
    #: every judged request and StopReplica partition, whatever its verdict (``verdict`` NONE:
    #: accepted; null: no epoch known), with ``leader_epoch``, ``broker_error`` and ``agreement``
    judged: DataFrame
    #: the four incident tables before their sort (a query that orders them its own way, or
    #: not at all, need not pay for it)
    unordered: dict[str, DataFrame] = field(default_factory=dict, repr=False)
    #: cluster ids that name several clusters (told apart by their topics' ids), each with those
    #: clusters' names: the audit judged them apart (``cluster_key="cluster-id"`` joins them)
    split_clusters: dict[str, list[str]] = field(default_factory=dict)

    def tables(self) -> dict[str, DataFrame]:
        return {
            "timeline": self.timeline,
            "stale_requests": self.stale_requests,
            "fenced_responses": self.fenced_responses,
            "stop_replica_fenced": self.stop_replica_fenced,
            "disagreements": self.disagreements,
        }

    def unreadable(self) -> Summary | None:
        """None when every frame that could carry an epoch decoded; else a summary of how many
        did not (``unreadable``, ``unreadable_reasons``) against those read (``frames``)."""
        from kafka_epochs.spark.audit_report import unreadable_reasons

        row = self.events.agg(*frame_counts()).first()
        if row is None or not row["unreadable"]:
            return None
        return Summary(
            first_ns=None,
            last_ns=None,
            frames=row["frames"],
            clients=[],
            brokers=[],
            partitions=0,
            clusters=[],
            counts={},
            disagreements=0,
            unreadable=row["unreadable"],
            unreadable_reasons=unreadable_reasons(self.events),
        )

    def unpersist(self) -> None:
        """Free the cached events (and what they were computed from)."""
        self.events.unpersist()

    def report(
        self, path: str | Path, *, max_partitions: int = 20, title: str | None = None, sources: Sequence[str] = ()
    ) -> Path:
        """Write the audit as one self-contained HTML file (needs the ``report`` extra): a
        summary, the timelines of the ``max_partitions`` partitions with the most incidents, and
        each incident explained. ``sources`` names what was audited, for the page."""
        from kafka_epochs.spark.audit_report import write_audit_report

        return write_audit_report(self, path, max_partitions=max_partitions, title=title, sources=sources)


def frame_counts() -> tuple[Column, Column]:
    """Aggregates over events: the frames read (``frames``) and those that could carry an epoch
    and did not decode (``unreadable``), each frame once."""
    read = F.col("kind") != UNREADABLE
    return (
        F.count_distinct(F.when(read, F.struct("capture", "seq"))).alias("frames"),
        F.count_distinct(F.when(~read, F.struct("capture", "seq"))).alias("unreadable"),
    )


def audit(
    frames: DataFrame,
    *,
    protocol: ProtocolLike = None,
    equal_epoch: EqualEpochPolicy = EqualEpochPolicy.ACCEPT,
    cluster_key: str = "auto",
) -> AuditResult:
    """The leader-epoch audit of ``frames`` (see the module docstring for the tables).

    ``cluster_key`` says how traffic is split into clusters, each with its own timeline:
    ``auto``, ``capture``, ``broker`` or ``cluster-id`` (see :mod:`kafka_epochs.spark.clusters`).
    """
    if cluster_key not in CLUSTER_KEYS:
        raise ValueError(f"cluster_key must be one of {', '.join(CLUSTER_KEYS)}, not {cluster_key!r}")
    return audit_of_events(extract_events(frames, protocol=protocol), equal_epoch=equal_epoch, cluster_key=cluster_key)


def extract_events(frames: DataFrame, *, protocol: ProtocolLike = None) -> DataFrame:
    """The epoch events of ``frames`` (:data:`EVENT_SCHEMA`), the audit's first step: the only one
    that reads frames. Events of frames read at different times can be stored and audited
    together (:func:`audit_of_events`), as ``audit --follow`` does."""
    ship_package(frames.sparkSession)  # a cluster's executors get this kafka_epochs
    ref = protocol_ref(protocol)

    def extract(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            yield audit_events(batch, ref)

    return _normalized(frames).mapInArrow(extract, spark_schema(EVENT_SCHEMA))


def audit_of_events(
    raw: DataFrame,
    *,
    equal_epoch: EqualEpochPolicy = EqualEpochPolicy.ACCEPT,
    cluster_key: str = "auto",
) -> AuditResult:
    """The audit of events :func:`extract_events` gave (from one read or several)."""
    if cluster_key not in CLUSTER_KEYS:
        raise ValueError(f"cluster_key must be one of {', '.join(CLUSTER_KEYS)}, not {cluster_key!r}")
    # integral division: as a double, a nanosecond time since 1970 has lost its microseconds
    raw = raw.withColumn("time", F.expr("timestamp_micros(time_ns div 1000)")).cache()
    clustered, split = _with_cluster(raw, cluster_key)
    events = _named(clustered).cache()
    raw.unpersist()  # what the events need of it is in their own cache once they are computed
    timeline = _timeline(events)
    checks = _agreement(_judged(_with_leader_epoch(events, timeline), equal_epoch), events)
    disagrees = F.col("agreement") == DISAGREES
    stale = checks.where((F.col("kind") == REQUEST_EPOCH) & (F.col("verdict") != Errors.NONE.name) & ~disagrees)
    stops = checks.where((F.col("kind") == STOP_REPLICA_EPOCH) & (F.col("verdict") != Errors.NONE.name) & ~disagrees)
    incidents = {
        "stale_requests": _report(stale, "requested_epoch"),
        "fenced_responses": events.where(F.col("kind") == ERROR_RESPONSE).select(
            *_REPORTED, "path", "error_code", "error", "profile", "warnings"
        ),
        "stop_replica_fenced": _report(stops, "requested_epoch", "delete"),
        "disagreements": _report(checks.where(disagrees), "requested_epoch", "kind", "delete"),
    }
    order = ("time_ns", "seq", "topic", "partition")
    return AuditResult(
        timeline=timeline.orderBy("cluster", "topic", "partition", "first_seen", "leader_epoch"),
        stale_requests=incidents["stale_requests"].orderBy(*order),
        fenced_responses=incidents["fenced_responses"].orderBy("time_ns", "seq", "path"),
        stop_replica_fenced=incidents["stop_replica_fenced"].orderBy(*order),
        disagreements=incidents["disagreements"].orderBy(*order),
        events=events,
        judged=checks,
        unordered=incidents,
        split_clusters=split,
    )


#: ``agreement`` values: how a verdict compares with what the broker answered.
AGREES = "agrees"
DISAGREES = "disagrees with the broker"
NO_RESPONSE = "no response captured"
NO_EPOCH = "no leader epoch known"
NO_PAIRING = "answer unknown (no correlation ids in the table)"


def _with_cluster(events: DataFrame, cluster_key: str) -> tuple[DataFrame, dict[str, list[str]]]:
    """``events`` with a ``cluster`` column: the cluster of each event's broker connection; and
    the cluster ids that name several clusters (see :meth:`ClusterAssigner.split_ids`).

    The inputs of the assignment are small (one row per broker endpoint, per distinct Metadata
    answer, per topic id a broker was seen with): they are collected, the clusters worked out on
    the driver (:class:`kafka_epochs.spark.clusters.ClusterAssigner`), and joined back broadcast.
    """
    # one small query for the three inputs (each a job of its own cost a second per audit)
    info = F.when(F.col("kind") == CLUSTER_INFO, F.struct("cluster_id", "members"))
    seen = events.select("capture", "broker", info.alias("info"), "topic_id", "topic").distinct().collect()
    brokers = list(dict.fromkeys((r["capture"], r["broker"]) for r in seen))
    infos = list(
        dict.fromkeys(
            ClusterInfo(r["capture"], r["broker"], r["info"]["cluster_id"], tuple(r["info"]["members"] or ()))
            for r in seen
            if r["info"] is not None
        )
    )
    topic_ids = list(
        dict.fromkeys((r["capture"], r["broker"], r["topic_id"]) for r in seen if r["topic_id"] is not None)
    )
    named = list(
        dict.fromkeys(
            (r["capture"], r["broker"], r["topic"], r["topic_id"]) for r in seen if r["topic_id"] and r["topic"]
        )
    )
    assigner = ClusterAssigner(cluster_key)
    assigner.add(brokers, infos, topic_ids, named)
    names = assigner.names()
    spark = events.sparkSession
    mapping = spark.createDataFrame(
        [(c, b, n) for (c, b), n in names.items()] or [(None, None, "?")],
        "m_capture string, m_broker string, cluster string",
    )
    joined = events.join(
        F.broadcast(mapping),
        events["capture"].eqNullSafe(mapping["m_capture"]) & events["broker"].eqNullSafe(mapping["m_broker"]),
        "left",
    )
    return joined.drop("m_capture", "m_broker"), assigner.split_ids()


def _normalized(frames: DataFrame) -> DataFrame:
    """``frames`` with exactly :data:`INPUT_FIELDS`; absent optional columns are null.

    ``time_ns`` comes from ``time`` when only that is there. Without either, rows keep the
    table's order through ``seq`` and the timeline cannot say when (its times are null).
    """
    names = set(frames.columns)
    for required in ("frame", "direction", "request_api_key", "request_api_version"):
        if required not in names:
            raise ValueError(f"audit needs a {required!r} column, as the kafka-capture data source gives it")
    columns: dict[str, Column] = {}
    for name, kind in INPUT_FIELDS:
        if name in names:
            columns[name] = F.col(name).cast(kind)
        elif name == "time_ns" and "time" in names:
            columns[name] = (F.unix_micros(F.col("time")) * 1000).cast(kind)
        elif name == "seq":
            columns[name] = F.monotonically_increasing_id()
        else:
            columns[name] = F.lit(None).cast(kind)
    return frames.select(*(columns[name].alias(name) for name, _ in INPUT_FIELDS))


def _named(events: DataFrame) -> DataFrame:
    """Topic names for events that name a topic by id only (Fetch v13+), from the other events."""
    names = (
        events.where(F.col("topic_id").isNotNull() & (F.coalesce(F.col("topic"), F.lit("")) != ""))
        .groupBy("cluster", "topic_id")
        .agg(F.min("topic").alias("known_topic"))
    )
    joined = events.join(F.broadcast(names), on=["cluster", "topic_id"], how="left")
    topic = F.when(F.coalesce(F.col("topic"), F.lit("")) == "", F.col("known_topic")).otherwise(F.col("topic"))
    return joined.withColumn("topic", topic).drop("known_topic")


def _timeline(events: DataFrame) -> DataFrame:
    """One row per (topic, partition, epoch) seen; ``behind`` marks an epoch first seen after a
    higher one (a lagging broker's Metadata, or a deposed controller's LeaderAndIsr)."""
    seen = events.where(F.col("kind") == LEADER_EPOCH)
    epochs = seen.groupBy("cluster", "topic", "partition", F.col("epoch").alias("leader_epoch")).agg(
        F.min("time").alias("first_seen"),
        F.max("time").alias("last_seen"),
        F.min("time_ns").alias("first_seen_ns"),
        # the first sighting's seq: orders sightings and requests at the same instant, or with no time
        F.min_by("seq", F.struct("time_ns", "seq")).alias("first_seen_seq"),
        F.min_by("leader", F.struct("time_ns", "seq")).alias("leader"),
        F.max("topic_id").alias("topic_id"),
        F.array_sort(F.collect_set("api")).alias("sources"),
        F.array_sort(F.collect_set(F.coalesce(F.col("broker"), F.lit("?")))).alias("brokers"),
        F.count(F.lit(1)).alias("observations"),
    )
    earlier = (
        Window.partitionBy("cluster", "topic", "partition")
        .orderBy("first_seen_ns", "leader_epoch")
        .rowsBetween(Window.unboundedPreceding, -1)
    )
    highest_before = F.max("leader_epoch").over(earlier)
    return epochs.withColumn("behind", F.coalesce(highest_before > F.col("leader_epoch"), F.lit(False)))


def _with_leader_epoch(events: DataFrame, timeline: DataFrame) -> DataFrame:
    """Each epoch-carrying request with ``leader_epoch``: the highest epoch seen by its time.

    An as-of join done as one window: the timeline's first sightings and the requests, merged per
    partition in capture order (time, then ``seq``; a table without times keeps its row order). The maximum,
    not the latest sighting, because a lagging broker's Metadata may show an older epoch after a
    newer one was seen; epochs never go back for a topic partition's lifetime.
    """
    checks = events.where(F.col("kind").isin(REQUEST_EPOCH, STOP_REPLICA_EPOCH)).withColumn("order", F.lit(1))
    sightings = timeline.select(
        "cluster",
        "topic",
        "partition",
        F.col("first_seen_ns").alias("time_ns"),
        F.col("first_seen_seq").alias("seq"),
        F.col("leader_epoch").alias("seen_epoch"),
        F.lit(0).alias("order"),
    )
    merged = checks.unionByName(sightings, allowMissingColumns=True)
    window = (
        Window.partitionBy("cluster", "topic", "partition")
        .orderBy("time_ns", "seq", "order")
        .rowsBetween(Window.unboundedPreceding, Window.currentRow)
    )
    merged = merged.withColumn("leader_epoch", F.max("seen_epoch").over(window))
    return merged.where(F.col("order") == 1).drop("order", "seen_epoch")


def verdict(kind: str, requested: int | None, current: int | None, equal_epoch: EqualEpochPolicy) -> str | None:
    """The error name the epochs rules give a check (``kind`` a request's or a StopReplica's)
    naming ``requested`` while the leader is at ``current``; None when either is unknown."""
    if requested is None or current is None:
        return None
    if kind == STOP_REPLICA_EPOCH:
        return stop_replica_epoch_error(requested, current, equal_epoch).name
    return check_leader_epoch(requested, current).name


def _judged(checks: DataFrame, equal_epoch: EqualEpochPolicy) -> DataFrame:
    """``verdict``: the error name the epochs rules give each check (null when no epoch is known)."""
    judge = F.udf(
        lambda kind, requested, current: verdict(kind, requested, current, equal_epoch), "string", useArrow=True
    )
    return checks.withColumn("verdict", judge(F.col("kind"), F.col("epoch"), F.col("leader_epoch")))


def _agreement(checks: DataFrame, events: DataFrame) -> DataFrame:
    """``broker_error`` and ``agreement``: each verdict set against the broker's own answer.

    The answer is the response with the request's correlation id on the same connection: the
    epoch error it gives for the same topic partition (``broker_error``, null when it gave none),
    or nothing at all when no response was captured (an acks=0 Produce, a capture cut short).
    """
    connection = ["capture", "client", "broker", "correlation_id"]
    paired = F.col("correlation_id").isNotNull()  # without one, nothing says which answer is whose
    answered = (
        events.where((F.col("kind") == ANSWER) & paired)
        .select(*connection)
        .distinct()
        .withColumn("answered", F.lit(True))
    )
    errors = (
        events.where((F.col("kind") == ERROR_RESPONSE) & paired)
        .groupBy(*connection, "topic", "partition")
        .agg(F.min("error").alias("broker_error"))
    )
    judged = _null_safe_join(checks, answered, connection)
    judged = _null_safe_join(judged, errors, [*connection, "topic", "partition"])
    verdict, answer = F.col("verdict"), F.col("broker_error")
    agreement = (
        F.when(verdict.isNull(), F.lit(NO_EPOCH))
        .when(F.col("correlation_id").isNull(), F.lit(NO_PAIRING))
        .when(F.col("answered").isNull(), F.lit(NO_RESPONSE))
        .when(verdict == Errors.NONE.name, F.when(answer.isNull(), AGREES).otherwise(DISAGREES))
        .when(answer == verdict, F.lit(AGREES))
        .otherwise(F.lit(DISAGREES))
    )
    return judged.withColumn("agreement", agreement).drop("answered")


def _null_safe_join(left: DataFrame, right: DataFrame, keys: list[str]) -> DataFrame:
    """A left join on ``keys`` where null equals null (a table may lack client or correlation id)."""
    renamed = right.select(*(F.col(k).alias(f"r_{k}") for k in keys), *(c for c in right.columns if c not in keys))
    condition = None
    for k in keys:
        clause = left[k].eqNullSafe(renamed[f"r_{k}"])
        condition = clause if condition is None else condition & clause
    return left.join(renamed, condition, "left").drop(*(f"r_{k}" for k in keys))


#: What every verdict table says of the frame it is about, in this order.
_REPORTED = (
    "cluster",
    "time",
    "time_ns",
    "seq",
    "capture",
    "client",
    "broker",
    "correlation_id",
    "api",
    "api_version",
    "topic",
    "topic_id",
    "partition",
)


def _report(checks: DataFrame, epoch_name: str, *extra: str) -> DataFrame:
    return checks.select(
        *_REPORTED,
        F.col("epoch").alias(epoch_name),
        *extra,
        "leader_epoch",
        F.col("verdict").alias("error"),
        "broker_error",
        "agreement",
        "profile",
        "warnings",
    )
