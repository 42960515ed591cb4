"""The pairer frames and pairs without decoding: a header-only reader is enough, and the decoding
Connection is the same pairer with a decoder plugged in."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kafka_epochs import Protocol
from kafka_epochs.direction import Direction
from kafka_epochs.pairing import FrameHead, Pairer, SaslToken, StreamLost

P = Protocol.apache()
C2B, B2C = Direction.CLIENT_TO_BROKER, Direction.BROKER_TO_CLIENT


class Heads:
    """A FrameReader that decodes nothing: records are the frame heads themselves."""

    def __init__(self, unanswered: frozenset[int] = frozenset()) -> None:
        self.unanswered = unanswered  # api keys whose requests get no answer
        self.verified: list[FrameHead] = []

    def request(self, head: FrameHead) -> FrameHead:
        return head

    def response(self, head: FrameHead, request: FrameHead | None) -> tuple[FrameHead, FrameHead | None]:
        return head, request

    def expects_response(self, request: FrameHead) -> bool:
        return request.api_key not in self.unanswered

    def sasl_handshake(self, request: FrameHead) -> tuple[int, str] | None:
        return (0, "PLAIN") if request.api_key == 17 else None

    def sasl_handshake_error(self, response: tuple[FrameHead, FrameHead | None]) -> int | None:
        _head, request = response
        return 0 if request is not None and request.api_key == 17 else None

    def is_request(self, frame: bytes) -> bool:
        return frame[4:6] == b"\x00\x12"  # only ApiVersions ends the tokens in this test

    def verifies(self, head: FrameHead, request: FrameHead | None) -> bool:
        self.verified.append(head)
        return True


def request(name: str, version: int, correlation_id: int, **fields: object) -> bytes:
    return P.encode_request(P.message(name)(**fields), version, correlation_id=correlation_id, client_id="c")


def response(name: str, version: int, correlation_id: int) -> bytes:
    return P.encode_response(P.message(name)(), version, correlation_id=correlation_id)


def test_pairs_by_correlation_id_in_any_order_without_decoding() -> None:
    pairer: Pairer[FrameHead, tuple[FrameHead, FrameHead | None]] = Pairer(Heads(unanswered=frozenset({0})))
    sent = pairer.feed(
        C2B, request("MetadataRequest", 12, 1) + request("ApiVersionsRequest", 3, 2) + request("ProduceRequest", 9, 3)
    )
    assert [(h.api_key, h.api_version, h.correlation_id) for h in sent] == [(3, 12, 1), (18, 3, 2), (0, 9, 3)]
    assert list(pairer.pending) == [1, 2]  # the reader said Produce (here) is never answered
    answers = pairer.feed(
        B2C,
        response("ApiVersionsResponse", 3, 2)
        + response("MetadataResponse", 12, 1)
        + response("MetadataResponse", 12, 99),
    )
    assert [(r.correlation_id, q.api_key if q else None) for r, q in answers] == [(2, 18), (1, 3), (99, None)]
    assert pairer.unanswered() == []


def test_sasl_tokens_after_a_v0_handshake() -> None:
    pairer: Pairer[FrameHead, tuple[FrameHead, FrameHead | None]] = Pairer(Heads())
    pairer.feed(C2B, request("SaslHandshakeRequest", 0, 1, mechanism="PLAIN"))
    pairer.feed(B2C, response("SaslHandshakeResponse", 0, 1))
    token = b"\x00user\x00secret"
    (client,) = pairer.feed(C2B, len(token).to_bytes(4, "big") + token)
    (broker,) = pairer.feed(B2C, b"\x00\x00\x00\x00")
    assert isinstance(client, SaslToken) and client.from_client and client.mechanism == "PLAIN"
    assert isinstance(broker, SaslToken) and broker.request is client
    (after,) = pairer.feed(C2B, request("ApiVersionsRequest", 3, 2))
    assert isinstance(after, FrameHead) and after.correlation_id == 2  # a request ends the tokens


def test_a_lost_stream_resynchronises_on_a_verified_frame_start() -> None:
    reader = Heads()
    pairer: Pairer[FrameHead, tuple[FrameHead, FrameHead | None]] = Pairer(reader, max_frame_size=1000)
    lost = pairer.feed(C2B, b"\x7f\xff\xff\xff")  # an impossible size prefix
    assert isinstance(lost[0], StreamLost) and lost[0].direction is C2B
    good = request("MetadataRequest", 12, 7)
    out = pairer.feed(C2B, b"garbage!" + good)
    assert [h.correlation_id for h in out] == [7] and reader.verified[-1].frame == good


@pytest.mark.parametrize("name", ["client", "request", "client_to_broker", Direction.CLIENT_TO_BROKER])
def test_one_direction_vocabulary(name: str | Direction) -> None:
    direction = Direction.of(name)
    assert direction is C2B and (direction.sender, direction.frame_kind) == ("client", "request")
    assert direction.reverse is B2C and (B2C.sender, B2C.frame_kind) == ("broker", "response")
    with pytest.raises(ValueError, match="not a direction"):
        Direction.of("sideways")


_STREAM_PIECES = st.lists(
    st.one_of(
        st.builds(lambda n: request("MetadataRequest", 12, n), st.integers(0, 50)),
        st.builds(lambda n: request("ApiVersionsRequest", 3, n), st.integers(0, 50)),
        st.builds(lambda n: request("ProduceRequest", 9, n), st.integers(0, 50)),
        st.builds(lambda n: response("MetadataResponse", 12, n), st.integers(0, 50)),
        st.binary(max_size=12),  # noise: partial sizes, sizes over the limit, negative sizes
    ),
    max_size=8,
)


@settings(max_examples=200, deadline=None)
@given(pieces=_STREAM_PIECES, data=st.data())
def test_frames_cut_from_the_packet_equal_frames_cut_from_the_buffer(pieces: list[bytes], data: st.DataObject) -> None:
    """A chunk fed with nothing buffered is cut into frames directly (``bytes``); the same
    chunks as ``bytearray`` go through the buffer. Both must give the same events and state."""
    stream = b"".join(pieces)
    cuts = sorted(data.draw(st.lists(st.integers(0, len(stream)), max_size=10)))
    chunks = [stream[a:b] for a, b in zip([0, *cuts], [*cuts, len(stream)], strict=True)]
    direction = data.draw(st.sampled_from([C2B, B2C]))
    outcomes = []
    for kind in (bytes, bytearray):
        pairer: Pairer[FrameHead, tuple[FrameHead, FrameHead | None]] = Pairer(Heads(), max_frame_size=4096)
        pairer.feed(C2B, request("MetadataRequest", 12, 7))  # something for a response to answer
        got = [pairer.feed(direction, kind(chunk), 5) for chunk in chunks]
        buffer = pairer.buffers[direction]
        outcomes.append((got, buffer.offset, buffer.peek(), sorted(pairer.pending)))
    assert outcomes[0] == outcomes[1]
