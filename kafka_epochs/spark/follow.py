"""``kafka-epochs audit --follow DIR``: the epoch audit of a capture directory that keeps growing.

A streaming query reads the directory's capture files as they settle (the ``kafka-capture``
stream, :mod:`kafka_epochs.spark.streaming`); each micro-batch's frames are decoded into epoch
events once (:func:`~kafka_epochs.spark.epoch_audit.extract_events`, the batch's one Spark
job), the events collected to the driver and stored as one Parquet file per micro-batch in the
state directory, and judged there after the batches before
(:class:`~kafka_epochs.audit.judging.IncrementalAudit`: the same incidents as the
Spark audit of every event stored, without its seconds of small jobs per batch). The incidents
not printed before are printed, one line each, in words (:func:`kafka_epochs.report.explain.explain`).
The state directory also holds the query's checkpoint and what was printed, so a follow
restarted with the same ``--state`` neither reads a file twice nor prints an incident twice; a
restarted follow judges the stored events once before it reads on.
"""

from __future__ import annotations

import json
import re
import threading
import time
from pathlib import Path
from typing import TextIO

import pyarrow as pa  # type: ignore[import-untyped]  # pyarrow ships no type stubs
import pyarrow.compute as pc  # type: ignore[import-untyped]
import pyarrow.dataset as ds  # type: ignore[import-untyped]
import pyarrow.parquet as pq  # type: ignore[import-untyped]
from pyspark.sql import DataFrame, SparkSession

from kafka_epochs.audit.events import EVENT_SCHEMA
from kafka_epochs.audit.incidents import incident_line
from kafka_epochs.audit.judging import Incident, IncrementalAudit, in_capture_order
from kafka_epochs.epochs import EqualEpochPolicy
from kafka_epochs.frame_rows import capture_frames, to_batches
from kafka_epochs.protocol_refs import ProtocolLike
from kafka_epochs.samples import SAMPLE_CAPTURE
from kafka_epochs.spark.datasource import register
from kafka_epochs.spark.epoch_audit import extract_events
from kafka_epochs.spark.job import ctrl_c_cancels


