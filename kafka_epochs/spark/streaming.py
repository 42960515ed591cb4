"""``spark.readStream.format("kafka-capture").load(DIR)``: capture files as they land in a directory.

For rotating captures (``tcpdump -G 60 -w 'cap-%s.pcap'``): each micro-batch reads the files
that are new and complete, each file once, into the same rows the batch source gives.

Which files and in what order. A file is complete once it has not changed for
``settleSeconds`` (default 2): a capture tool writes its current file continuously, so that
one waits. Files are taken in order of their inode change time, then name; the offset a batch
ends at is the (change time, name) of its last file, and the next batch takes the complete
files after it. The change time, unlike the modification time, cannot be set back by copying
with preserved times, and a file that completes later always changed later than one already
taken (it was still changing when that one had settled), so no file is skipped or taken twice,
also across a restart from the checkpoint, which resumes at the last committed offset.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa  # type: ignore[import-untyped]  # pyarrow ships no type stubs
from pyspark.sql.datasource import DataSourceStreamReader, InputPartition

from kafka_epochs.capture.files.finding import CAPTURE_SUFFIXES
from kafka_epochs.frame_rows import capture_frames, to_batches
from kafka_epochs.spark.source_options import FORMAT, CapturePartition, option_paths, option_ports, option_specs

DEFAULT_SETTLE_SECONDS = 2.0
#: The offset before any file: every file comes after it.
START: dict[str, Any] = {"ctime_ns": -1, "name": ""}


def _key(offset: dict[str, Any]) -> tuple[int, str]:
    return int(offset["ctime_ns"]), str(offset["name"])


class CaptureStreamReader(DataSourceStreamReader):
    """The stream of one directory's capture files (see the module docstring)."""

    def __init__(self, options: dict[str, str]) -> None:
        paths = option_paths(options)
        if len(paths) != 1 or not Path(paths[0]).is_dir():
            raise ValueError(f"{FORMAT} as a stream reads one directory, not {paths!r}")
        self.directory = str(Path(paths[0]).resolve())
        self.ports = option_ports(options)
        self.protocol = option_specs(options)
        settle = options.get("settleseconds")
        self.settle_ns = int(float(settle if settle is not None else DEFAULT_SETTLE_SECONDS) * 1e9)

    def complete_files(self) -> list[tuple[int, str]]:
        """(change time, name) of the directory's capture files that have settled, in order."""
        now = time.time_ns()
        found = []
        with os.scandir(self.directory) as entries:
            for entry in entries:
                if not entry.is_file() or not entry.name.endswith(CAPTURE_SUFFIXES):
                    continue
                stat = entry.stat()
                if now - max(stat.st_ctime_ns, stat.st_mtime_ns) >= self.settle_ns:
                    found.append((stat.st_ctime_ns, entry.name))
        return sorted(found)

    def initialOffset(self) -> dict[str, Any]:
        return dict(START)

    def latestOffset(self, start: dict[str, Any] | None = None, limit: Any = None) -> dict[str, Any]:
        files = self.complete_files()
        if not files:
            return dict(start) if start is not None else dict(START)
        ctime_ns, name = files[-1]
        latest = {"ctime_ns": ctime_ns, "name": name}
        if start is not None and _key(latest) < _key(start):
            return dict(start)  # never go back (a file removed since)
        return latest

    def partitions(self, start: dict[str, Any], end: dict[str, Any]) -> Sequence[InputPartition]:
        low, high = _key(start), _key(end)
        chosen = [name for ctime_ns, name in self.complete_files() if low < (ctime_ns, name) <= high]
        return [CapturePartition(str(Path(self.directory) / name), 0, 1) for name in chosen]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        assert isinstance(partition, CapturePartition)
        yield from to_batches(capture_frames(partition.path, ports=self.ports, protocol=self.protocol))

    def commit(self, end: dict[str, Any]) -> None:
        """Nothing to release: files are left where they are."""
