"""What the generator emits: every name it uses is imported or defined, and versions with one
wire layout share one reader and one writer (the generator keys them by layout, not by text)."""

from __future__ import annotations

import builtins
import symtable
from pathlib import Path

import pytest

from kafka_epochs import Protocol
from kafka_epochs.codegen.build import load_source
from kafka_epochs.errors import EncodeError
from kafka_epochs.spec.layout import wire_layout

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = {"messages": ROOT / "messages", "apache": ROOT / "messages" / "apache" / "catalogue.json"}


def undefined_globals(path: Path) -> set[str]:
    """Names a module's code reads as globals that the module neither defines nor imports."""
    table = symtable.symtable(path.read_text(), str(path), "exec")
    defined = {s.get_name() for s in table.get_symbols() if s.is_assigned() or s.is_imported()}
    used: set[str] = set()
    stack = [table]
    while stack:
        scope = stack.pop()
        stack.extend(scope.get_children())
        used |= {s.get_name() for s in scope.get_symbols() if s.is_global() or (scope is table and s.is_referenced())}
    return used - defined - set(dir(builtins))


@pytest.mark.parametrize("package", sorted(PACKAGES))
def test_every_name_a_generated_module_uses_is_defined(package: str) -> None:
    modules = sorted((ROOT / "kafka_epochs" / package).glob("[A-Z]*.py"))
    assert len(modules) > 10
    missing = {path.name: names for path in modules if (names := undefined_globals(path))}
    assert missing == {}


@pytest.mark.parametrize("package", sorted(PACKAGES))
def test_versions_with_one_layout_share_one_reader_and_writer(package: str) -> None:
    protocol = Protocol.apache() if package == "apache" else Protocol.bundled()
    shared = 0
    for spec in load_source(PACKAGES[package]):
        cls = protocol.message(spec.name)
        versions = list(spec.valid_versions)
        for i, v in enumerate(versions):
            for w in versions[i + 1 :]:
                same = wire_layout(spec, v) == wire_layout(spec, w)
                assert (cls._DECODERS[v] is cls._DECODERS[w]) == same, (spec.name, v, w)
                assert (cls._ENCODERS[v] is cls._ENCODERS[w]) == same, (spec.name, v, w)
                shared += same
    assert shared > 50


def test_a_shared_writer_still_names_the_version_it_refuses() -> None:
    # ProduceRequest v0-v2 share a writer; none has the transactional id (v3+, not ignorable)
    cls = Protocol.bundled().message("ProduceRequest")
    assert cls._ENCODERS[0] is cls._ENCODERS[1] is cls._ENCODERS[2]
    request = cls(transactional_id="txn-1")
    for version in (0, 1, 2):
        with pytest.raises(EncodeError, match=f"transactional_id is not in version {version} "):
            request.encode(version)


def test_a_message_class_documents_its_specs_version_history() -> None:
    produce = Protocol.bundled().message("ProduceRequest")
    doc = produce.__doc__ or ""
    assert "Version history (the spec's own account):" in doc and "KIP-359" in doc
    assert "Apache Kafka 3.9 has no Produce v12" in doc
    assert "Version history" not in (Protocol.apache().message("ProduceRequest").__doc__ or "")  # wire facts only


def test_the_licence_header_of_a_spec_is_not_its_history(tmp_path: Path) -> None:
    from kafka_epochs.spec.loader import leading_comment

    text = (
        "// Licensed to the Apache Software Foundation (ASF) under one\n// more lines\n//\n"
        "// limitations under the License.\n\n// v1 adds a field.\n{\n// inside\n}\n"
    )
    assert leading_comment(text) == "v1 adds a field."
