"""``kafka-epochs spark-decode`` and ``kafka-epochs audit``, through the command line's parser."""

from __future__ import annotations

import io
import json
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pyarrow")
pytest.importorskip("pyspark")

import pyarrow.parquet as pq
from epoch_story import write_damaged, write_sample
from html_page import Page

from kafka_epochs.cli import build_parser


def run(*argv: str) -> tuple[int, str, str]:
    args = build_parser().parse_args(list(argv))
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = args.run(args)
    return code, out.getvalue(), err.getvalue()


@pytest.fixture(scope="module")
def captures(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("cli")
    write_sample(root / "story.pcap")
    write_damaged(root / "damaged.pcap")
    return root


def test_spark_decode_writes_parquet_and_summarises(spark: Any, captures: Path, tmp_path: Path) -> None:
    out = tmp_path / "decoded"
    code, _, err = run("spark-decode", str(captures), "--out", str(out), "--master", "local[2]", "--flow-buckets", "2")
    assert code == 0  # bad rows (a gap, a cut packet, orphan responses) never fail the job
    table = pq.read_table(out).to_pylist()
    assert len(table) == 44
    assert sum(r["capture_error"] is not None for r in table) == 2
    assert "frame" not in table[0] and {"body_json", "error", "capture_error", "seq", "client"} <= set(table[0])
    story = sorted((r for r in table if r["capture"].endswith("story.pcap")), key=lambda r: r["seq"])
    assert [r["api_name"] for r in story[:4]] == ["ApiVersions", "ApiVersions", "Metadata", "Metadata"]
    assert all(r["error"] is None for r in story)
    assert "44 frames decoded in" in err and "Spark start-up" in err
    assert "2 capture problems" in err and "per api: ApiVersions 4" in err


def test_spark_decode_json_keeps_frames_and_refuses_to_overwrite(spark: Any, captures: Path, tmp_path: Path) -> None:
    out = tmp_path / "json"
    story = str(captures / "story.pcap")
    assert run("spark-decode", story, "--out", str(out), "--format", "json", "--keep-frames", "--quiet")[0] == 0
    lines = [json.loads(line) for f in sorted(out.glob("part-*.json")) for line in f.read_text().splitlines()]
    assert len(lines) == 27 and all(line["frame"] for line in lines)
    code, _, err = run("spark-decode", story, "--out", str(out), "--quiet")
    assert code == 2 and "exists (add --overwrite" in err
    assert run("spark-decode", story, "--out", str(out), "--overwrite", "--quiet")[0] == 0


def test_audit_on_spark_prints_words_and_writes_the_tables_and_report(
    spark: Any, captures: Path, tmp_path: Path
) -> None:
    page = tmp_path / "pages" / "audit.html"
    code, out, err = run(
        "audit",
        str(captures / "story.pcap"),
        "--out",
        str(tmp_path / "audit"),
        "--equal-epoch",
        "fence",
        "--quiet",
        "--report",
        str(page),
        "--report-partitions",
        "1",
        "--timeline",
        "--engine",
        "spark",
    )
    assert code == 0
    assert f"report: {page}" in err
    text = Page(page.read_text(encoding="utf-8")).text
    assert "1 more with incidents are not drawn" in text  # --report-partitions 1 of the story's 2
    assert "Verdicts the brokers contradict 1" in text and "so this verdict is not trusted" in text
    assert "(Spark local" in out.splitlines()[0]
    assert "incidents: 3 stale requests, 1 StopReplica fenced, 6 epoch errors in answers" in out
    assert "leader epochs seen: 4" in out and "UNKNOWN_LEADER_EPOCH" in out
    written = pq.read_table(tmp_path / "audit" / "incidents").to_pylist()
    assert [r["requested_epoch"] for r in written if r["kind"] == "stop_replica_fenced"] == [2]
    assert [r["requested_epoch"] for r in written if r["kind"] == "disagreement"] == [7]
    assert pq.read_table(tmp_path / "audit" / "timeline").num_rows == 4


def test_the_report_is_drawn_in_process_unless_spark_is_asked_for(captures: Path, tmp_path: Path) -> None:
    page = tmp_path / "audit.html"
    code, out, err = run("audit", str(captures / "story.pcap"), "--report", str(page), "--equal-epoch", "fence")
    assert code == 0 and f"report: {page}" in err
    assert "(in-process)" in out.splitlines()[0]  # auto: no Spark for a report any more
    assert "so this verdict is not trusted" in Page(page.read_text(encoding="utf-8")).text


def test_audit_refuses_what_its_engine_cannot_do(captures: Path) -> None:
    story = str(captures / "story.pcap")
    code, _, err = run("audit", str(captures), "--follow", "--engine", "local", "--quiet")
    assert code == 2 and "runs on Spark" in err
    with pytest.raises(SystemExit) as exited:  # (refused as it is parsed: test_command_parsers says how)
        run("audit", story, "--rows", "-1")
    assert exited.value.code == 2


def test_spark_decode_fields_and_headers_only(spark: Any, captures: Path, tmp_path: Path) -> None:
    story = str(captures / "story.pcap")
    full_out, fields_out, heads_out = tmp_path / "full", tmp_path / "fields", tmp_path / "heads"
    assert run("spark-decode", story, "--out", str(full_out), "--quiet")[0] == 0
    full = pq.read_table(full_out).to_pylist()
    paths = "topics[].partitions[].leader_epoch,topics[].name"
    code, _, err = run("spark-decode", story, "--out", str(fields_out), "--fields", paths)
    assert code == 0
    rows = pq.read_table(fields_out).to_pylist()
    assert "body_json" not in rows[0] and {"leader_epoch", "name", "seq", "capture"} <= set(rows[0])
    assert {r["seq"] for r in rows} == {r["seq"] for r in full}  # every frame kept
    # the Metadata responses' epochs, from the full decode's JSON bodies
    want = sorted(
        (r["seq"], t["name"], p["leader_epoch"])
        for r in full
        if r["api_name"] == "Metadata" and r["direction"] == "response"
        for t in json.loads(r["body_json"])["topics"]
        for p in t["partitions"]
    )
    got = sorted(
        (r["seq"], r["name"], r["leader_epoch"])
        for r in rows
        if r["api_name"] == "Metadata" and r["direction"] == "response" and r["leader_epoch"] is not None
    )
    assert got == want and got
    assert f"{len(full)} frames decoded in" in err  # frames, not projected rows
    assert run("spark-decode", story, "--out", str(heads_out), "--headers-only", "--quiet")[0] == 0
    heads = pq.read_table(heads_out).to_pylist()
    assert len(heads) == len(full) and all(r["body_json"] is None for r in heads)
    code, _, err = run("spark-decode", story, "--out", str(tmp_path / "x"), "--fields", "topics[].nmae")
    assert code == 2 and "no message of the" in err and len(err.strip().splitlines()) == 1
