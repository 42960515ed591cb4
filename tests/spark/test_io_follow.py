"""``kafka-epochs audit --follow DIR``: incidents printed as capture files land, once each, across restarts."""

from __future__ import annotations

import shutil
import threading
import time
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pyspark")
pytest.importorskip("pyarrow")

from epoch_story import write_sample

from kafka_epochs.spark.follow import Follow

from .test_io_cli import run

SAMPLES = Path(__file__).resolve().parents[2] / "kafka_epochs" / "samples"
TRIGGER, SETTLE = 1.0, 0.5


class Lines:
    """A text stream that keeps each printed line with the time it came."""

    def __init__(self) -> None:
        self.lines: list[tuple[float, str]] = []

    def write(self, text: str) -> int:
        self.lines += [(time.monotonic(), line) for line in text.splitlines() if line.strip()]
        return len(text)

    def flush(self) -> None:
        pass


def test_an_incident_is_printed_within_a_trigger_of_its_file_settling(spark: Any, tmp_path: Path) -> None:
    incoming = tmp_path / "in"
    incoming.mkdir()
    out = Lines()
    follow = Follow(spark, str(incoming), tmp_path / "state", trigger_seconds=TRIGGER, settle_seconds=SETTLE, out=out)
    thread = threading.Thread(target=follow.run, kwargs={"stop_after": 120})
    thread.start()
    try:
        while not any(q.recentProgress for q in spark.streams.active):  # warmed up, looked once
            time.sleep(0.1)
        write_sample(incoming / "story.pcap")
        landed = time.monotonic()
        while not out.lines and time.monotonic() - landed < 90:
            time.sleep(0.1)
    finally:
        for query in spark.streams.active:
            query.stop()
        thread.join()
    assert out.lines, "nothing printed"
    latency = out.lines[0][0] - landed
    # settle, then at most one trigger until the batch starts, then the batch's one Spark job
    # and its judging on the driver (about 1 s warm, 5 s cold on an idle 2-core machine:
    # benchmarks/bench_follow.py): a bound with room for a loaded machine
    assert latency < SETTLE + TRIGGER + 60, latency
    assert follow.batches >= 1 and follow.audit.rejudgings == 0  # each batch judged after the last
    text = "\n".join(line for _, line in out.lines)
    assert "Produce v12 from 10.0.0.1:50001 carried leader epoch 4 for orders-0 while the leader was at 5" in text
    assert "StopReplica v3 from 10.0.0.20:40000 (the controller) carried leader epoch 2 for orders-1" in text


def test_the_command_resumes_from_its_state_and_prints_nothing_twice(spark: Any, tmp_path: Path) -> None:
    incoming, state = tmp_path / "in", tmp_path / "state"
    incoming.mkdir()
    write_sample(incoming / "story-1.pcap")
    args = ["audit", str(incoming), "--follow", "--state", str(state), "--quiet", "--once"]
    args += ["--trigger-seconds", str(TRIGGER), "--settle-seconds", str(SETTLE)]
    code, first, _ = run(*args)
    assert code == 0 and "FENCED_LEADER_EPOCH (KIP-359)" in first
    shutil.copy(SAMPLES / "clients.pcap", incoming / "clients.pcap")  # real clients: no incident
    code, second, _ = run(*args)
    assert code == 0 and second.strip() == ""  # story-1's incidents were printed already
    write_sample(incoming / "story-2.pcap")  # the same story again, another file: its own incidents
    code, third, _ = run(*args)
    assert code == 0 and sorted(third.splitlines()) == sorted(first.splitlines())  # story-1's not again


def test_follow_takes_one_directory(tmp_path: Path) -> None:
    code, _, err = run("audit", str(SAMPLES / "sample.pcap"), "--follow", "--quiet")
    assert code == 2 and "one directory" in err


def test_events_extracted_in_parts_audit_as_the_frames_do_together(spark: Any, tmp_path: Path) -> None:
    """What ``--follow`` relies on: the events of each micro-batch's frames, stored and audited
    together, give the audit of all the frames at once."""
    from kafka_epochs.spark.epoch_audit import audit, audit_of_events, extract_events
    from kafka_epochs.spark.job import read_captures

    write_sample(tmp_path / "story.pcap")
    shutil.copy(SAMPLES / "sample.pcap", tmp_path / "sample.pcap")
    frames = read_captures(spark, [str(tmp_path)])
    whole = audit(frames)
    parts = tmp_path / "events"
    for name in ("story.pcap", "sample.pcap"):
        extract_events(read_captures(spark, [str(tmp_path / name)])).write.mode("append").parquet(str(parts))
    stored = audit_of_events(spark.read.parquet(str(parts)))
    try:
        for name, table in whole.tables().items():
            expected = sorted(map(repr, table.collect()))
            assert expected or name == "disagreements", name  # the captures have no disputed verdict
            assert sorted(map(repr, stored.tables()[name].collect())) == expected, name
    finally:
        whole.unpersist()
        stored.unpersist()


