"""The audit's two engines say the same: in-process and Spark, row for row and word for word.

Each case runs ``kafka-epochs audit`` twice, ``--engine local`` and ``--engine spark``, and holds
the incident and timeline rows (``--format jsonl --timeline``), the summary, the tables written
with ``--out`` and the exit status equal. The captures: the epoch story (stale requests, a fenced
StopReplica, a verdict the broker disputes), the bundled sample and real clients' traffic together, two
clusters that look alike, a damaged capture, one whose frames could not be read, and files that
are not captures or are cut short.
"""

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
from epoch_story import cluster_capture, write_damaged, write_sample, write_unreadable

from kafka_epochs.cli import main
from kafka_epochs.samples import CLIENTS_CAPTURE, SAMPLE_CAPTURE


def audit(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = main(["audit", *argv, "--quiet"])
    return code, out.getvalue(), err.getvalue()


@pytest.fixture(scope="module")
def cases(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[str]]:
    root = tmp_path_factory.mktemp("engines")
    write_sample(root / "story.pcap")
    write_damaged(root / "damaged.pcap")
    write_unreadable(root / "unreadable.pcap")
    hostile = root / "not read whole"
    hostile.mkdir()
    (hostile / "empty.pcap").write_bytes(b"")
    (hostile / "notes.pcap").write_text("not a capture\n")
    (hostile / "cut.pcap").write_bytes(SAMPLE_CAPTURE.read_bytes()[:15000])
    a = cluster_capture(root / "a.pcap", 5, "cluster-A")
    b = cluster_capture(root / "b.pcap", 2, "cluster-B")
    return {
        "story": [str(root / "story.pcap"), "--equal-epoch", "fence"],
        "sample": [str(SAMPLE_CAPTURE)],
        "clients": [str(CLIENTS_CAPTURE)],
        "two clusters": [str(a), str(b)],
        "two clusters, one key": [str(a), str(b), "--cluster-by", "broker"],
        "damaged": [str(root / "damaged.pcap")],
        "unreadable": [str(root / "unreadable.pcap")],
        "together": [str(root / "story.pcap"), str(SAMPLE_CAPTURE), str(CLIENTS_CAPTURE)],
        "not read whole": [str(hostile)],
    }


CASES = ["story", "two clusters", "two clusters, one key", "damaged", "unreadable", "together", "not read whole"]


@pytest.mark.parametrize("case", CASES)
def test_both_engines_give_the_same_rows_and_summary(spark: Any, cases: dict[str, list[str]], case: str) -> None:
    argv = [*cases[case], "--format", "jsonl", "--timeline"]
    here = audit(*argv, "--engine", "local")
    there = audit(*argv, "--engine", "spark")
    assert here[0] == there[0]
    assert here[1] == there[1]  # every incident and timeline row, in the same order
    assert here[2].replace("(in-process)", "(ENGINE)") == there[2].replace(f"(Spark {spark_master(spark)})", "(ENGINE)")
    rows = [json.loads(line) for line in here[1].splitlines()]
    assert {row["table"] for row in rows} <= {"incidents", "timeline"}
    assert bool(rows) == (case != "unreadable")  # there, nothing could be read: no epoch, no incident
    assert here[0] == (1 if case in ("unreadable", "damaged", "not read whole") else 0)
    not_whole = {"damaged": "1 capture not read whole", "not read whole": "3 captures not read whole"}
    assert ("not read whole" in here[2]) == (case in not_whole)
    assert not_whole.get(case, "") in here[2]


def spark_master(spark: Any) -> str:
    return str(spark.sparkContext.master)


def test_the_story_in_words_and_tables(spark: Any, cases: dict[str, list[str]], tmp_path: Path) -> None:
    story = cases["story"]
    outputs = {}
    for engine in ("local", "spark"):
        code, out, _ = audit(*story, "--engine", engine, "--out", str(tmp_path / engine))
        assert code == 0
        outputs[engine] = out
        incidents = pq.read_table(tmp_path / engine / "incidents").to_pylist()
        kinds = sorted(row["kind"] for row in incidents)
        assert kinds.count("stale_request") == 3 and kinds.count("fenced_response") == 6
        assert [r["requested_epoch"] for r in incidents if r["kind"] == "stop_replica_fenced"] == [2]
        assert [r["requested_epoch"] for r in incidents if r["kind"] == "disagreement"] == [7]
        assert pq.read_table(tmp_path / engine / "timeline").num_rows == 4
    here, there = outputs["local"], outputs["spark"]
    assert here.split("\n", 1)[1] == there.split("\n", 1)[1]  # all but the line naming the engine
    assert "incidents: 3 stale requests, 1 StopReplica fenced, 6 epoch errors in answers, 1 verdict" in here
    assert "UNKNOWN_LEADER_EPOCH" in here and "see it: kafka-epochs decode" in here
    assert "so this verdict is not trusted" in here  # the disputed verdict, explained
    local_tables = {n: pq.read_table(tmp_path / "local" / n) for n in ("incidents", "timeline")}
    spark_tables = {n: pq.read_table(tmp_path / "spark" / n) for n in ("incidents", "timeline")}
    for name, table in local_tables.items():
        assert table.schema.names == spark_tables[name].schema.names
        assert table.to_pylist() == spark_tables[name].to_pylist()


def test_both_engines_refuse_negative_counts(spark: Any, cases: dict[str, list[str]]) -> None:
    """A negative count would slice from the end of a ranked list: a report or a listing short by
    that many, silently."""
    from kafka_epochs.audit.local import audit_captures
    from kafka_epochs.spark.audit_findings import SparkFindings
    from kafka_epochs.spark.audit_report import report_data
    from kafka_epochs.spark.epoch_audit import audit as spark_audit
    from kafka_epochs.spark.job import read_captures

    paths = cases["story"][:1]
    with pytest.raises(ValueError, match="max_partitions is a count, 0 or more, not -1"):
        report_data(spark_audit(read_captures(spark, paths)), max_partitions=-1)
    with pytest.raises(ValueError, match="0 or more, not -2"):
        SparkFindings(spark_audit(read_captures(spark, paths)), "local").incidents(limit=-2)
    with pytest.raises(ValueError, match="0 or more, not -2"):
        audit_captures(paths).incidents(limit=-2)


@pytest.mark.parametrize("case", ["story", "together", "two clusters"])
def test_both_engines_draw_the_same_report(spark: Any, cases: dict[str, list[str]], case: str, tmp_path: Path) -> None:
    from kafka_epochs.audit.local import audit_captures
    from kafka_epochs.epochs import EqualEpochPolicy
    from kafka_epochs.spark.audit_report import report_data
    from kafka_epochs.spark.epoch_audit import audit as spark_audit
    from kafka_epochs.spark.job import read_captures

    paths = [a for a in cases[case] if not a.startswith("--") and a != "fence"]
    policy = EqualEpochPolicy.FENCE if "fence" in cases[case] else EqualEpochPolicy.ACCEPT
    # small bounds, so that choosing and thinning are tested too
    bounds = {"max_partitions": 2, "max_incidents": 2, "max_markers": 2}
    found = audit_captures(paths, equal_epoch=policy)
    found.partitions = bounds.pop("max_partitions")
    here = found.report_data(**bounds)
    result = spark_audit(read_captures(spark, paths), equal_epoch=policy)
    try:
        there = report_data(result, max_partitions=found.partitions, **bounds)
    finally:
        result.unpersist()
    for data in (here, there):  # the order Spark collects markers in is its own; the page sorts none of it
        for view in data.partitions:
            view.markers.sort(key=repr)
    assert here.partitions == there.partitions
    assert (here.partitions_left_out, here.incidents_left_out) == (there.partitions_left_out, there.incidents_left_out)
    assert here.other_incidents == there.other_incidents
    assert here.control_requests == there.control_requests
    assert here.summary == there.summary
    assert here.partitions and any(view.markers for view in here.partitions)
    assert (case != "two clusters") == bool(here.control_requests)  # the story has LeaderAndIsr requests
    # and the command draws it in-process
    code, _, err = audit(*cases[case], "--engine", "local", "--report", str(tmp_path / "page.html"))
    assert code == 0 and "report: " in err and (tmp_path / "page.html").stat().st_size > 10_000


def test_frame_tables_audit_alike_on_both_engines_and_a_table_without_frames_is_refused(
    spark: Any, tmp_path: Path
) -> None:
    import pyarrow as pa

    from kafka_epochs.frame_rows import capture_frames, to_batches

    frames = pa.Table.from_batches(list(to_batches(capture_frames(str(SAMPLE_CAPTURE)))))
    table = tmp_path / "frames"  # (as Spark writes a table: part files in a directory)
    table.mkdir()
    half = frames.num_rows // 2
    pq.write_table(frames.slice(0, half), table / "part-00000.parquet")
    pq.write_table(frames.slice(half), table / "part-00001.parquet")
    argv = ["--table", str(table), "--format", "jsonl", "--timeline"]
    here, there = audit(*argv, "--engine", "local"), audit(*argv, "--engine", "spark")
    assert here[0] == there[0] == 0
    assert (
        sorted(here[1].splitlines())
        == sorted(there[1].splitlines())
        == sorted(audit(str(SAMPLE_CAPTURE), "--format", "jsonl", "--timeline", "--engine", "local")[1].splitlines())
    )
    decoded = tmp_path / "decoded.parquet"
    pq.write_table(frames.drop_columns(["frame"]), decoded)
    for engine in ("local", "spark"):
        code, out, err = audit("--table", str(decoded), "--engine", engine)
        assert (code, out) == (2, "")
        assert err.startswith(f"kafka-epochs: {decoded} has no 'frame' column")
