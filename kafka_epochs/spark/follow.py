"""``kafka-epochs audit --follow DIR``: the epoch audit of a capture directory that keeps growing.

A streaming query reads the directory's capture files as they settle (the ``kafka-capture``
stream, :mod:`kafka_epochs.spark.streaming`) and appends their frames to a Parquet store in
the state directory; after each micro-batch the audit runs again over every frame stored (an
epoch's timeline needs all of them) and the incidents not printed before are printed, one line
each, in words (:func:`kafka_epochs.report.explain.explain`). The state directory also holds
the query's checkpoint and what was printed, so a follow restarted with the same ``--state``
neither reads a file twice nor prints an incident twice.

Each micro-batch re-audits everything stored: the cost grows with the capture set, which suits
following a capture session, not an archive (audit that once, without ``--follow``).
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
from kafka_epochs.spark.epoch_audit import audit
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
        self.store = state / "frames"
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

    def _batch(self, frames: DataFrame, batch_id: int) -> None:
        with self._lock:
            frames.write.mode("append").parquet(str(self.store))
            self.batches += 1
            if not any(self.store.glob("*.parquet")):
                return
            stored = self.spark.read.parquet(str(self.store))
            result = audit(stored, protocol=self.protocol, equal_epoch=self.equal_epoch, cluster_key=self.cluster_key)
            try:
                new = self._new_incidents(result)
            finally:
                result.unpersist()
            for line in new:
                print(line, file=self.out, flush=True)
            self.printed_path.write_text(json.dumps(sorted(self.printed)))

    def _new_incidents(self, result: Any) -> list[str]:
        rows = incident_rows(result).orderBy("time_ns", "seq", F.col("partition").asc_nulls_first()).collect()
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
