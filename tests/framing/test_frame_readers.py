"""The way nearly every frame is decoded (``decoded.frame_reader``) gives what the protocol's own
``decode_request``/``decode_response`` give, or leaves the frame to them.

``FrameDecoding`` reads each frame with a reader made once per (api key, version, kind), which
skips the general path's steps for the common case and gives None for the rest. Each test below
decodes the same frames both ways, with every kind of body reader, and holds the events equal:
the header, the body (or its projection), the profile, the warnings, the error.
"""

from __future__ import annotations

import io
import random
import struct
from pathlib import Path
from typing import Any

import pytest

from kafka_epochs import Protocol
from kafka_epochs.decoded import frame_reader
from kafka_epochs.exchanges import Kind, decode_capture
from kafka_epochs.framing import FrameDecoding, RequestEvent, ResponseEvent, reader_key
from kafka_epochs.projection.bodies import FieldsReader, ProjectedBody

SAMPLES = Path(__file__).resolve().parents[2] / "kafka_epochs" / "samples"
AUTO = Protocol.auto()
READERS: dict[str, Any] = {
    "whole": None,
    "headers only": FieldsReader([]),
    "fields": FieldsReader(["error_code", "topics[].partitions[].leader_epoch", "topics[].name", "acks"]),
}


def body_value(body: Any) -> Any:
    if type(body) is ProjectedBody:
        return (body.message, body.version, body.to_dict(), body.control, body.note)
    return body


def event_value(event: RequestEvent | ResponseEvent) -> tuple[Any, ...]:
    decoded = event.decoded
    seen: tuple[Any, ...] = (None,)
    if decoded is not None:
        seen = (
            decoded.header,
            body_value(decoded.body),
            decoded.api_key,
            decoded.api_version,
            decoded.header_version,
            decoded.trailing,
            decoded.profile,
            decoded.warnings,
            decoded.message,
            decoded.problem,
        )
    error = None if event.error is None else (type(event.error), str(event.error))
    return (*seen, error, event.warnings, event.frame, event.correlation_id)


Frames = list[tuple[bytes, int, int, int, bytes]]  # request, api key, version, correlation id, response


def capture_frames() -> Frames:
    """Every pair of the bundled captures (real clients, 36 apis between them)."""
    out: Frames = []
    for path in sorted(SAMPLES.glob("*.pcap")):
        for exchange in decode_capture(io.BytesIO(path.read_bytes()), AUTO):
            request, response = exchange.request, exchange.response
            if exchange.kind is Kind.PAIR and request is not None and response is not None:
                assert request.api_key is not None and request.api_version is not None
                key, version, cid = request.api_key, request.api_version, request.correlation_id
                out.append((request.frame, key, version, cid or 0, response.frame))
    return out


def default_frames() -> Frames:
    """A request and a response of every api at every version, each body its defaults."""
    out: Frames = []
    for key in AUTO.api_keys():
        for version in AUTO.versions(key, "request"):
            request_class, response_class = AUTO.message_for(key, "request"), AUTO.message_for(key, "response")
            try:
                request = AUTO.encode_request(request_class(), version, correlation_id=7, client_id="c")
                response = AUTO.encode_response(response_class(), version, correlation_id=7)
            except Exception:  # a version only the other profile writes, or an unencodable default
                continue
            out.append((request, key, version, 7, response))
    return out


CAPTURED, DEFAULTS = capture_frames(), default_frames()


def plainly(frames: Frames, reader: Any, memo: bool = False) -> int:
    """Read the responses of ``frames`` whose header is plain by their ``PlainResponse`` and by
    the quick reader, and hold the two equal (the plain way reads None exactly where the quick
    reader does); the responses read the plain way."""
    plains, quick = FrameDecoding(AUTO, reader, memo=memo), FrameDecoding(AUTO, reader, memo=memo)
    taken = 0
    for _, key, version, cid, response in frames:
        plain = plains.plain_response(key, version)
        read = quick.reader(key, version, False)
        assert (plain is None) == (read is None)
        if plain is None or struct.unpack_from(">i", response)[0] != len(response) - 4:
            continue  # (a frame must be whole, as its cutter makes it)
        start = plain.body_start
        if len(response) < start or (start == 9 and response[8] != 0):
            continue  # a header that is not the plain one
        got, decoded = plain.read_body(response, start), read(response)  # type: ignore[misc]
        assert (got is None) == (decoded is None)
        if got is None or decoded is None:
            continue
        assert decoded.header.correlation_id == cid and decoded.header._unknown_tags is None
        assert (plain.message, plain.api_version, plain.header_version, plain.profile) == (
            decoded.message,
            decoded.api_version,
            decoded.header_version,
            decoded.profile,
        )
        assert (body_value(got[0]), got[1]) == (body_value(decoded.body), decoded.shared)
        taken += 1
    return taken


