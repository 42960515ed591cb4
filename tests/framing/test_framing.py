"""Sans-IO framing and request/response correlation."""

from __future__ import annotations

import struct

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kafka_epochs import Protocol
from kafka_epochs.direction import Direction
from kafka_epochs.framing import Connection, FrameBuffer, FrameTooLarge, RequestEvent, ResponseEvent, StreamLost

PROTO = Protocol.bundled()
ApiVersionsRequest = PROTO.message("ApiVersionsRequest")
ApiVersionsResponse = PROTO.message("ApiVersionsResponse")
MetadataRequest = PROTO.message("MetadataRequest")
MetadataResponse = PROTO.message("MetadataResponse")
ProduceRequest = PROTO.message("ProduceRequest")


def frame(payload: bytes) -> bytes:
    return struct.pack(">i", len(payload)) + payload


@given(st.lists(st.binary(max_size=40), max_size=6), st.data())
def test_frames_survive_any_split(payloads: list[bytes], data: st.DataObject) -> None:
    stream = b"".join(frame(p) for p in payloads)
    cuts = sorted(data.draw(st.lists(st.integers(0, len(stream)), max_size=10)))
    buffer = FrameBuffer()
    got = []
    for start, end in zip([0, *cuts], [*cuts, len(stream)], strict=True):
        buffer.feed(stream[start:end])
        got.extend(buffer)
    assert got == [frame(p) for p in payloads]
    assert buffer.buffered == 0 and buffer.offset == len(stream)


_BUFFER_STEPS = st.lists(
    st.one_of(
        st.tuples(st.just("feed"), st.binary(max_size=12)),
        st.tuples(st.just("frame"), st.none()),
        st.tuples(st.just("put back"), st.none()),
        st.tuples(st.just("skip"), st.integers(0, 20)),
        st.tuples(st.just("discard"), st.integers(0, 5)),
    ),
    max_size=30,
)


@given(st.lists(st.binary(max_size=10), max_size=5), _BUFFER_STEPS)
def test_the_buffered_count_is_what_the_buffer_holds(payloads: list[bytes], steps: list[tuple[str, object]]) -> None:
    # ``buffered`` is a count kept by every step, not computed when asked: after any steps it
    # is the length of what peek() gives, and the offset moves by what left the buffer.
    buffer = FrameBuffer(max_frame_size=64)
    buffer.feed(b"".join(frame(p) for p in payloads))
    last_frame = None
    for step, argument in steps:
        if step == "feed":
            buffer.feed(argument)  # type: ignore[arg-type]
            last_frame = None
        elif step == "frame":
            try:
                last_frame = buffer.next_frame()
            except FrameTooLarge:
                last_frame = None
        elif step == "put back" and last_frame is not None:
            buffer.put_back(last_frame)
            last_frame = None
        elif step == "skip":
            buffer.skip(argument)  # type: ignore[arg-type]
            last_frame = None
        elif step == "discard":
            before = buffer.offset + buffer.buffered
            buffer.discard(argument)  # type: ignore[arg-type]
            assert buffer.offset == before + argument  # type: ignore[operator]
            last_frame = None
        assert buffer.buffered == len(buffer.peek())


def test_partial_frame_waits() -> None:
    buffer = FrameBuffer()
    buffer.feed(b"\x00\x00\x00\x05ab")
    assert buffer.next_frame() is None and buffer.buffered == 6
    buffer.feed(b"cde")
    assert buffer.next_frame() == b"\x00\x00\x00\x05abcde"


@pytest.mark.parametrize("size", [-1, 101])
def test_oversized_or_negative_frame_is_refused_without_allocating(size: int) -> None:
    buffer = FrameBuffer(max_frame_size=100)
    buffer.feed(struct.pack(">i", size))
    with pytest.raises(FrameTooLarge, match=r"outside 0\.\.100") as info:
        buffer.next_frame()
    assert info.value.offset == 0


def test_request_response_pairing_out_of_order() -> None:
    conn = Connection(PROTO)
    requests = PROTO.encode_request(
        MetadataRequest(topics=None), 12, correlation_id=1, client_id="c"
    ) + PROTO.encode_request(ApiVersionsRequest(), 3, correlation_id=2, client_id="c")
    events = conn.client_bytes(requests, timestamp_ns=5)
    assert [e.correlation_id for e in events if isinstance(e, RequestEvent)] == [1, 2]
    assert set(conn.pending) == {1, 2}
    responses = PROTO.encode_response(ApiVersionsResponse(error_code=0), 3, correlation_id=2) + PROTO.encode_response(
        MetadataResponse(cluster_id="k"), 12, correlation_id=1
    )
    got = conn.broker_bytes(responses)
    assert all(isinstance(e, ResponseEvent) and e.error is None for e in got)
    assert [(e.request.correlation_id, type(e.decoded.body).__name__) for e in got] == [  # type: ignore[union-attr]
        (2, "ApiVersionsResponse"),
        (1, "MetadataResponse"),
    ]
    assert got[1].decoded.body.cluster_id == "k"  # type: ignore[union-attr]
    assert conn.pending == {}


def test_unmatched_response_is_reported_not_guessed() -> None:
    conn = Connection(PROTO)
    (event,) = conn.broker_bytes(PROTO.encode_response(ApiVersionsResponse(), 3, correlation_id=77))
    assert isinstance(event, ResponseEvent)
    assert event.request is None and event.decoded is None
    assert "no request with correlation id 77" in str(event.error)


