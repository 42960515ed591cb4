"""Captures as one row per Kafka frame: what the ``kafka-capture`` source and the in-process audit read.

Reading, per file::

    capture file -> kafka_epochs.capture (packets, TCP reassembly, frame alignment)
                 -> FrameBuffer per direction (whole size-prefixed frames)
                 -> request/response pairing by correlation id (the paired request's api key
                    and version are what a response needs to be decoded later)
                 -> rows (:class:`FrameRow`), or Arrow record batches of :data:`ARROW_SCHEMA`

Nothing is decoded here beyond frame headers (and a Produce request's ``acks``, which says
whether a response will follow): decoding is left to whoever reads the rows. Problems of the
capture itself (a gap, an unreadable packet, a file that is not a capture) become rows with a
null ``frame`` and the reason in ``capture_error``, so a bad capture never fails a job and
nothing is dropped silently. No engine is needed: Spark's data source
(:mod:`kafka_epochs.spark.datasource`) hands these batches to Spark, and the audit's in-process
engine reads them directly.
"""

from __future__ import annotations

import contextlib
import glob
import hashlib
import os
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

import pyarrow as pa  # type: ignore[import-untyped]  # pyarrow ships no type stubs

from kafka_epochs.capture import Flow, Gap, PacketError, Resync, StreamData, StreamEnd
from kafka_epochs.capture.events import StreamEvent
from kafka_epochs.capture.files.finding import CAPTURE_SUFFIXES, capture_files_under
from kafka_epochs.capture.files.reader import read_packet_batches
from kafka_epochs.capture.files.runs import RecordRun
from kafka_epochs.capture.pipeline import StreamPipeline
from kafka_epochs.direction import Direction
from kafka_epochs.errors import KafkaEpochsError
from kafka_epochs.framing import RequestEvent
from kafka_epochs.pairing import (
    DEFAULT_MAX_FRAME,
    DEFAULT_MAX_PENDING,
    SASL_HANDSHAKE,
    FrameHead,
    Pairer,
    SaslToken,
    StreamLost,
)
from kafka_epochs.protocol_refs import ProtocolRef, resolve

#: Rows per Arrow batch handed to Spark: large enough to amortise the hand-over, small enough
#: that a worker holds a bounded amount of frame bytes however large the file is.
BATCH_ROWS = 2048

PRODUCE = 0


ARROW_SCHEMA = pa.schema(
    [
        ("capture", pa.string()),  # the file the row comes from
        ("seq", pa.int64()),  # capture order within the file, whatever the flowBuckets
        ("packet", pa.int64()),  # index of the packet that completed the frame (or made a gap certain)
        ("time", pa.timestamp("us", tz="UTC")),
        ("time_ns", pa.int64()),  # the same instant, with the capture's full precision
        ("flow_id", pa.int64()),  # stable hash of (client, broker); the same in every run and file
        ("client", pa.string()),  # "ip:port" ("[ip6]:port")
        ("broker", pa.string()),
        ("direction", pa.string()),  # "request" (client to broker) or "response"
        ("stream_offset", pa.int64()),  # where the frame starts in its direction's TCP stream
        ("correlation_id", pa.int32()),
        # a request's own api key and version; a response's from its request on the same connection
        ("request_api_key", pa.int32()),
        ("request_api_version", pa.int32()),
        ("frame", pa.binary()),  # the whole frame, size prefix included; null on capture-error rows
        ("capture_error", pa.string()),
        # the mechanism, on a raw SASL token after a SaslHandshake v0 (a frame with no Kafka header)
        ("sasl_mechanism", pa.string()),
    ]
)


#: ``seq`` = key << SEQ_SHIFT | row within the key, the key being the file offset of the record
#: whose reading made the row (a record holds at most 16 MiB, the reader's bound, so fewer than
#: 2**22 frames of at least 4 bytes: the row number never spills into the next key). The rows
#: made at the end of the capture are keyed past the last record, in order of where each
#: connection was first seen. Offsets, unlike record or event counts, are known to a reader that
#: starts in the middle of the file, so the rows of a capture read in parts number alike
#: (:mod:`kafka_epochs.spark.split`). Keys stay below 2**39: files up to 256 GiB.
SEQ_SHIFT = 24


class FrameRow(NamedTuple):
    """One row of the data source, as plain Python values (see :data:`ARROW_SCHEMA`)."""

    capture: str
    seq: int
    packet: int | None
    time_ns: int | None
    flow_id: int | None
    client: str | None
    broker: str | None
    direction: str | None
    stream_offset: int | None
    correlation_id: int | None
    request_api_key: int | None
    request_api_version: int | None
    frame: bytes | None
    capture_error: str | None
    sasl_mechanism: str | None = None


