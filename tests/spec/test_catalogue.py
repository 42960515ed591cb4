"""The Apache protocol catalogue: derived from its inputs, wire facts only, layout-equal to them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kafka_epochs.cli.generate import CATALOGUE, _catalogue_sources
from kafka_epochs.codegen.build import stale_files
from kafka_epochs.spec.catalogue import (
    CatalogueError,
    SpecSource,
    build_catalogue,
    load_catalogue,
    render_catalogue,
    verify,
)
from kafka_epochs.spec.layout import wire_layout
from kafka_epochs.spec.loader import load_spec

from conftest import REFERENCE_MISSING, ROOT, reference_specs_available

needs_reference = pytest.mark.skipif(not reference_specs_available(), reason=REFERENCE_MISSING)

#: What a catalogue entry may hold: the spec format's wire facts, never ``about`` or comments.
MESSAGE_KEYS = {
    "apiKey",
    "type",
    "name",
    "validVersions",
    "flexibleVersions",
    "latestVersionUnstable",
    "deprecatedVersions",
    "listeners",
    "fields",
    "commonStructs",
    "origins",
}
FIELD_KEYS = {
    "name",
    "type",
    "versions",
    "nullableVersions",
    "taggedVersions",
    "tag",
    "flexibleVersions",
    "default",
    "ignorable",
    "mapKey",
    "fields",
}


def kafka_python_source() -> SpecSource:
    return _catalogue_sources(None)[1]


@needs_reference
def test_committed_catalogue_is_what_its_inputs_give() -> None:
    sources = _catalogue_sources(None)
    assert CATALOGUE.read_text(encoding="utf-8") == render_catalogue(build_catalogue(sources))


@needs_reference
def test_every_input_version_has_its_own_layout_in_the_catalogue() -> None:
    sources = _catalogue_sources(None)
    checked = verify(load_catalogue(CATALOGUE), sources)
    # 186 Kafka 3.9 specs, Kafka 4.0's development ones and kafka-python's 4.x ones: over 700
    # (message, version) layouts.
    assert [s.label for s in sources] == ["kafka-3.9.0", "kafka-4.0-dev-2024-10-25", "kafka-4.x@kafka-python-3.0.12"]
    assert checked > 700
    # And independently of verify(): a few by hand, one per input.
    specs = {s.name: s for s in load_catalogue(CATALOGUE)}
    k39 = load_spec(sources[0].directory / "ProduceRequest.json")
    k40 = load_spec(sources[1].directory / "ConsumerGroupHeartbeatRequest.json")
    k4x = load_spec(sources[2].directory / "ProduceRequest.json")
    assert wire_layout(specs["ProduceRequest"], 0) == wire_layout(k39, 0)  # Kafka 4 dropped v0-v2
    assert wire_layout(specs["ConsumerGroupHeartbeatRequest"], 1) == wire_layout(k40, 1)  # KIP-848's v1
    assert wire_layout(specs["ProduceRequest"], 13) == wire_layout(k4x, 13)  # only Kafka 4 has v13
    assert specs["ConsumerGroupHeartbeatRequest"].latest_version_unstable  # a fact of its input, kept


def test_catalogue_holds_wire_facts_only() -> None:
    text = CATALOGUE.read_text(encoding="utf-8")
    assert "//" not in text and '"about"' not in text
    catalogue = json.loads(text)

    def walk_fields(fields: list[dict], where: str) -> None:
        for f in fields:
            assert set(f) <= FIELD_KEYS, f"{where}.{f['name']}: {set(f) - FIELD_KEYS}"
            walk_fields(f.get("fields", []), f"{where}.{f['name']}")

    for message in catalogue["messages"]:
        assert set(message) <= MESSAGE_KEYS, message["name"]
        walk_fields(message["fields"], message["name"])
        for struct in message.get("commonStructs", []):
            assert set(struct) <= {"name", "versions", "deprecatedVersions", "fields"}
            walk_fields(struct["fields"], struct["name"])


def test_catalogue_covers_kafka_4_client_versions() -> None:
    specs = {s.name: s for s in load_catalogue(CATALOGUE)}
    assert len(specs) >= 188
    for name, low, high in [
        ("ProduceRequest", 0, 13),
        ("FetchRequest", 0, 18),
        ("MetadataRequest", 0, 13),
        ("ListOffsetsRequest", 0, 11),
        ("ListConfigResourcesRequest", 0, 1),
    ]:
        valid = specs[name].valid_versions
        assert (valid.low, valid.high) == (low, high), name


def test_kafka_python_input_alone_reads_back_layout_for_layout(tmp_path: Path) -> None:
    # Runs without ../shared: kafka-python is a dev dependency.
    source = kafka_python_source()
    path = tmp_path / "catalogue.json"
    path.write_text(render_catalogue(build_catalogue([source])), encoding="utf-8")
    assert verify(load_catalogue(path), [source]) > 300


def test_committed_apache_package_matches_the_catalogue() -> None:
    assert stale_files(CATALOGUE, ROOT / "kafka_epochs" / "apache") == []


# -- merging, on small specs written here ---------------------------------------------------------


def spec(name: str, valid: str, fields: list[dict], flexible: str = "none") -> dict:
    return {
        "apiKey": 99,
        "type": "request",
        "name": name,
        "validVersions": valid,
        "flexibleVersions": flexible,
        "fields": fields,
    }


def sources_of(tmp_path: Path, *versions_of: dict) -> list[SpecSource]:
    out = []
    for n, raw in enumerate(versions_of):
        folder = tmp_path / f"in{n}"
        folder.mkdir()
        (folder / f"{raw['name']}.json").write_text(json.dumps(raw), encoding="utf-8")
        out.append(SpecSource(f"in{n}", folder))
    return out


def merged(tmp_path: Path, sources: list[SpecSource]) -> dict:
    catalogue = build_catalogue(sources)
    path = tmp_path / "catalogue.json"
    path.write_text(render_catalogue(catalogue), encoding="utf-8")
    verify(load_catalogue(path), sources)
    return catalogue["messages"][0]


def test_newer_input_owns_its_versions_and_older_ones_keep_theirs(tmp_path: Path) -> None:
    older = spec(
        "ExampleRequest",
        "0-3",
        [
            {"name": "A", "type": "int32", "versions": "0+", "about": "text that must not be kept"},
            {"name": "B", "type": "int8", "versions": "0-1"},
        ],
    )
    newer = spec(
        "ExampleRequest",
        "2-4",
        [
            {"name": "A", "type": "int32", "versions": "2+"},
            {"name": "C", "type": "string", "versions": "4+", "nullableVersions": "4+"},
        ],
        flexible="4+",
    )
    message = merged(tmp_path, sources_of(tmp_path, older, newer))
    assert message["validVersions"] == "0-4" and message["flexibleVersions"] == "4+"
    assert [(f["name"], f["versions"]) for f in message["fields"]] == [("A", "0+"), ("B", "0-1"), ("C", "4+")]
    assert message["origins"] == [["in0", "0-1"], ["in1", "2-4"]]
    assert "about" not in json.dumps(message)


def test_fields_reordered_where_they_never_meet_still_merge(tmp_path: Path) -> None:
    # As Kafka 4 did in DescribeConfigsResponse: a v0-only field moved after a v1+ one.
    def items(*fields: dict) -> list[dict]:
        return [{"name": "Items", "type": "[]Item", "versions": "0+", "fields": list(fields)}]

    a, z = {"name": "A", "type": "int32", "versions": "0+"}, {"name": "Z", "type": "int32", "versions": "0+"}
    old, new = {"name": "Old", "type": "bool", "versions": "0"}, {"name": "New", "type": "int8", "versions": "1+"}
    older = spec("ExampleRequest", "0-2", items(a, old, new, z))
    newer = spec("ExampleRequest", "1-3", items(a, new, old, z))
    message = merged(tmp_path, sources_of(tmp_path, older, newer))
    assert [f["name"] for f in message["fields"][0]["fields"]] == ["A", "New", "Old", "Z"]


def test_a_type_change_between_inputs_is_refused(tmp_path: Path) -> None:
    older = spec("ExampleRequest", "0-1", [{"name": "A", "type": "int32", "versions": "0+"}])
    newer = spec("ExampleRequest", "1-2", [{"name": "A", "type": "int64", "versions": "0+"}])
    with pytest.raises(CatalogueError, match=r"ExampleRequest\.A: type differs"):
        build_catalogue(sources_of(tmp_path, older, newer))


def test_versions_that_are_not_one_range_are_refused(tmp_path: Path) -> None:
    older = spec("ExampleRequest", "0-3", [{"name": "A", "type": "int32", "versions": "0-1"}])
    newer = spec("ExampleRequest", "2-4", [{"name": "A", "type": "int32", "versions": "4+"}])
    with pytest.raises(CatalogueError, match="not one range"):
        build_catalogue(sources_of(tmp_path, older, newer))


def test_verify_catches_a_catalogue_that_disagrees_with_an_input(tmp_path: Path) -> None:
    raw = spec("ExampleRequest", "0-1", [{"name": "A", "type": "int32", "versions": "0+"}])
    sources = sources_of(tmp_path, raw)
    catalogue = build_catalogue(sources)
    catalogue["messages"][0]["fields"][0]["type"] = "int64"  # a wrong fact
    path = tmp_path / "catalogue.json"
    path.write_text(render_catalogue(catalogue), encoding="utf-8")
    with pytest.raises(CatalogueError, match="ExampleRequest v0 differs from in0"):
        verify(load_catalogue(path), sources)


def test_catalogue_command_check_mode(tmp_path: Path) -> None:
    from kafka_epochs.cli import main

    source = kafka_python_source()
    out = tmp_path / "c.json"
    args = ["catalogue", "--input", f"{source.label}={source.directory}", "--out", str(out)]
    assert main([*args, "--check"]) == 1
    assert main(args) == 0
    assert main([*args, "--check"]) == 0
    assert main(["catalogue", "--input", "no-equals-sign"]) == 2
