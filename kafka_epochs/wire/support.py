"""Small helpers for the generated encoders' rare paths."""

from __future__ import annotations

from kafka_epochs.wire.errors import EncodeError
from kafka_epochs.wire.primitives import uvarint


def missing_field(struct: str, field: str, version: int) -> EncodeError:
    """The error for a non-default value in a non-ignorable field the version does not have."""
    return EncodeError(
        f"{struct}.{field} is not in version {version} and is not ignorable, "
        f"so its non-default value cannot be written; pick a version that has it or reset it")


def string_length(compact_length: int) -> bytes:
    """A compact string length (n + 1) as a varint, refusing strings Kafka would refuse."""
    if compact_length - 1 > 0x7FFF:
        raise EncodeError(f"string of {compact_length - 1} bytes is longer than Kafka's limit of 32767")
    return uvarint(compact_length)
