"""partition.metadata (KIP-516): Kafka's exact text, both uuid forms, clear errors, atomic writes."""

from __future__ import annotations

import os
import uuid
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kafka_epochs.epochs import (
    PartitionMetadata,
    PartitionMetadataError,
    format_partition_metadata,
    kafka_uuid_text,
    parse_kafka_uuid,
    parse_partition_metadata,
    read_partition_metadata,
    write_partition_metadata,
)
from kafka_epochs.epochs import partition_metadata as module

TOPIC_ID = uuid.UUID("465ac677-6e70-4639-96d2-34e591b169b5")
KAFKA_TEXT = "RlrGd25wRjmW0jTlkbFptQ"  # Kafka's Uuid.toString() of TOPIC_ID
real_ids = st.uuids().filter(lambda u: u.int != 0)


def test_kip516_kafka_writes_two_lines_without_a_final_newline() -> None:
    assert format_partition_metadata(TOPIC_ID) == f"version: 0\ntopic_id: {KAFKA_TEXT}"


@pytest.mark.parametrize(
    "text",
    [
        pytest.param(f"version: 0\ntopic_id: {KAFKA_TEXT}", id="KIP-516: as Kafka writes it"),
        pytest.param(f"version: 0\ntopic_id: {TOPIC_ID}", id="KIP-516: canonical hyphenated uuid"),
        pytest.param(f"version: 0\ntopic_id: {str(TOPIC_ID).upper()}", id="KIP-516: hyphenated, upper case"),
        pytest.param(f"version: 0\ntopic_id: {KAFKA_TEXT}\n", id="KIP-516: a final newline"),
        pytest.param(f"version: 0\r\ntopic_id: {KAFKA_TEXT}\r\n", id="KIP-516: CRLF line ends"),
        pytest.param(f"version:   0\ntopic_id:\t{KAFKA_TEXT}", id="KIP-516: any whitespace after the colon, as Kafka"),
        pytest.param(f"version: 0\ntopic_id: {KAFKA_TEXT}\n\n", id="KIP-516: trailing blank lines"),
    ],
)
def test_kip516_accepted_content(text: str) -> None:
    assert parse_partition_metadata(text) == PartitionMetadata(TOPIC_ID, 0)


@pytest.mark.parametrize(
    ("text", "complaint"),
    [
        pytest.param(
            f"version: 1\ntopic_id: {KAFKA_TEXT}",
            "unsupported partition.metadata version 1",
            id="KIP-516: unknown version",
        ),
        pytest.param(
            f"version: -1\ntopic_id: {KAFKA_TEXT}",
            "unsupported partition.metadata version -1",
            id="KIP-516: negative version",
        ),
        pytest.param(f"version: zero\ntopic_id: {KAFKA_TEXT}", "version is not an integer", id="KIP-516: bad version"),
        pytest.param(
            f"version: 0_0\ntopic_id: {KAFKA_TEXT}",
            "version is not an integer",
            id="KIP-516: Python-only integer syntax",
        ),
        pytest.param(f"version:0\ntopic_id: {KAFKA_TEXT}", "malformed line", id="KIP-516: no space after the colon"),
        pytest.param(
            f"Metadata schema version: 0\nTopic ID: {TOPIC_ID}",
            "malformed line",
            id="KIP-516 draft page labels are not the file format",
        ),
        pytest.param("version: 0", "missing the 'topic_id", id="KIP-516: no topic id line"),
        pytest.param("", "empty", id="KIP-516: empty"),
        pytest.param(f"version: 0\ntopicid: {KAFKA_TEXT}", "malformed line", id="KIP-516: wrong key"),
        pytest.param("version: 0\ntopic_id: not-a-uuid", "not a uuid", id="KIP-516: bad uuid"),
        pytest.param(
            "version: 0\ntopic_id: RlrGd25wRjmW0jTlkbFptR",
            "not the canonical base64url",
            id="KIP-516: base64 with stray low bits",
        ),
        pytest.param(f"version: 0\ntopic_id: {{{TOPIC_ID}}}", "not a uuid", id="KIP-516: braces are not Kafka's forms"),
        pytest.param("version: 0\ntopic_id: AAAAAAAAAAAAAAAAAAAAAA", "zero uuid", id="KIP-516: the zero uuid"),
        pytest.param(
            f"version: 0\ntopic_id: {KAFKA_TEXT}\nleader_epoch: 3",
            "unexpected content",
            id="KIP-516: more lines than version 0 has",
        ),
    ],
)
def test_kip516_rejected_content(text: str, complaint: str) -> None:
    with pytest.raises(PartitionMetadataError, match=complaint):
        parse_partition_metadata(text, "orders-0/partition.metadata")


