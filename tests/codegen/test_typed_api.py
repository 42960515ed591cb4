"""mypy sees the generated classes' fields: a misspelt field or a wrong type is a type error."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

PROGRAM = """
from kafka_epochs.apache.FetchRequest import FetchRequest
from kafka_epochs.epochs import stop_replica_partitions
from kafka_epochs.messages.StopReplicaRequest import StopReplicaRequest

request = StopReplicaRequest(controller_id=1, controller_epoch=2)
epoch: int = request.controller_epoch
for topic in request.topic_states:
    for partition in topic.partition_states:
        leader: int = partition.leader_epoch
fetch = FetchRequest(topics=[FetchRequest.FetchTopic(topic="t")])
name: str = fetch.topics[0].topic
first = stop_replica_partitions(request, 3)[0].leader_epoch
"""

MISTAKES = """
print(request.controler_epoch)
wrong: str = request.controller_epoch
print(fetch.topics[0].partitions[0].fetch_ofset)
StopReplicaRequest(controller_epoch="7")
"""


def mypy(tmp_path: Path, source: str) -> list[str]:
    program = tmp_path / "program.py"
    program.write_text(source)
    done = subprocess.run(
        [sys.executable, "-m", "mypy", "--cache-dir", str(tmp_path / "cache"), "--no-error-summary", str(program)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )
    return [line for line in done.stdout.splitlines() if ": error:" in line]


def test_generated_fields_are_typed(tmp_path: Path) -> None:
    assert mypy(tmp_path, PROGRAM) == []
    errors = mypy(tmp_path, PROGRAM + MISTAKES)
    assert len(errors) == 4, errors
    assert 'has no attribute "controler_epoch"; maybe "controller_epoch"?' in errors[0]
    assert 'expression has type "int", variable has type "str"' in errors[1]
    assert 'has no attribute "fetch_ofset"' in errors[2]
    assert 'Argument "controller_epoch" to "StopReplicaRequest" has incompatible type "str"' in errors[3]
