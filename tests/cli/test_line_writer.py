"""The direct line writer gives the reference's lines, character for character.

The reference is ``json_line(exchange_json(...))``, the dict path that ``--records``, ``--topic``
and the table still take. Checked on the bundled captures (real clients among them), on damaged
copies of them (gaps, resyncs, unanswered requests, frames that do not decode), with and without
a capture name, and the time text on its own against ``rendering``'s over the whole range of
nanosecond times a capture can hold.
"""

from __future__ import annotations

import copy
import io
import json
import random
from datetime import UTC, datetime
from pathlib import Path

import pytest
from capture_mutations import mutate, real_captures
from hypothesis import given
from hypothesis import strategies as st

from kafka_epochs import Protocol, json_lines
from kafka_epochs.capture import CaptureFormatError, Endpoint, Flow
from kafka_epochs.exchanges import Exchange, Kind
from kafka_epochs.json_lines import LineWriter, _latency
from kafka_epochs.projection.bodies import FieldsReader
from kafka_epochs.rendering import _time as rendering_time
from kafka_epochs.rendering import json_line
from kafka_epochs.traffic import decode_capture, exchange_json
from kafka_epochs.values import replace

SAMPLES = Path(__file__).resolve().parents[2] / "kafka_epochs" / "samples"


def reference(exchange: object, capture: str | None, secrets: bool) -> str:
    row = exchange_json(exchange, secrets=secrets, bodies_as_text=True)  # type: ignore[arg-type]
    if capture is not None:
        row = {"capture": capture, **row}
    return json_line(row)


def compare(
    source: object, secrets: bool = False, capture: str | None = None, reader: object = None
) -> tuple[int, int]:
    """(exchanges the writer wrote, exchanges it left to the reference), asserting equal lines."""
    writer = LineWriter(secrets=secrets)
    written = left = 0
    for exchange in decode_capture(source, Protocol.auto(), body_reader=reader):  # type: ignore[arg-type]
        line = writer.line(exchange, capture)
        if line is None:
            left += 1
            assert exchange.kind is Kind.SASL_TOKEN or exchange.request.api_key == 36  # type: ignore[union-attr]
            continue
        written += 1
        assert line == reference(exchange, capture, secrets)
    return written, left


@pytest.mark.parametrize("name", ["sample.pcap", "clients.pcap"])
@pytest.mark.parametrize("secrets", [False, True])
@pytest.mark.parametrize("capture", [None, 'caps/ü "1".pcap'])
def test_the_bundled_captures_give_the_reference_lines(name: str, secrets: bool, capture: str | None) -> None:
    written, left = compare(SAMPLES / name, secrets, capture)
    assert written >= 35 and written > 10 * left


READERS = {
    "whole": None,
    "headers only": FieldsReader([]),
    "fields": FieldsReader(["error_code", "topics[].partitions[].leader_epoch", "topics[].name"]),
    "fields, errors by row": FieldsReader(
        ["responses[].partition_responses[].error_code", "acks", "topic_data[].name"]
    ),
}


@pytest.mark.parametrize("reader", sorted(READERS))
@pytest.mark.parametrize("name", ["sample.pcap", "clients.pcap"])
def test_projected_and_unread_bodies_give_the_reference_lines(name: str, reader: str) -> None:
    written, left = compare(SAMPLES / name, reader=READERS[reader])
    assert written >= 35 and written > 10 * left


def test_damaged_captures_give_the_reference_lines() -> None:
    rng = random.Random(20)
    kinds: set[Kind] = set()
    originals = list(real_captures().values())
    for _ in range(60):
        data, _, _ = mutate(rng.choice(originals), rng)
        try:
            exchanges = list(decode_capture(io.BytesIO(data), Protocol.auto()))
        except CaptureFormatError:
            continue
        kinds |= {e.kind for e in exchanges}
        compare(io.BytesIO(data), reader=READERS[rng.choice(sorted(READERS))])
    # the mutations reached the unusual rows, not only clean pairs
    assert {Kind.GAP, Kind.RESPONSE, Kind.REQUEST} <= kinds


def _time(ns: int) -> str:
    """The time text both writers must give, by datetime (which neither uses): the reference's
    is checked against it on the way."""
    text = datetime.fromtimestamp(ns / 1e9, UTC).isoformat(timespec="microseconds").replace("+00:00", "Z")
    assert rendering_time(ns) == text
    return text


@given(st.integers(min_value=-(2**63), max_value=2**63 - 2))  # the years 1677-2262 the readers let through
def test_time_text_is_renderings(ns: int) -> None:
    writer = LineWriter()
    assert writer._time(ns) == f'"{_time(ns)}"'
    assert writer._time(ns + 1) == f'"{_time(ns + 1)}"'  # the cached second, or the next one


