"""A task's events, split into shares by exchange and packed, for an engine that spreads them over tasks.

A judging task must hold whole exchanges: a check, its answer and the answer's epoch errors.
Moved between tasks as rows, a capture's events (some twenty columns each) cost Spark more than
the judging itself: every value is converted into the engine's row format, and back into Arrow
for Python. A task that extracted events packs them instead (:class:`ShareWriter`): each goes
to one of :data:`SHARES` shares, a hash of its exchange (its connection and correlation id; its
frame when it has no correlation id, as it pairs with nothing), and each non-empty share becomes
one Arrow IPC message. The engine keeps and moves a few such values per task, keyed by share; a
task unpacks whatever shares it is given (:func:`unpack`) and holds whole exchanges, whichever
tasks extracted them.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterable

import numpy as np
import pyarrow as pa  # type: ignore[import-untyped]  # pyarrow ships no type stubs
import pyarrow.compute as pc  # type: ignore[import-untyped]

from kafka_epochs.audit.events import EVENT_SCHEMA

__all__ = ["PACK_EVERY", "SHARES", "ShareWriter", "share_of", "unpack"]

#: How many shares a task's events are split into: the most tasks that can judge them.
SHARES = 256
#: A task packs what it holds once it holds this many events (else at its end).
PACK_EVERY = 1_000_000
#: Mixes a correlation id into its connection's hash (Knuth's multiplicative constant).
_SPREAD = np.uint64(2654435761)


class ShareWriter:
    """Collects a task's events and packs them into shares."""

    def __init__(self) -> None:
        self._parts: list[pa.Table] = []
        self._held = 0

    def add(self, events: pa.RecordBatch | pa.Table) -> list[tuple[int, bytes]]:
        """Hold ``events`` (:data:`~kafka_epochs.audit.events.EVENT_SCHEMA`); the shares packed
        when that makes :data:`PACK_EVERY` events held, else none yet."""
        if events.num_rows:
            self._parts.append(events if isinstance(events, pa.Table) else pa.Table.from_batches([events]))
            self._held += events.num_rows
        return self.packed() if self._held >= PACK_EVERY else []

    def packed(self) -> list[tuple[int, bytes]]:
        """(share, its events as one Arrow IPC record batch) for every non-empty share of the
        events held, which are then no longer held."""
        if not self._parts:
            return []
        table = pa.concat_tables(self._parts).combine_chunks()
        self._parts, self._held = [], 0
        shares = share_of(table)
        order = np.argsort(shares, kind="stable")
        table, shares = table.take(pa.array(order)), shares[order]
        firsts = np.flatnonzero(np.diff(shares, prepend=-1))
        ends = [*firsts[1:].tolist(), len(shares)]
        return [
            (int(shares[start]), table.slice(start, end - start).to_batches()[0].serialize().to_pybytes())
            for start, end in zip(firsts.tolist(), ends, strict=True)
        ]


def share_of(events: pa.Table) -> np.ndarray:
    """Each event's share: its connection's hash (CRC-32 of the capture, client and broker, the
    same in every process) mixed with its correlation id, or with its frame's ``seq`` when it has none."""
    connection = pc.binary_join_element_wise(
        *(pc.fill_null(events.column(c), "") for c in ("capture", "client", "broker")), "\0"
    )
    encoded = connection.combine_chunks().dictionary_encode() if events.num_rows else None
    if encoded is None:
        return np.zeros(0, np.int64)
    hashes = np.array([zlib.crc32(v.encode()) for v in encoded.dictionary.to_pylist()], np.uint64)
    connection_hash = hashes[encoded.indices.to_numpy(zero_copy_only=False)]
    exchange = pc.coalesce(pc.cast(events.column("correlation_id"), pa.int64()), events.column("seq"), 0)
    spread = exchange.to_numpy().astype(np.uint64) * _SPREAD
    return ((connection_hash + spread) % np.uint64(SHARES)).astype(np.int64)


def unpack(packed: Iterable[bytes]) -> pa.Table:
    """The events of the shares ``packed`` (:meth:`ShareWriter.packed`'s bytes), as one table."""
    batches = [pa.ipc.read_record_batch(pa.py_buffer(blob), EVENT_SCHEMA) for blob in packed]
    return pa.Table.from_batches(batches, schema=EVENT_SCHEMA)
