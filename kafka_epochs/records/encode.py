"""``encode_records``: the inverse of ``decode_records``, entry by entry."""

from __future__ import annotations

from collections.abc import Iterable

from kafka_epochs.errors import EncodeError
from kafka_epochs.records.batch_encoder import write_batch
from kafka_epochs.records.legacy_encoder import write_message
from kafka_epochs.records.model import Entry, LegacyMessage, RecordBatch


def encode_records(entries: Iterable[Entry]) -> bytes:
    """Batches and legacy messages back to bytes, each exactly as its fields say.

    The sizes and CRCs are recomputed, and compressed payloads recompressed with this library's
    codec settings, so ``encode_records(decode_records(b))`` is ``b`` for bytes this library wrote.
    """
    parts = []
    for i, entry in enumerate(entries):
        if isinstance(entry, RecordBatch):
            try:
                parts.append(write_batch(entry))
            except EncodeError as exc:
                raise EncodeError(f"batches[{i}].{exc}") from None
        elif isinstance(entry, LegacyMessage):
            parts.append(write_message(entry, f"batches[{i}]"))
        else:
            raise EncodeError(f"batches[{i}]: expected a RecordBatch or LegacyMessage, got {type(entry).__name__}")
    return b"".join(parts)
