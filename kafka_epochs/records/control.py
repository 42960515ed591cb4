"""Control records: what the records of a control batch mean, and how to make a transaction marker.

A control record's key is ``version int16, type int16``. For ABORT and COMMIT (transaction
markers) the value is ``version int16, coordinatorEpoch int32``. Newer versions may append
fields, so, like Kafka, we read the fields we know and ignore what follows.
"""

from __future__ import annotations

import struct

from kafka_epochs.errors import DecodeError, EncodeError
from kafka_epochs.records.model import ControlRecord, ControlRecordType, Record

_KEY = struct.Struct(">hh")
_MARKER_VALUE = struct.Struct(">hi")
_MARKER_TYPES = (ControlRecordType.ABORT, ControlRecordType.COMMIT)


def parse_control_record(record: Record) -> ControlRecord:
    """The control meaning of ``record``; a DecodeError whose path is ``key`` or ``value`` if malformed."""
    key = record.key
    if key is None or len(key) < _KEY.size:
        raise DecodeError(f"a control record key needs {_KEY.size} bytes, got {_size(key)}", path="key")
    version, type_id = _KEY.unpack_from(key)
    if version < 0:
        raise DecodeError(f"control record key version {version} is negative", path="key")
    try:
        kind: ControlRecordType | int = ControlRecordType(type_id)
    except ValueError:
        kind = type_id
    control = ControlRecord(record.offset, version, kind)
    if kind in _MARKER_TYPES:
        value = record.value
        if value is None or len(value) < _MARKER_VALUE.size:
            raise DecodeError(
                f"a transaction marker value needs {_MARKER_VALUE.size} bytes, got {_size(value)}", path="value"
            )
        control.marker_version, control.coordinator_epoch = _MARKER_VALUE.unpack_from(value)
        if control.marker_version < 0:
            raise DecodeError(f"transaction marker version {control.marker_version} is negative", path="value")
    return control


def end_transaction_marker(
    kind: ControlRecordType, coordinator_epoch: int, *, offset_delta: int = 0, timestamp_delta: int = 0
) -> Record:
    """The record of a COMMIT or ABORT marker (key and value version 0), for a control batch."""
    if kind not in _MARKER_TYPES:
        raise EncodeError(f"a transaction marker is ABORT or COMMIT, not {kind!r}")
    try:
        value = _MARKER_VALUE.pack(0, coordinator_epoch)
    except struct.error:
        raise EncodeError(f"coordinator_epoch {coordinator_epoch} is not an int32") from None
    return Record(timestamp_delta=timestamp_delta, offset_delta=offset_delta, key=_KEY.pack(0, kind), value=value)


def _size(raw: bytes | None) -> str:
    return "null" if raw is None else f"{len(raw)}"
