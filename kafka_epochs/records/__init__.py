"""Record batches (magic 2) and legacy message sets (magic 0/1): the bytes of a ``records`` field.

Produce and Fetch messages keep ``records`` as bytes; ``decode_records`` turns them into
``RecordBatch`` and ``LegacyMessage`` values on request, and the encoders write them back.
Compression libraries load only when a compressed payload is met. See docs/records.md.
"""

from __future__ import annotations

from kafka_epochs.records.batch_encoder import encode_batch, write_batch
from kafka_epochs.records.budget import (
    DEFAULT_MAX_BATCH_RECORDS,
    DEFAULT_MAX_RECORDS,
    DecompressionBudget,
    RecordBudget,
)
from kafka_epochs.records.codecs import DEFAULT_MAX_DECOMPRESSED
from kafka_epochs.records.control import end_transaction_marker, parse_control_record
from kafka_epochs.records.decode import decode_records
from kafka_epochs.records.encode import encode_records
from kafka_epochs.records.legacy_encoder import encode_legacy, write_message
from kafka_epochs.records.model import (
    BadEntry,
    Compression,
    ControlRecord,
    ControlRecordType,
    DecodedRecords,
    Entry,
    LegacyMessage,
    Record,
    RecordBatch,
    TimestampType,
)

__all__ = [
    "DEFAULT_MAX_BATCH_RECORDS",
    "DEFAULT_MAX_DECOMPRESSED",
    "DEFAULT_MAX_RECORDS",
    "BadEntry",
    "Compression",
    "ControlRecord",
    "ControlRecordType",
    "DecodedRecords",
    "DecompressionBudget",
    "Entry",
    "LegacyMessage",
    "Record",
    "RecordBatch",
    "RecordBudget",
    "TimestampType",
    "decode_records",
    "encode_batch",
    "encode_legacy",
    "encode_records",
    "end_transaction_marker",
    "parse_control_record",
    "write_batch",
    "write_message",
]
