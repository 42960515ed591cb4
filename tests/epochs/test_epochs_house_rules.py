"""design.md's rules for kafka_epochs.epochs: no I/O outside partition.metadata, cheap imports,
and a model that speaks in whole frames."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

import kafka_epochs.epochs
from kafka_epochs import Protocol
from kafka_epochs.epochs import Errors, ReplicaManager

from .builders import TOPIC_A, State, Stop, leader_and_isr, stop_replica

PACKAGE = Path(kafka_epochs.epochs.__file__).parent
# Modules that would let a rule read the clock, the disk or the network.
IO_MODULES = {"os", "io", "pathlib", "socket", "time", "datetime", "shutil", "tempfile", "select", "asyncio"}
ALLOWED_TO_DO_IO = {"partition_metadata.py"}


def _imported_modules(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(), str(path))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module.split(".")[0])
    return names


@pytest.mark.parametrize("module", sorted(p.name for p in PACKAGE.glob("*.py") if p.name not in ALLOWED_TO_DO_IO))
def test_epochs_never_does_io(module: str) -> None:
    path = PACKAGE / module
    assert not _imported_modules(path) & IO_MODULES
    assert "open(" not in path.read_text()


def test_importing_epochs_loads_no_protocol_and_kafka_epochs_loads_no_epochs() -> None:
    code = (
        "import sys, kafka_epochs; before = 'kafka_epochs.epochs' in sys.modules; import kafka_epochs.epochs; "
        "print(before, any(m.startswith(('kafka_epochs.protocol', 'kafka_epochs.messages', "
        "'kafka_epochs.codegen')) for m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["False", "False"]


def test_the_model_answers_decoded_frames_with_frames() -> None:
    proto = Protocol.bundled()
    model = ReplicaManager(1)
    lai = proto.decode_request(
        proto.encode_request(
            leader_and_isr(5, State("orders", 0, 4, topic_id=TOPIC_A)), 5, correlation_id=1, client_id="controller"
        )
    )
    response = model.handle(lai, now_ms=0)
    assert proto.decode_response(proto.encode_response(response, 5, 1), 4, 5).body == response

    stop = proto.decode_request(
        proto.encode_request(stop_replica(3, Stop("orders", 0, 3)), 3, correlation_id=2, client_id="controller")
    )
    answer = model.handle(stop, now_ms=0)
    assert answer.partition_errors[0].error_code == Errors.FENCED_LEADER_EPOCH  # KIP-570
    assert proto.decode_response(proto.encode_response(answer, 3, 2), 5, 3).body == answer


def test_other_apis_are_refused() -> None:
    proto = Protocol.bundled()
    metadata = proto.decode_request(proto.encode_request(proto.message("MetadataRequest")(), 12, 1))
    with pytest.raises(ValueError, match="not api key 3"):
        ReplicaManager(1).handle(metadata, now_ms=0)