def test_errors_name_the_file() -> None:
    with pytest.raises(PartitionMetadataError, match=r"^orders-0/partition.metadata: "):
        parse_partition_metadata("version: 7\ntopic_id: x", "orders-0/partition.metadata")


@given(real_ids)
def test_kip516_round_trip_through_text(topic_id: uuid.UUID) -> None:
    text = kafka_uuid_text(topic_id)
    assert len(text) == 22
    assert parse_kafka_uuid(text) == topic_id
    assert parse_kafka_uuid(str(topic_id)) == topic_id
    assert parse_partition_metadata(format_partition_metadata(topic_id)).topic_id == topic_id


def test_kip516_write_then_read(tmp_path: Path) -> None:
    written = write_partition_metadata(tmp_path, TOPIC_ID)
    assert written == tmp_path / "partition.metadata"
    assert written.read_bytes() == f"version: 0\ntopic_id: {KAFKA_TEXT}".encode()
    assert read_partition_metadata(tmp_path) == PartitionMetadata(TOPIC_ID)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["partition.metadata"]  # no temp file left


def test_kip516_rewrite_replaces_the_old_id(tmp_path: Path) -> None:
    write_partition_metadata(tmp_path, TOPIC_ID)
    other = uuid.UUID(int=7)
    write_partition_metadata(tmp_path, other)
    assert read_partition_metadata(tmp_path) == PartitionMetadata(other)


def test_kip516_missing_or_empty_file_means_no_topic_id_yet(tmp_path: Path) -> None:
    assert read_partition_metadata(tmp_path) is None
    (tmp_path / "partition.metadata").write_bytes(b"")  # Kafka creates the file empty first
    assert read_partition_metadata(tmp_path) is None


def test_kip516_file_that_is_not_text_is_reported(tmp_path: Path) -> None:
    (tmp_path / "partition.metadata").write_bytes(b"version: 0\ntopic_id: \xff\xfe")
    with pytest.raises(PartitionMetadataError, match="not UTF-8"):
        read_partition_metadata(tmp_path)


def test_kip516_unknown_version_on_disk_is_reported_with_the_path(tmp_path: Path) -> None:
    (tmp_path / "partition.metadata").write_text(f"version: 2\ntopic_id: {KAFKA_TEXT}")
    with pytest.raises(PartitionMetadataError, match=r"partition\.metadata: unsupported partition.metadata version 2"):
        read_partition_metadata(tmp_path)


def test_kip516_a_failed_write_leaves_the_old_file_whole(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write_partition_metadata(tmp_path, TOPIC_ID)

    def crash(src: object, dst: object) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(module.os, "replace", crash)
    with pytest.raises(OSError, match="disk full"):
        write_partition_metadata(tmp_path, uuid.UUID(int=9))
    monkeypatch.undo()
    assert read_partition_metadata(tmp_path) == PartitionMetadata(TOPIC_ID)
    assert not (tmp_path / "partition.metadata.tmp").exists()


def test_kip516_the_write_is_a_rename_of_a_synced_temp_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[tuple[str, str]] = []
    real_replace = os.replace

    def spying_replace(src: str | os.PathLike[str], dst: str | os.PathLike[str]) -> None:
        calls.append((Path(src).name, Path(dst).name))
        assert Path(src).read_text() == format_partition_metadata(TOPIC_ID)  # complete before the rename
        real_replace(src, dst)

    monkeypatch.setattr(module.os, "replace", spying_replace)
    write_partition_metadata(tmp_path, TOPIC_ID)
    assert calls == [("partition.metadata.tmp", "partition.metadata")]


def test_writing_the_zero_uuid_is_refused(tmp_path: Path) -> None:
    with pytest.raises(PartitionMetadataError, match="zero uuid"):
        write_partition_metadata(tmp_path, uuid.UUID(int=0))
    assert list(tmp_path.iterdir()) == []