def flow_id(flow: Flow) -> int:
    """A signed 64-bit id of a connection's endpoints that every process computes alike.

    (Python's ``hash`` of a string changes with each interpreter's hash seed, so it would put
    one connection in different buckets in different workers.)
    """
    digest = hashlib.blake2b(f"{flow.client}>{flow.broker}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big", signed=True)


class _RowReader:
    """The pairer's plug-in for the data source: frames become rows, and only what pairing needs is
    decoded (a Produce's ``acks``, a SaslHandshake and its answer); bodies are decoded later."""

    def __init__(self, frames: CaptureFrames, flow: _Flow) -> None:
        self.frames = frames
        self.flow = flow
        self.event: StreamData | None = None  # the capture event whose bytes are being fed

    def _row(self, head: FrameHead, key: int | None, version: int | None, mechanism: str | None = None) -> FrameRow:
        event = self.event
        assert event is not None
        return FrameRow(
            self.frames.path,
            self.frames.next_seq(),
            event.packet,
            event.timestamp_ns,
            self.flow.id,
            self.flow.client,
            self.flow.broker,
            head.direction.frame_kind,
            head.stream_offset,
            head.correlation_id,
            key,
            version,
            head.frame,
            None,
            mechanism,
        )

    def request(self, head: FrameHead) -> FrameRow:
        return self._row(head, head.api_key, head.api_version)

    def response(self, head: FrameHead, request: FrameRow | None) -> FrameRow:
        if request is None:
            return self._row(head, None, None)
        return self._row(head, request.request_api_key, request.request_api_version)

    def expects_response(self, request: FrameRow) -> bool:
        if request.request_api_key != PRODUCE:
            return True
        # Only a Produce can go unanswered; the rule itself is framing's, applied to the decode.
        event = RequestEvent(
            request.frame or b"", 0, None, request.request_api_key, request.request_api_version, request.correlation_id
        )
        # undecodable: an answer may come, as framing.Connection assumes (decoded stays None)
        with contextlib.suppress(KafkaEpochsError):
            event.decoded = resolve(self.frames.protocol).decode_request(event.frame)
        return event.expects_response

    def sasl_handshake(self, request: FrameRow) -> tuple[int, str] | None:
        if request.request_api_key != SASL_HANDSHAKE or request.frame is None:
            return None
        with contextlib.suppress(KafkaEpochsError):
            handshake = resolve(self.frames.protocol).decode_request(request.frame)
            return handshake.api_version, handshake.body.mechanism
        return None

    def sasl_handshake_error(self, response: FrameRow) -> int | None:
        key, version = response.request_api_key, response.request_api_version
        if key != SASL_HANDSHAKE or version is None or response.frame is None:
            return None
        with contextlib.suppress(KafkaEpochsError):
            return int(resolve(self.frames.protocol).decode_response(response.frame, key, version).body.error_code)
        return None

    def is_request(self, frame: bytes) -> bool:
        try:
            resolve(self.frames.protocol).decode_request(frame)
        except KafkaEpochsError:
            return False
        return True

    def verifies(self, head: FrameHead, request: FrameRow | None) -> bool:
        if request is not None:  # a response to a pending request: its correlation id is the proof
            return True
        # a request whose api and version the protocol knows (its body is decoded later, not here)
        return head.api_key is not None and head.api_version in resolve(self.frames.protocol).versions(head.api_key)


@dataclass
class _Flow:
    """One connection of the capture: its pairer, and which directions have ended."""

    id: int
    client: str
    broker: str
    pairer: Pairer[FrameRow, FrameRow] = field(init=False)
    reader: _RowReader = field(init=False)
    ended: set[Direction] = field(default_factory=set)


