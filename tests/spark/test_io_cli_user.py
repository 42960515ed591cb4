"""The Spark commands as a user meets them: bad paths refused in one line before Spark starts,
a quiet run that prints nothing, progress only on a terminal, Parquet times readable everywhere."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pyarrow")
pytest.importorskip("pyspark")

import pyarrow as pa
import pyarrow.parquet as pq

from kafka_epochs.cli import main
from kafka_epochs.spark import job

SAMPLE = Path(__file__).resolve().parents[2] / "kafka_epochs" / "samples" / "sample.pcap"


@pytest.fixture
def no_spark(monkeypatch: pytest.MonkeyPatch) -> None:
    """Makes starting a session a test failure: a refusal must come before it."""

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("a Spark session was started for an input that should have been refused")

    monkeypatch.setattr(job, "session", refuse)


@pytest.mark.parametrize(
    "argv",
    [
        ["spark-decode", "/nonexistent.pcap", "--out", "OUT"],
        ["spark-decode", "EMPTY", "--out", "OUT"],
        ["spark-decode", "EMPTY/*.pcap", "--out", "OUT"],
        ["audit", "EMPTY"],
        ["audit", "/nonexistent/dir"],
        ["audit", "--table", "/nonexistent.parquet"],
    ],
)
def test_bad_inputs_get_one_line_and_exit_2(
    argv: list[str], tmp_path: Path, no_spark: None, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "empty").mkdir()
    argv = [a.replace("EMPTY", str(tmp_path / "empty")).replace("OUT", str(tmp_path / "out")) for a in argv]
    assert main(argv) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err.startswith("kafka-epochs: ")
    assert len(captured.err.strip().splitlines()) == 1 and "Traceback" not in captured.err
    assert not (tmp_path / "out").exists()


def test_a_report_without_the_report_extra_is_refused_before_spark_starts(
    tmp_path: Path, no_spark: None, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "matplotlib" else real(name, *a))
    assert main(["audit", str(SAMPLE), "--report", str(tmp_path / "r.html")]) == 2
    err = capsys.readouterr().err
    assert "needs the report extra" in err and "pip install 'kafka-epochs[report]'" in err
    assert not (tmp_path / "r.html").exists()


def test_a_spark_setting_must_be_key_equals_value(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as stop:
        main(["spark-decode", str(SAMPLE), "--out", "x", "--conf", "spark.executor.memory"])
    assert stop.value.code == 2 and "--conf takes KEY=VALUE" in capsys.readouterr().err


def test_a_capture_stream_reads_one_directory(tmp_path: Path) -> None:
    from kafka_epochs.spark.streaming import CaptureStreamReader

    with pytest.raises(ValueError, match="as a stream reads one directory"):
        CaptureStreamReader({"path": str(SAMPLE)})
    with pytest.raises(ValueError, match="as a stream reads one directory"):
        CaptureStreamReader({"paths": f'["{tmp_path}", "{tmp_path}"]'})


def test_the_progress_bar_shows_on_a_terminal_only(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[dict[str, Any]] = []

    class Stop(Exception):
        pass

    def record(master: str, app_name: str, **conf: Any) -> None:
        seen.append(conf)
        raise Stop

    from kafka_epochs.spark import session as session_module

    monkeypatch.setattr(session_module, "local_session", record)
    for tty, quiet in [(False, False), (True, False), (True, True)]:
        monkeypatch.setattr(sys.stderr, "isatty", lambda tty=tty: tty, raising=False)
        with pytest.raises(Stop):
            job.session("local[1]", quiet=quiet)
    assert [c["spark.ui.showConsoleProgress"] for c in seen] == [False, True, False]
    assert "log4j2.configurationFile" in seen[2]["spark.driver.extraJavaOptions"]
    assert all(c["spark.sql.parquet.outputTimestampType"] == "TIMESTAMP_MICROS" for c in seen)


def test_a_quiet_run_prints_nothing_and_its_times_read_alike(tmp_path: Path) -> None:
    """A fresh JVM (start-up lines happen once per process), then the Parquet it wrote."""
    out = tmp_path / "decoded"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "kafka_epochs.cli",
            "spark-decode",
            str(SAMPLE),
            "--out",
            str(out),
            "--quiet",
            "--master",
            "local[1]",
        ],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    assert done.stderr == "" and done.stdout == ""
    table = pq.read_table(out)
    assert table.schema.field("time").type == pa.timestamp("us", tz="UTC")
    # the same instants as the full-precision column beside them
    times = table.column("time").cast(pa.int64()).to_pylist()
    nanos = table.column("time_ns").to_pylist()
    assert all(t is None or t == n // 1000 for t, n in zip(times, nanos, strict=True)) and any(times)
