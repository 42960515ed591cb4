"""The fused path's lines are the layered path's, character for character and in order.

``decode`` writes most lines through :mod:`kafka_epochs.fused_lines`, which follows a connection
without the pairer, the exchanges and the printer in between, and hands the connection to the
layered path at anything unusual (then takes it back when it can). Every line and the summary's
counts must be what :func:`~kafka_epochs.exchanges.decode_capture` and the printer give: checked
on the bundled real-client captures with every body reader, on damaged copies of them, on
sessions built to reach each hand-over (SASL v0 tokens, acks=0, a response to nothing, an
oversized size prefix, short frames, requests left unanswered, a frame cut off), with packets
of every size down to one byte, and through the command itself.
"""

from __future__ import annotations

import io
import random
import struct
from pathlib import Path
from typing import Any

import pytest
from capture_mutations import mutate, real_captures
from sasl_sessions import PLAIN_TOKEN, handshake, metadata, raw

from kafka_epochs import Protocol
from kafka_epochs.capture import CaptureFormatError
from kafka_epochs.capture.synth import RecordedConnection, write_capture
from kafka_epochs.cli import main
from kafka_epochs.cli.decode_output import Printer
from kafka_epochs.exchanges import ConnectionExchanges, DecodeSummary, Exchange, follow_connection_batches
from kafka_epochs.framing import Connection, FrameDecoding, HeldRequest
from kafka_epochs.fused_lines import LineConnection, decode_lines
from kafka_epochs.json_lines import LineWriter
from kafka_epochs.projection.bodies import FieldsReader
from kafka_epochs.rendering import exchange_json, json_line
from kafka_epochs.traffic import decode_capture

SAMPLES = Path(__file__).resolve().parents[2] / "kafka_epochs" / "samples"
P = Protocol.apache()
T0 = 1_700_000_000_000_000_000

READERS: dict[str, Any] = {
    "whole": None,
    "headers only": FieldsReader([]),
    "fields": FieldsReader(["error_code", "topics[].partitions[].leader_epoch", "topics[].name"]),
    "produce fields": FieldsReader(["responses[].partition_responses[].error_code", "acks", "topic_data[].name"]),
}


def _render(writer: LineWriter, exchange: Exchange, capture: str | None, secrets: bool) -> str:
    line = writer.line(exchange, capture)
    if line is not None:
        return line
    row = exchange_json(exchange, secrets=secrets, bodies_as_text=True)
    return json_line(row if capture is None else {"capture": capture, **row})


def layered(
    data: bytes, reader: Any = None, capture: str | None = None, secrets: bool = False
) -> tuple[list[str], Any]:
    summary = DecodeSummary()
    writer = LineWriter(secrets=secrets)
    lines = []
    for exchange in decode_capture(io.BytesIO(data), Protocol.auto(), summary=summary, body_reader=reader):
        summary.count(exchange)
        lines.append(_render(writer, exchange, capture, secrets))
        OFFSETS_SEEN.append(_offsets(exchange))
    return lines, summary


#: the stream offsets of the last run's exchanges, in order (see assert_same)
OFFSETS_SEEN: list[tuple[int | None, int | None]] = []


def _offsets(exchange: Exchange) -> tuple[int | None, int | None]:
    """Where an exchange's frames start in their streams (no line says it; the API's user sees it)."""
    request, response = exchange.request, exchange.response
    return (
        None if request is None else request.stream_offset,
        None if response is None else response.stream_offset,
    )


def fused(
    data: bytes, reader: Any = None, capture: str | None = None, secrets: bool = False
) -> tuple[list[str], Any, int]:
    """The lines, the summary, and how many lines the fused path wrote itself."""
    summary = DecodeSummary()
    writer = LineWriter(secrets=secrets)
    lines, written = [], 0
    source = io.BytesIO(data)
    batches = decode_lines(source, Protocol.auto(), writer, capture=capture, summary=summary, body_reader=reader)
    for item in (item for batch in batches for item in batch):
        if isinstance(item, str):
            written += 1
            lines.append(item)
            OFFSETS_SEEN.append((None, None))  # (a line: its frames' offsets are not said)
        else:
            summary.count(item)
            lines.append(_render(writer, item, capture, secrets))
            OFFSETS_SEEN.append(_offsets(item))
    return lines, summary, written


def assert_same(data: bytes, reader: Any = None, capture: str | None = None, secrets: bool = False) -> tuple[int, int]:
    """(lines, lines the fused path wrote itself), asserting both paths agree."""
    OFFSETS_SEEN.clear()
    expected, expected_summary = layered(data, reader, capture, secrets)
    expected_offsets = OFFSETS_SEEN[:]
    OFFSETS_SEEN.clear()
    got, summary, written = fused(data, reader, capture, secrets)
    assert got == expected
    assert summary == expected_summary
    # an exchange the fused path hands on (after a hand-over, say) has its frames where the
    # layered path has them: the two kept the same count of each stream's bytes
    for (request, response), layered_offsets in zip(OFFSETS_SEEN, expected_offsets, strict=True):
        if request is not None or response is not None:
            assert (request, response) == layered_offsets
    return len(got), written


