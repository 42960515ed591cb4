"""``kafka-epochs audit --follow DIR``: the epoch audit of a capture directory that keeps growing.

A streaming query reads the directory's capture files as they settle (the ``kafka-capture``
stream, :mod:`kafka_epochs.spark.streaming`); each micro-batch's frames are decoded into epoch
events once (:func:`~kafka_epochs.spark.epoch_audit.extract_events`) and appended to a Parquet
store in the state directory, and the audit's judging runs again over every event stored (an
epoch's timeline needs all of them; events are a small fraction of the frames' bytes, and no
frame is decoded twice). The incidents not printed before are printed, one line each, in words
(:func:`kafka_epochs.report.explain.explain`). The state directory also holds the query's
checkpoint and what was printed, so a follow restarted with the same ``--state`` neither reads
a file twice nor prints an incident twice.
"""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Any, TextIO

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from kafka_epochs.epochs import EqualEpochPolicy
from kafka_epochs.report.explain import explain
from kafka_epochs.report.model import DISAGREEMENT, FENCED_RESPONSE, STALE_REQUEST, STOP_REPLICA_FENCED
from kafka_epochs.spark.audit_report import incident_rows, to_incident
from kafka_epochs.spark.datasource import register
from kafka_epochs.spark.epoch_audit import audit_of_events, extract_events
from kafka_epochs.spark.protocols import ProtocolLike

#: how a printed line names its incident's table
_KINDS = {
    STALE_REQUEST: "stale",
    STOP_REPLICA_FENCED: "fenced StopReplica",
    FENCED_RESPONSE: "answer",
    DISAGREEMENT: "disputed",
}


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
        self.printed: set[str] = set()
        if self.printed_path.is_file():  # a restarted follow prints only what it did not before
            self.printed = set(json.loads(self.printed_path.read_text()))
        self.batches = 0
        self._lock = threading.Lock()

    def run(self, stop_after: float | None = None, *, once: bool = False) -> int:
        """Follow until stopped (``stop_after`` seconds, Ctrl-C), or with ``once`` read the files
        complete by now (after one settle time), print, and return: an incremental audit for a
        scheduled job, resumed from the same state each time."""
        register(self.spark)
        self._events_from_stored_frames()
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
        try:
            if once:
                time.sleep(self.settle_seconds)  # files that landed just before are complete by then
                query.processAllAvailable()
            else:
                query.awaitTermination(None if stop_after is None else max(1, round(stop_after)))
        except KeyboardInterrupt:
            pass
        finally:
            query.stop()
        error = query.exception()
        if error is not None:
            print(f"kafka-epochs: the follow stopped: {error}", file=self.out)
            return 1
        return 0

    def _events_from_stored_frames(self) -> None:
        """A state directory an earlier version wrote holds frames: their events, once."""
        if self.store.exists() or not any(self.frame_store.glob("*.parquet")):
            return
        frames = self.spark.read.parquet(str(self.frame_store))
        extract_events(frames, protocol=self.protocol).write.parquet(str(self.store))

    def _batch(self, frames: DataFrame, batch_id: int) -> None:
        with self._lock:
            extract_events(frames, protocol=self.protocol).write.mode("append").parquet(str(self.store))
            self.batches += 1
            if not any(self.store.glob("*.parquet")):
                return
            stored = self.spark.read.parquet(str(self.store))
            result = audit_of_events(stored, equal_epoch=self.equal_epoch, cluster_key=self.cluster_key)
            try:
                new = self._new_incidents(result)
            finally:
                result.unpersist()
            for line in new:
                print(line, file=self.out, flush=True)
            self.printed_path.write_text(json.dumps(sorted(self.printed)))

    def _new_incidents(self, result: Any) -> list[str]:
        # three of the four incident tables are cuts of the verdicts: computed once, not thrice
        judged = result.judged.persist()
        try:
            rows = incident_rows(result).orderBy("time_ns", "seq", F.col("partition").asc_nulls_first()).collect()
        finally:
            judged.unpersist()
        lines = []
        for row in rows:
            key = json.dumps([row["kind"], row["capture"], row["seq"], row["topic"], row["partition"], row["path"]])
            if key in self.printed:
                continue
            self.printed.add(key)
            incident = to_incident(row)
            lines.append(f"{_when(row['time_ns'])}  {_KINDS[incident.kind]:<18}  {explain(incident)}")
        return lines


def _when(time_ns: int | None) -> str:
    if time_ns is None:
        return "time unknown".ljust(26)
    return time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(time_ns / 1e9)) + f".{time_ns // 1000 % 1_000_000:06d}"
