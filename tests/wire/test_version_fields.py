"""JSON views hold only the fields of the version a frame was read at (issue: "fields a version
does not carry are printed with defaults")."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kafka_epochs import Protocol
from kafka_epochs.cli import main
from kafka_epochs.codegen.naming import attribute_name
from kafka_epochs.spec.loader import load_spec
from kafka_epochs.spec.model import StructSpec

import strategies
from conftest import REFERENCE_DIR, reference_names

CLIENTS_SAMPLE = "kafka_epochs/samples/clients.pcap"


def spec_keys(struct: StructSpec, plain: Any, version: int, path: str = "") -> list[str]:
    """Where ``plain`` (a to_dict view) differs from the spec's fields at ``version``, recursively."""
    expected = {attribute_name(f.name) for f in struct.fields_in(version)}
    got = set(plain) - {"_unknown_tags"}
    problems = (
        [f"{path or '<root>'}: extra {sorted(got - expected)}, missing {sorted(expected - got)}"]
        if got != expected
        else []
    )
    for f in struct.fields_in(version):
        value = plain.get(attribute_name(f.name))
        if f.struct is None or value is None:
            continue
        for i, item in enumerate(value if isinstance(value, list) else [value]):
            problems += spec_keys(f.struct, item, version, f"{path}.{f.name}[{i}]")
    return problems


@pytest.mark.parametrize("name", reference_names())
def test_to_dict_at_a_version_has_exactly_the_specs_fields(reference_protocol: Any, name: str) -> None:
    spec = load_spec(REFERENCE_DIR / f"{name}.json")  # the spec text, not the generated field table
    root = StructSpec(spec.name, spec.valid_versions, spec.fields)
    cls = reference_protocol.message(name)

    @settings(max_examples=2 * len(cls.VALID_VERSIONS), suppress_health_check=list(HealthCheck))
    @given(st.data())
    def run(data: st.DataObject) -> None:
        version = data.draw(st.sampled_from(list(cls.VALID_VERSIONS)))
        obj = cls.decode(data.draw(strategies.message(cls, version)).encode(version), version)
        plain = obj.to_dict(version)
        assert spec_keys(root, plain, version) == []
        json.dumps(plain)

    run()


def test_fetch_v3_and_api_versions_v0_show_only_their_fields(apache_protocol: Protocol) -> None:
    fetch = apache_protocol.message("FetchRequest")
    request = fetch(
        replica_id=-1,
        max_wait_ms=500,
        min_bytes=1,
        topics=[fetch.FetchTopic(topic="orders", partitions=[fetch.FetchPartition(partition=0, fetch_offset=7)])],
    )
    decoded = apache_protocol.decode_request(
        apache_protocol.encode_request(request, 3, correlation_id=1, client_id="c")
    )
    body = decoded.to_dict()["body"]
    partition = body["topics"][0]["partitions"][0]
    assert partition == {"partition": 0, "fetch_offset": 7, "partition_max_bytes": 0}  # no leader epoch before v9
    assert "topic_id" not in body["topics"][0] and "isolation_level" not in body  # v13 and v4 fields
    assert body["max_bytes"] == fetch().max_bytes  # v3 has it: shown even at its default

    versions = apache_protocol.message("ApiVersionsRequest")
    decoded = apache_protocol.decode_request(
        apache_protocol.encode_request(versions(), 0, correlation_id=2, client_id="kcat")
    )
    assert decoded.to_dict() == {
        "header": {"request_api_key": 18, "request_api_version": 0, "correlation_id": 2, "client_id": "kcat"},
        "body": {},
    }
    assert "client_software_name" in versions().to_dict()  # a version-free object keeps every field


def test_decode_prints_only_the_fields_of_each_frames_version(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["decode", CLIENTS_SAMPLE, "--quiet"]) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    protocol = Protocol.apache()
    checked = 0
    for row in rows:
        if row.get("api_key") is None or "request" not in row:
            continue
        path = REFERENCE_DIR / f"{protocol.message_for(row['api_key'], 'request').__name__}.json"
        spec = load_spec(path) if path.exists() else None
        if spec is None or row["api_version"] not in spec.valid_versions:
            continue  # a Kafka 4.x version: checked above through the catalogue's own tests
        root = StructSpec(spec.name, spec.valid_versions, spec.fields)
        assert spec_keys(root, row["request"], row["api_version"]) == [], row["api"]
        checked += 1
    assert checked > 40  # every request of the sample that Kafka 3.9 defines