def test_produce_with_acks_zero_expects_no_response() -> None:
    conn = Connection(PROTO)
    conn.client_bytes(PROTO.encode_request(ProduceRequest(acks=0, timeout_ms=1), 9, correlation_id=4))
    conn.client_bytes(PROTO.encode_request(ProduceRequest(acks=1, timeout_ms=1), 9, correlation_id=5))
    assert list(conn.pending) == [5]


def test_api_versions_answered_in_v0_with_unsupported_version() -> None:
    conn = Connection(PROTO)
    conn.client_bytes(PROTO.encode_request(ApiVersionsRequest(client_software_name="x"), 4, correlation_id=9))
    # What a broker without v4 sends back, written by hand in the v0 layout:
    body = bytes.fromhex("002300000001001200000003")  # UNSUPPORTED_VERSION; ApiVersions 0-3
    (event,) = conn.broker_bytes(frame(bytes.fromhex("00000009") + body))
    assert isinstance(event, ResponseEvent) and event.error is None
    assert event.decoded is not None and event.decoded.api_version == 0
    assert event.decoded.body.error_code == 35
    assert event.decoded.body.api_keys[0].max_version == 3
    assert event.warnings == ["ApiVersions v4 answered in v0 (UNSUPPORTED_VERSION)"]


@pytest.mark.parametrize("version", [11, 12, 13])
def test_librdkafkas_trailing_bytes_after_a_metadata_request_are_a_warning(version: int) -> None:
    auto = Protocol.auto()  # Metadata v13 is Apache's
    conn = Connection(auto)
    good = auto.encode_request(auto.message("MetadataRequest")(topics=None), version, correlation_id=3, client_id="rd")
    padded = frame(good[4:] + b"\x01\x00\x00")  # what librdkafka 2.x sends after these bodies
    (event,) = conn.client_bytes(padded)
    assert isinstance(event, RequestEvent) and event.error is None
    assert event.warnings == ["3 trailing bytes after the body, ignored"]
    assert event.decoded is not None and event.decoded.body.topics is None


@pytest.mark.parametrize(("version", "extra"), [(4, b"\x00\x00"), (12, b"\x00\x00\x00\x00"), (10, b"\x01\x00\x00")])
def test_trailing_bytes_no_client_sends_make_a_problem_that_keeps_the_body(version: int, extra: bytes) -> None:
    auto = Protocol.auto()
    conn = Connection(auto)
    good = auto.encode_request(auto.message("MetadataRequest")(topics=None), version, correlation_id=3, client_id="c")
    (event,) = conn.client_bytes(frame(good[4:] + extra))
    assert isinstance(event, RequestEvent) and event.error is not None
    assert str(event.error).startswith(f"{len(extra)} bytes left after the body, which no known client sends")
    assert str(event.error).endswith(f"in MetadataRequest v{version} at offset {len(good)}")
    assert event.warnings == [f"{len(extra)} trailing bytes after the body, ignored"]
    assert event.decoded is not None and event.decoded.body.topics is None


def test_undecodable_request_keeps_its_frame_and_error() -> None:
    conn = Connection(PROTO)
    bad = frame(struct.pack(">hhi", 999, 0, 1) + b"\x00\x00")
    (event,) = conn.client_bytes(bad)
    assert isinstance(event, RequestEvent)
    assert event.frame == bad and event.api_key == 999 and "unknown api key 999" in str(event.error)


def test_gap_then_resync_on_next_plausible_request() -> None:
    conn = Connection(PROTO)
    first = PROTO.encode_request(MetadataRequest(topics=None), 12, correlation_id=1, client_id="c")
    second = PROTO.encode_request(ApiVersionsRequest(), 3, correlation_id=2, client_id="c")
    conn.client_bytes(first[:7])  # part of the first frame, then bytes go missing
    conn.gap("client", lost=5)
    events = conn.client_bytes(first[12:] + second)
    assert [e.correlation_id for e in events if isinstance(e, RequestEvent)] == [2]
    assert events[0].error is None  # type: ignore[union-attr]


def test_capture_starting_mid_stream() -> None:
    conn = Connection(PROTO)
    conn.start_mid_stream()
    req = PROTO.encode_request(ApiVersionsRequest(), 3, correlation_id=8, client_id="c")
    events = conn.client_bytes(b"\x17\x00\x01garbage" + req)
    assert [e.correlation_id for e in events if isinstance(e, RequestEvent)] == [8]
    resp = PROTO.encode_response(ApiVersionsResponse(), 3, correlation_id=8)
    (event,) = conn.broker_bytes(b"\x00\x00\x00\x02zz" + resp)
    assert isinstance(event, ResponseEvent) and event.error is None and event.request is not None


def test_oversized_frame_loses_the_stream_until_resync() -> None:
    conn = Connection(PROTO, max_frame_size=1000)
    req = PROTO.encode_request(ApiVersionsRequest(), 3, correlation_id=8, client_id="c")
    events = conn.client_bytes(struct.pack(">i", 5000) + b"x" * 20 + req)
    assert isinstance(events[0], StreamLost) and events[0].direction is Direction.CLIENT_TO_BROKER
    assert "outside 0..1000" in events[0].reason
    later = conn.client_bytes(req)
    assert [e.correlation_id for e in later if isinstance(e, RequestEvent)] == [8]
