"""``benchmarks/real_shaped.py`` says so, and ends with status 1, when a step of a client's mix
failed: that client's capture then lacks the step's traffic, so it is not the shape the
benchmark's figures are quoted for. The recording itself is replaced here (no clients run)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

import real_shaped


def _recorded(failures: dict[str, list[str]]) -> Any:
    def record(client: str, rounds: int) -> tuple[list[Any], real_shaped.Steps, list[str], float]:
        steps = real_shaped.Steps(done=5, failures=list(failures.get(client, [])))
        return [], steps, [], 0.1

    return record


@pytest.fixture
def no_files(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(real_shaped, "write_capture", lambda path, connections: 0)


@pytest.mark.usefixtures("no_files")
def test_a_failed_step_ends_the_recording_with_status_1_and_names_the_client(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(real_shaped, "record", _recorded({"aiokafka": ["produce none 15: KafkaTimeoutError"]}))
    status = real_shaped.main(["--out", str(tmp_path), "--only", "kafka-python", "--only", "aiokafka", "--no-decode"])
    out = capsys.readouterr()
    assert status == 1
    assert "not the intended shape: steps failed for aiokafka; record again" in out.err
    assert "step failed: produce none 15" in out.out


@pytest.mark.usefixtures("no_files")
def test_a_recording_with_no_failed_step_ends_with_status_0(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(real_shaped, "record", _recorded({}))
    assert real_shaped.main(["--out", str(tmp_path), "--only", "kafka-python", "--no-decode"]) == 0
    assert "not the intended shape" not in capsys.readouterr().err


def test_kafka_python_runs_fewer_steps_at_once_than_the_others() -> None:
    assert real_shaped.CLIENT_WORKERS["kafka-python"] < real_shaped.WORKERS
    assert set(real_shaped.CLIENT_WORKERS) <= set(real_shaped.CLIENTS)