class CaptureFrames:
    """The rows of one capture file, in capture order; ``bucket``/``buckets`` keep a share of the flows.

    Frames are cut and paired by :class:`kafka_epochs.pairing.Pairer`, the pairer framing uses,
    with a reader that decodes only what pairing needs (a Produce's ``acks``: an ``acks=0``
    request is never answered; SaslHandshake, after which raw tokens flow).
    """

    def __init__(
        self,
        path: str,
        *,
        ports: Sequence[int] | None = None,
        bucket: int = 0,
        buckets: int = 1,
        protocol: ProtocolRef = None,
        max_frame_size: int = DEFAULT_MAX_FRAME,
        max_pending: int = DEFAULT_MAX_PENDING,
    ) -> None:
        self.path = path
        self.ports = ports
        self.bucket = bucket
        self.buckets = buckets
        self.protocol = protocol
        self.max_frame_size = max_frame_size
        self.max_pending = max_pending
        self._connections: dict[Flow, _Flow] = {}
        self._skipped: set[Flow] = set()  # flows of other buckets, so their id is hashed only once
        self._seq = 0  # the next row's seq
        #: where each flow's first event came (keys its rows at the end of the capture)
        self._first_key: dict[Flow, int] = {}

    def __iter__(self) -> Iterator[FrameRow]:
        pipeline = self.pipeline()
        key = -1
        try:
            for batch in read_packet_batches(self.path):
                # offsets grow through a file; max() keeps a trailing gzip error's key after them
                if type(batch) is RecordRun:  # (each record's events apart, no packet made)
                    events, starts = pipeline.run_by_record(batch)
                    starts.append(len(events))
                    for i in range(len(batch)):
                        key = max(batch.offset_of(i), key + 1)
                        if starts[i] < starts[i + 1]:
                            yield from self.rows(events[starts[i] : starts[i + 1]], key)
                    continue
                for record in batch:
                    key = max(record.offset, key + 1)
                    yield from self.rows(pipeline.record(record), key)
            yield from self.end_rows(pipeline.finish(), key + 1)
        except (KafkaEpochsError, OSError) as e:
            # not a capture at all, or unreadable: one row says so, and the job goes on
            if self.bucket == 0:
                self._seq = (key + 1) << SEQ_SHIFT
                yield self._error_row(None, None, f"cannot read {self.path}: {e}")

    def pipeline(self) -> StreamPipeline:
        return StreamPipeline(ports=self.ports)

    def rows(self, events: Iterable[StreamEvent], key: int) -> Iterator[FrameRow]:
        """The rows of the events one record (at file offset ``key``) completed."""
        self._seq = key << SEQ_SHIFT
        for event in events:
            yield from self._event_rows(event, key)

    def end_rows(self, events: Iterable[StreamEvent], end: int) -> Iterator[FrameRow]:
        """The rows of the capture's end, ``end`` being past the last record's offset. Each
        connection's are keyed by where its first event came, so a reader that saw only some
        connections numbers them as one that saw all of them."""
        flow: Flow | None = None
        for event in events:
            if isinstance(event, PacketError):
                continue  # the end of a capture is no packet
            if event.flow != flow:
                flow = event.flow
                self._seq = (end + self._first_key.get(flow, 0)) << SEQ_SHIFT
            yield from self._event_rows(event, end)

    def packet_error_row(self, packet: int, time_ns: int, error: object) -> FrameRow:
        return self._error_row(packet, time_ns, f"packet {packet}: {error}")

    def _event_rows(self, event: StreamEvent, key: int) -> Iterator[FrameRow]:
        if isinstance(event, StreamData):
            self._first_key.setdefault(event.flow, key)
            conn = self._connection(event.flow)
            if conn is not None:
                yield from self._data(conn, event)
        elif isinstance(event, PacketError):
            if self.bucket == 0:
                # a packet belongs to no known flow: one bucket reports it, not all of them
                yield self.packet_error_row(event.packet, event.timestamp_ns, event.error)
        else:
            self._first_key.setdefault(event.flow, key)
            if isinstance(event, (Gap, Resync)):
                yield from self._realign(event)
            elif isinstance(event, StreamEnd):
                self._end(event)

    # -- events --------------------------------------------------------------------------------

    def _connection(self, flow: Flow) -> _Flow | None:
        conn = self._connections.get(flow)
        if conn is not None or flow in self._skipped:
            return conn
        ident = flow_id(flow)
        if ident % self.buckets != self.bucket:
            self._skipped.add(flow)
            return None
        conn = self._connections[flow] = _Flow(ident, str(flow.client), str(flow.broker))
        conn.reader = _RowReader(self, conn)
        conn.pairer = Pairer(conn.reader, max_frame_size=self.max_frame_size, max_pending=self.max_pending)
        return conn

    def _data(self, conn: _Flow, event: StreamData) -> Iterator[FrameRow]:
        conn.reader.event = event
        for item in conn.pairer.feed(event.direction, event.data, event.timestamp_ns):
            if isinstance(item, SaslToken):
                yield self._token_row(conn, item, event)
            elif isinstance(item, StreamLost):
                # the capture's aligner normally resyncs before this; the pairer searches meanwhile
                yield self._flow_row(
                    conn, event, None, item.direction.frame_kind, f"{item.direction.sender} stream: {item.reason}"
                )
            else:
                yield item

    def _token_row(self, conn: _Flow, token: SaslToken, event: StreamData) -> FrameRow:
        direction = "request" if token.from_client else "response"
        return FrameRow(
            self.path,
            self.next_seq(),
            event.packet,
            event.timestamp_ns,
            conn.id,
            conn.client,
            conn.broker,
            direction,
            token.stream_offset,
            None,
            None,
            None,
            token.frame,
            None,
            token.mechanism,
        )

    def _realign(self, event: Gap | Resync) -> Iterator[FrameRow]:
        conn = self._connection(event.flow)
        if conn is None:
            return
        conn.pairer.restart(event.direction)  # the capture says the next bytes start a frame
        if isinstance(event, Gap):
            yield self._flow_row(
                conn,
                event,
                event.stream_offset,
                event.direction.frame_kind,
                (
                    f"{event.length} bytes missing from the {event.direction} stream at offset "
                    f"{event.stream_offset} ({event.reason})"
                ),
            )

    def _end(self, event: StreamEnd) -> None:
        conn = self._connections.get(event.flow)
        if conn is None:
            return
        conn.ended.add(event.direction)
        if len(conn.ended) == len(Direction):
            # both directions closed: no response can still come, so the state is freed and a
            # capture of many short connections holds only the open ones
            del self._connections[event.flow]

    # -- rows ----------------------------------------------------------------------------------

    def _flow_row(
        self, conn: _Flow, event: StreamData | Gap | Resync, offset: int | None, direction: str, error: str
    ) -> FrameRow:
        packet = event.packet if isinstance(event, (StreamData, Gap)) else None
        return FrameRow(
            self.path,
            self.next_seq(),
            packet,
            event.timestamp_ns,
            conn.id,
            conn.client,
            conn.broker,
            direction,
            offset,
            None,
            None,
            None,
            None,
            error,
        )

    def _error_row(self, packet: int | None, time_ns: int | None, error: str) -> FrameRow:
        """A problem of the file or of a packet: no flow, no frame."""
        return FrameRow(
            self.path, self.next_seq(), packet, time_ns, None, None, None, None, None, None, None, None, None, error
        )

    def next_seq(self) -> int:
        seq = self._seq
        self._seq += 1
        return seq