def both_ways(frames: Frames, reader: Any, memo: bool = False) -> tuple[int, int]:
    """Decode ``frames`` both ways and hold them equal; (frames, frames the readers took)."""
    fast, general = FrameDecoding(AUTO, reader, memo=memo), FrameDecoding(AUTO, reader, quick=False)
    taken = 0
    for request, key, version, cid, response in frames:
        for decoding in (fast, general):
            got = decoding.request_event(request, 0, 1, key, version, cid)
            if decoding is fast:
                request_event = got
            else:
                assert event_value(got) == event_value(request_event)
        answers = [d.response_event(response, 0, 2, cid, request_event) for d in (fast, general)]
        assert event_value(answers[0]) == event_value(answers[1])
        read = fast.request_readers.get(reader_key(key, version))
        taken += read is not None and read(request) is not None
    return len(frames), taken


@pytest.mark.parametrize("reader", READERS.values(), ids=READERS.keys())
def test_captured_frames_decode_alike_both_ways(reader: Any) -> None:
    count, taken = both_ways(CAPTURED, reader)
    assert count >= 90 and taken >= count * 0.9  # nearly every frame goes the quick way
    assert plainly(CAPTURED, reader) >= count * 0.9  # and nearly every response the plain way


@pytest.mark.parametrize("reader", READERS.values(), ids=READERS.keys())
def test_every_api_and_version_decodes_alike_both_ways(reader: Any) -> None:
    count, taken = both_ways(DEFAULTS, reader)
    assert count >= 300 and taken >= count * 0.8
    assert plainly(DEFAULTS, reader) >= count * 0.8


def damaged(frames: Frames, seed: int) -> Frames:
    """Each frame damaged one way: trailing bytes, a byte flipped, cut short (size kept true)."""
    rng = random.Random(seed)
    out: Frames = []
    for request, key, version, cid, response in frames:
        how = rng.randrange(4)
        if how == 0:
            request, response = grown(request, b"\x00\x01\x02"), grown(response, b"\x07")
        elif how == 1:
            request, response = flipped(request, rng), flipped(response, rng)
        elif how == 2:
            request, response = cut(request, rng), cut(response, rng)
        else:  # the size prefix no longer the frame's
            response = struct.pack(">i", len(response)) + response[4:]
        out.append((request, key, version, cid, response))
    return out


def grown(frame: bytes, extra: bytes) -> bytes:
    return struct.pack(">i", len(frame) - 4 + len(extra)) + frame[4:] + extra


def flipped(frame: bytes, rng: random.Random) -> bytes:
    at = rng.randrange(8, len(frame)) if len(frame) > 8 else 4
    return frame[:at] + bytes([frame[at] ^ (1 << rng.randrange(8))]) + frame[at + 1 :]


def cut(frame: bytes, rng: random.Random) -> bytes:
    body = frame[4 : 4 + rng.randrange(4, len(frame) - 3)]
    return struct.pack(">i", len(body)) + body


@pytest.mark.parametrize("memo", [False, True], ids=["read each", "memo"])
@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("reader", READERS.values(), ids=READERS.keys())
def test_damaged_frames_decode_alike_both_ways(reader: Any, seed: int, memo: bool) -> None:
    # (each damaged copy after its whole one: a memo has the whole one's body to be fooled by)
    frames = CAPTURED + DEFAULTS
    mixed = [f for pair in zip(frames, damaged(frames, seed), strict=True) for f in pair]
    both_ways(mixed, reader, memo)
    plainly(mixed, reader, memo)


def test_a_header_that_runs_past_its_frame_is_not_taken_for_a_kept_empty_body() -> None:
    whole = AUTO.encode_request(AUTO.message("ApiVersionsRequest")(), 0, correlation_id=1, client_id="app")
    assert len(whole) == 4 + 8 + 2 + 3  # size; key, version, correlation id; client id: no body at all
    past = whole[:12] + struct.pack(">h", 40) + whole[14:]  # a client id longer than the frame
    for memo in (False, True):
        decoding = FrameDecoding(AUTO, memo=memo)
        kept = decoding.request_event(whole, 0, 0, 18, 0, 1)
        damaged = decoding.request_event(past, 0, 0, 18, 0, 1)
        assert kept.error is None and damaged.error is not None and damaged.decoded is None


