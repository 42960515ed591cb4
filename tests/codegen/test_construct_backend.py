"""The construct backend: its primitives, its source view, and the differential test against the fast classes.

For every Kafka 3.9 spec and every version, hypothesis-generated messages must give the same
bytes from both backends, and construct must parse the fast backend's bytes back to the same
object.
"""

from __future__ import annotations

import importlib.util
import sys
import uuid
from pathlib import Path
from typing import Any

import construct
import pytest
from hypothesis import HealthCheck, given, settings

from kafka_epochs.codegen.construct_backend import construct_for, construct_source, from_native, to_native
from kafka_epochs.spec import load_spec
from kafka_epochs.wire import construct_types as ct
from kafka_epochs.wire.primitives import uvarint

import strategies
from conftest import reference_names

EXAMPLES_PER_VERSION = 10
_SETTINGS = settings(
    max_examples=EXAMPLES_PER_VERSION,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much],
)


def plain(value: Any) -> Any:
    """Containers and ListContainers as dicts and lists, so ``==`` also compares ``_unknown_tags``."""
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [plain(v) for v in value]
    return value


def import_source(text: str, path: Path, name: str) -> Any:
    path.write_text(text)
    module_spec = importlib.util.spec_from_file_location(name, path)
    assert module_spec is not None and module_spec.loader is not None
    module = importlib.util.module_from_spec(module_spec)
    sys.modules[name] = module
    try:
        module_spec.loader.exec_module(module)
    finally:
        del sys.modules[name]
    return module


# -- primitives -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "wire"),
    [
        (0, b"\x00"),
        (1, b"\x01"),
        (127, b"\x7f"),
        (128, b"\x80\x01"),
        (300, b"\xac\x02"),
        (2**14, b"\x80\x80\x01"),
        (2**32 - 1, b"\xff\xff\xff\xff\x0f"),
    ],
)
def test_uvarint(value: int, wire: bytes) -> None:
    assert ct.UVarInt.build(value) == wire == uvarint(value)
    assert ct.UVarInt.parse(wire) == value


@pytest.mark.parametrize(
    "wire",
    [
        b"\x80\x80\x80\x80\x80\x00",  # six bytes
        b"\x80\x80\x80\x80\x80",  # five bytes, all with the continuation bit
        b"\xff\xff\xff\xff\x1f",  # five bytes but 2**36 - 1
        b"\x80",  # truncated
    ],
)
def test_uvarint_rejects(wire: bytes) -> None:
    with pytest.raises(construct.ConstructError):
        ct.UVarInt.parse(wire)


@pytest.mark.parametrize("value", [-1, 2**32, True])
def test_uvarint_refuses_to_build(value: int) -> None:
    with pytest.raises(construct.ConstructError):
        ct.UVarInt.build(value)


def test_strings() -> None:
    assert ct.CompactNullableString.build(None) == b"\x00"
    assert ct.CompactNullableString.parse(b"\x00") is None
    assert ct.CompactNullableString.build("ab") == b"\x03ab"
    assert ct.CompactString.build("") == b"\x01"
    assert ct.CompactString.parse(b"\x03\xc3\xa9") == "é"
    assert ct.String16.build("ab") == b"\x00\x02ab"
    assert ct.NullableString16.build(None) == b"\xff\xff"
    assert ct.NullableString16.parse(b"\xff\xff") is None
    assert ct.NullableString16.parse(b"\x00\x01x") == "x"
    with pytest.raises(construct.ConstructError):
        ct.CompactString.parse(b"\x00")  # null in a non-nullable string
    with pytest.raises(construct.ConstructError):
        ct.String16.parse(b"\xff\xff")
    with pytest.raises(construct.ConstructError):
        ct.CompactString.build("x" * 0x8000)  # over Kafka's 32767-byte limit
    assert ct.CompactString.build("x" * 0x7FFF)[:3] == b"\x80\x80\x02"


def test_bytes_and_arrays() -> None:
    assert ct.NullableBytes32.build(None) == b"\xff\xff\xff\xff"
    assert ct.Bytes32.build(b"ab") == b"\x00\x00\x00\x02ab"
    assert ct.CompactNullableBytes.build(None) == b"\x00"
    assert ct.CompactBytes.parse(b"\x03ab") == b"ab"
    assert ct.CompactArray(construct.Int16sb).build([1, 2]) == b"\x03\x00\x01\x00\x02"
    assert ct.CompactNullableArray(construct.Int16sb).build(None) == b"\x00"
    assert ct.CompactNullableArray(construct.Int16sb).parse(b"\x00") is None
    assert ct.NullableArray32(construct.Int8sb).build(None) == b"\xff\xff\xff\xff"
    assert ct.Array32(construct.Int8sb).parse(b"\x00\x00\x00\x02\x05\x06") == [5, 6]
    with pytest.raises(construct.ConstructError):
        ct.Array32(construct.Int8sb).parse(b"\xff\xff\xff\xff")  # null in a non-nullable array
    with pytest.raises(construct.ConstructError):
        ct.Array32(ct.KafkaStruct()).parse(b"\x7f\xff\xff\xff")  # a count far past the bytes left


def test_nullable_struct_and_uuid() -> None:
    inner = ct.KafkaStruct("a" / construct.Int8sb)
    d = ct.NullableStruct(inner)
    assert d.build(None) == b"\xff"
    assert d.build({"a": 7}) == b"\x01\x07"
    assert d.parse(b"\xff") is None
    assert d.parse(b"\x01\x07") == {"a": 7}
    u = uuid.UUID("0123456789abcdef0123456789abcdef")
    assert ct.Uuid.build(u) == u.bytes
    assert ct.Uuid.parse(u.bytes) == u


