"""Record-count bombs: a few bytes claiming millions of records cost a counted problem, not
minutes and gigabytes. A batch claiming more records than one batch may hold is refused unread;
an exchange, and a whole run, decode at most their budget of records."""

from __future__ import annotations

import io
import json
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path
from typing import Any

import pytest

from kafka_epochs import Protocol, records
from kafka_epochs.capture.synth import RecordedConnection, write_capture
from kafka_epochs.cli import decode as decode_command
from kafka_epochs.cli import main
from kafka_epochs.errors import DecodeError
from kafka_epochs.records import Compression, Record, RecordBudget, decode_records, encode_batch

APACHE = Protocol.apache()
T0 = 1_700_000_000_000_000_000


def empty_records(count: int, base_offset: int = 0) -> bytes:
    return encode_batch([Record()] * count, base_offset=base_offset, compression=Compression.ZSTD)


def produce_with(*fields: bytes, correlation_id: int = 7) -> bytes:
    produce = APACHE.message("ProduceRequest")
    body = produce(
        acks=0,
        timeout_ms=100,
        topic_data=[
            produce.TopicProduceData(
                name="orders",
                partition_data=[produce.PartitionProduceData(index=i, records=r) for i, r in enumerate(fields)],
            )
        ],
    )
    return APACHE.encode_request(body, 9, correlation_id=correlation_id, client_id="bomber")


def decode(tmp_path: Path, requests: list[bytes], *extra: str) -> tuple[int, list[dict[str, Any]], str]:
    path = tmp_path / "bomb.pcap"
    chunks = [(T0 + n * 1000, "client", frame) for n, frame in enumerate(requests)]
    write_capture(path, [RecordedConnection(("10.0.0.1", 5000), ("10.0.0.2", 9092), chunks)])
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = main(["decode", str(path), "--records", *extra])
    return code, [json.loads(line) for line in out.getvalue().splitlines()], err.getvalue()


def batches_of(row: dict[str, Any]) -> list[dict[str, Any]]:
    return [b for p in row["request"]["topic_data"][0]["partition_data"] for b in p["records"]["batches"]]


def test_a_million_empty_records_in_a_few_bytes_are_refused_unread(tmp_path: Path) -> None:
    bomb = empty_records(1 << 20)
    assert len(bomb) < 2000
    code, rows, err = decode(tmp_path, [produce_with(bomb)])
    (batch,) = batches_of(rows[0])
    assert "record count 1,048,576 is over the limit of 100,000 records per batch" in batch["error"]
    assert code == 1 and "1 record batches did not decode" in err


def test_an_exchange_decodes_at_most_its_budget(tmp_path: Path) -> None:
    """Batches each within the per-batch limit, many of them: past the exchange's budget, the
    rest are refused, and the next exchange has a budget of its own."""
    fields = [empty_records(90_000, base_offset=n * 90_000) for n in range(4)]  # 360,000 in all
    code, rows, err = decode(tmp_path, [produce_with(*fields), produce_with(fields[0], correlation_id=8)])
    first, second = (batches_of(row) for row in rows)
    assert ["error" in b for b in first] == [False, False, True, True]
    assert (
        "would overdraw the record budget of 250,000 for this exchange (180,000 already decoded)" in (first[2]["error"])
    )
    assert len(first[0]["records"]) == 90_000
    assert ["error" in b for b in second] == [False]
    assert code == 1 and "2 record batches did not decode" in err


def test_budgets_are_configurable_and_the_capture_has_one_too(tmp_path: Path) -> None:
    fields = [empty_records(3, base_offset=n * 3) for n in range(3)]
    requests = [produce_with(*fields, correlation_id=n) for n in range(4)]
    code, rows, _ = decode(tmp_path, requests, "--max-records", "6", "--max-capture-records", "21")
    decoded = [["error" in b for b in batches_of(row)] for row in rows]
    # 6 per exchange: two of its three batches; 21 in all: the fourth exchange gets only one
    assert decoded == [[False, False, True]] * 3 + [[False, True, True]]
    last = batches_of(rows[3])[1]["error"]
    assert "record budget of 21 for this capture (21 already decoded)" in last
    assert code == 1


def test_the_command_line_states_the_records_packages_defaults() -> None:
    assert decode_command.DEFAULT_MAX_RECORDS == records.DEFAULT_MAX_RECORDS
    assert decode_command.DEFAULT_MAX_BATCH_RECORDS == records.DEFAULT_MAX_BATCH_RECORDS


def test_a_shared_budget_spans_calls_and_a_parent_is_charged_too() -> None:
    capture = RecordBudget(10, "capture")
    budget = records.DecompressionBudget(1 << 20, records=RecordBudget(8, "exchange", capture))
    assert len(decode_records(empty_records(5), budget=budget).entries) == 1
    with pytest.raises(DecodeError, match="budget of 8 for this exchange"):
        decode_records(empty_records(5), budget=budget)
    other = records.DecompressionBudget(1 << 20, records=RecordBudget(8, "exchange", capture))
    with pytest.raises(DecodeError, match=r"budget of 10 for this capture \(5 already decoded"):
        decode_records(empty_records(6), budget=other)
    assert (capture.used, budget.records.used, other.records.used) == (5, 5, 0)  # nothing charged on refusal


def test_legacy_message_sets_are_charged_per_message() -> None:
    messages = [records.LegacyMessage(offset=n, timestamp=0, value=b"v") for n in range(12)]
    legacy = records.encode_legacy(messages, magic=1, compression=Compression.GZIP)
    decoded = decode_records(legacy, keep_going=True, max_records=10)
    assert not decoded.entries and "budget of 10" in str(decoded.bad[0].error)
    assert len(decode_records(legacy, max_records=12).entries[0].inner) == 12
