"""Spec -> Arrow (and Spark) types: one struct per message, the union of all its versions' fields.

The mapping is derived, never hand-written per message: from the spec model
(:class:`~kafka_epochs.spec.MessageSpec`) or from a generated class's ``_FIELDS`` descriptors,
which the generator writes from that same model (both walks share one table of primitives and
give the same type; a test holds them to it). A field a version lacks is simply null in that
version's rows, so every version of a message fits one column type.

Rules: Arrow (hence Spark) has no unsigned integers, so uint16 widens to int32 and uint32 to
int64; a uuid is the 22-character base64url text Kafka prints; bytes and records are binary;
arrays are lists and structs structs, with every field nullable. Each struct of a message with
flexible versions also gets ``_unknown_tags: map<int32, binary>`` for tagged fields the spec
does not know (null when there were none).
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa  # type: ignore[import-untyped]  # pyarrow ships no type stubs

from kafka_epochs.protocol_refs import ProtocolLike, resolve
from kafka_epochs.spec import FieldSpec, Kind, MessageSpec, StructSpec
from kafka_epochs.wire.message import Message

#: Spec primitive type -> Arrow type (kept Spark-compatible: signed, no large/view types).
PRIMITIVES: dict[str, pa.DataType] = {
    Kind.BOOL.value: pa.bool_(),
    Kind.INT8.value: pa.int8(),
    Kind.INT16.value: pa.int16(),
    Kind.UINT16.value: pa.int32(),
    Kind.INT32.value: pa.int32(),
    Kind.UINT32.value: pa.int64(),
    Kind.INT64.value: pa.int64(),
    Kind.FLOAT64.value: pa.float64(),
    Kind.STRING.value: pa.string(),
    Kind.UUID.value: pa.string(),
    Kind.BYTES.value: pa.binary(),
    Kind.RECORDS.value: pa.binary(),
}

UNKNOWN_TAGS = "_unknown_tags"
UNKNOWN_TAGS_TYPE = pa.map_(pa.int32(), pa.binary())

MessageRef = str | MessageSpec | type[Message]


def arrow_type_for(message: MessageRef, protocol: ProtocolLike = None) -> pa.StructType:
    """The struct type of every version of ``message`` (a name, a spec, or a generated class).

    By name, the message comes from ``protocol`` (bundled by default); for a chain, the types
    of every protocol that defines it are merged, so a table decoded with the chain fits.
    """
    if isinstance(message, MessageSpec):
        # as the generator decides it: flexible if any valid version is
        flexible = not message.flexible_versions.intersect(message.valid_versions).empty
        return _from_spec(message.struct, flexible)
    if isinstance(message, type):
        return _from_class(message, bool(message.FLEXIBLE_VERSIONS))
    classes = message_classes(message, protocol)
    merged = _from_class(classes[0], bool(classes[0].FLEXIBLE_VERSIONS))
    for cls in classes[1:]:
        merged = _merge(merged, _from_class(cls, bool(cls.FLEXIBLE_VERSIONS)), message)
    return merged


def spark_type_for(message: MessageRef, protocol: ProtocolLike = None) -> Any:
    """:func:`arrow_type_for` as a Spark ``StructType`` (imports pyspark)."""
    from kafka_epochs.spark.spark_types import spark_type

    return spark_type(arrow_type_for(message, protocol))


def message_classes(name: str, protocol: ProtocolLike = None) -> list[type[Message]]:
    """The generated classes named ``name``: one, or one per protocol of a chain that has it."""
    resolved = resolve(protocol)
    protocols = getattr(resolved, "protocols", [resolved])
    classes = [p.message(name) for p in protocols if name in p]
    if not classes:
        raise KeyError(f"no message {name!r} in {resolved!r}")
    return classes


# -- the two walks ------------------------------------------------------------------------------


def _from_class(cls: Any, flexible: bool) -> pa.StructType:
    fields = []
    for f in cls._FIELDS:
        if f.kind == "array":
            element = _from_class(f.struct, flexible) if f.element == "struct" else PRIMITIVES[f.element]
            arrow_type: pa.DataType = pa.list_(element)
        elif f.kind == "struct":
            arrow_type = _from_class(f.struct, flexible)
        else:
            arrow_type = PRIMITIVES[f.kind]
        fields.append(pa.field(f.attr, arrow_type))
    return _with_tags(fields, flexible)


def _from_spec(struct: StructSpec, flexible: bool) -> pa.StructType:
    from kafka_epochs.codegen.naming import attribute_name  # the generator's own naming rule

    return _with_tags(
        [pa.field(attribute_name(f.name), _spec_field_type(f, flexible)) for f in struct.fields], flexible
    )


def _spec_field_type(f: FieldSpec, flexible: bool) -> pa.DataType:
    kind = f.type.kind
    if kind is Kind.ARRAY:
        element = f.type.element
        assert element is not None  # the loader guarantees an element type for arrays
        if element.kind is Kind.STRUCT:
            assert f.struct is not None
            return pa.list_(_from_spec(f.struct, flexible))
        return pa.list_(PRIMITIVES[element.kind.value])
    if kind is Kind.STRUCT:
        assert f.struct is not None
        return _from_spec(f.struct, flexible)
    return PRIMITIVES[kind.value]


def _with_tags(fields: list[pa.Field], flexible: bool) -> pa.StructType:
    if flexible:
        fields.append(pa.field(UNKNOWN_TAGS, UNKNOWN_TAGS_TYPE))
    return pa.struct(fields)


def _merge(a: pa.DataType, b: pa.DataType, where: str) -> pa.DataType:
    """The type that holds values of both: struct fields united (a's order first), lists by element."""
    if a.equals(b):
        return a
    if pa.types.is_struct(a) and pa.types.is_struct(b):
        fields = {a.field(i).name: a.field(i).type for i in range(a.num_fields)}
        for i in range(b.num_fields):
            other = b.field(i)
            name = other.name
            fields[name] = _merge(fields[name], other.type, f"{where}.{name}") if name in fields else other.type
        return pa.struct(list(fields.items()))
    if pa.types.is_list(a) and pa.types.is_list(b):
        return pa.list_(_merge(a.value_type, b.value_type, where))
    raise TypeError(f"{where} is {a} in one protocol and {b} in another: no single column type holds both")
