"""A package's ``_shapes.py`` says what its message modules say about the wire, and reading
through shapes (``decode --fields``, ``--headers-only``) gives what reading through classes does,
without loading a message module."""

from __future__ import annotations

import math
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from kafka_epochs import Protocol
from kafka_epochs.capture.synth import RecordedConnection, write_capture
from kafka_epochs.framing import FrameDecoding
from kafka_epochs.projection import Projection
from kafka_epochs.projection.bodies import FieldsReader
from kafka_epochs.wire.schema import Shape

ROOT = Path(__file__).resolve().parents[2]
T0 = 1_700_000_000_000_000_000
PACKAGES = {"apache": Protocol.apache(), "bundled": Protocol.bundled()}
MESSAGE_ATTRIBUTES = (
    "API_KEY",
    "MESSAGE_TYPE",
    "VALID_VERSIONS",
    "FLEXIBLE_VERSIONS",
    "DEPRECATED_VERSIONS",
    "LATEST_VERSION_UNSTABLE",
)
FIELD_ATTRIBUTES = (
    "attr",
    "name",
    "kind",
    "versions",
    "element",
    "nullable",
    "tagged",
    "tag",
    "compact",
    "ignorable",
    "lazy",
)


def _same_default(a: Any, b: Any) -> bool:
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a):
        return math.isnan(b)
    return type(a) is type(b) and a == b


def assert_same_table(shape: Any, cls: Any, where: str, seen: set[str]) -> None:
    assert shape.__name__ == cls.__name__, where
    if where in seen:
        return
    seen.add(where)
    assert len(shape._FIELDS) == len(cls._FIELDS), where
    for ours, theirs in zip(shape._FIELDS, cls._FIELDS, strict=True):
        at = f"{where}.{theirs.attr}"
        for attribute in FIELD_ATTRIBUTES:
            assert getattr(ours, attribute) == getattr(theirs, attribute), (at, attribute)
        assert _same_default(ours.default, theirs.default), at
        assert (ours.struct is None) == (theirs.struct is None), at
        if theirs.struct is not None:
            assert isinstance(ours.struct, Shape), at
            assert_same_table(ours.struct, theirs.struct, f"{where}/{theirs.struct.__name__}", seen)


@pytest.mark.parametrize("package", sorted(PACKAGES))
def test_every_shape_has_its_class_wire_facts(package: str) -> None:
    protocol = PACKAGES[package]
    for name in protocol.names():
        shape, cls = protocol.shape(name), protocol.message(name)
        assert isinstance(shape, Shape)
        for attribute in MESSAGE_ATTRIBUTES:
            assert getattr(shape, attribute) == getattr(cls, attribute), (name, attribute)
        assert_same_table(shape, cls, name, set())
        assert protocol.shape(name) is shape  # made once


def test_a_projection_of_a_shape_is_the_projection_of_its_class() -> None:
    """The generated source, version by version, for every value of every message (through
    structs and arrays of them): what a projection does depends on nothing the class has and its shape lacks."""
    protocol = Protocol.apache()
    emitted = 0
    for name in protocol.names():
        cls = protocol.message(name)
        for path in leaf_paths(cls, ""):
            by_shape, by_class = Projection(protocol.shape(name), [path]), Projection(cls, [path])
            for version in cls.VALID_VERSIONS:
                assert by_shape.source(version)[0] == by_class.source(version)[0], (name, path, version)
                emitted += 1
    assert emitted > 6000


def leaf_paths(cls: Any, prefix: str) -> Any:
    for f in cls._FIELDS:
        if f.struct is None:
            yield prefix + f.attr
        else:
            yield from leaf_paths(f.struct, f"{prefix}{f.attr}{'[]' if f.kind == 'array' else ''}.")


def test_kip_and_auto_profiles_give_shapes_of_their_layouts() -> None:
    kip, auto = Protocol.kip(), Protocol.auto()
    assert kip.shape("StopReplicaRequest") is Protocol.bundled().shape("StopReplicaRequest")
    assert auto.shape("JoinGroupRequest") is Protocol.apache().shape("JoinGroupRequest")
    assert Protocol.apache().shape_for(3, "response").__name__ == "MetadataResponse"
    with pytest.raises(KeyError):
        kip.shape("NoSuchRequest")