def test_a_state_that_holds_frames_is_carried_over(spark: Any, tmp_path: Path) -> None:
    """A follow of an earlier version stored frames: their events are extracted once, so the
    epochs they saw still judge the files that come next."""
    from kafka_epochs.spark.job import read_captures

    incoming, state = tmp_path / "in", tmp_path / "state"
    incoming.mkdir()
    write_sample(tmp_path / "story.pcap")
    read_captures(spark, [str(tmp_path / "story.pcap")]).write.parquet(str(state / "frames"))
    out = Lines()
    follow = Follow(spark, str(incoming), state, trigger_seconds=TRIGGER, settle_seconds=SETTLE, out=out)
    assert follow.run(once=True) == 0
    assert (state / "events").is_dir()
    text = "\n".join(line for _, line in out.lines)
    assert "carried leader epoch 4 for orders-0 while the leader was at 5" in text


def test_a_failed_warm_up_is_said_and_the_follow_goes_on(
    spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import kafka_epochs.spark.follow as follow_module

    calls = []
    extract = follow_module.extract_events

    def failing_first(*args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        if len(calls) == 1:
            raise RuntimeError("no executors yet")
        return extract(*args, **kwargs)

    monkeypatch.setattr(follow_module, "extract_events", failing_first)
    incoming = tmp_path / "in"
    incoming.mkdir()
    write_sample(incoming / "story.pcap")
    out = Lines()
    follow = Follow(spark, str(incoming), tmp_path / "state", trigger_seconds=TRIGGER, settle_seconds=0, out=out)
    thread = threading.Thread(target=follow.run, kwargs={"stop_after": 60})
    thread.start()
    try:
        while len(out.lines) < 2 and thread.is_alive():
            time.sleep(0.1)
    finally:
        for query in spark.streams.active:
            query.stop()
        thread.join()
    text = "\n".join(line for _, line in out.lines)
    assert "warm-up failed (no executors yet); following all the same" in text
    assert "carried leader epoch 4 for orders-0 while the leader was at 5" in text


def test_a_restart_resumes_the_judging_it_kept_and_judges_the_store_again_without_it(
    spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from kafka_epochs.audit.judging import IncrementalAudit

    incoming, state = tmp_path / "in", tmp_path / "state"
    incoming.mkdir()
    write_sample(incoming / "story-1.pcap")

    def once() -> str:
        out = Lines()
        follow = Follow(spark, str(incoming), state, trigger_seconds=TRIGGER, settle_seconds=0, out=out)
        assert follow.run(once=True) == 0
        return "\n".join(line for _, line in out.lines)

    first = once()
    assert "KIP-359" in first and (state / "judged.json").is_file()
    reloads = []
    real_reload = IncrementalAudit.reload
    monkeypatch.setattr(IncrementalAudit, "reload", lambda self: reloads.append(1) or real_reload(self))
    # the same story again, another file: its own incidents, in the same words (same times)
    write_sample(incoming / "story-2.pcap")
    second = once()
    assert reloads == []  # resumed from what the last run kept, the store not read again
    assert sorted(second.splitlines()) == sorted(first.splitlines())  # story-1's not again
    (state / "judged.json").write_bytes(b"cut short")
    write_sample(incoming / "story-3.pcap")
    third = once()
    assert reloads == [1]  # judged the store again: nothing printed twice, the new file's incidents
    assert sorted(third.splitlines()) == sorted(first.splitlines())


def test_a_query_that_fails_is_said_in_one_line_and_exits_2(
    spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Not a Python traceback: what stopped the follow, in one line (a scheduled job's log)."""
    import kafka_epochs.spark.follow as follow_module

    def failing(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("a worker timed out connecting back\n  at some.java.Frame(Frame.java:1)")

    monkeypatch.setattr(follow_module, "extract_events", failing)
    incoming = tmp_path / "in"
    incoming.mkdir()
    write_sample(incoming / "story.pcap")
    out = Lines()
    follow = Follow(spark, str(incoming), tmp_path / "state", trigger_seconds=TRIGGER, settle_seconds=0, out=out)
    assert follow.run(once=True) == 2
    said = [line for _, line in out.lines]
    assert len(said) == 1 and said[0].startswith("kafka-epochs: the follow stopped: ")
    assert "\n" not in said[0] and "Traceback" not in said[0], said[0]
    assert said[0].endswith("RuntimeError: a worker timed out connecting back"), said[0]
