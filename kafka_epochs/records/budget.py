"""What decoding a ``records`` field may build: decompressed bytes, and records.

A few bytes can claim a great deal: a compressed payload can expand a thousandfold, and a batch
of empty records costs a few bytes each on the wire but an object each once decoded (a
1,316-byte capture held a million of them). So decoding draws on budgets, and a batch that would
overdraw one is a bad entry (its error says which budget, and what was already spent), never a
crash or an allocation the bytes cannot back:

* decompressed bytes (``max_decompressed``), shared by every payload of the budget;
* records per batch (``max_batch_records``): a batch claiming more is refused unread;
* records in all (``max_records``), with an optional parent that several budgets draw on too: the
  command line gives each exchange a budget whose parent is the capture's.

One budget serves one ``decode_records`` call unless the caller shares it across calls (the
fields of one exchange, say).
"""

from __future__ import annotations

from kafka_epochs.errors import DecodeError
from kafka_epochs.records import codecs
from kafka_epochs.records.model import Compression

#: Records one batch may claim (far above what producers batch: 16 KiB to 1 MiB of records).
DEFAULT_MAX_BATCH_RECORDS = 100_000
#: Records one budget may decode in all (one ``decode_records`` call, by default).
DEFAULT_MAX_RECORDS = 250_000


class RecordBudget:
    """Records that decoding may still build; ``parent`` is charged alike (a wider scope)."""

    __slots__ = ("limit", "parent", "scope", "used")

    def __init__(self, limit: int, scope: str = "call", parent: RecordBudget | None = None) -> None:
        if limit < 0:
            raise ValueError(f"a record budget is >= 0, not {limit}")
        self.limit = limit
        self.scope = scope  # what it is the budget of, for the error ("exchange", "capture")
        self.parent = parent
        self.used = 0

    def take(self, count: int, at: int, path: str) -> None:
        """Charge ``count`` records, or raise a DecodeError at ``at`` naming the budget overdrawn."""
        budget: RecordBudget | None = self
        while budget is not None:
            if budget.used + count > budget.limit:
                raise DecodeError(
                    f"{count} records would overdraw the record budget of {budget.limit:,} for this "
                    f"{budget.scope} ({budget.used:,} already decoded); not decoded",
                    at,
                    path,
                )
            budget = budget.parent
        budget = self
        while budget is not None:
            budget.used += count
            budget = budget.parent


class DecompressionBudget:
    """Decompressed bytes, and records (see the module docstring), for one decoding."""

    __slots__ = ("limit", "max_batch_records", "records", "used")

    def __init__(
        self,
        limit: int,
        *,
        records: RecordBudget | None = None,
        max_batch_records: int = DEFAULT_MAX_BATCH_RECORDS,
    ) -> None:
        if limit < 0:
            raise ValueError(f"max_decompressed must be >= 0, not {limit}")
        self.limit = limit
        self.used = 0
        self.records = records if records is not None else RecordBudget(DEFAULT_MAX_RECORDS)
        self.max_batch_records = max_batch_records

    def take_records(self, count: int, at: int, path: str) -> None:
        """Charge a batch's (or message set's) ``count`` records before any is read."""
        if count > self.max_batch_records:
            raise DecodeError(
                f"record count {count:,} is over the limit of {self.max_batch_records:,} records per batch; "
                "not decoded",
                at,
                path,
            )
        self.records.take(count, at, path)

    def decompress(self, codec: Compression, payload: bytes | memoryview, magic: int, *, at: int, path: str) -> bytes:
        """``payload`` decompressed, charged to the budget; a DecodeError at ``at`` if it can't be."""
        try:
            out = codecs.decompress(codec, payload, magic, self.limit - self.used)
        except codecs.DecompressedTooLarge:
            raise DecodeError(
                f"{codec.name.lower()} payload decompresses past max_decompressed={self.limit} bytes"
                f" ({self.used} already used by earlier entries)",
                at,
                path,
            ) from None
        except codecs.DecompressionFailed as exc:
            raise DecodeError(str(exc), at, path) from None
        self.used += len(out)
        return out