@given(
    st.integers(min_value=0, max_value=4_102_444_800 * 10**9),
    st.lists(st.sampled_from([1, 499, 500, 501, 1000, 999_999_499, 999_999_500, 10**9, -1, -500]), max_size=30),
)
def test_time_texts_of_one_writer_are_renderings(start: int, steps: list[int]) -> None:
    """One writer, many times (what it keeps of the second before must never leak into the next)."""
    writer, ns = LineWriter(), start
    for step in steps:
        ns = max(0, ns + step)
        assert writer._time(ns) == f'"{_time(ns)}"'


@given(
    st.integers(min_value=0, max_value=4_102_444_800 * 10**9),
    st.lists(st.integers(min_value=-100, max_value=100).map(lambda seconds: seconds * 10**9 + 1), max_size=200),
)
def test_time_texts_of_seconds_gone_back_to_are_renderings(start: int, hops: list[int]) -> None:
    """A writer going back and forth among more seconds than it keeps texts of (a pair sent in
    one second and answered in the next; a long poll answered seconds later)."""
    writer, ns = LineWriter(), start
    for hop in hops:
        ns = max(0, ns + hop)
        assert writer._time(ns) == f'"{_time(ns)}"'
    assert len(writer._second_texts) <= 64


@pytest.mark.parametrize(
    "ns",
    [999_999_500, 1_700_000_000_999_999_500, 1_700_000_000_999_999_499, 0, 1, -1, -500, -(2**63), 2**63 - 1],
)
def test_time_text_at_rounding_edges(ns: int) -> None:
    assert LineWriter()._time(ns) == f'"{_time(ns)}"'


@given(
    st.one_of(
        st.integers(min_value=0, max_value=10**12),  # up to 1,000 s: every real latency
        st.integers(min_value=-(10**18), max_value=10**19),  # negative (clocks), huge: the float way
        st.integers(min_value=0, max_value=10**9).map(lambda n: n * 500),  # ties and near them
        st.integers(min_value=0, max_value=10**9).map(lambda n: n * 1000),  # whole microseconds (pcap)
    )
)
def test_latency_text_is_renderings(ns: int) -> None:
    """The reference writes ``json.dumps`` of ``round(ns / 1e6, 3)``: a float's repr."""
    assert _latency(ns) == json.dumps(round(ns / 1e6, 3))
    assert _latency(ns + 1) == json.dumps(round((ns + 1) / 1e6, 3))


@pytest.mark.parametrize("ns", [0, 1, 499, 500, 501, 999, 1000, 1500, 2500, 999_999_500, 10**15 - 500, 10**15, -500])
def test_latency_text_at_rounding_edges(ns: int) -> None:
    assert _latency(ns) == json.dumps(round(ns / 1e6, 3))


def _sasl_authenticate_capture() -> bytes:
    from kafka_epochs.capture.synth import RecordedConnection, write_capture

    p = Protocol.apache()
    request = p.message("SaslAuthenticateRequest")(auth_bytes=b"\x00user\x00hunter2")
    response = p.message("SaslAuthenticateResponse")(auth_bytes=b"server-proof")
    chunks = [
        ("client", p.encode_request(request, 2, correlation_id=2, client_id="app")),
        ("broker", p.encode_response(response, 2, correlation_id=2)),
    ]
    timed = [(1_700_000_000_000_000_000 + 1000 * n, side, data) for n, (side, data) in enumerate(chunks)]
    out = io.BytesIO()
    write_capture(out, [RecordedConnection(("10.0.0.5", 51000), ("10.0.0.9", 9092), timed)])
    return out.getvalue()


@pytest.mark.parametrize(
    "reader, hidden",
    [
        (None, True),
        (FieldsReader(["auth_bytes"]), True),
        (FieldsReader([]), False),
        (FieldsReader(["error_code"]), False),
    ],
)
def test_sasl_authenticate_is_the_references_only_where_auth_bytes_were_read(reader: object, hidden: bool) -> None:
    """The reference hides auth bytes (a PLAIN token holds the password); a pair whose bodies were
    not read, or read without them, has none to hide, and the writer writes its line."""
    (exchange,) = decode_capture(io.BytesIO(_sasl_authenticate_capture()), Protocol.auto(), body_reader=reader)  # type: ignore[arg-type]
    assert exchange.kind is Kind.PAIR and exchange.request.api_key == 36  # type: ignore[union-attr]
    line = LineWriter().line(exchange)
    assert (line is None) == hidden
    expected = reference(exchange, None, False)
    assert "hunter2" not in expected and "AHVzZXIAaHVudGVyMg==" not in expected  # (nor in base64)
    if line is not None:
        assert line == expected
    elif reader is not None:  # --fields auth_bytes: the column is hidden, value by value
        assert '"request": {"auth_bytes": ["<13 bytes, hidden: pass --sasl-secrets to show>"]}' in expected
    assert LineWriter(secrets=True).line(exchange) == reference(exchange, None, True)


