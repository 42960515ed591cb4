"""The values a ``records`` field holds: v2 record batches, legacy messages, and their parts.

These are plain data. Decoding fills them from bytes (``decode.py``); the encoders write them back
(``batch_encoder.py``, ``legacy_encoder.py``). Fields that a batch's bytes derive from others (the
CRC, the length) are kept as read, for inspection, and recomputed on encode.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from enum import IntEnum
from typing import overload

from kafka_epochs.errors import DecodeError

#: Bits 0-2 of a batch's or message's attributes name the codec.
COMPRESSION_MASK = 0x07
#: Bit 3: the broker's append time instead of the producer's create time (v1 messages, v2 batches).
TIMESTAMP_TYPE_BIT = 0x08
TRANSACTIONAL_BIT = 0x10
CONTROL_BIT = 0x20
#: KIP-534: set once the log cleaner has stamped a delete horizon into ``base_timestamp``.
DELETE_HORIZON_BIT = 0x40


class Compression(IntEnum):
    """Codec ids as Kafka numbers them in the attributes."""

    NONE = 0
    GZIP = 1
    SNAPPY = 2
    LZ4 = 3
    ZSTD = 4


class TimestampType(IntEnum):
    NO_TIMESTAMP = -1  # magic 0 messages carry no timestamp
    CREATE_TIME = 0
    LOG_APPEND_TIME = 1


class ControlRecordType(IntEnum):
    """The ``type`` in a control record's key. Types this list lacks decode as plain ints."""

    ABORT = 0
    COMMIT = 1
    LEADER_CHANGE = 2
    SNAPSHOT_HEADER = 3
    SNAPSHOT_FOOTER = 4
    KRAFT_VERSION = 5
    KRAFT_VOTERS = 6


@dataclass(slots=True)
class Record:
    """One record of a v2 batch, with its wire fields relative to the batch.

    ``offset`` and ``timestamp`` are absolute, computed by the decoder from the batch header;
    the encoder writes the deltas and ignores them, so they take no part in equality.
    """

    attributes: int = 0
    timestamp_delta: int = 0
    offset_delta: int = 0
    key: bytes | None = None
    value: bytes | None = None
    #: In wire order; a key may repeat, and each occurrence is kept.
    headers: list[tuple[str, bytes | None]] = field(default_factory=list)
    offset: int = field(default=-1, compare=False)
    timestamp: int = field(default=-1, compare=False)


@dataclass(slots=True)
class ControlRecord:
    """What a control batch's record says: a transaction marker, or a KRaft control type.

    ``marker_version`` and ``coordinator_epoch`` come from the value of ABORT and COMMIT markers
    and are None for other types (their value stays in the record's ``value``).
    """

    offset: int
    version: int
    type: ControlRecordType | int
    marker_version: int | None = None
    coordinator_epoch: int | None = None


@dataclass(slots=True)
class RecordBatch:
    """A magic 2 record batch: the header fields as on the wire, and its records decompressed."""

    base_offset: int = 0
    #: Bytes after this field, as read; recomputed on encode.
    batch_length: int = 0
    partition_leader_epoch: int = -1
    magic: int = 2
    #: CRC32C over attributes..end, as read; recomputed on encode.
    crc: int = 0
    attributes: int = 0
    last_offset_delta: int = 0
    base_timestamp: int = -1
    max_timestamp: int = -1
    producer_id: int = -1
    producer_epoch: int = -1
    base_sequence: int = -1
    records: list[Record] = field(default_factory=list)
    #: Filled by the decoder for control batches, one per record; the encoder writes ``records``.
    control_records: list[ControlRecord] = field(default_factory=list, compare=False)

    @property
    def compression(self) -> Compression:
        return Compression(self.attributes & COMPRESSION_MASK)

    @property
    def timestamp_type(self) -> TimestampType:
        if self.attributes & TIMESTAMP_TYPE_BIT:
            return TimestampType.LOG_APPEND_TIME
        return TimestampType.CREATE_TIME

    @property
    def is_transactional(self) -> bool:
        return bool(self.attributes & TRANSACTIONAL_BIT)

    @property
    def is_control(self) -> bool:
        return bool(self.attributes & CONTROL_BIT)

    @property
    def has_delete_horizon(self) -> bool:
        return bool(self.attributes & DELETE_HORIZON_BIT)

    @property
    def delete_horizon(self) -> int | None:
        """The cleaner's delete horizon (ms), which then sits in ``base_timestamp``."""
        return self.base_timestamp if self.has_delete_horizon else None

    @property
    def last_offset(self) -> int:
        return self.base_offset + self.last_offset_delta


@dataclass(slots=True)
class LegacyMessage:
    """A magic 0 or 1 message, as it sits in a message set.

    A wrapper message (compression other than NONE) holds a compressed message set in its value;
    the decoder fills ``inner`` with those messages, their offsets made absolute. For a v1
    wrapper with LOG_APPEND_TIME, Kafka readers take the wrapper's timestamp for every inner
    message; ``inner`` keeps each message's own timestamp field as written.
    """

    offset: int = 0
    crc: int = 0
    magic: int = 1
    attributes: int = 0
    #: None for magic 0, which has no timestamp field.
    timestamp: int | None = None
    key: bytes | None = None
    value: bytes | None = None
    inner: list[LegacyMessage] | None = None

    @property
    def compression(self) -> Compression:
        return Compression(self.attributes & COMPRESSION_MASK)

    @property
    def timestamp_type(self) -> TimestampType:
        if self.magic == 0:
            return TimestampType.NO_TIMESTAMP
        if self.attributes & TIMESTAMP_TYPE_BIT:
            return TimestampType.LOG_APPEND_TIME
        return TimestampType.CREATE_TIME


Entry = RecordBatch | LegacyMessage


@dataclass(frozen=True, slots=True)
class BadEntry:
    """An entry that did not decode, kept by ``decode_records(..., keep_going=True)``.

    ``index`` is the place it holds among the entries (the good entries before it are
    ``entries[:index]``); ``offset`` and ``length`` locate its bytes in the records field. When
    its own size field is unusable, it runs to the end of the data (nothing after it can be
    found) and ``length`` says so.
    """

    index: int
    offset: int
    length: int
    error: DecodeError


@dataclass(slots=True)
class DecodedRecords:
    """The entries of one ``records`` field, in order, and what was left of a cut-off last one.

    ``truncated_tail`` counts the bytes of a last entry that the data ends inside of (0 when
    none). A Fetch response may legitimately end so: the broker cuts at the fetch size.
    ``bad`` lists the entries that did not decode, when the caller asked to keep going.
    """

    entries: list[Entry] = field(default_factory=list)
    truncated_tail: int = 0
    warnings: list[str] = field(default_factory=list)  # what was decoded although Kafka's rules forbid it
    bad: list[BadEntry] = field(default_factory=list)

    def __iter__(self) -> Iterator[Entry]:
        return iter(self.entries)

    def __len__(self) -> int:
        return len(self.entries)

    @overload
    def __getitem__(self, index: int) -> Entry: ...
    @overload
    def __getitem__(self, index: slice) -> list[Entry]: ...
    def __getitem__(self, index: int | slice) -> Entry | list[Entry]:
        return self.entries[index]
