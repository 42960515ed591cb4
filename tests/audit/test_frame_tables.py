"""``audit --table``: Parquet tables of frames, as Spark writes them (a directory of part files)
or as single files, several at once, audit as the captures they came from; a table that holds
no frames (``spark-decode``'s output without ``--keep-frames``) is refused, not audited as empty."""

from __future__ import annotations

import io
import json
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from kafka_epochs.audit.local import audit_frame_batches
from kafka_epochs.cli import main
from kafka_epochs.frame_rows import capture_frames, to_batches
from kafka_epochs.samples import CLIENTS_CAPTURE, SAMPLE_CAPTURE


def _run(*argv: str) -> tuple[int, list[str], str]:
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = main(list(argv))
    return code, sorted(out.getvalue().splitlines()), err.getvalue()


def _frames(capture: Path) -> pa.Table:
    return pa.Table.from_batches(list(to_batches(capture_frames(str(capture)), batch_rows=16)))


def _as_spark_writes(table: pa.Table, directory: Path, parts: int) -> Path:
    directory.mkdir()
    step = -(-table.num_rows // parts)
    for n in range(parts):
        pq.write_table(table.slice(n * step, step), directory / f"part-{n:05d}.snappy.parquet")
    (directory / "_SUCCESS").write_bytes(b"")
    return directory


def test_tables_in_directories_and_files_audit_as_their_captures(tmp_path: Path) -> None:
    sample = _as_spark_writes(_frames(SAMPLE_CAPTURE), tmp_path / "sample-frames", parts=3)
    clients = tmp_path / "clients-frames.parquet"
    pq.write_table(_frames(CLIENTS_CAPTURE), clients)

    expected = _run("audit", str(SAMPLE_CAPTURE), str(CLIENTS_CAPTURE), "--format", "jsonl", "--timeline")
    got = _run("audit", "--table", str(sample), str(clients), "--format", "jsonl", "--timeline")
    assert expected[0] == got[0] == 0
    assert got[1] == expected[1]
    assert len([row for row in got[1] if json.loads(row)["table"] == "incidents"]) >= 4
    # one directory alone (a dataset of a directory was the only shape that read before)
    assert (
        _run("audit", "--table", str(sample), "--format", "jsonl")[1]
        == _run("audit", str(SAMPLE_CAPTURE), "--format", "jsonl")[1]
    )


def test_a_table_without_frames_is_refused_not_audited_as_empty(tmp_path: Path) -> None:
    decoded = _frames(SAMPLE_CAPTURE).drop_columns(["frame"])  # (spark-decode's output has no frames)
    directory = _as_spark_writes(decoded, tmp_path / "decoded", parts=2)
    code, out, err = _run("audit", "--table", str(directory))
    assert (code, out) == (2, [])
    assert err.startswith(f"kafka-epochs: {directory} has no 'frame' column: the audit reads frames")
    assert "--keep-frames" in err
    with pytest.raises(ValueError, match="has no 'direction', 'request_api_key' columns"):
        audit_frame_batches(_frames(SAMPLE_CAPTURE).drop_columns(["direction", "request_api_key"]).to_batches())
