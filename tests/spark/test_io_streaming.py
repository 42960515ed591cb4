"""``spark.readStream.format("kafka-capture")``: capture files as they land, each read once, across restarts."""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pyspark")
pytest.importorskip("pyarrow")

from epoch_story import write_damaged, write_sample

from kafka_epochs.spark.datasource import register
from kafka_epochs.spark.streaming import START, CaptureStreamReader

SAMPLES = Path(__file__).resolve().parents[2] / "kafka_epochs" / "samples"
SETTLE = 0.5


def reader(folder: Path, settle: float = SETTLE) -> CaptureStreamReader:
    return CaptureStreamReader({"path": str(folder), "settleseconds": str(settle)})


def test_files_still_being_written_wait_until_they_settle(tmp_path: Path) -> None:
    shutil.copy(SAMPLES / "sample.pcap", tmp_path / "a.pcap")
    (tmp_path / "notes.txt").write_text("not a capture")
    assert reader(tmp_path, settle=3600).complete_files() == []  # changed just now: in progress
    time.sleep(SETTLE + 0.1)
    assert [name for _, name in reader(tmp_path).complete_files()] == ["a.pcap"]


def test_a_file_copied_with_old_times_still_comes_after_the_files_already_read(tmp_path: Path) -> None:
    shutil.copy(SAMPLES / "sample.pcap", tmp_path / "a.pcap")
    time.sleep(SETTLE + 0.1)
    stream = reader(tmp_path)
    first = stream.latestOffset(dict(START))
    assert [p.path for p in stream.partitions(dict(START), first)] == [str(tmp_path / "a.pcap")]
    shutil.copy2(SAMPLES / "clients.pcap", tmp_path / "0-old.pcap")  # cp -p: a 2001 mtime, a sorting-first name
    os.utime(tmp_path / "0-old.pcap", (1e9, 1e9))
    time.sleep(SETTLE + 0.1)
    second = stream.latestOffset(first)
    assert [p.path for p in stream.partitions(first, second)] == [str(tmp_path / "0-old.pcap")]
    assert stream.latestOffset(second) == second and stream.partitions(second, second) == []


def test_the_stream_reads_each_file_once_across_a_restart(spark: Any, tmp_path: Path) -> None:
    register(spark)
    incoming, out, checkpoint = tmp_path / "in", tmp_path / "out", tmp_path / "checkpoint"
    incoming.mkdir()

    def start() -> Any:
        frames = spark.readStream.format("kafka-capture").option("settleSeconds", str(SETTLE)).load(str(incoming))
        return (
            frames.writeStream.format("parquet")
            .option("path", str(out))
            .option("checkpointLocation", str(checkpoint))
            .trigger(processingTime="500 milliseconds")
            .start()
        )

    def land() -> None:
        time.sleep(SETTLE + 0.2)  # settled
        query.processAllAvailable()
        assert query.exception() is None

    query = start()
    shutil.copy(SAMPLES / "sample.pcap", incoming / "cap-1.pcap")
    write_damaged(incoming / "cap-2.pcap")
    land()
    query.stop()
    write_sample(incoming / "cap-3.pcap")  # lands while nothing runs
    query = start()  # the restart resumes from the checkpoint
    land()
    shutil.copy(SAMPLES / "clients.pcap", incoming / "cap-4.pcap")
    land()
    query.stop()

    streamed = spark.read.parquet(str(out))
    batch = spark.read.format("kafka-capture").load(str(incoming))
    columns = ["capture", "seq", "direction", "correlation_id", "frame", "capture_error"]
    got = sorted(tuple(r) for r in streamed.select(*columns).collect())
    want = sorted(tuple(r) for r in batch.select(*columns).collect())
    assert got == want and len(got) > 200  # rows out = frames in, none twice
    assert {Path(r.capture).name for r in streamed.select("capture").distinct().collect()} == {
        "cap-1.pcap",
        "cap-2.pcap",
        "cap-3.pcap",
        "cap-4.pcap",
    }