@pytest.mark.parametrize("reader", sorted(READERS))
@pytest.mark.parametrize("name", ["sample.pcap", "clients.pcap"])
def test_bundled_captures(name: str, reader: str) -> None:
    lines, written = assert_same((SAMPLES / name).read_bytes(), READERS[reader])
    assert written > 0.8 * lines  # nearly every line is the fused path's own


@pytest.mark.parametrize("reader", sorted(READERS))
def test_nearly_every_request_is_held_without_its_header_object(reader: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The plain way of reading requests (HeldRequest) is the way nearly all go, and the events
    are made after all only for what a line's kind needs once: what the fused path saves is saved."""
    held, made = [], []
    hold, make = HeldRequest.__init__, HeldRequest.event

    def spy_hold(self: HeldRequest, *args: Any) -> None:
        held.append(self)
        hold(self, *args)

    def spy_make(self: HeldRequest) -> Any:
        made.append(self)
        return make(self)

    monkeypatch.setattr(HeldRequest, "__init__", spy_hold)
    monkeypatch.setattr(HeldRequest, "event", spy_make)
    lines, _ = assert_same((SAMPLES / "clients.pcap").read_bytes(), READERS[reader])
    assert len(held) > 0.8 * lines
    # events made: for a line's kind, once per (api, version) (its header's text before the client id)
    assert len(made) == len({request.plain for request in made}) < 0.3 * len(held)


def test_the_summary_counts_the_lines_of_each_batch_as_it_goes_out() -> None:
    """Pairs written as lines are counted in the summary before their batch is handed on, so
    a caller that reads the summary between batches (or stops) sees what it was given."""
    summary, seen, batches = DecodeSummary(), 0, 0
    source = io.BytesIO(_capture(sessions() * 4, 1, False))  # (one byte a packet: many batches)
    for batch in decode_lines(source, Protocol.auto(), LineWriter(), summary=summary):
        for item in batch:
            if not isinstance(item, str):
                summary.count(item)
            seen += 1
        assert summary.exchanges == seen
        batches += 1
    assert batches > 3 and seen > 100


@pytest.mark.parametrize("secrets", [False, True])
def test_a_capture_name_and_sasl_secrets(secrets: bool) -> None:
    assert_same((SAMPLES / "clients.pcap").read_bytes(), None, 'caps/ü "1".pcap', secrets)


def test_damaged_captures() -> None:
    rng = random.Random(27)
    originals = list(real_captures().values())
    compared = 0
    for _ in range(60):
        data, _, _ = mutate(rng.choice(originals), rng)
        try:
            list(decode_capture(io.BytesIO(data), Protocol.auto()))
        except CaptureFormatError:
            continue
        assert_same(data, READERS[rng.choice(sorted(READERS))])
        compared += 1
    assert compared >= 40


# -- sessions built to reach every hand-over ----------------------------------------------------


def _request(name: str, version: int, correlation_id: int, **fields: Any) -> bytes:
    return P.encode_request(P.message(name)(**fields), version, correlation_id=correlation_id, client_id="app")


def _response(name: str, version: int, correlation_id: int, **fields: Any) -> bytes:
    return P.encode_response(P.message(name)(**fields), version, correlation_id=correlation_id)


def _api_versions(correlation_id: int) -> list[tuple[str, bytes]]:
    return [
        ("client", _request("ApiVersionsRequest", 3, correlation_id)),
        ("broker", _response("ApiVersionsResponse", 3, correlation_id)),
    ]


def _produce(correlation_id: int, acks: int) -> bytes:
    return _request("ProduceRequest", 3, correlation_id, acks=acks, timeout_ms=100, topic_data=[])


def _flexible_metadata(
    correlation_id: int, header_tags: bytes = b"\x00", after: bytes = b""
) -> list[tuple[str, bytes]]:
    """A Metadata v12 pair (response header v1), the response's header ending with the tagged
    fields ``header_tags`` and its body followed by ``after``."""
    request = _request("MetadataRequest", 12, correlation_id, topics=[])
    response = _response("MetadataResponse", 12, correlation_id, topics=[])
    assert response[8] == 0  # (the header's empty tagged fields)
    body = header_tags + response[9:] + after
    return [("client", request), ("broker", struct.pack(">ii", 4 + len(body), correlation_id) + body)]


def sessions() -> list[list[tuple[str, bytes]]]:
    """One list of (side, bytes) per connection, each reaching hand-overs and coming back."""
    newer = _request("ApiVersionsRequest", 3, 40)
    newer = newer[:6] + struct.pack(">h", 99) + newer[8:]  # a version no protocol knows: a request error
    tokens = [("client", raw(PLAIN_TOKEN)), ("broker", raw(b""))]
    return [
        # a v0 SASL token exchange (handed over), then plain requests again (taken back)
        [*_api_versions(1), *handshake(0), *tokens, *metadata(2), *metadata(3), *metadata(4)],
        # a v1 handshake stays on the fused path; SaslAuthenticate's line is the reference's
        [
            *handshake(1),
            ("client", _request("SaslAuthenticateRequest", 1, 2, auth_bytes=PLAIN_TOKEN)),
            ("broker", _response("SaslAuthenticateResponse", 1, 2, auth_bytes=b"")),
            *metadata(3),
        ],
        # acks=0 (never answered), then acks=1
        [("client", _produce(5, 0)), ("client", _produce(6, 1)), ("broker", _response("ProduceResponse", 3, 6))],
        # a response to nothing, then pairs
        [("broker", _response("MetadataResponse", 1, 77, brokers=[], topics=[])), *metadata(8), *metadata(9)],
        # a request that does not decode (still paired), several frames in one chunk
        [("client", newer + metadata(41)[0][1]), ("broker", _response("ApiVersionsResponse", 0, 40)), *metadata(42)],
        # a frame too short for a request header, then an oversized size prefix
        [*metadata(1), ("client", struct.pack(">i", 2) + b"\x00\x01"), *metadata(2)],
        [*metadata(1), ("client", struct.pack(">i", 0x7FFFFFF0) + b"\x00" * 20), *metadata(3)],
        # requests left unanswered, and a frame cut off by the end; a frame cut off alone
        [*metadata(1), ("client", metadata(2)[0][1] + metadata(3)[0][1][:9])],
        [*metadata(1), ("client", metadata(2)[0][1][:9])],
        # duplicated correlation ids
        [metadata(7)[0], metadata(7)[0], metadata(7)[1], metadata(7)[1], *metadata(8)],
        # flexible responses: a plain header, one with a tagged field (tag 5), a body with bytes after it
        [*_flexible_metadata(1), *_flexible_metadata(2, b"\x01\x05\x01A"), *_flexible_metadata(3, after=b"\x00")],
        # requests held the plain way when the connection is handed over (a response to nothing)
        # or ends: the layered path gets them as the events it would have made
        [metadata(2)[0], metadata(3)[0], metadata(77)[1], metadata(2)[1], *metadata(4), metadata(5)[0]],
        # request headers the plain way does not read: a client id that is not UTF-8, a null one,
        # a v2 header with a tagged field, one cut inside the client id's length; then plain ones
        [*_odd_request_headers(), *metadata(9)],
        # ApiVersions answered in v0 (UNSUPPORTED_VERSION), as a broker without the version asked
        # answers; then an answer in the version asked that holds that error code all the same
        [*_refused_api_versions(), *metadata(3)],
    ]


def _refused_api_versions() -> list[tuple[str, bytes]]:
    return [
        ("client", _request("ApiVersionsRequest", 3, 1)),
        ("broker", _response("ApiVersionsResponse", 0, 1, error_code=35)),
        ("client", _request("ApiVersionsRequest", 3, 2)),
        ("broker", _response("ApiVersionsResponse", 3, 2, error_code=35)),
    ]


def _odd_request_headers() -> list[tuple[str, bytes]]:
    not_utf8 = _request("MetadataRequest", 12, 1, topics=[]).replace(b"app", b"a\xffp")
    null = P.encode_request(P.message("MetadataRequest")(topics=[]), 12, correlation_id=2, client_id=None)
    plain = _request("MetadataRequest", 12, 3, topics=[])
    at = 4 + 8 + 2 + len("app")  # the header's count of tagged fields, 0
    assert plain[at] == 0
    tagged = plain[4:at] + b"\x01\x05\x01A" + plain[at + 1 :]
    tagged = struct.pack(">i", len(tagged)) + tagged
    short = plain[4:13]  # a header cut inside the client id's length: 9 bytes of frame
    short = struct.pack(">i", len(short)) + short[:8] + struct.pack(">h", 4)[:1]
    chunks = []
    for correlation_id, request in ((1, not_utf8), (2, null), (3, tagged), (3, short)):
        chunks += [("client", request), ("broker", _response("MetadataResponse", 12, correlation_id, topics=[]))]
    return chunks


def _capture(connections: list[list[tuple[str, bytes]]], mss: int, together: bool) -> bytes:
    """The sessions as one capture; ``together``: each side's consecutive chunks in one write."""
    recorded = []
    for number, chunks in enumerate(connections):
        if together:
            merged: list[tuple[str, bytes]] = []
            for side, data in chunks:
                if merged and merged[-1][0] == side:
                    merged[-1] = (side, merged[-1][1] + data)
                else:
                    merged.append((side, data))
            chunks = merged
        timed = [(T0 + number * 10**9 + 1000 * n, side, data) for n, (side, data) in enumerate(chunks)]
        recorded.append(RecordedConnection(("10.0.0.5", 51000 + number), ("10.0.0.9", 9092), timed))
    out = io.BytesIO()
    write_capture(out, recorded, mss=mss)
    return out.getvalue()


@pytest.mark.parametrize("mss", [1460, 13, 5, 1])
@pytest.mark.parametrize("together", [False, True])
@pytest.mark.parametrize("reader", sorted(READERS))
def test_sessions_reaching_every_hand_over(mss: int, together: bool, reader: str) -> None:
    lines, written = assert_same(_capture(sessions(), mss, together), READERS[reader])
    assert lines >= 25 and written >= 12


def test_each_session_on_its_own_hands_over_where_it_must(monkeypatch: pytest.MonkeyPatch) -> None:
    handed: list[int] = []
    original = LineConnection._hand_over

    def spy(self: LineConnection, *args: Any) -> Any:
        handed.append(number)
        return original(self, *args)

    monkeypatch.setattr(LineConnection, "_hand_over", spy)
    for number, session in enumerate(sessions()):
        data = _capture([session], 1460, False)
        lines, _, written = fused(data)
        assert lines == layered(data)[0]
        if number == 0:  # SASL v0: handed over at the handshake, back for the metadata after the token
            assert written == 4 and len(lines) == 6
    # SASL v0, acks=0, a response to nothing, a short frame, an oversized prefix, a second answer
    # to one correlation id; the rest are the fused path's own (what a connection leaves is said
    # by the layered path at its end, without a hand-over)
    assert sorted(set(handed)) == [0, 2, 3, 5, 6, 9, 11]


@pytest.mark.parametrize("reader", sorted(READERS))
def test_an_api_versions_answer_in_v0_is_read_as_v0_with_its_warning(reader: str) -> None:
    data = _capture([_refused_api_versions()], 1460, False)
    lines, _, _ = fused(data, READERS[reader])
    assert lines == layered(data, READERS[reader])[0]
    assert "ApiVersions v3 answered in v0 (UNSUPPORTED_VERSION)" in lines[0]
    assert "answered in v0" not in lines[1]  # (read as v3: it reads so)
    if reader in ("whole", "fields"):  # (the others do not read its error code)
        assert '"code": 35' in lines[0] and '"code": 35' in lines[1]


# -- through the command ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "options",
    [
        [],
        ["--headers-only"],
        ["--fields", "error_code,topics[].name"],
        ["--api", "metadata", "--api", "SaslAuthenticate"],
        ["--headers-only", "--client", "app", "--broker", "10.0.0.9"],
        ["--correlation-id", "2", "--correlation-id", "7"],
    ],
)
def test_the_command_prints_the_same_either_way(
    options: list[str], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    hostile = tmp_path / "hostile ☃.pcap"
    hostile.write_bytes(_capture(sessions(), 7, True))
    argv = ["decode", *options, str(SAMPLES / "clients.pcap"), str(hostile), str(SAMPLES / "sample.pcap")]
    assert main(argv) == 1  # the hostile sessions have problems
    fused_out = capsys.readouterr()
    monkeypatch.setattr(Printer, "fused", property(lambda self: (None, None)))
    assert main(argv) == 1
    layered_out = capsys.readouterr()
    assert fused_out.out == layered_out.out
    assert fused_out.err == layered_out.err
    assert fused_out.out.count("\n") > (100 if len(options) < 2 else 5)


def test_following_with_sinks_gives_consumers_without_one_their_bytes_as_events() -> None:
    """``follow_connection_batches(sinks=True)`` with consumers that have no ``frame_sink`` (the
    layered path's): the same exchanges as without sinks, and no sink asked of them."""
    data = (SAMPLES / "clients.pcap").read_bytes()
    decoding = FrameDecoding(P, None)
    opened: list[ConnectionExchanges] = []

    def open_connection(flow: Any) -> ConnectionExchanges:
        opened.append(ConnectionExchanges(flow, Connection(P, decoding=decoding)))
        return opened[-1]

    def lines(sinks: bool) -> list[str]:
        batches = follow_connection_batches(io.BytesIO(data), open_connection, sinks=sinks)
        return [json_line(exchange_json(exchange)) for batch in batches for exchange in batch]

    with_sinks = lines(True)
    assert with_sinks == lines(False)
    assert len(with_sinks) > 50 and opened
