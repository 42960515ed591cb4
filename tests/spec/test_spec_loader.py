"""The spec loader: the format's attributes, and an error naming file, field and rule for each broken rule."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest

from kafka_epochs.spec import Kind, SpecError, Versions, load_spec, load_specs, parse_spec
from kafka_epochs.spec.loader import strip_comments
from kafka_epochs.spec.model import StructDefault
from kafka_epochs.spec.versions import MAX_VERSION


def spec_text(fields: list[dict], **top: object) -> str:  # type: ignore[type-arg]
    doc = {
        "apiKey": 1000,
        "type": "request",
        "name": "TestRequest",
        "validVersions": "0-3",
        "flexibleVersions": "2+",
        "fields": fields,
    }
    doc.update(top)
    return json.dumps(doc)


def field(**kw: object) -> dict:  # type: ignore[type-arg]
    base: dict[str, object] = {"name": "F", "type": "int32", "versions": "0+"}
    base.update(kw)
    return base


@pytest.mark.parametrize(
    ("text", "low", "high"), [("3", 3, 3), ("1-4", 1, 4), ("2+", 2, MAX_VERSION), ("0+", 0, MAX_VERSION)]
)
def test_version_ranges(text: str, low: int, high: int) -> None:
    v = Versions.parse(text)
    assert (v.low, v.high) == (low, high)
    assert str(v) == text


def test_version_none_and_set_operations() -> None:
    assert Versions.parse("none").empty and str(Versions.parse("none")) == "none"
    assert Versions.parse("2+").intersect(Versions.parse("0-3")) == Versions(2, 3)
    assert Versions.parse("0-1").intersect(Versions.parse("2+")).empty
    assert 3 in Versions.parse("2+") and 1 not in Versions.parse("2+")


@pytest.mark.parametrize("bad", ["", "x", "3-1", "-1", "1-", "1++", "40000"])
def test_bad_version_ranges(bad: str) -> None:
    with pytest.raises(ValueError):
        Versions.parse(bad)


def test_comments_are_stripped_outside_strings_only() -> None:
    text = '{"a": "http://x//y", // comment\n "b": 1} // end'
    assert json.loads(strip_comments(text)) == {"a": "http://x//y", "b": 1}


def test_every_attribute_is_read() -> None:
    spec = parse_spec(
        spec_text(
            [
                field(name="A", type="int64", default="0x7f", ignorable=True, about="a"),
                field(
                    name="S",
                    type="string",
                    nullableVersions="1+",
                    default="null",
                    versions="1+",
                    flexibleVersions="none",
                    entityType="topicName",
                ),
                field(name="U", type="uuid", default="AAAAAAAAAAAAAAAAAAAAAQ"),
                field(name="T", type="[]Common", versions="2+", taggedVersions="2+", tag=0),
                field(name="B", type="bytes", zeroCopy=True),
                field(name="L", type="[]Inline", mapKey=False, fields=[field(name="K", mapKey=True)]),
            ],
            latestVersionUnstable=True,
            deprecatedVersions="0",
            listeners=["broker"],
            commonStructs=[{"name": "Common", "versions": "0+", "fields": [field(name="X", type="float64")]}],
        ),
        source="Test.json",
    )
    a, s, u, t, b, inline = spec.fields
    assert a.default == 0x7F and a.ignorable and a.about == "a" and a.type.kind is Kind.INT64
    assert s.default is None and s.flexible_versions == Versions.parse("none") and s.entity_type == "topicName"
    assert u.default == uuid.UUID(int=1)
    assert t.tag == 0 and t.struct is spec.common_structs["Common"] and t.default is StructDefault.EMPTY_ARRAY
    assert b.zero_copy
    assert inline.struct is not None and inline.struct.has_keys
    assert spec.latest_version_unstable and spec.deprecated_versions == Versions(0, 0)
    assert spec.listeners == ("broker",) and spec.api_key == 1000


def test_reference_specs_all_load(reference_dir: Path) -> None:
    specs = load_specs(reference_dir)
    assert len(specs) == len(list(reference_dir.glob("*.json")))
    kinds = {f.type.kind for s in specs for st in s.structs() for f in st.fields}
    assert {Kind.UINT16, Kind.FLOAT64, Kind.RECORDS, Kind.UUID, Kind.BYTES} <= kinds


BROKEN = [
    ({"fields": [field(bogus=1)]}, "TestRequest.F", "unknown key 'bogus'"),
    ({"fields": [field(versions="2-1")]}, "TestRequest.F", "'versions': version range '2-1' is backwards"),
    ({"fields": [field(versions="abc")]}, "TestRequest.F", "invalid version range 'abc'"),
    (
        {"fields": [field(versions="0+", tag=0, taggedVersions="0+")]},
        "TestRequest.F",
        "tagged field outside flexible versions",
    ),
    (
        {
            "fields": [
                field(name="A", tag=0, taggedVersions="2+", versions="2+"),
                field(name="B", tag=2, taggedVersions="2+", versions="2+"),
            ]
        },
        "TestRequest",
        "tags are not contiguous: tag 1 is unused",
    ),
    (
        {
            "fields": [
                field(name="A", tag=0, taggedVersions="2+", versions="2+"),
                field(name="B", tag=0, taggedVersions="2+", versions="2+"),
            ]
        },
        "TestRequest.B",
        "tag 0 is already used by A",
    ),
    ({"fields": [field(tag=0)]}, "TestRequest.F", "a field with a tag needs taggedVersions"),
    ({"fields": [field(taggedVersions="2+", versions="2+")]}, "TestRequest.F", "taggedVersions needs a tag"),
    ({"fields": [field(tag=0, taggedVersions="2-3", versions="2+")]}, "TestRequest.F", "must be open-ended"),
    ({"fields": [field(nullableVersions="0+")]}, "TestRequest.F", "type int32 cannot be nullable"),
    ({"fields": [field(type="uuid", nullableVersions="0+")]}, "TestRequest.F", "type uuid cannot be nullable"),
    ({"fields": [field(default="x")]}, "TestRequest.F", "invalid default 'x' for int32 field: not an integer"),
    ({"fields": [field(type="int8", default="300")]}, "TestRequest.F", "out of range -128..127"),
    ({"fields": [field(type="string", default="null")]}, "TestRequest.F", "null needs the field to be nullable"),
    ({"fields": [field(type="bytes", default="ab")]}, "TestRequest.F", "the only defaults allowed are empty and null"),
    ({"fields": [field(type="uuid", default="!!")]}, "TestRequest.F", "invalid default"),
    ({"fields": [field(type="[]Missing")]}, "TestRequest.F", "unknown struct type Missing"),
    ({"fields": [field(type="[][]int32")]}, "TestRequest.F", "arrays of arrays are not allowed"),
    ({"fields": [field(type="int32", fields=[field()])]}, "TestRequest.F", "cannot have fields"),
    (
        {"fields": [field(type="int32", flexibleVersions="none")]},
        "TestRequest.F",
        "only string and bytes fields may override flexibleVersions",
    ),
    ({"fields": [field(zeroCopy=True)]}, "TestRequest.F", "zeroCopy is only allowed on bytes fields"),
    ({"fields": [field(entityType="topicName")]}, "TestRequest.F", "entityType topicName needs type string"),
    ({"fields": [field(name="F"), field(name="F")]}, "TestRequest.F", "duplicate field name"),
    ({"fields": [field(name="bad-name")]}, "TestRequest.<field>", "invalid field name 'bad-name'"),
    (
        {"fields": [field(type="[]S", fields=[]), field(name="G", type="[]S", fields=[])]},
        "TestRequest.G",
        "struct S is defined more than once",
    ),
    ({"validVersions": "none"}, "TestRequest", "validVersions must not be 'none'"),
    ({"fields": [field(versions="5+")]}, "TestRequest.F", "versions 5+ never overlap its parent's versions 0-3"),
    (
        {"fields": [field(name="A", type="[]S", versions="2+", fields=[field(name="B", versions="0-1")])]},
        "TestRequest.A.B",
        "versions 0-1 never overlap its parent's versions 2+",
    ),
    ({"flexibleVersions": "1-2"}, "TestRequest", "must be 'none' or open-ended"),
    ({"type": "gossip"}, "TestRequest", "unknown message type 'gossip'"),
    ({"apiKey": None}, "TestRequest", "a request needs an apiKey"),
    ({"extra": 1}, "message", "unknown key 'extra'"),
]


@pytest.mark.parametrize(("change", "where", "rule"), BROKEN, ids=[b[2][:40] for b in BROKEN])
def test_broken_specs_name_file_field_and_rule(change: dict, where: str, rule: str) -> None:  # type: ignore[type-arg]
    doc = json.loads(spec_text([field()]))
    doc.update(change)
    doc = {k: v for k, v in doc.items() if v is not None}
    with pytest.raises(SpecError) as info:
        parse_spec(json.dumps(doc), source="Broken.json")
    err = info.value
    assert err.source == "Broken.json"
    assert err.where == where
    assert rule in err.rule
    assert str(err).startswith(f"Broken.json: {where}: ")


def test_missing_required_key_and_bad_json(tmp_path: Path) -> None:
    with pytest.raises(SpecError, match="'validVersions' is required"):
        parse_spec('{"name": "X", "type": "data", "flexibleVersions": "none", "fields": []}', "X.json")
    bad = tmp_path / "Bad.json"
    bad.write_text("{ not json")
    with pytest.raises(SpecError, match=r"Bad\.json: not valid JSON"):
        load_spec(bad)


def test_repeated_key_with_a_different_value_is_refused() -> None:
    text = (
        '{"name": "X", "type": "data", "validVersions": "0", "validVersions": "1", '
        '"flexibleVersions": "none", "fields": []}'
    )
    with pytest.raises(SpecError, match="given twice with different values"):
        parse_spec(text, "X.json")


def test_common_struct_used_before_its_definition() -> None:
    spec = parse_spec(
        spec_text(
            [field(name="P", type="Later")],
            commonStructs=[{"name": "Later", "versions": "0+", "fields": [field(name="Q")]}],
        )
    )
    assert spec.fields[0].struct is not None and spec.fields[0].struct.fields[0].name == "Q"


def test_names_that_collide_in_python_are_refused_by_the_generator() -> None:
    from kafka_epochs.codegen.python_backend import generate_module

    spec = parse_spec(spec_text([field(name="TopicId"), field(name="TopicID")]), source="Clash.json")
    with pytest.raises(SpecError, match="fields TopicId and TopicID would both be the attribute 'topic_id'"):
        generate_module(spec)
    with pytest.raises(SpecError, match="struct TestRequest is defined more than once"):
        parse_spec(spec_text([field(name="Inner", type="TestRequest", fields=[field(name="X")])]), "Same.json")
