"""An all-clear never rests on frames the audit could not read: a frame that could carry an epoch
and does not decode is an ``unreadable`` event, counted in the summary, the report and the exit
status ("the verdicts cover N of M frames")."""

from __future__ import annotations

import struct
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pyspark")
pytest.importorskip("pyarrow")

from epoch_story import damaged_produce, write_sample, write_unreadable
from html_page import Page

from kafka_epochs import Protocol
from kafka_epochs.audit.events import EVENT_SCHEMA, UNREADABLE, EventExtractor
from kafka_epochs.spark import audit

from .test_io_cli import run


def test_an_epoch_frame_that_does_not_decode_is_an_unreadable_event() -> None:
    extractor = EventExtractor(Protocol.auto())
    (event,) = extractor.events(damaged_produce(1), "request", None, None)
    fields = dict(zip(EVENT_SCHEMA.names[6:], event, strict=True))  # after the frame's own columns
    assert (fields["kind"], fields["api"], fields["api_version"]) == (UNREADABLE, "Produce", 12)
    assert "in ProduceRequest v12.topic_data" in fields["error"]
    garbage = struct.pack(">ihhih", 14, 3, 12, 1, 0) + b"\xff" * 4  # Metadata: no epoch rides on a request
    assert extractor.events(garbage, "request", None, None) == []


def test_the_audit_says_what_it_could_not_read_and_exits_1(spark: Any, tmp_path: Path) -> None:
    write_sample(tmp_path / "story.pcap")
    write_unreadable(tmp_path / "damaged.pcap")
    page = tmp_path / "audit.html"
    code, _, err = run("audit", str(tmp_path), "--quiet", "--report", str(page))
    assert code == 1
    assert "3 frames that could carry epochs did not decode; the verdicts cover" in err
    assert "topic_data" in err
    text = Page(page.read_text(encoding="utf-8")).text
    assert "Frames that could not be read 3: the verdicts cover" in text
    # the story alone: every frame read, exit 0, nothing said
    code, _, err = run("audit", str(tmp_path / "story.pcap"), "--quiet")
    assert code == 0 and "did not decode" not in err


def test_unreadable_frames_of_a_table_without_capture_names_are_counted_with_their_reason(spark: Any) -> None:
    frames = spark.createDataFrame(
        [(damaged_produce(1), "request", None, None), (damaged_produce(2), "request", None, None)],
        "frame binary, direction string, request_api_key int, request_api_version int",
    )
    summary = audit(frames).unreadable()
    assert summary is not None and summary.unreadable == 2
    ((reason, count),) = summary.unreadable_reasons
    assert count == 2 and "in ProduceRequest v12.topic_data" in reason