def test_trailing_bytes_are_left_to_the_general_way() -> None:
    request, key, version, _, _ = CAPTURED[0]
    plan = AUTO.frame_plan(key, version, "request", -1)
    read = frame_reader(plan, key, version, None)
    assert read is not None and read(request) is not None
    assert read(grown(request, b"\x00")) is None


def test_no_reader_where_only_the_general_way_reads() -> None:
    # two layouts of one version: the body chooses (StopReplicaRequest v4, KIP-570's and Apache's)
    stop_replica = 5
    assert (stop_replica, "request", 4) in AUTO.conflicts()
    two = AUTO.frame_plan(stop_replica, 4, "request", -1)
    assert two.body_class is None and frame_reader(two, stop_replica, 4, None) is None
    # an unstable version carries a warning on every frame
    init_producer_id = 22
    unstable = Protocol.apache().frame_plan(init_producer_id, 6, "request", -1)
    assert unstable.notes and frame_reader(unstable, init_producer_id, 6, None) is None
    # a body reader that cannot try (no ``attempt``)
    plain = AUTO.frame_plan(3, 12, "request", -1)
    assert frame_reader(plain, 3, 12, lambda cls, data, pos, version: cls.read(data, pos, version)) is None


def test_a_shared_decoding_must_match_its_connection() -> None:
    from kafka_epochs.framing import Connection

    shared = FrameDecoding(AUTO, READERS["headers only"])
    assert Connection(AUTO, body_reader=READERS["headers only"], decoding=shared).decoding is shared
    with pytest.raises(ValueError, match="shared FrameDecoding"):
        Connection(AUTO, decoding=shared)


# -- repeated bodies (decoded.BodyMemo) ---------------------------------------------------------


def _api_versions_answer(correlation_id: int, max_version: int = 4, keys: int = 3) -> bytes:
    keys_of = [{"api_key": k, "min_version": 0, "max_version": max_version} for k in range(keys)]
    body = AUTO.message("ApiVersionsResponse").from_dict({"error_code": 0, "api_keys": keys_of})
    return AUTO.encode_response(body, 3, correlation_id=correlation_id)


def _decoded(decoding: FrameDecoding, frames: list[bytes]) -> list[Any]:
    asked = AUTO.encode_request(AUTO.message("ApiVersionsRequest")(), 3, correlation_id=1)
    request = decoding.request_event(asked, 0, 0, 18, 3, 1)
    return [decoding.response_event(frame, 0, 0, 1, request).decoded for frame in frames]


def _answers(decoding: FrameDecoding, frames: list[bytes]) -> list[Any]:
    return [decoded.body for decoded in _decoded(decoding, frames)]


def test_a_repeated_body_is_read_once_and_shared_where_asked() -> None:
    frames = [_api_versions_answer(n) for n in range(1, 4)] + [_api_versions_answer(9, max_version=5)]
    shared = _answers(FrameDecoding(AUTO, memo=True), frames)
    assert shared[0] is shared[1] is shared[2]  # other correlation ids, the same body bytes
    assert shared[3] is not shared[0] and shared[3] != shared[0]
    fresh = _answers(FrameDecoding(AUTO), frames)  # the default: every body its own object
    assert fresh[0] is not fresh[1] and fresh == shared
    flags = [decoded.shared for decoded in _decoded(FrameDecoding(AUTO, memo=True), frames)]
    assert flags == [False, True, True, False]  # what a reader of the body is told


def test_the_memo_keeps_a_few_small_bodies_and_gives_up_on_bodies_that_do_not_repeat() -> None:
    from kafka_epochs.decoded import BodyMemo

    decoding = FrameDecoding(AUTO, memo=True)
    first = _api_versions_answer(1, max_version=0)
    others = [_api_versions_answer(1, max_version=v) for v in range(1, BodyMemo.SIZE + 1)]
    bodies = _answers(decoding, [first, *others, first])
    assert bodies[-1] is not bodies[0] and bodies[-1] == bodies[0]  # the oldest was forgotten
    big = _api_versions_answer(1, keys=BodyMemo.MAX_BODY // 7 + 1)  # (7 bytes an api key)
    a, b = _answers(decoding, [big, big])
    assert a is not b and a == b  # too large to keep
    # bodies that never repeat: after a trial the memo stops looking, even for a repeat
    decoding = FrameDecoding(AUTO, memo=True)
    never = [_api_versions_answer(1, max_version=v, keys=2) for v in range(BodyMemo.TRIAL + 1)]
    last = _answers(decoding, [*never, never[-1]])
    assert last[-1] is not last[-2] and last[-1] == last[-2]