def capture_frames(path: str | os.PathLike[str], **options: Any) -> Iterator[FrameRow]:
    """The rows one file contributes (``options`` as :class:`CaptureFrames` takes them)."""
    return iter(CaptureFrames(str(path), **options))


def to_batches(rows: Iterator[FrameRow], batch_rows: int = BATCH_ROWS) -> Iterator[pa.RecordBatch]:
    """Rows as Arrow record batches of :data:`ARROW_SCHEMA`, ``batch_rows`` at a time."""
    chunk: list[FrameRow] = []
    for row in rows:
        chunk.append(row)
        if len(chunk) >= batch_rows:
            yield _batch(chunk)
            chunk = []
    if chunk:
        yield _batch(chunk)


def _batch(rows: list[FrameRow]) -> pa.RecordBatch:
    columns = list(zip(*rows, strict=True))
    by_name = dict(zip(FrameRow._fields, columns, strict=True))
    time_ns = by_name["time_ns"]
    micros = [None if t is None else t // 1000 for t in time_ns]
    arrays = [pa.array(micros if f.name == "time" else by_name[f.name], f.type) for f in ARROW_SCHEMA]
    return pa.RecordBatch.from_arrays(arrays, schema=ARROW_SCHEMA)


def expand_paths(paths: Sequence[str]) -> list[str]:
    """Files for the given paths: a file as is, the capture files under a directory (at any depth,
    as ``kafka-epochs decode`` reads a directory), a glob's matches (a directory it matches as a
    directory given).

    Sorted within each path, duplicates dropped, so partition numbers are stable across runs.
    """
    out: list[str] = []
    for given in paths:
        path = Path(given).expanduser()
        if path.is_dir():
            found = capture_files_under(str(path))
        elif path.is_file():
            found = [str(path)]
        else:  # a glob: the files it matches, and the captures under the directories it matches
            found = []
            for match in sorted(glob.glob(str(path))):
                if os.path.isdir(match):
                    found += capture_files_under(match)
                elif os.path.isfile(match):
                    found.append(match)
        if not found:
            raise FileNotFoundError(_nothing_there(given, path))
        out.extend(str(Path(p).resolve()) for p in found)
    return list(dict.fromkeys(out))


def _nothing_there(given: str, path: Path) -> str:
    """Why ``given`` names no capture file, for the message."""
    if path.is_fifo():  # (a shell's <(zcat x.pcap.gz) too)
        return (
            f"{given} is a pipe, and these captures are read by path, in ranges and more than once: "
            "save it to a file first (`kafka-epochs decode` reads pipes)"
        )
    if path.is_dir():
        return f"{given} is a directory with no capture files in it ({', '.join(CAPTURE_SUFFIXES)})"
    if path.exists():
        return f"{given} is not a file or a directory"
    return f"{given}: no capture files there"
