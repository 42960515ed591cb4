"""Sans-IO pairing: both directions of one connection cut into frames, each response paired with
its request by correlation id, raw SASL tokens told apart. Nothing is decoded here.

What only a decoder can tell is asked of a :class:`FrameReader`, the plug-in the layer above
supplies: what a request frame is to it (its own record: a decoded event, or just the header), whether
that request expects an answer (a Produce with ``acks=0`` does not), which SASL handshake it is, and
whether some bytes really start a frame (to resynchronise after a loss). :class:`Pairer` is the
one place that pairs: :class:`kafka_epochs.framing.Connection` puts a full decoder on top of it,
and the Spark capture source a header-only reader, so both pair alike by construction::

    pairer = Pairer(reader)
    for item in pairer.feed(Direction.CLIENT_TO_BROKER, chunk, timestamp_ns):
        ...   # the reader's request records, SaslToken, StreamLost
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Iterator
from typing import Generic, Protocol, TypeVar

from kafka_epochs.direction import Direction
from kafka_epochs.errors import DecodeError
from kafka_epochs.resync import REQUEST_PREFIX, RESPONSE_PREFIX, plausible_request, plausible_response
from kafka_epochs.sasl import SASL_HANDSHAKE, SaslTokens
from kafka_epochs.values import Value

__all__ = [
    "DEFAULT_MAX_FRAME",
    "DEFAULT_MAX_PENDING",
    "INT32",
    "REQUEST_HEAD",
    "SASL_HANDSHAKE",
    "FrameBuffer",
    "FrameHead",
    "FrameReader",
    "FrameTooLarge",
    "Pairer",
    "SaslToken",
    "StreamLost",
]

#: Kafka's default ``socket.request.max.bytes``: frames above this are refused, not buffered.
DEFAULT_MAX_FRAME = 100 * 1024 * 1024
#: The one api whose requests may go unanswered (acks=0).
PRODUCE = 0
#: Requests kept waiting for a response before the oldest are forgotten.
DEFAULT_MAX_PENDING = 10_000

#: A frame's size prefix (and a response's correlation id after it).
INT32 = struct.Struct(">i")
#: What a request frame starts with: size, api key, api version, correlation id.
REQUEST_HEAD = struct.Struct(">ihhi")
_CLIENT, _BROKER = Direction.CLIENT_TO_BROKER, Direction.BROKER_TO_CLIENT


class FrameTooLarge(DecodeError):
    """A size prefix over the limit (or negative): the stream cannot be trusted past it."""


class FrameBuffer:
    """Collects stream bytes and hands out whole size-prefixed frames (prefix included)."""

    def __init__(self, max_frame_size: int = DEFAULT_MAX_FRAME) -> None:
        self.max_frame_size = max_frame_size
        self._buffer = bytearray()
        self._start = 0  # read position inside _buffer
        self.offset = 0  # stream offset of _buffer[_start]
        #: bytes received but not yet returned as a frame (a count kept as they come and go, not
        #: a property: readers ask it of nearly every packet, and a call costs more than the sum)
        self.buffered = 0

    def feed(self, data: bytes | bytearray | memoryview) -> None:
        if self._start and self._start * 2 >= len(self._buffer):
            del self._buffer[: self._start]  # compact now and then, not on every frame
            self._start = 0
        self._buffer += data
        self.buffered = len(self._buffer) - self._start

    def next_frame(self) -> bytes | None:
        """The next complete frame, or None until more bytes arrive."""
        start = self._start
        if len(self._buffer) - start < 4:
            return None
        size = INT32.unpack_from(self._buffer, start)[0]
        if size < 0 or size > self.max_frame_size:
            raise FrameTooLarge(
                f"frame size {size} is outside 0..{self.max_frame_size} (the frame size limit)", self.offset, "size"
            )
        end = start + 4 + size
        if len(self._buffer) < end:
            return None
        frame = bytes(self._buffer[start:end])
        self._start = end
        self.offset += 4 + size
        self.buffered = len(self._buffer) - end
        return frame

    def __iter__(self) -> Iterator[bytes]:
        while (frame := self.next_frame()) is not None:
            yield frame

    def put_back(self, frame: bytes) -> None:
        """Undo the :meth:`next_frame` that returned ``frame`` (nothing fed since): a reader that
        hands its stream to another gives the frame it did not take with it."""
        self._start -= len(frame)
        self.offset -= len(frame)
        self.buffered += len(frame)

    def peek(self) -> bytes:
        """The buffered bytes not yet framed (for resynchronising after a gap)."""
        return bytes(self._buffer[self._start :])

    def skip(self, count: int) -> None:
        """Drop ``count`` buffered bytes (they belong to no frame we can read)."""
        count = min(count, self.buffered)
        self._start += count
        self.offset += count
        self.buffered -= count

    def discard(self, lost: int = 0) -> None:
        """Forget everything buffered; ``lost`` more bytes are known to be missing from the stream."""
        self.offset += self.buffered + lost
        self._buffer.clear()
        self._start = 0
        self.buffered = 0


# Not frozen: one is built per frame, a frozen one (object.__setattr__ per field) costs more.
class FrameHead(Value):
    """Where a frame sits and what its header says, before anyone decodes its body.

    For a request, ``api_key``/``api_version`` are its own (None when the frame is too short to
    hold them); for a response, its request's, when the request was seen.
    """

    __slots__ = ("api_key", "api_version", "correlation_id", "direction", "frame", "stream_offset", "timestamp_ns")
    frame: bytes
    direction: Direction
    stream_offset: int
    timestamp_ns: int | None
    correlation_id: int | None
    api_key: int | None
    api_version: int | None

    def __init__(
        self,
        frame: bytes,
        direction: Direction,
        stream_offset: int,
        timestamp_ns: int | None,
        correlation_id: int | None,
        api_key: int | None = None,
        api_version: int | None = None,
    ) -> None:
        self.frame = frame
        self.direction = direction
        self.stream_offset = stream_offset
        self.timestamp_ns = timestamp_ns
        self.correlation_id = correlation_id
        self.api_key = api_key
        self.api_version = api_version


class SaslToken(Value):
    """A raw SASL token (no Kafka header) after a SaslHandshake v0; a broker token carries the
    client token it answers in ``request``. The bytes are credentials: show them only when asked."""

    __slots__ = ("frame", "from_client", "mechanism", "request", "stream_offset", "timestamp_ns")
    frame: bytes
    stream_offset: int
    timestamp_ns: int | None
    from_client: bool
    mechanism: str | None
    request: SaslToken | None

    def __init__(
        self,
        frame: bytes,
        stream_offset: int,
        timestamp_ns: int | None,
        from_client: bool,
        mechanism: str | None,
        request: SaslToken | None = None,
    ) -> None:
        self.frame = frame
        self.stream_offset = stream_offset
        self.timestamp_ns = timestamp_ns
        self.from_client = from_client
        self.mechanism = mechanism
        self.request = request

    @property
    def length(self) -> int:
        return len(self.frame) - 4


class StreamLost(Value):
    """A direction became unreadable (an oversized size prefix): its bytes are skipped until a
    frame start is found again (or the caller says where one is, with ``restart``)."""

    __slots__ = ("direction", "reason", "stream_offset")
    direction: Direction
    stream_offset: int
    reason: str

    def __init__(self, direction: Direction, stream_offset: int, reason: str) -> None:
        self.direction = direction
        self.stream_offset = stream_offset
        self.reason = reason


Req = TypeVar("Req")
Resp = TypeVar("Resp")


class FrameReader(Protocol[Req, Resp]):
    """What a pairer asks of the decoding layer above it (see the module docstring)."""

    def request(self, head: FrameHead) -> Req:
        """The caller's record of a request frame (decoded, or not)."""
        ...

    def response(self, head: FrameHead, request: Req | None) -> Resp:
        """The caller's record of a response frame; ``request`` is its request's record, if seen."""
        ...

    def expects_response(self, request: Req) -> bool:
        """False for a request the broker never answers: a Produce with acks=0, the only kind
        there is (so only Produce requests are asked about)."""
        ...

    def sasl_handshake(self, request: Req) -> tuple[int, str] | None:
        """(version, mechanism) of a SaslHandshake request (only those are asked about), or None
        when it cannot tell."""
        ...

    def sasl_handshake_error(self, response: Resp) -> int | None:
        """The error code of a SaslHandshake response (only answers to v0 handshakes are asked
        about), else None."""
        ...

    def is_request(self, frame: bytes) -> bool:
        """Whether a client frame reads as a Kafka request (a SASL token does not)."""
        ...

    def verifies(self, head: FrameHead, request: Req | None) -> bool:
        """Whether a whole candidate frame found while resynchronising really is one (a response
        comes with the pending request its correlation id names)."""
        ...


