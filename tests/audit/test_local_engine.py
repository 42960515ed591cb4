"""``kafka-epochs audit`` in-process: what a user reads, writes and is told, without Spark.

The verdicts themselves are held to the Spark engine's in ``tests/spark/test_io_audit_engines.py``;
here: the words and their frame references (each ``see it`` command, run, prints that very
exchange), the rows and tables, the exit status, and captures that cannot be read whole.
"""

from __future__ import annotations

import io
import json
import os
import shlex
import subprocess
import sys
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import pyarrow.parquet as pq
import pytest

import kafka_epochs
from kafka_epochs.audit.findings import arrow_schemas
from kafka_epochs.audit.local import audit_captures
from kafka_epochs.cli import main
from kafka_epochs.samples import CLIENTS_CAPTURE, SAMPLE_CAPTURE


def run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = main(list(argv))
    return code, out.getvalue(), err.getvalue()


def test_the_sample_in_words_each_incident_with_the_command_that_shows_it() -> None:
    code, out, _ = run("audit", str(SAMPLE_CAPTURE))
    assert code == 0
    head = out.splitlines()
    assert head[0].startswith("audit of 1 capture (in-process): 2026-11-21 06:14:26.535972 to ")
    assert "incidents: 1 stale request, 1 StopReplica fenced, 2 epoch errors in answers" in out
    assert "Produce v12 from 10.20.0.3:52000 carried leader epoch 6 for orders-1 while the leader was at 8" in out
    commands = [line.split("see it: ", 1)[1] for line in head if "see it: " in line]
    assert len(commands) == 4
    for command in commands:
        argv = shlex.split(command)
        assert argv[:2] == ["kafka-epochs", "decode"]
        code, shown, _ = run(*argv[1:])
        exchanges = [json.loads(line) for line in shown.splitlines()]
        wanted = int(argv[argv.index("--correlation-id") + 1])
        assert code == 0 and [(e["client"], e["correlation_id"]) for e in exchanges] == [
            (argv[argv.index("--client") + 1], wanted)
        ]


def test_rows_tables_and_the_rows_limit(tmp_path: Path) -> None:
    code, out, err = run("audit", str(SAMPLE_CAPTURE), str(CLIENTS_CAPTURE), "--format", "jsonl", "--timeline")
    assert code == 0 and "audit of 2 captures" in err  # the summary goes to stderr with jsonl
    rows = [json.loads(line) for line in out.splitlines()]
    incidents = [r for r in rows if r["table"] == "incidents"]
    timeline = [r for r in rows if r["table"] == "timeline"]
    assert sorted(r["kind"] for r in incidents) == [
        "fenced_response",
        "fenced_response",
        "stale_request",
        "stop_replica_fenced",
    ]
    assert [r["time_ns"] for r in incidents] == sorted(r["time_ns"] for r in incidents)
    assert {(r["topic"], r["partition"], r["leader_epoch"]) for r in timeline} >= {("orders", 1, 8)}
    assert run("audit", str(SAMPLE_CAPTURE), "--out", str(tmp_path / "t"))[0] == 0
    for name, schema in arrow_schemas().items():
        table = pq.read_table(tmp_path / "t" / name)
        assert table.schema.names == schema.names
    written = pq.read_table(tmp_path / "t" / "incidents").to_pylist()
    assert [(r["kind"], r["requested_epoch"]) for r in written if r["kind"] == "stale_request"] == [
        ("stale_request", 6)
    ]
    code, out, _ = run("audit", str(SAMPLE_CAPTURE), "--format", "table", "--rows", "1")
    assert code == 0 and "BROKER SAID" in out and "... and 3 more incidents" in out


def test_captures_not_read_whole_are_named_and_exit_1(tmp_path: Path) -> None:
    (tmp_path / "empty.pcap").write_bytes(b"")
    (tmp_path / "notes.pcap").write_text("not a capture at all\n")
    (tmp_path / "cut.pcap").write_bytes(SAMPLE_CAPTURE.read_bytes()[:15000])
    code, out, err = run("audit", str(tmp_path))
    assert code == 1
    assert "3 captures not read whole (frames may be missing from them):" in out
    assert "file ends inside a packet" in out and "is neither pcap nor pcapng" in out and "0 bytes long" in out
    assert "3 of 3 captures were not read whole" in err
    code, out, _ = run("audit", str(SAMPLE_CAPTURE))
    assert code == 0 and "not read whole" not in out


def test_what_the_in_process_engine_refuses(tmp_path: Path) -> None:
    code, _, err = run("audit", "/nonexistent/captures")
    assert code == 2 and "no capture files there" in err
    # a pipe (a shell's <(zcat x.pcap.gz) is one) is read in ranges and more than once: refused
    # saying so, before anything is opened (opening a named pipe with no writer would block)
    pipe = tmp_path / "live.pcap"
    os.mkfifo(pipe)
    code, _, err = run("audit", str(pipe))
    assert code == 2 and f"{pipe} is a pipe" in err and "save it to a file first" in err
    code, _, err = run("audit", "/dev/null")
    assert code == 2 and "/dev/null is not a file or a directory" in err
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / "notes.txt").write_text("no capture")
    code, _, err = run("audit", str(empty))
    assert code == 2 and f"{empty} is a directory with no capture files in it (.pcap" in err


def test_an_install_without_pyarrow_is_told_what_the_audit_needs(tmp_path: Path) -> None:
    """A plain ``pip install kafka-epochs`` has no PyArrow (the spark extra brings it): the audit
    says so and how to get it, before any capture is read (it raised ModuleNotFoundError while
    naming its inputs, from a module that imports PyArrow)."""
    root = Path(kafka_epochs.__file__).resolve().parents[1]
    script = (
        "import sys\n"
        f"sys.path.insert(0, {str(root)!r})\n"  # (-S: no site-packages, so no PyArrow, as a plain install)
        "from kafka_epochs.cli import main\n"
        "sys.exit(main(sys.argv[1:]))\n"
    )
    for argv in (["audit", str(SAMPLE_CAPTURE)], ["audit", "--follow", str(tmp_path)]):
        done = subprocess.run(
            [sys.executable, "-S", "-c", script, *argv], capture_output=True, text=True, check=False, cwd=tmp_path
        )
        assert done.returncode == 2, done.stderr
        assert done.stderr == "kafka-epochs: the audit needs pyarrow: pip install 'kafka-epochs[spark]'\n"


def test_negative_counts_are_refused_not_sliced_from_the_end() -> None:
    """``rows[:-1]`` would be every incident but the last; a report of ``ranked[:-3]`` partitions
    would draw all but three, each silently."""
    found = audit_captures([str(SAMPLE_CAPTURE)])
    assert len(list(found.incidents(limit=0))) == 0 and len(list(found.incidents(limit=1))) == 1
    with pytest.raises(ValueError, match="0 or more, not -1"):
        found.incidents(limit=-1)
    found.partitions = -3
    with pytest.raises(ValueError, match="max_partitions is a count, 0 or more, not -3"):
        found.report_data()
    found.partitions = 1
    with pytest.raises(ValueError, match="max_markers is a count"):
        found.report_data(max_markers=-1)
    assert len(found.report_data().partitions) == 1
