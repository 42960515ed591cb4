"""The ``partition.metadata`` file a broker keeps in each partition directory (KIP-516).

It pins the partition's log to a topic id, so that after a restart the broker can tell its
log of topic "orders" from the log of a deleted "orders" that was created again. Kafka writes
exactly two lines, with no newline after the second::

    version: 0
    topic_id: RlrGd25wRjmW0jTlkbFptQ

The id is Kafka's text form of a uuid (unpadded base64url, 22 characters). This reader also
accepts the canonical hyphenated form (``465ac677-6e70-4639-96d2-34e591b169b5``), which is how
the KIP-516 draft page shows it.

This module is the only part of ``kafka_epochs.epochs`` that touches the filesystem, and only
in :func:`read_partition_metadata` and :func:`write_partition_metadata`; the parsing and
formatting underneath them are pure.
"""

from __future__ import annotations

import os
import re
import uuid
from dataclasses import dataclass
from pathlib import Path

from kafka_epochs.errors import KafkaEpochsError
from kafka_epochs.wire.uuids import parse_uuid, uuid_text

FILE_NAME = "partition.metadata"
#: Kafka writes the new content here first, then renames it over FILE_NAME.
TEMP_FILE_NAME = FILE_NAME + ".tmp"
CURRENT_VERSION = 0

# Kafka splits each line at a colon followed by whitespace (``":\s+"``), so "version:0" is
# malformed while "version:  0" is not; this keeps the same rule.
_LINE = re.compile(r"(?P<key>[^:]*):\s+(?P<value>.*)")
_VERSION = re.compile(r"[+-]?[0-9]+")


class PartitionMetadataError(KafkaEpochsError, ValueError):
    """A partition.metadata file this reader cannot trust: malformed, or a version it lacks."""


@dataclass(frozen=True, slots=True)
class PartitionMetadata:
    topic_id: uuid.UUID
    version: int = CURRENT_VERSION


#: Kafka's text form of a uuid, and its reader (one implementation, in the wire runtime).
kafka_uuid_text = uuid_text
parse_kafka_uuid = parse_uuid


def format_partition_metadata(topic_id: uuid.UUID) -> str:
    """The exact text Kafka writes for ``topic_id`` (version 0)."""
    _require_real_id(topic_id, "topic id")
    return f"version: {CURRENT_VERSION}\ntopic_id: {kafka_uuid_text(topic_id)}"


def parse_partition_metadata(text: str, location: str = FILE_NAME) -> PartitionMetadata:
    """Parse the content of a partition.metadata file; ``location`` only names it in errors."""
    lines = text.splitlines()
    # Tolerate trailing blank lines (an editor's final newline); anything else after the two
    # known lines is a format this reader does not know, and guessing at it is how a wrong topic
    # id gets trusted.
    while lines and not lines[-1].strip():
        lines.pop()
    if not lines:
        raise PartitionMetadataError(f"{location}: empty; expected 'version: {CURRENT_VERSION}' and 'topic_id: ...'")
    version_text = _value(lines[0], "version", location)
    if not _VERSION.fullmatch(version_text):
        raise PartitionMetadataError(f"{location}: version is not an integer: {version_text!r}")
    version = int(version_text)
    if version != CURRENT_VERSION:
        raise PartitionMetadataError(
            f"{location}: unsupported partition.metadata version {version}; this reader knows version {CURRENT_VERSION}"
        )
    if len(lines) < 2:
        raise PartitionMetadataError(f"{location}: missing the 'topic_id: ...' line")
    if len(lines) > 2:
        raise PartitionMetadataError(f"{location}: unexpected content after the topic_id line: {lines[2]!r}")
    id_text = _value(lines[1], "topic_id", location)
    try:
        topic_id = parse_kafka_uuid(id_text)
    except ValueError as e:
        raise PartitionMetadataError(f"{location}: {e}") from None
    _require_real_id(topic_id, f"{location}: topic_id")
    return PartitionMetadata(topic_id, version)


def read_partition_metadata(partition_dir: str | os.PathLike[str]) -> PartitionMetadata | None:
    """The topic id pinned in ``partition_dir``, or None when there is none yet.

    "None yet" is a missing file or an empty one: Kafka creates the file empty and fills it
    when the partition first learns its topic id. Raises :class:`PartitionMetadataError` for
    content that is malformed or of an unknown version.
    """
    path = Path(partition_dir) / FILE_NAME
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except UnicodeDecodeError as e:
        raise PartitionMetadataError(f"{path}: not UTF-8 text ({e.reason})") from None
    if not text:
        return None
    return parse_partition_metadata(text, str(path))


def write_partition_metadata(partition_dir: str | os.PathLike[str], topic_id: uuid.UUID) -> Path:
    """Write ``topic_id`` into ``partition_dir`` atomically and durably; returns the file's path.

    As Kafka does: the content goes to ``partition.metadata.tmp``, which is synced and then
    renamed over ``partition.metadata``, so a reader (or a crash) sees the old file or the new
    one, never half of one.
    """
    directory = Path(partition_dir)
    content = format_partition_metadata(topic_id).encode("utf-8")
    final = directory / FILE_NAME
    temp = directory / TEMP_FILE_NAME
    try:
        with open(temp, "wb") as out:
            out.write(content)
            out.flush()
            os.fsync(out.fileno())
        os.replace(temp, final)
    except BaseException:
        temp.unlink(missing_ok=True)
        raise
    _sync_directory(directory)
    return final


def _value(line: str, key: str, location: str) -> str:
    match = _LINE.fullmatch(line)
    if match is None or match["key"] != key:
        raise PartitionMetadataError(f"{location}: malformed line, expected '{key}: ...': {line!r}")
    return match["value"].rstrip()


def _require_real_id(topic_id: uuid.UUID, what: str) -> None:
    # The zero uuid means "no topic id" on the wire; Kafka refuses to find it in this file too.
    if topic_id.int == 0:
        raise PartitionMetadataError(f"{what} is the zero uuid, which stands for 'no topic id'")


def _sync_directory(directory: Path) -> None:
    # The rename is only durable once the directory entry is; not every platform can open a
    # directory for syncing (Windows cannot), and there the rename is the best available.
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
