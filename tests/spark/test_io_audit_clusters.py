"""The audit keeps independent clusters apart, and checks each verdict against the broker's answer.

Two captures of two clusters that look alike: the same broker endpoint, the same topic name,
unrelated leader epochs (5 in one, 2 in the other). Judged as one, the second cluster's healthy
requests look fenced; keyed by cluster, they are not, and whatever key is chosen a verdict the
broker's own answer contradicts is reported as such, never as stale.
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pyarrow")
pytest.importorskip("pyspark")

from epoch_story import cluster_capture

from kafka_epochs.cli import main
from kafka_epochs.spark.datasource import register
from kafka_epochs.spark.epoch_audit import audit


@pytest.fixture(scope="module")
def captures(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    register(spark)
    root = tmp_path_factory.mktemp("clusters")
    return {
        "a": cluster_capture(root / "a.pcap", 5, "cluster-A"),
        "b": cluster_capture(root / "b.pcap", 2, "cluster-B"),
        "quiet-b": cluster_capture(root / "quiet-b.pcap", 2, "cluster-B", stale_answer=0),
    }


def judged(spark: Any, paths: list[Path], **options: Any) -> Any:
    return audit(spark.read.format("kafka-capture").load([str(p) for p in paths]), **options)


def table(df: Any, *columns: str) -> list[tuple[Any, ...]]:
    return sorted(tuple(r[c] for c in columns) for r in df.collect())


def test_independent_clusters_are_judged_apart(spark: Any, captures: dict[str, Path]) -> None:
    result = judged(spark, [captures["a"], captures["b"]])
    assert table(result.timeline, "cluster", "leader_epoch") == [("cluster cluster-A", 5), ("cluster cluster-B", 2)]
    # each cluster's one-behind requests, and only those, are stale; the answered ones agree with
    # their broker, the acks=0 ones had no answer to compare with
    assert table(result.stale_requests, "cluster", "requested_epoch", "leader_epoch", "error", "agreement") == [
        ("cluster cluster-A", 4, 5, "FENCED_LEADER_EPOCH", "agrees"),
        ("cluster cluster-A", 4, 5, "FENCED_LEADER_EPOCH", "no response captured"),
        ("cluster cluster-B", 1, 2, "FENCED_LEADER_EPOCH", "agrees"),
        ("cluster cluster-B", 1, 2, "FENCED_LEADER_EPOCH", "no response captured"),
    ]
    assert result.disagreements.count() == 0
    for key in ("capture", "cluster-id"):
        assert table(
            judged(spark, [captures["a"], captures["b"]], cluster_key=key).stale_requests,
            "requested_epoch",
            "agreement",
        ) == table(result.stale_requests, "requested_epoch", "agreement")


def test_mixed_clusters_show_as_disagreements_not_as_stale(spark: Any, captures: dict[str, Path]) -> None:
    # keyed by broker endpoint, the two loopback-alike clusters are one: cluster B's requests at
    # its own current epoch (2) look older than A's 5, but B's broker accepted them
    result = judged(spark, [captures["a"], captures["b"]], cluster_key="broker")
    assert {r["cluster"] for r in result.timeline.collect()} == {"brokers 10.0.0.10:9092"}
    disagreements = table(result.disagreements, "requested_epoch", "error", "broker_error", "agreement")
    assert (2, "FENCED_LEADER_EPOCH", None, "disagrees with the broker") in disagreements
    assert all(r["agreement"] != "disagrees with the broker" for r in result.stale_requests.collect())


def test_a_stale_verdict_the_broker_did_not_share(spark: Any, captures: dict[str, Path]) -> None:
    result = judged(spark, [captures["quiet-b"]])
    assert table(result.disagreements, "requested_epoch", "leader_epoch", "error", "broker_error", "agreement") == [
        (1, 2, "FENCED_LEADER_EPOCH", None, "disagrees with the broker")
    ]
    assert table(result.stale_requests, "requested_epoch", "agreement") == [(1, "no response captured")]


def test_the_command_takes_cluster_by(
    spark: Any, captures: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["audit", str(captures["a"]), str(captures["b"]), "--cluster-by", "capture", "--format", "jsonl"]
    assert main([*argv, "--quiet"]) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    kinds = [row["kind"] for row in rows]
    assert kinds.count("disagreement") == 0 and kinds.count("stale_request") == 4
    assert {row["cluster"] for row in rows} == {"a.pcap", "b.pcap"}


def test_clusters_that_share_an_id_are_audited_apart_and_the_split_is_said(
    spark: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Two set-ups that fix the cluster id, with the same endpoint and topic name: their topic
    ids (random per cluster) tell them apart. Audited together they give what each gives alone,
    and the audit says the id names two clusters."""
    a = cluster_capture(tmp_path / "a.pcap", 5, "fixed-id", topic_id=uuid.UUID(int=0xA))
    b = cluster_capture(tmp_path / "b.pcap", 2, "fixed-id", topic_id=uuid.UUID(int=0xB))
    together = judged(spark, [a, b])
    alone = [judged(spark, [path]) for path in (a, b)]
    assert together.disagreements.count() == 0 == sum(r.disagreements.count() for r in alone)
    assert table(together.stale_requests, "requested_epoch", "agreement") == sorted(
        row for r in alone for row in table(r.stale_requests, "requested_epoch", "agreement")
    )
    assert together.split_clusters == {
        "fixed-id": ["cluster fixed-id (a.pcap 10.0.0.10:9092)", "cluster fixed-id (b.pcap 10.0.0.10:9092)"]
    }
    page = tmp_path / "report.html"
    assert main(["audit", str(a), str(b), "--quiet", "--report", str(page)]) == 0
    assert "cluster id fixed-id names 2 separate clusters" in capsys.readouterr().out
    assert "Cluster ids shared by separate clusters" in page.read_text(encoding="utf-8")
    # keyed by cluster id they are one: the second set-up's healthy requests disagree with its broker
    joined = judged(spark, [a, b], cluster_key="cluster-id")
    assert joined.split_clusters == {} and joined.disagreements.count() > 0
    # one cluster seen twice (the same topic id): one cluster, as before
    again = cluster_capture(tmp_path / "a-again.pcap", 5, "fixed-id", topic_id=uuid.UUID(int=0xA))
    assert judged(spark, [a, again]).split_clusters == {}