def test_a_shared_bodys_text_is_made_once_per_version() -> None:
    from kafka_epochs.wire.json_text import json_renderer

    metadata = Protocol.apache().message("MetadataResponse")
    body = metadata(brokers=[], topics=[], cluster_id="c")
    writer = LineWriter()
    first = writer._shared_text(body, 12)
    assert writer._shared_text(body, 12) is first  # kept
    assert writer._shared_text(body, 1) == json_renderer(metadata, 1, ascii=False)(body) != first
    other = metadata(brokers=[], topics=[], cluster_id="d")  # another object: its own text
    assert writer._shared_text(other, 12) == json_renderer(metadata, 12, ascii=False)(other) != first


def _first_pair() -> Exchange:
    for exchange in decode_capture(SAMPLES / "clients.pcap", Protocol.auto()):
        if exchange.kind is Kind.PAIR and exchange.problem is None:
            return exchange
    raise AssertionError("no clean pair in the bundled capture")


_PAIR = _first_pair()
_SPANS = [0, 1, 499, 500, 501, 1000, 999_999, 999_999_499, 999_999_500, 10**9, 3 * 10**9 + 7]


@given(
    st.integers(min_value=0, max_value=4_102_444_800 * 10**9),
    st.lists(st.tuples(st.sampled_from([0, 1, 500, 999_999_500, 10**9, -1]), st.sampled_from(_SPANS)), max_size=20),
)
def test_a_pairs_two_times_are_renderings(start: int, steps: list[tuple[int, int]]) -> None:
    """``answered`` writes both of a pair's times straight from the second it keeps when both
    fall in it, and the long way otherwise: one writer, pairs whose answers come in the same
    second, the next, or later, starting at any time, always the reference's line."""
    writer, sent = LineWriter(), start
    request, response = _PAIR.request, _PAIR.response
    assert request is not None and response is not None and response.decoded is not None
    for step, span in steps:
        sent = max(0, sent + step)
        asked = replace(request, timestamp_ns=sent)
        answer = replace(response, timestamp_ns=sent + span, request=asked)
        pair = replace(_PAIR, timestamp_ns=sent + span, request=asked, response=answer, request_time_ns=sent)
        line = writer.answered(pair.flow, asked, response.decoded, sent + span)
        assert line == reference(pair, None, False)


_CLIENT_IDS = st.one_of(
    st.none(),
    st.sampled_from(["app", 'a "correlation_id": 7, x', "ü\n\\", "", "x" * 600]),
    st.text(max_size=12),
)


@given(
    st.lists(
        st.tuples(st.integers(-(2**31), 2**31 - 1), _CLIENT_IDS, st.booleans()),
        min_size=1,
        max_size=12,
    )
)
def test_request_header_texts_kept_by_client_id_are_renderings(headers: list[tuple[int, str | None, bool]]) -> None:
    """A request header's text is kept around its correlation id, by client id, for the next of
    its kind: any client id (one that holds the key's own text among them), any correlation
    id, and a header with unknown tagged fields in between, always the reference's line."""
    writer = LineWriter()
    request, response = _PAIR.request, _PAIR.response
    assert request is not None and response is not None and request.decoded is not None
    assert response.decoded is not None
    for correlation_id, client_id, tagged in headers:
        header = copy.copy(request.decoded.header)
        header.correlation_id, header.client_id = correlation_id, client_id
        header._unknown_tags = {9: b"x"} if tagged and request.decoded.header_version >= 2 else None
        decoded = copy.copy(request.decoded)
        decoded.header = header
        asked = replace(request, decoded=decoded, correlation_id=correlation_id)
        pair = replace(_PAIR, request=asked, response=replace(response, request=asked))
        line = writer.answered(pair.flow, asked, response.decoded, response.timestamp_ns)
        assert line == reference(pair, None, False)


def test_connections_texts_kept_are_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    """A capture of more connections than the writer keeps texts of: the lines are the
    reference's, and the writer holds at most that many (here 3)."""
    monkeypatch.setattr(json_lines, "_FLOWS_KEPT", 3)
    writer = LineWriter()
    request, response = _PAIR.request, _PAIR.response
    assert request is not None and response is not None and response.decoded is not None and _PAIR.flow is not None
    for port in [*range(50000, 50010), 50000, 50001]:
        flow = Flow(Endpoint("10.0.0.1", port), _PAIR.flow.broker)
        pair = replace(_PAIR, flow=flow)
        line = writer.answered(flow, request, response.decoded, response.timestamp_ns)
        assert line == reference(pair, None, False)
        assert len(writer._flows) <= 3 and len(writer._endpoints) <= 3
