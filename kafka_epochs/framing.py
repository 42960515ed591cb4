"""Sans-IO framing: bytes in, Kafka frames and request/response pairs out.

Nothing here owns a socket or a clock. A :class:`FrameBuffer` turns a byte stream into
size-prefixed frames; a :class:`Connection` holds one buffer per direction of one client-broker
connection and pairs every response with its request by correlation id, because a response
cannot be decoded without its request's api key and version. Feed it bytes as they arrive, from
a socket, a capture or a test, and read the events it returns::

    conn = Connection(Protocol.auto())
    for event in conn.client_bytes(chunk):   # RequestEvent
        ...
    for event in conn.broker_bytes(chunk):   # ResponseEvent (event.request is its request)
        ...
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from kafka_epochs.errors import DecodeError, KafkaEpochsError
from kafka_epochs.protocol import Decoded, Protocol
from kafka_epochs.sasl import SASL_HANDSHAKE, SaslTokens

#: Kafka's default ``socket.request.max.bytes``: frames above this are refused, not buffered.
DEFAULT_MAX_FRAME = 100 * 1024 * 1024
#: Requests kept waiting for a response before the oldest are forgotten.
DEFAULT_MAX_PENDING = 10_000

_INT32 = struct.Struct(">i")
_REQUEST_PREFIX = struct.Struct(">ihhih")  # size, api key, api version, correlation id, client id length


class FrameTooLarge(DecodeError):
    """A size prefix over the limit (or negative): the stream cannot be trusted past it."""


class FrameBuffer:
    """Collects stream bytes and hands out whole size-prefixed frames (prefix included)."""

    def __init__(self, max_frame_size: int = DEFAULT_MAX_FRAME) -> None:
        self.max_frame_size = max_frame_size
        self._buffer = bytearray()
        self._start = 0  # read position inside _buffer
        self.offset = 0  # stream offset of _buffer[_start]

    @property
    def buffered(self) -> int:
        """Bytes received but not yet returned as a frame."""
        return len(self._buffer) - self._start

    def feed(self, data: bytes | bytearray | memoryview) -> None:
        if self._start and self._start * 2 >= len(self._buffer):
            del self._buffer[:self._start]  # compact now and then, not on every frame
            self._start = 0
        self._buffer += data

    def next_frame(self) -> bytes | None:
        """The next complete frame, or None until more bytes arrive."""
        start = self._start
        if len(self._buffer) - start < 4:
            return None
        size = _INT32.unpack_from(self._buffer, start)[0]
        if size < 0 or size > self.max_frame_size:
            raise FrameTooLarge(
                f"frame size {size} is outside 0..{self.max_frame_size} (the frame size limit)", self.offset, "size")
        end = start + 4 + size
        if len(self._buffer) < end:
            return None
        frame = bytes(self._buffer[start:end])
        self._start = end
        self.offset += 4 + size
        return frame

    def __iter__(self) -> Iterator[bytes]:
        while (frame := self.next_frame()) is not None:
            yield frame

    def peek(self) -> bytes:
        """The buffered bytes not yet framed (for resynchronising after a gap)."""
        return bytes(self._buffer[self._start:])

    def skip(self, count: int) -> None:
        """Drop ``count`` buffered bytes (they belong to no frame we can read)."""
        count = min(count, self.buffered)
        self._start += count
        self.offset += count

    def discard(self, lost: int = 0) -> None:
        """Forget everything buffered; ``lost`` more bytes are known to be missing from the stream."""
        self.offset += self.buffered + lost
        self._buffer.clear()
        self._start = 0


@dataclass(slots=True)
class RequestEvent:
    """A request frame seen from the client, decoded or carrying why it could not be."""

    frame: bytes
    stream_offset: int
    timestamp_ns: int | None
    api_key: int | None
    api_version: int | None
    correlation_id: int | None
    decoded: Decoded | None = None
    error: KafkaEpochsError | None = None
    warnings: list[str] = field(default_factory=list)

    @property
    def expects_response(self) -> bool:
        # A Produce with acks=0 is never answered (KIP-98 keeps that rule for every version).
        body = self.decoded.body if self.decoded is not None else None
        return not (self.api_key == 0 and body is not None and getattr(body, "acks", 1) == 0)


@dataclass(slots=True)
class ResponseEvent:
    """A response frame seen from the broker, paired with its request when there was one."""

    frame: bytes
    stream_offset: int
    timestamp_ns: int | None
    correlation_id: int | None
    request: RequestEvent | None
    decoded: Decoded | None = None
    error: KafkaEpochsError | None = None
    warnings: list[str] = field(default_factory=list)


@dataclass(slots=True)
class SaslToken:
    """A raw SASL token (no Kafka header) after a SaslHandshake v0; a broker token carries the
    client token it answers in ``request``. The bytes are credentials: show them only when asked."""

    frame: bytes
    stream_offset: int
    timestamp_ns: int | None
    from_client: bool
    mechanism: str | None
    request: SaslToken | None = None

    @property
    def length(self) -> int:
        return len(self.frame) - 4


@dataclass(slots=True)
class StreamLost:
    """A direction became unreadable (an oversized size prefix, or a gap the caller reported)."""

    direction: str
    stream_offset: int
    reason: str


Event = RequestEvent | ResponseEvent | SaslToken | StreamLost


class Connection:
    """One client-broker connection: frames both directions and pairs responses with requests."""

    def __init__(
        self, protocol: Protocol, *, max_frame_size: int = DEFAULT_MAX_FRAME,
        max_pending: int = DEFAULT_MAX_PENDING,
    ) -> None:
        self.protocol = protocol
        self.max_pending = max_pending
        self.client = FrameBuffer(max_frame_size)
        self.broker = FrameBuffer(max_frame_size)
        self.pending: dict[int, RequestEvent] = {}
        self.sasl = SaslTokens()
        self._tokens: list[SaslToken] = []  # client tokens waiting for the broker's
        self._resync = {"client": False, "broker": False}

    # -- feeding ----------------------------------------------------------------------------

    def client_bytes(
        self, data: bytes, timestamp_ns: int | None = None,
    ) -> list[RequestEvent | SaslToken | StreamLost]:
        """Bytes the client sent; returns the requests (and raw SASL tokens) they complete."""
        self.client.feed(data)
        if self._resync["client"] and not self._find_start("client"):
            return []
        out: list[RequestEvent | SaslToken | StreamLost] = []
        try:
            for frame in self.client:
                offset = self.client.offset - len(frame)
                if self.sasl.client_token(frame, self._reads_as_request):
                    token = SaslToken(frame, offset, timestamp_ns, True, self.sasl.mechanism)
                    self._tokens.append(token)
                    out.append(token)
                else:
                    out.append(self._request(frame, offset, timestamp_ns))
        except FrameTooLarge as e:
            out.append(self._lose("client", e))
        return out

    def broker_bytes(
        self, data: bytes, timestamp_ns: int | None = None,
    ) -> list[ResponseEvent | SaslToken | StreamLost]:
        """Bytes the broker sent; returns the responses (and raw SASL tokens) they complete."""
        self.broker.feed(data)
        if self._resync["broker"] and not self._find_start("broker"):
            return []
        out: list[ResponseEvent | SaslToken | StreamLost] = []
        try:
            for frame in self.broker:
                offset = self.broker.offset - len(frame)
                correlation_id = _INT32.unpack_from(frame, 4)[0] if len(frame) >= 8 else None
                if self.sasl.broker_token(frame, self.pending, correlation_id):
                    asked = self._tokens.pop(0) if self._tokens else None
                    out.append(SaslToken(frame, offset, timestamp_ns, False, self.sasl.mechanism, asked))
                else:
                    out.append(self._response(frame, offset, timestamp_ns))
        except FrameTooLarge as e:
            out.append(self._lose("broker", e))
        return out

    def gap(self, direction: str, lost: int = 0) -> None:
        """Bytes of ``direction`` ("client" or "broker") were lost: drop the partial frame and
        resynchronise on the next plausible frame start."""
        buffer = self.client if direction == "client" else self.broker
        buffer.discard(lost)
        self._resync[direction] = True

    def restart(self, direction: str) -> None:
        """Drop a partial frame of ``direction``: the next bytes fed start a frame (the caller,
        e.g. a capture that follows frame sizes across a gap, knows the boundary)."""
        (self.client if direction == "client" else self.broker).discard()
        self._resync[direction] = False

    def start_mid_stream(self) -> None:
        """The first bytes fed may start inside a frame (a capture that began late)."""
        self._resync = {"client": True, "broker": True}

    def unanswered(self) -> list[RequestEvent]:
        """Requests still waiting for a response (e.g. at the end of a capture)."""
        return list(self.pending.values())

    # -- decoding ---------------------------------------------------------------------------

    def _request(self, frame: bytes, offset: int, timestamp_ns: int | None) -> RequestEvent:
        api_key = api_version = correlation_id = None
        if len(frame) >= 12:
            _, api_key, api_version, correlation_id = struct.unpack_from(">ihhi", frame, 0)
        event = RequestEvent(frame, offset, timestamp_ns, api_key, api_version, correlation_id)
        try:
            # Trailing bytes are tolerated and reported: librdkafka sends a few after some
            # Metadata bodies, and brokers ignore them.
            event.decoded = self.protocol.decode_request(frame)
            event.warnings.extend(event.decoded.warnings)
        except KafkaEpochsError as e:
            event.error = e
        if api_key == SASL_HANDSHAKE and event.decoded is not None and correlation_id is not None:
            self.sasl.handshake(correlation_id, event.decoded.api_version, event.decoded.body.mechanism)
        if correlation_id is not None and event.expects_response:
            self.pending[correlation_id] = event
            if len(self.pending) > self.max_pending:
                del self.pending[next(iter(self.pending))]
        return event

    def _response(self, frame: bytes, offset: int, timestamp_ns: int | None) -> ResponseEvent:
        correlation_id = _INT32.unpack_from(frame, 4)[0] if len(frame) >= 8 else None
        request = self.pending.pop(correlation_id, None) if correlation_id is not None else None
        event = ResponseEvent(frame, offset, timestamp_ns, correlation_id, request)
        if request is None or request.api_key is None or request.api_version is None:
            event.error = DecodeError(
                f"no request with correlation id {correlation_id} was seen on this connection; "
                "a response cannot be decoded without its request", 4, "correlation_id")
            return event
        prefer = request.decoded.profile if request.decoded is not None else None
        try:
            event.decoded = self.protocol.decode_response(frame, request.api_key, request.api_version, prefer=prefer)
            event.warnings.extend(event.decoded.warnings)
        except KafkaEpochsError as e:
            event.error = e
        if request.api_key == SASL_HANDSHAKE and event.decoded is not None and correlation_id is not None:
            self.sasl.answered(correlation_id, event.decoded.body.error_code)
        return event

    def _reads_as_request(self, frame: bytes) -> bool:
        try:
            self.protocol.decode_request(frame)
        except KafkaEpochsError:
            return False
        return True

    def unanswered_tokens(self) -> list[SaslToken]:
        """Client SASL tokens the broker never answered (e.g. at the end of a capture)."""
        return list(self._tokens)

    # -- resynchronising --------------------------------------------------------------------

    def _lose(self, direction: str, error: DecodeError) -> StreamLost:
        self.gap(direction)
        return StreamLost(direction, error.offset, error.reason)

    def _find_start(self, direction: str) -> bool:
        """Skip buffered bytes up to the next frame start; True once one is found.

        A candidate start must look like a frame header and its whole frame must decode (a
        response: as the answer to a request still pending). A fully verified candidate wins over
        an earlier one whose frame is not complete yet; with none verified we wait at the first
        incomplete one, so a false start costs at most one frame-size limit of buffering and
        never yields a chain of garbage frames.
        """
        buffer = self.client if direction == "client" else self.broker
        data = buffer.peek()
        plausible = self._plausible_request if direction == "client" else self._plausible_response
        waiting_at = None
        for offset in range(len(data)):
            verdict = plausible(data, offset, buffer.max_frame_size)
            if verdict:
                buffer.skip(offset)
                self._resync[direction] = False
                return True
            if verdict is None and waiting_at is None:
                waiting_at = offset  # cannot judge yet; keep looking for a verified start
        buffer.skip(len(data) if waiting_at is None else waiting_at)
        return False

    def _plausible_request(self, data: bytes, offset: int, limit: int) -> bool | None:
        if len(data) - offset < _REQUEST_PREFIX.size:
            return None
        size, api_key, api_version, correlation_id, client_id_length = _REQUEST_PREFIX.unpack_from(data, offset)
        if not 10 <= size <= limit or correlation_id < 0 or not -1 <= client_id_length <= size - 10:
            return False
        try:
            if api_version not in self.protocol.message_for(api_key, "request").VALID_VERSIONS:
                return False
        except KeyError:
            return False
        if len(data) - offset < 4 + size:
            return None
        try:
            self.protocol.decode_request(data[offset:offset + 4 + size])
        except KafkaEpochsError:
            return False
        return True

    def _plausible_response(self, data: bytes, offset: int, limit: int) -> bool | None:
        if len(data) - offset < 8:
            return None
        size, correlation_id = struct.unpack_from(">ii", data, offset)
        request = self.pending.get(correlation_id)
        if not 4 <= size <= limit or request is None or request.api_key is None or request.api_version is None:
            return False
        if len(data) - offset < 4 + size:
            return None
        try:
            self.protocol.decode_response(data[offset:offset + 4 + size], request.api_key, request.api_version)
        except KafkaEpochsError:
            return False
        return True


def describe(event: Any) -> str:
    """A one-line summary of an event, for logs and the command line."""
    if isinstance(event, StreamLost):
        return f"{event.direction} stream lost at {event.stream_offset}: {event.reason}"
    if isinstance(event, SaslToken):
        side = "client" if event.from_client else "broker"
        return f"{side} SASL {event.mechanism} token, {event.length} bytes"
    kind = "request" if isinstance(event, RequestEvent) else "response"
    if event.decoded is not None:
        return (f"{kind} {type(event.decoded.body).__name__} v{event.decoded.api_version} "
                f"correlation {event.correlation_id}")
    return f"{kind} correlation {event.correlation_id}: {event.error}"