class Pairer(Generic[Req, Resp]):
    """One connection: frames both directions and pairs responses with requests, decoding nothing."""

    def __init__(
        self,
        reader: FrameReader[Req, Resp],
        *,
        max_frame_size: int = DEFAULT_MAX_FRAME,
        max_pending: int = DEFAULT_MAX_PENDING,
    ) -> None:
        self.reader = reader
        self.max_pending = max_pending
        # (written out: iterating the enum costs more than the rest of a connection's set-up)
        self.buffers = {_CLIENT: FrameBuffer(max_frame_size), _BROKER: FrameBuffer(max_frame_size)}
        self.pending: dict[int, Req] = {}
        self.sasl = SaslTokens()
        self._tokens: list[SaslToken] = []  # client tokens waiting for the broker's
        self._searching = {_CLIENT: False, _BROKER: False}  # looking for a frame start after a loss

    # -- feeding ----------------------------------------------------------------------------

    def feed(
        self,
        direction: Direction,
        data: bytes,
        timestamp_ns: int | None = None,
    ) -> list[Req | Resp | SaslToken | StreamLost]:
        """Bytes one side sent; returns what they complete, in order."""
        buffer = self.buffers[direction]
        out: list[Req | Resp | SaslToken | StreamLost] = []
        take = self._from_client if direction is Direction.CLIENT_TO_BROKER else self._from_broker
        if not buffer.buffered and not self._searching[direction] and type(data) is bytes:
            # Nothing held: the frames data holds whole are cut from it directly (a packet
            # carrying exactly one frame is the frame), the rest is buffered.
            data = self._whole_frames(buffer, data, take, timestamp_ns, out)
            if not data:
                return out
        buffer.feed(data)
        if self._searching[direction] and not self._find_start(direction):
            return out
        try:
            for frame in buffer:
                out.append(take(frame, buffer.offset - len(frame), timestamp_ns))
        except FrameTooLarge as e:
            self.gap(direction)
            out.append(StreamLost(direction, e.offset, e.reason))
        return out

    @staticmethod
    def _whole_frames(
        buffer: FrameBuffer,
        data: bytes,
        take: Callable[[bytes, int, int | None], Req | Resp | SaslToken],
        timestamp_ns: int | None,
        out: list[Req | Resp | SaslToken | StreamLost],
    ) -> bytes:
        """Take the whole frames at the front of ``data`` (as ``FrameBuffer`` would give them);
        returns the bytes left (a partial frame, or a size the buffer must judge)."""
        pos = 0
        limit = buffer.max_frame_size
        while len(data) - pos >= 4:
            size = INT32.unpack_from(data, pos)[0]
            end = pos + 4 + size
            if size < 0 or size > limit or end > len(data):
                break
            frame = data if pos == 0 and end == len(data) else data[pos:end]
            buffer.offset += 4 + size
            out.append(take(frame, buffer.offset - 4 - size, timestamp_ns))
            pos = end
        return data[pos:] if pos else data

    def gap(self, direction: Direction, lost: int = 0) -> None:
        """Bytes of ``direction`` were lost: drop the partial frame and search for the next start."""
        self.buffers[direction].discard(lost)
        self._searching[direction] = True

    def restart(self, direction: Direction) -> None:
        """Drop a partial frame: the next bytes fed start a frame (the caller knows the boundary,
        e.g. a capture whose aligner followed the frame sizes across a gap)."""
        self.buffers[direction].discard()
        self._searching[direction] = False

    def start_mid_stream(self) -> None:
        """The first bytes fed may start inside a frame (a capture that began late)."""
        self._searching = {_CLIENT: True, _BROKER: True}

    @property
    def plain(self) -> bool:
        """Whether only requests and responses can come next: no SASL tokens being exchanged or
        announced, and both directions in step with their frames."""
        sasl = self.sasl
        return not (sasl.active or sasl.unanswered or sasl.asked or self._tokens or any(self._searching.values()))

    def unanswered(self) -> list[Req]:
        """Requests still waiting for a response (e.g. at the end of a capture)."""
        return list(self.pending.values())

    def unanswered_tokens(self) -> list[SaslToken]:
        """Client SASL tokens the broker never answered."""
        return list(self._tokens)

    # -- pairing ----------------------------------------------------------------------------

    def _from_client(self, frame: bytes, offset: int, timestamp_ns: int | None) -> Req | SaslToken:
        if self.sasl.active and self.sasl.client_token(frame, self.reader.is_request):
            token = SaslToken(frame, offset, timestamp_ns, True, self.sasl.mechanism)
            self._tokens.append(token)
            return token
        api_key = api_version = correlation_id = None
        if len(frame) >= REQUEST_HEAD.size:
            _, api_key, api_version, correlation_id = REQUEST_HEAD.unpack_from(frame, 0)
        request = self.reader.request(
            FrameHead(frame, Direction.CLIENT_TO_BROKER, offset, timestamp_ns, correlation_id, api_key, api_version)
        )
        if correlation_id is None:
            return request
        if api_key == SASL_HANDSHAKE:
            handshake = self.reader.sasl_handshake(request)
            if handshake is not None:
                self.sasl.handshake(correlation_id, *handshake)
        if api_key != PRODUCE or self.reader.expects_response(request):
            self.pending[correlation_id] = request
            if len(self.pending) > self.max_pending:
                del self.pending[next(iter(self.pending))]  # the oldest
        return request

    def _from_broker(self, frame: bytes, offset: int, timestamp_ns: int | None) -> Resp | SaslToken:
        correlation_id = INT32.unpack_from(frame, 4)[0] if len(frame) >= 8 else None
        sasl = self.sasl
        if (sasl.active or sasl.unanswered) and sasl.broker_token(frame, self.pending, correlation_id):
            asked = self._tokens.pop(0) if self._tokens else None
            return SaslToken(frame, offset, timestamp_ns, False, self.sasl.mechanism, asked)
        request = self.pending.pop(correlation_id, None) if correlation_id is not None else None
        head = FrameHead(frame, Direction.BROKER_TO_CLIENT, offset, timestamp_ns, correlation_id)
        response = self.reader.response(head, request)
        if request is not None and correlation_id in sasl.asked:
            error = self.reader.sasl_handshake_error(response)
            if error is not None:
                self.sasl.answered(correlation_id, error)
        return response

    # -- resynchronising --------------------------------------------------------------------

    def _find_start(self, direction: Direction) -> bool:
        """Skip buffered bytes up to the next frame start; True once one is found.

        A candidate must have a frame's shape (:mod:`kafka_epochs.resync`) and its whole frame
        must satisfy the reader (a response: as the answer to a request still pending). A
        verified candidate wins over an earlier one whose frame is not complete yet; with none
        verified we wait at the first incomplete one, so a false start costs at most one
        frame-size limit of buffering and never yields a chain of garbage frames.
        """
        buffer = self.buffers[direction]
        data = buffer.peek()
        waiting_at = None
        for offset in range(len(data)):
            verdict = self._candidate(direction, data, offset, buffer.max_frame_size)
            if verdict:
                buffer.skip(offset)
                self._searching[direction] = False
                return True
            if verdict is None and waiting_at is None:
                waiting_at = offset  # cannot judge yet; keep looking for a verified start
        buffer.skip(len(data) if waiting_at is None else waiting_at)
        return False

    def _candidate(self, direction: Direction, data: bytes, offset: int, limit: int) -> bool | None:
        """True: a verified frame starts here; False: none does; None: too few bytes to say."""
        client = direction is Direction.CLIENT_TO_BROKER
        if len(data) - offset < (REQUEST_PREFIX if client else RESPONSE_PREFIX):
            return None
        if not (plausible_request if client else plausible_response)(data, offset):
            return False
        size = INT32.unpack_from(data, offset)[0]
        if size > limit:
            return False
        request = None
        correlation_id = INT32.unpack_from(data, offset + (8 if client else 4))[0]
        if not client:
            request = self.pending.get(correlation_id)
            if request is None:
                return False
        if len(data) - offset < 4 + size:
            return None
        head = FrameHead(data[offset : offset + 4 + size], direction, 0, None, correlation_id)
        return self.reader.verifies(head, request)