def _tagged_struct() -> Any:
    return ct.KafkaStruct(
        "id" / construct.Int32sb,
        tags=ct.TagSection(
            ct.TaggedField(0, "name" / ct.CompactNullableString, default=None),
            ct.TaggedField(3, "count" / construct.Int16sb, default=-1),
            invalid=(1,),
        ),
    )


def test_tag_section_keeps_unknown_tags() -> None:
    d = _tagged_struct()
    # id=5; tags: 0 -> "hi", 2 -> raw b"zz" (unknown)
    wire = b"\x00\x00\x00\x05" + b"\x02" + b"\x00\x03\x03hi" + b"\x02\x02zz"
    parsed = d.parse(wire)
    assert plain(parsed) == {"id": 5, "name": "hi", "count": -1, "_unknown_tags": {2: b"zz"}}
    assert d.build(parsed) == wire
    # Known and unknown tags are merged in tag order on the way out.
    value = {"id": 5, "name": None, "count": 9, "_unknown_tags": {1000: b"", 2: b"x"}}
    assert d.build(value) == b"\x00\x00\x00\x05\x03" + b"\x02\x01x" + b"\x03\x02\x00\x09" + b"\xe8\x07\x00"


def test_tag_section_rules() -> None:
    d = _tagged_struct()
    empty = d.parse(b"\x00\x00\x00\x01\x00")
    assert plain(empty) == {"id": 1, "name": None, "count": -1, "_unknown_tags": None}
    assert d.build({"id": 1, "name": None, "count": -1, "_unknown_tags": None}) == b"\x00\x00\x00\x01\x00"
    with pytest.raises(construct.ConstructError):  # tag 1 is known in another version
        d.parse(b"\x00\x00\x00\x01\x01\x01\x00")
    with pytest.raises(construct.ConstructError):  # a known tag whose value leaves bytes over
        d.parse(b"\x00\x00\x00\x01\x01\x03\x03\x00\x09\x00")
    with pytest.raises(construct.ConstructError):  # a known field and an unknown tag with one number
        d.build({"id": 1, "name": "a", "count": -1, "_unknown_tags": {0: b""}})


def test_tagged_struct_written_only_when_not_default() -> None:
    inner = ct.KafkaStruct("x" / construct.Int32sb, tags=ct.TagSection())
    d = ct.KafkaStruct(tags=ct.TagSection(ct.TaggedField(0, "s" / inner, default={"x": -1, "_unknown_tags": None})))
    assert d.build({"s": {"x": -1, "_unknown_tags": None}, "_unknown_tags": None}) == b"\x00"
    assert d.build({"s": {"x": -1}}) == b"\x00"  # no _unknown_tags key counts as none
    # An unknown tag inside makes the struct differ from its default, as the fast backend sees it.
    assert d.build({"s": {"x": -1, "_unknown_tags": {5: b""}}}) == b"\x01\x00\x07\xff\xff\xff\xff\x01\x05\x00"
    assert plain(d.parse(b"\x00")) == {"s": {"x": -1, "_unknown_tags": None}, "_unknown_tags": None}


def test_natives(reference_dir: Path, reference_protocol: Any) -> None:
    spec = load_spec(reference_dir / "ApiVersionsRequest.json")
    cls = reference_protocol.message("ApiVersionsRequest")
    obj = cls(client_software_name="a", client_software_version="1")
    assert to_native(obj, 0) == {}
    assert to_native(obj, 3) == {"client_software_name": "a", "client_software_version": "1", "_unknown_tags": None}
    assert construct_for(spec, 3).build(to_native(obj, 3)) == obj.encode(3) == b"\x02a\x021\x00"
    assert from_native(cls, 3, construct_for(spec, 3).parse(b"\x02a\x021\x00")) == obj
    assert from_native(cls, 0, {}) == cls()
    with pytest.raises(ValueError, match="missing"):
        from_native(cls, 3, {"client_software_name": "a"})
    with pytest.raises(ValueError, match="unexpected"):
        from_native(cls, 0, {"client_software_name": "a"})
    with pytest.raises(ValueError, match="no version"):
        construct_for(spec, 99)


def test_construct_source_imports_only_construct_and_types(reference_dir: Path) -> None:
    text = construct_source(load_spec(reference_dir / "FetchRequest.json"))
    imports = [line for line in text.splitlines() if line.startswith(("import ", "from "))]
    assert imports and all(
        line.startswith(("from construct import", "from kafka_epochs.wire.construct_types import")) for line in imports
    )
    assert "V17 = " in text and "TaggedField(" in text


# -- the differential test --------------------------------------------------------------------


def _check_version(cls: Any, version: int, live: Any, imported: Any) -> None:
    @_SETTINGS
    @given(obj=strategies.message(cls, version))
    def check(obj: Any) -> None:
        wire = obj.encode(version)
        native = to_native(obj, version)
        assert live.build(native) == wire
        parsed = live.parse(wire)
        assert plain(parsed) == native
        assert from_native(cls, version, parsed) == obj
        assert cls.decode(wire, version) == obj
        assert imported.build(native) == wire
        assert plain(imported.parse(wire)) == native

    check()


@pytest.mark.parametrize("name", reference_names())
def test_backends_agree(name: str, reference_dir: Path, reference_protocol: Any, tmp_path: Path) -> None:
    spec = load_spec(reference_dir / f"{name}.json")
    cls = reference_protocol.message(name)
    view = import_source(construct_source(spec), tmp_path / f"{name}_construct.py", f"_construct_view_{name}")
    assert sorted(view.BY_VERSION) == list(spec.versions)
    for version in spec.versions:
        _check_version(cls, version, construct_for(spec, version), view.BY_VERSION[version])
