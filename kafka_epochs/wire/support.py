"""Small helpers for the generated encoders' rare paths."""

from __future__ import annotations

from kafka_epochs.wire.errors import EncodeError
from kafka_epochs.wire.primitives import uvarint


class MissingField(EncodeError):
    """A non-default value in a non-ignorable field that the version being written lacks.

    Generated writers are shared by every version with the same layout, so they do not know
    which version they write: ``Message.write`` fills it in with :meth:`in_version`.
    """

    def __init__(self, struct: str, field: str, version: int | None = None) -> None:
        self.struct = struct
        self.field = field
        self.version = version
        where = "the version written" if version is None else f"version {version}"
        super().__init__(
            f"{struct}.{field} is not in {where} and is not ignorable, so its non-default value "
            "cannot be written; pick a version that has it or reset it"
        )

    def in_version(self, version: int) -> MissingField:
        return MissingField(self.struct, self.field, version)


def missing_field(struct: str, field: str, version: int | None = None) -> MissingField:
    """The error for a non-default value in a non-ignorable field the version does not have."""
    return MissingField(struct, field, version)


def string_length(compact_length: int) -> bytes:
    """A compact string length (n + 1) as a varint, refusing strings Kafka would refuse."""
    if compact_length - 1 > 0x7FFF:
        raise EncodeError(f"string of {compact_length - 1} bytes is longer than Kafka's limit of 32767")
    return uvarint(compact_length)
