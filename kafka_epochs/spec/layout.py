"""What one version of a message puts on the wire, as a value that can be compared and hashed.

Two specs can be written very differently (other ``about`` texts, comments, struct names,
``mapKey`` or ``entityType`` hints, common structs instead of inline ones) and still produce the
same bytes. :func:`wire_layout` reduces a *loaded* :class:`MessageSpec` at one version to exactly
the facts that decide the bytes, so "is our version N byte-compatible with theirs?" becomes
``wire_layout(ours, n) == wire_layout(theirs, n)``.

What is kept, per field present in the version:

* the field name (it is how the data is addressed, even though it is not itself written);
* the type: a primitive name, ``array`` of an element type, or ``struct`` with the nested
  layout (inline and common structs alike, resolved; the struct's *name* is dropped);
* whether the field is nullable in the version;
* for strings, bytes, records and arrays: whether lengths are compact (unsigned varint of
  n + 1) in the version, which honours a field's own ``flexibleVersions`` override;
* the tag number when the field is a tagged field in the version;
* the default, where it changes the bytes: tagged fields are only written when they differ from
  their default, and so are, transitively, the fields of a tagged struct.

Fields are listed as the encoder writes them: the regular fields in spec order, then the tagged
fields in ascending tag order (tags are always written sorted, wherever they are declared). The
layout also records whether the version is flexible, since that decides whether every struct
ends with a tagged-field section.

Ignored because they never change a byte: ``about``, ``entityType``, ``mapKey``, ``ignorable``,
``zeroCopy``, struct names, ``listeners``, ``deprecatedVersions`` and ``latestVersionUnstable``.
"""

from __future__ import annotations

import enum
import math
from typing import NamedTuple

from kafka_epochs.spec.model import FieldSpec, Kind, MessageSpec, StructDefault, StructSpec
from kafka_epochs.spec.versions import Versions

__all__ = ["UNSET", "WireField", "WireLayout", "WireType", "format_layout", "struct_layout", "wire_layout"]

_LENGTH_PREFIXED = frozenset({Kind.STRING, Kind.BYTES, Kind.RECORDS, Kind.ARRAY})


class _Unset(enum.Enum):
    UNSET = "unset"

    def __repr__(self) -> str:
        return "UNSET"


#: The ``default`` of a :class:`WireField` whose default cannot change the bytes.
UNSET = _Unset.UNSET


class WireType(NamedTuple):
    """A field's type as the wire sees it."""

    kind: str  #: a primitive spec type ("int32", "string", "uuid", ...), "array" or "struct"
    element: WireType | None = None  #: for arrays, the element type
    fields: tuple[WireField, ...] = ()  #: for structs (and arrays of structs, in ``element``)


class WireField(NamedTuple):
    """One field of a struct, in one version."""

    name: str
    type: WireType
    nullable: bool
    compact: bool | None  #: None for types that have no length prefix
    tag: int | None  #: the tag when the field is tagged in this version, else None
    default: object = UNSET  #: only set where the default decides whether bytes are written


class WireLayout(NamedTuple):
    """A message at one version: whether it is flexible and its top-level fields."""

    flexible: bool
    fields: tuple[WireField, ...]


def wire_layout(spec: MessageSpec, version: int) -> WireLayout:
    """The wire layout of ``spec`` at ``version`` (see the module docstring for what it holds).

    Raises ``ValueError`` when ``version`` is not one of the spec's valid versions.
    """
    if version not in spec.valid_versions:
        raise ValueError(f"{spec.name} has no version {version} (valid: {spec.valid_versions})")
    return WireLayout(
        flexible=spec.is_flexible(version),
        fields=_struct_fields(spec.struct, version, spec.flexible_versions, defaults_matter=False),
    )


def struct_layout(struct: StructSpec, version: int, flexible: Versions) -> tuple[WireField, ...]:
    """The wire layout of one struct of a message at ``version`` (``flexible``: the message's
    flexible versions): what decides the bytes of its fields, nested structs included."""
    return _struct_fields(struct, version, flexible, defaults_matter=False)


def _struct_fields(
    struct: StructSpec,
    version: int,
    flexible: Versions,
    defaults_matter: bool,
) -> tuple[WireField, ...]:
    present = [f for f in struct.fields if f.present_in(version)]
    regular = [f for f in present if not f.tagged_in(version)]
    tagged = sorted((f for f in present if f.tagged_in(version)), key=lambda f: f.tag or 0)
    return tuple(
        [_field(f, version, flexible, defaults_matter, tagged=False) for f in regular]
        + [_field(f, version, flexible, defaults_matter, tagged=True) for f in tagged]
    )


def _field(f: FieldSpec, version: int, flexible: Versions, defaults_matter: bool, tagged: bool) -> WireField:
    kind = f.type.kind
    # A tagged field is skipped when it equals its default; a struct in a tagged field equals its
    # default when all of its own fields do, so their defaults count too (arrays reset this: a
    # tagged array is compared with the empty array, whatever its elements' defaults are, and a
    # struct whose default is null is only compared with null).
    default_counts = tagged or defaults_matter
    inner_defaults = default_counts and kind is Kind.STRUCT and f.default is not None
    return WireField(
        name=f.name,
        type=_type(f, version, flexible, inner_defaults),
        nullable=f.nullable_in(version),
        compact=f.compact_in(version, flexible) if kind in _LENGTH_PREFIXED else None,
        tag=f.tag if tagged else None,
        default=_default_key(f.default) if default_counts else UNSET,
    )


def _type(f: FieldSpec, version: int, flexible: Versions, inner_defaults: bool) -> WireType:
    t = f.type
    if t.kind is Kind.ARRAY:
        assert t.element is not None
        if t.element.kind is Kind.STRUCT:
            assert f.struct is not None
            element = WireType("struct", fields=_struct_fields(f.struct, version, flexible, False))
        else:
            element = WireType(t.element.kind.value)
        return WireType("array", element=element)
    if t.kind is Kind.STRUCT:
        assert f.struct is not None
        return WireType("struct", fields=_struct_fields(f.struct, version, flexible, inner_defaults))
    return WireType(t.kind.value)


def _default_key(value: object) -> object:
    """A hashable stand-in for a default that compares equal exactly when the bytes would."""
    if isinstance(value, StructDefault):
        return value.value
    if isinstance(value, float) and math.isnan(value):
        return "NaN"  # NaN != NaN would make two identical layouts unequal
    return value


def format_layout(layout: WireLayout) -> str:
    """A readable, indented rendering of a layout (for diffs in test failures and docs)."""
    lines = [f"flexible={layout.flexible}"]
    _format_fields(layout.fields, 1, lines)
    return "\n".join(lines)


def _format_fields(fields: tuple[WireField, ...], depth: int, lines: list[str]) -> None:
    pad = "  " * depth
    for f in fields:
        notes = []
        if f.nullable:
            notes.append("nullable")
        if f.compact is not None:
            notes.append("compact" if f.compact else "classic")
        if f.tag is not None:
            notes.append(f"tag={f.tag}")
        if f.default is not UNSET:
            notes.append(f"default={f.default!r}")
        lines.append(f"{pad}{f.name}: {_type_name(f.type)}" + (f" [{', '.join(notes)}]" if notes else ""))
        inner = f.type.element if f.type.kind == "array" else f.type
        if inner is not None and inner.kind == "struct":
            _format_fields(inner.fields, depth + 1, lines)


def _type_name(t: WireType) -> str:
    if t.kind == "array":
        assert t.element is not None
        return f"[]{_type_name(t.element)}"
    return t.kind