def test_a_package_without_shapes_hands_out_its_classes(tmp_path: Path) -> None:
    """A package generated before ``_shapes.py`` existed (its projections read by class)."""
    protocol = Protocol.from_specs(ROOT / "messages", tmp_path)
    assert isinstance(protocol.shape("FetchRequest"), Shape)
    older = Protocol.from_specs(ROOT / "messages", tmp_path)
    tables = older._table
    older._table = lambda part: None if part == "_shapes" else tables(part)
    assert older.shape("FetchRequest") is older.message("FetchRequest")


def test_projected_frames_carry_the_shape_whichever_way_they_are_read() -> None:
    """The quick reader and the general way (a frame the quick one refuses) agree on what
    ``Decoded.message`` is, so that two frames of one message count as one api."""
    protocol = Protocol.apache()
    metadata = protocol.message("MetadataRequest")
    frame = protocol.encode_request(metadata(topics=None), 9, correlation_id=5, client_id="c")
    reader = FieldsReader(["topics[].name"])
    general = protocol.decode_request(frame, body_reader=reader)
    quick = FrameDecoding(protocol, body_reader=reader).reader(3, 9, True)
    assert quick is not None
    decoded = quick(frame)
    assert decoded is not None
    assert general.message is decoded.message is protocol.shape("MetadataRequest")
    assert general.body.columns == decoded.body.columns == {"topics[].name": []}


def every_api_capture(path: Path) -> int:
    """A capture of one default request and response of every api Apache Kafka has, each at its
    last version, on one connection; returns how many exchanges it holds."""
    protocol = Protocol.apache()
    chunks = []
    for correlation_id, api_key in enumerate(protocol.api_keys()):
        version = protocol.versions(api_key).stop - 1
        request, response = protocol.message_for(api_key, "request"), protocol.message_for(api_key, "response")
        if api_key == 0:
            request = request(acks=1)  # (acks=0 is never answered)
        else:
            request = request()
        at = T0 + correlation_id * 1_000_000
        chunks.append((at, "client", protocol.encode_request(request, version, correlation_id, client_id="c")))
        chunks.append((at + 1000, "broker", protocol.encode_response(response(), version, correlation_id)))
    write_capture(path, [RecordedConnection(("10.0.0.1", 50000), ("10.0.0.2", 9092), chunks)])
    return len(chunks) // 2


def test_decoding_fields_loads_no_message_module(tmp_path: Path) -> None:
    """``decode --fields`` and ``--headers-only`` of a capture of every api load the two header
    modules and no module of a message body; a whole decode loads them."""
    capture = tmp_path / "every-api.pcap"
    exchanges = every_api_capture(capture)
    assert exchanges > 80
    script = textwrap.dedent(
        f"""
        import io, sys, contextlib
        from kafka_epochs.cli import main
        for options in sys.argv[1:]:
            with contextlib.redirect_stdout(io.StringIO()) as out:
                assert main(["decode", {str(capture)!r}, "--quiet", *options.split()]) == 0
            assert out.getvalue().count("\\n") == {exchanges}, out.getvalue()
        generated = ("kafka_epochs.apache.", "kafka_epochs.messages.")
        print(sorted(m.rsplit(".", 1)[1] for m in sys.modules if m.startswith(generated)))
        """
    )

    def loaded(*options: str) -> set[str]:
        command = [sys.executable, "-c", script, *options]
        run = subprocess.run(command, check=False, capture_output=True, text=True, cwd=tmp_path)
        assert run.returncode == 0, run.stderr
        return set(eval(run.stdout))  # a list of names

    tables = {"_index", "_layouts", "_paths", "_shapes", "RequestHeader", "ResponseHeader"}
    # (where Apache and the KIPs lay one version out differently, a body nobody asked fields of is
    # told apart by the decoders: the auto profile's few conflicting versions)
    apache = Protocol.apache()
    conflicting = {apache.message_for(key, kind).__name__ for key, kind, _ in Protocol.auto().conflicts()}
    assert len(conflicting) < 10
    fields = "--fields error_code,topics[].partitions[].leader_epoch"
    headers = {"RequestHeader", "ResponseHeader"}
    assert headers <= loaded(fields, "--headers-only") - conflicting <= tables
    assert headers <= loaded(f"{fields} --protocol apache", "--headers-only --protocol apache") <= tables
    assert len(loaded("--protocol apache") - tables) == 2 * exchanges