class Follow:
    """One follow of ``directory``; :meth:`run` until stopped (``stop_after`` seconds, or Ctrl-C)."""

    def __init__(
        self,
        spark: SparkSession,
        directory: str,
        state: Path,
        *,
        protocol: ProtocolLike = None,
        equal_epoch: EqualEpochPolicy = EqualEpochPolicy.ACCEPT,
        cluster_key: str = "auto",
        trigger_seconds: float = 5.0,
        settle_seconds: float = 2.0,
        out: TextIO,
    ) -> None:
        self.spark = spark
        self.directory = directory
        self.state = state
        self.protocol = protocol
        self.equal_epoch = equal_epoch
        self.cluster_key = cluster_key
        self.trigger_seconds = trigger_seconds
        self.settle_seconds = settle_seconds
        self.out = out
        self.store = state / "events"
        #: where a follow of an earlier version kept frames rather than events
        self.frame_store = state / "frames"
        self.printed_path = state / "printed.json"
        #: the judging state as of the last micro-batch (JSON: data, never code)
        self.judged_path = state / "judged.json"
        self.printed: set[str] = set()
        if self.printed_path.is_file():  # a restarted follow prints only what it did not before
            self.printed = set(json.loads(self.printed_path.read_text()))
        self.batches = 0
        self.audit = IncrementalAudit(self.stored_events, equal_epoch=equal_epoch, cluster_key=cluster_key)
        self._lock = threading.Lock()

    def run(self, stop_after: float | None = None, *, once: bool = False) -> int:
        """Follow until stopped (``stop_after`` seconds, Ctrl-C), or with ``once`` read the files
        complete by now (after one settle time), print, and return: an incremental audit for a
        scheduled job, resumed from the same state each time."""
        register(self.spark)
        self._events_from_stored_frames()
        if self.store.exists() and not self._resumed():  # what earlier runs stored judges what comes next
            self._print(self.audit.reload())
        if not once:
            self._warm_up()
        frames = (
            self.spark.readStream.format("kafka-capture")
            .option("settleSeconds", str(self.settle_seconds))
            .load(self.directory)
        )
        query = (
            frames.writeStream.foreachBatch(self._batch)
            .option("checkpointLocation", str(self.state / "checkpoint"))
            .trigger(processingTime=f"{int(self.trigger_seconds * 1000)} milliseconds")
            .start()
        )
        failed: BaseException | None = None
        try:
            with ctrl_c_cancels(self.spark, stop=query.stop):  # (Ctrl-C is how a follow is ended)
                if once:
                    time.sleep(self.settle_seconds)  # files that landed just before are complete by then
                    query.processAllAvailable()
                else:
                    query.awaitTermination(None if stop_after is None else max(1, round(stop_after)))
        except KeyboardInterrupt:
            pass
        except Exception as e:  # the query failed (an executor lost, a worker that timed out): said below
            failed = e
        finally:
            query.stop()
        error = query.exception() or failed
        if error is not None:
            print(f"kafka-epochs: the follow stopped: {_first_line(error)}", file=self.out)
            return 2
        return 0

    def _events_from_stored_frames(self) -> None:
        """A state directory an earlier version wrote holds frames: their events, once."""
        if self.store.exists() or not any(self.frame_store.glob("*.parquet")):
            return
        frames = self.spark.read.parquet(str(self.frame_store))
        extract_events(frames, protocol=self.protocol).write.parquet(str(self.store))

    def _warm_up(self) -> None:
        """Extract the events of the bundled sample capture, and drop them: the executors' Python
        workers start and load the codec now, not when the first file lands (3-4 s here). The
        frames are read here and sent: an executor need not see this machine's files."""
        try:
            table = pa.Table.from_batches(list(to_batches(capture_frames(SAMPLE_CAPTURE))))
            extract_events(self.spark.createDataFrame(table), protocol=self.protocol).toArrow()
        except Exception as error:  # only a head start is lost: say so, and follow all the same
            print(f"kafka-epochs: the follow's warm-up failed ({error}); following all the same", file=self.out)

    def stored_events(self, where: pc.Expression | None = None) -> pa.Table:
        """The events stored so far that ``where`` keeps (micro-batch files, and the part files
        an earlier version wrote)."""
        if not self.store.exists():
            return EVENT_SCHEMA.empty_table()
        return ds.dataset(str(self.store), format="parquet", schema=EVENT_SCHEMA).to_table(filter=where)

    def _batch(self, frames: DataFrame, batch_id: int) -> None:
        with self._lock:
            events = extract_events(frames, protocol=self.protocol).toArrow().cast(EVENT_SCHEMA)
            self._store(events, batch_id)
            self.batches += 1
            self._print(self.audit.add(events))
            self._keep_judging_state()

    def _stored_files(self) -> list[str]:
        return sorted(str(path.relative_to(self.store)) for path in self.store.rglob("*.parquet"))

    def _keep_judging_state(self) -> None:
        """What the judging rests on, with the store files it covers: a restart resumes from it
        rather than judging the whole store again."""
        partial = self.judged_path.with_suffix(".partial")
        partial.write_text(json.dumps({"files": self._stored_files(), "judging": self.audit.snapshot()}))
        partial.replace(self.judged_path)

    def _resumed(self) -> bool:
        """Whether the judging state kept by the last run covers the store as it is now."""
        try:
            kept = json.loads(self.judged_path.read_text())
            if kept["files"] != self._stored_files():
                return False  # the last batch stored but not kept, or a store of an earlier version
            self.audit.restore(kept["judging"])
        except (OSError, ValueError, KeyError, TypeError):  # absent, cut short, another version's: judge again
            return False
        return True

    def _store(self, events: pa.Table, batch_id: int) -> None:
        """One file per micro-batch, named by its id: a batch replayed after a crash replaces
        its file rather than storing its events twice."""
        self.store.mkdir(parents=True, exist_ok=True)
        final = self.store / f"batch-{batch_id:010d}.parquet"
        partial = self.store / f".{final.name}.partial"  # a dot name: readers pass over it
        pq.write_table(events, partial)
        partial.replace(final)

    def _print(self, incidents: list[Incident]) -> None:
        for row in in_capture_order(incidents):
            key = json.dumps([row["kind"], row["capture"], row["seq"], row["topic"], row["partition"], row["path"]])
            if key in self.printed:
                continue
            self.printed.add(key)
            print(incident_line(row), file=self.out, flush=True)
        self.printed_path.parent.mkdir(parents=True, exist_ok=True)
        self.printed_path.write_text(json.dumps(sorted(self.printed)))


def _first_line(error: BaseException) -> str:
    """What stopped a query, in one line. A streaming query's error carries Python and JVM
    stack traces: the innermost error line (``RuntimeError: ...``) says what went wrong."""
    text = str(getattr(error, "desc", None) or error)
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    causes = [line for line in lines if _ERROR_LINE.match(line)]
    if causes:
        return causes[-1]
    return lines[0] if lines else type(error).__name__


# "RuntimeError: ...", "org.apache.spark.SparkException: ...": how an error's own line starts
_ERROR_LINE = re.compile(r"^[A-Za-z_][\w.]*(Error|Exception)(\b|:)")
