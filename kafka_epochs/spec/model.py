"""The typed, validated model of a Kafka message spec; built by :mod:`kafka_epochs.spec.loader`."""

from __future__ import annotations

import enum
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field

from kafka_epochs.spec.versions import NO_VERSIONS, Versions


class Kind(enum.Enum):
    BOOL = "bool"
    INT8 = "int8"
    INT16 = "int16"
    UINT16 = "uint16"
    INT32 = "int32"
    UINT32 = "uint32"
    INT64 = "int64"
    FLOAT64 = "float64"
    STRING = "string"
    BYTES = "bytes"
    RECORDS = "records"
    UUID = "uuid"
    STRUCT = "struct"
    ARRAY = "array"


#: Fixed-width kinds and their ``struct`` format characters (big-endian on the wire).
FIXED_FORMATS: dict[Kind, str] = {
    Kind.BOOL: "?",
    Kind.INT8: "b",
    Kind.INT16: "h",
    Kind.UINT16: "H",
    Kind.INT32: "i",
    Kind.UINT32: "I",
    Kind.INT64: "q",
    Kind.FLOAT64: "d",
    Kind.UUID: "16s",
}

_NULLABLE_KINDS = {Kind.STRING, Kind.BYTES, Kind.RECORDS, Kind.STRUCT, Kind.ARRAY}


@dataclass(frozen=True, slots=True)
class FieldType:
    """A field's type: a primitive kind, a struct by name, or an array of either."""

    kind: Kind
    struct_name: str | None = None
    element: FieldType | None = None

    def __str__(self) -> str:
        if self.kind is Kind.ARRAY:
            return f"[]{self.element}"
        if self.kind is Kind.STRUCT:
            return str(self.struct_name)
        return self.kind.value

    @property
    def is_fixed(self) -> bool:
        return self.kind in FIXED_FORMATS

    @property
    def can_be_nullable(self) -> bool:
        return self.kind in _NULLABLE_KINDS

    @property
    def is_struct_array(self) -> bool:
        return self.kind is Kind.ARRAY and self.element is not None and self.element.kind is Kind.STRUCT


class MessageType(enum.Enum):
    REQUEST = "request"
    RESPONSE = "response"
    HEADER = "header"
    DATA = "data"
    METADATA = "metadata"
    COORDINATOR_KEY = "coordinator-key"
    COORDINATOR_VALUE = "coordinator-value"


ENTITY_TYPES = {
    "unknown": None,
    "transactionalId": Kind.STRING,
    "producerId": Kind.INT64,
    "groupId": Kind.STRING,
    "topicName": Kind.STRING,
    "brokerId": Kind.INT32,
}


class StructDefault(enum.Enum):
    """Sentinel defaults that must be made fresh for every object (never shared)."""

    EMPTY_ARRAY = "[]"
    EMPTY_STRUCT = "{}"


@dataclass(eq=False)
class FieldSpec:
    name: str
    type: FieldType
    versions: Versions
    about: str = ""
    nullable_versions: Versions = NO_VERSIONS
    tagged_versions: Versions = NO_VERSIONS
    tag: int | None = None
    flexible_versions: Versions | None = None  # per-field override (strings and bytes only)
    default: object = None  # a Python value, or a StructDefault sentinel
    default_text: str = ""
    ignorable: bool = False
    map_key: bool = False
    entity_type: str | None = None
    zero_copy: bool = False
    struct: StructSpec | None = None  # for struct and array-of-struct fields

    @property
    def is_tagged(self) -> bool:
        return self.tag is not None

    def tagged_in(self, version: int) -> bool:
        return version in self.tagged_versions

    def nullable_in(self, version: int) -> bool:
        return version in self.nullable_versions

    def present_in(self, version: int) -> bool:
        return version in self.versions

    def compact_in(self, version: int, message_flexible: Versions) -> bool:
        """Whether lengths of this field use the compact (varint) form at ``version``."""
        flexible = self.flexible_versions if self.flexible_versions is not None else message_flexible
        return version in flexible


@dataclass(eq=False)
class StructSpec:
    name: str
    versions: Versions
    fields: list[FieldSpec]
    is_common: bool = False
    deprecated_versions: Versions = NO_VERSIONS

    def fields_in(self, version: int) -> list[FieldSpec]:
        return [f for f in self.fields if f.present_in(version)]

    @property
    def has_keys(self) -> bool:
        return any(f.map_key for f in self.fields)


@dataclass(eq=False)
class MessageSpec:
    name: str
    type: MessageType
    valid_versions: Versions
    flexible_versions: Versions
    fields: list[FieldSpec]
    api_key: int | None = None
    common_structs: dict[str, StructSpec] = field(default_factory=dict)
    latest_version_unstable: bool = False
    deprecated_versions: Versions = NO_VERSIONS
    listeners: tuple[str, ...] = ()
    source: str = ""
    #: the spec file's leading ``//`` comment (its version history, where the author wrote one)
    history: str = ""
    struct: StructSpec = field(init=False)

    def __post_init__(self) -> None:
        self.struct = StructSpec(self.name, self.valid_versions, self.fields)

    @property
    def versions(self) -> range:
        return range(self.valid_versions.low, self.valid_versions.high + 1)

    def is_flexible(self, version: int) -> bool:
        return version in self.flexible_versions

    def structs(self) -> Iterator[StructSpec]:
        """Every struct the message defines, parents before children, each once."""
        seen: set[str] = set()

        def walk(struct: StructSpec) -> Iterator[StructSpec]:
            if struct.name in seen:
                return
            seen.add(struct.name)
            yield struct
            for f in struct.fields:
                if f.struct is not None:
                    yield from walk(f.struct)

        yield from walk(self.struct)
        for common in self.common_structs.values():
            yield from walk(common)


ZERO_UUID = uuid.UUID(int=0)
