"""Sans-IO framing with decoding: bytes in, decoded Kafka requests and responses out, paired.

Nothing here owns a socket or a clock. A :class:`Connection` is a :class:`~kafka_epochs.pairing.Pairer`
(which frames both directions of one client-broker connection and pairs every response with its
request by correlation id) with a full decoder plugged in, because a response cannot be decoded
without its request's api key and version. Feed it bytes as they arrive, from a socket, a
capture or a test, and read the events it returns::

    conn = Connection(Protocol.auto())
    for event in conn.client_bytes(chunk):   # RequestEvent
        ...
    for event in conn.broker_bytes(chunk):   # ResponseEvent (event.request is its request)
        ...
"""

from __future__ import annotations

from typing import Any

from kafka_epochs.decoded import FrameReader, PlainRequest, PlainResponse, frame_readers
from kafka_epochs.direction import Direction
from kafka_epochs.errors import DecodeError, KafkaEpochsError
from kafka_epochs.pairing import (
    DEFAULT_MAX_FRAME,
    DEFAULT_MAX_PENDING,
    INT32,
    SASL_HANDSHAKE,
    FrameBuffer,
    FrameHead,
    FrameTooLarge,
    Pairer,
    SaslToken,
    StreamLost,
)
from kafka_epochs.protocol import BodyReader, Decoded, Protocol
from kafka_epochs.values import Value

__all__ = [
    "DEFAULT_MAX_FRAME",
    "DEFAULT_MAX_PENDING",
    "Connection",
    "Event",
    "FrameBuffer",
    "FrameDecoding",
    "FrameTooLarge",
    "HeldRequest",
    "RequestEvent",
    "ResponseEvent",
    "SaslToken",
    "StreamLost",
    "describe",
]
PRODUCE = 0
_UNSET: Any = object()


class RequestEvent(Value):
    """A request frame seen from the client, decoded or carrying why it could not be."""

    __slots__ = (
        "api_key",
        "api_version",
        "correlation_id",
        "decoded",
        "error",
        "frame",
        "stream_offset",
        "timestamp_ns",
        "warnings",
    )
    frame: bytes
    stream_offset: int
    timestamp_ns: int | None
    api_key: int | None
    api_version: int | None
    correlation_id: int | None
    decoded: Decoded | None
    error: KafkaEpochsError | None
    warnings: list[str]

    def __init__(
        self,
        frame: bytes,
        stream_offset: int,
        timestamp_ns: int | None,
        api_key: int | None,
        api_version: int | None,
        correlation_id: int | None,
        decoded: Decoded | None = None,
        error: KafkaEpochsError | None = None,
        warnings: list[str] | None = None,
    ) -> None:
        self.frame = frame
        self.stream_offset = stream_offset
        self.timestamp_ns = timestamp_ns
        self.api_key = api_key
        self.api_version = api_version
        self.correlation_id = correlation_id
        self.decoded = decoded
        self.error = error
        self.warnings = [] if warnings is None else warnings

    @property
    def expects_response(self) -> bool:
        # A Produce with acks=0 is never answered (KIP-98 keeps that rule for every version).
        body = self.decoded.body if self.decoded is not None else None
        return not (self.api_key == 0 and body is not None and getattr(body, "acks", 1) == 0)


class HeldRequest:
    """A request frame read the plain way (:class:`~kafka_epochs.decoded.PlainRequest`), held for
    its answer: its body and its header's values, without the header object, the decoded frame
    and the :class:`RequestEvent` the frame's reader makes. :meth:`event` makes those, for
    whatever needs more than the pair's line (a filter, a fallback, the layered path a
    connection is handed to), as the reader would have made them."""

    __slots__ = ("body", "client_id", "correlation_id", "frame", "plain", "shared", "stream_offset", "timestamp_ns")

    def __init__(
        self,
        frame: bytes,
        stream_offset: int,
        timestamp_ns: int | None,
        correlation_id: int,
        client_id: str,
        plain: PlainRequest,
        body: Any,
        shared: bool,
    ) -> None:
        self.frame = frame
        self.stream_offset = stream_offset
        self.timestamp_ns = timestamp_ns
        self.correlation_id = correlation_id
        self.client_id = client_id
        self.plain = plain
        self.body = body
        self.shared = shared

    def event(self) -> RequestEvent:
        plain = self.plain
        decoded = plain.decoded(self.frame, self.body, self.shared)
        return RequestEvent(
            self.frame,
            self.stream_offset,
            self.timestamp_ns,
            plain.api_key,
            plain.api_version,
            self.correlation_id,
            decoded,
        )


class ResponseEvent(Value):
    """A response frame seen from the broker, paired with its request when there was one."""

    __slots__ = ("correlation_id", "decoded", "error", "frame", "request", "stream_offset", "timestamp_ns", "warnings")
    frame: bytes
    stream_offset: int
    timestamp_ns: int | None
    correlation_id: int | None
    request: RequestEvent | None
    decoded: Decoded | None
    error: KafkaEpochsError | None
    warnings: list[str]

    def __init__(
        self,
        frame: bytes,
        stream_offset: int,
        timestamp_ns: int | None,
        correlation_id: int | None,
        request: RequestEvent | None,
        decoded: Decoded | None = None,
        error: KafkaEpochsError | None = None,
        warnings: list[str] | None = None,
    ) -> None:
        self.frame = frame
        self.stream_offset = stream_offset
        self.timestamp_ns = timestamp_ns
        self.correlation_id = correlation_id
        self.request = request
        self.decoded = decoded
        self.error = error
        self.warnings = [] if warnings is None else warnings


Event = RequestEvent | ResponseEvent | SaslToken | StreamLost


class FrameDecoding:
    """The pairer's plug-in that decodes every frame with a :class:`Protocol` (a ``FrameReader``)."""

    def __init__(
        self, protocol: Protocol, body_reader: BodyReader | None = None, *, quick: bool = True, memo: bool = False
    ) -> None:
        self.protocol = protocol
        self.body_reader = body_reader
        self.quick = quick  # False: every frame the protocol's general way (what the quick way is checked against)
        # True: a body whose bytes repeat a recent one's is that body object (decoded.BodyMemo), for
        # a caller that changes no body (the command line's lines)
        self.memo = memo
        # The way nearly every frame goes, per api key and version (reader_key), one table per
        # kind; None: the protocol's own. A caller that cuts frames itself may look its readers
        # up here (reader() makes one not yet made).
        self.request_readers: dict[int, FrameReader | None] = {}
        self.response_readers: dict[int, FrameReader | None] = {}
        #: how to read just the body of a response whose header is the plain one, by reader_key
        #: (made with its reader; None: the reader, or the general way, reads them all)
        self.plain_responses: dict[int, PlainResponse | None] = {}
        #: the same of a request whose header holds a client id (see PlainRequest)
        self.plain_requests: dict[int, PlainRequest | None] = {}

    def _quick(self, frame: bytes, api_key: int, api_version: int, request: bool) -> Decoded | None:
        """The frame read the quick way, or None where the protocol's general way must read it."""
        readers = self.request_readers if request else self.response_readers
        read = readers.get(api_key * 65536 + api_version, _UNSET)  # (reader_key, without its call)
        if read is _UNSET:
            read = self.reader(api_key, api_version, request)
        if read is None or INT32.unpack_from(frame)[0] != len(frame) - 4:
            return None
        decoded: Decoded | None = read(frame)
        return decoded

    def reader(self, api_key: int, api_version: int, request: bool) -> FrameReader | None:
        """The quick reader of (api key, version, kind), made once (None where only the general
        way reads): it takes whole frames, as ``bytes`` whose size prefix is their length, and
        gives None for any it cannot read (see :func:`~kafka_epochs.decoded.frame_reader`)."""
        readers = self.request_readers if request else self.response_readers
        key = reader_key(api_key, api_version)
        if key in readers:
            return readers[key]
        reader = plain_request = plain_response = None
        if self.quick:
            try:
                plan = self.protocol.frame_plan(api_key, api_version, "request" if request else "response", -1)
            except KafkaEpochsError:
                pass  # (the protocol's decode says why)
            else:
                made = frame_readers(plan, api_key, api_version, self.body_reader, self.memo)
                if made is not None:
                    reader = made[0]
                    if request and plan.header_version in (1, 2):
                        plain_request = PlainRequest(made[1], plan, api_key, api_version, made[2])
                    elif not request and plan.header_version in (0, 1):
                        plain_response = PlainResponse(made[1], plan, api_version, made[2])
        readers[key] = reader
        if request:
            self.plain_requests[key] = plain_request
        else:
            self.plain_responses[key] = plain_response
        return reader

    def plain_response(self, api_key: int, api_version: int) -> PlainResponse | None:
        """How to read the body alone of a response of (api key, version) whose header is the
        plain one (see :class:`~kafka_epochs.decoded.PlainResponse`), made with its reader; None
        where only the reader, or the general way, reads them. Frames as :meth:`reader` takes."""
        key = reader_key(api_key, api_version)
        if key not in self.plain_responses:
            self.reader(api_key, api_version, False)
        return self.plain_responses[key]

    def plain_request(self, api_key: int, api_version: int) -> PlainRequest | None:
        """:meth:`plain_response`'s counterpart for requests (see :class:`~kafka_epochs.decoded.PlainRequest`)."""
        key = reader_key(api_key, api_version)
        if key not in self.plain_requests:
            self.reader(api_key, api_version, True)
        return self.plain_requests[key]

    def request(self, head: FrameHead) -> RequestEvent:
        return self.request_event(
            head.frame, head.stream_offset, head.timestamp_ns, head.api_key, head.api_version, head.correlation_id
        )

    def request_event(
        self,
        frame: bytes,
        stream_offset: int,
        timestamp_ns: int | None,
        api_key: int | None,
        api_version: int | None,
        correlation_id: int | None,
    ) -> RequestEvent:
        """:meth:`request` of a frame head given as its values (a caller that has them saves the head)."""
        event = RequestEvent(frame, stream_offset, timestamp_ns, api_key, api_version, correlation_id)
        if api_key is not None and api_version is not None and type(frame) is bytes and len(frame) >= 8:
            decoded = self._quick(frame, api_key, api_version, True)
            if decoded is not None:
                event.decoded = decoded
                return event
        try:
            # Trailing bytes are tolerated and reported: librdkafka sends a few after some
            # Metadata bodies, and brokers ignore them.
            decoded = event.decoded = self.protocol.decode_request(frame, body_reader=self.body_reader)
            event.warnings.extend(decoded.warnings)
            if decoded.problem is not None:
                event.error = _doubtful(decoded, len(frame))
        except KafkaEpochsError as e:
            event.error = e
        return event

    def quick_response(self, frame: bytes, request: RequestEvent) -> Decoded | None:
        """A response frame to ``request`` read the quick way, or None where :meth:`response_event`
        must read it (the general way: a frame of two layouts, a body that does not read whole,
        an ApiVersions refusal in v0, a request whose api or version is not known)."""
        api_key, api_version = request.api_key, request.api_version
        if api_key is None or api_version is None or type(frame) is not bytes or len(frame) < 8:
            return None
        return self._quick(frame, api_key, api_version, False)

    def response(self, head: FrameHead, request: RequestEvent | None) -> ResponseEvent:
        return self.response_event(head.frame, head.stream_offset, head.timestamp_ns, head.correlation_id, request)

    def response_event(
        self,
        frame: bytes,
        stream_offset: int,
        timestamp_ns: int | None,
        correlation_id: int | None,
        request: RequestEvent | None,
    ) -> ResponseEvent:
        """:meth:`response` of a frame head given as its values."""
        event = ResponseEvent(frame, stream_offset, timestamp_ns, correlation_id, request)
        if request is None or request.api_key is None or request.api_version is None:
            event.error = DecodeError(
                f"no request with correlation id {correlation_id} was seen on this connection; "
                "a response cannot be decoded without its request",
                4,
                "correlation_id",
            )
            return event
        decoded = self.quick_response(frame, request)
        if decoded is not None:
            event.decoded = decoded
            return event
        prefer = request.decoded.profile if request.decoded is not None else None
        try:
            decoded = event.decoded = self.protocol.decode_response(
                frame, request.api_key, request.api_version, prefer=prefer, body_reader=self.body_reader
            )
            event.warnings.extend(decoded.warnings)
            if decoded.problem is not None:
                event.error = _doubtful(decoded, len(frame))
        except KafkaEpochsError as e:
            event.error = e
        return event

    def expects_response(self, request: RequestEvent) -> bool:
        return request.expects_response

    def sasl_handshake(self, request: RequestEvent) -> tuple[int, str] | None:
        if request.api_key != SASL_HANDSHAKE or request.decoded is None:
            return None
        mechanism = getattr(request.decoded.body, "mechanism", None)
        return None if mechanism is None else (request.decoded.api_version, mechanism)

    def sasl_handshake_error(self, response: ResponseEvent) -> int | None:
        request = response.request
        if request is None or request.api_key != SASL_HANDSHAKE or response.decoded is None:
            return None
        code = getattr(response.decoded.body, "error_code", None)
        return None if code is None else int(code)

    def is_request(self, frame: bytes) -> bool:
        try:
            self.protocol.decode_request(frame)
        except KafkaEpochsError:
            return False
        return True

    def verifies(self, head: FrameHead, request: RequestEvent | None) -> bool:
        try:
            if request is None:
                self.protocol.decode_request(head.frame)
            elif request.api_key is None or request.api_version is None:
                return False
            else:
                self.protocol.decode_response(head.frame, request.api_key, request.api_version)
        except KafkaEpochsError:
            return False
        return True


def reader_key(api_key: int, api_version: int) -> int:
    """The key of (api key, version) in :class:`FrameDecoding`'s tables of readers: one int, made
    and hashed for less than a tuple (the two are 16-bit, so no two pairs share a key)."""
    return api_key * 65536 + api_version


def _doubtful(decoded: Decoded, frame_length: int) -> DecodeError:
    """The error of a frame that read but leaves doubt (its body stays, with its warnings): the
    exchange is a problem, not a clean one."""
    assert decoded.problem is not None
    where = f"{decoded.message.__name__} v{decoded.api_version}"
    return DecodeError(decoded.problem, frame_length - decoded.trailing, "", where)


class Connection(Pairer[RequestEvent, ResponseEvent]):
    """One client-broker connection: frames both directions, pairs responses with requests, and
    decodes every frame with ``protocol`` (bodies through ``body_reader`` where one is given: a
    projection's :class:`~kafka_epochs.projection.bodies.FieldsReader`, say).

    ``decoding``, a :class:`FrameDecoding` of the same protocol and body reader, is shared by the
    connections given it: what it prepares per (api key, version) is then made once for them all
    (a capture holds thousands of connections), not once each."""

    def __init__(
        self,
        protocol: Protocol,
        *,
        max_frame_size: int = DEFAULT_MAX_FRAME,
        max_pending: int = DEFAULT_MAX_PENDING,
        body_reader: BodyReader | None = None,
        decoding: FrameDecoding | None = None,
    ) -> None:
        if decoding is None:
            decoding = FrameDecoding(protocol, body_reader)
        elif decoding.protocol is not protocol or decoding.body_reader is not body_reader:
            raise ValueError("a shared FrameDecoding must be of the connection's protocol and body reader")
        self.decoding = decoding
        super().__init__(self.decoding, max_frame_size=max_frame_size, max_pending=max_pending)
        self.protocol = protocol

    def client_bytes(self, data: bytes, timestamp_ns: int | None = None) -> list[Any]:
        """Bytes the client sent: the requests (RequestEvent), raw SASL tokens (SaslToken) and
        losses (StreamLost) they complete."""
        return self.feed(Direction.CLIENT_TO_BROKER, data, timestamp_ns)

    def broker_bytes(self, data: bytes, timestamp_ns: int | None = None) -> list[Any]:
        """Bytes the broker sent: the responses (ResponseEvent, paired), raw SASL tokens and losses."""
        return self.feed(Direction.BROKER_TO_CLIENT, data, timestamp_ns)

    def gap(self, direction: Direction | str, lost: int = 0) -> None:
        """Bytes of ``direction`` (a Direction, or "client"/"broker") were lost: drop the partial
        frame and resynchronise on the next frame start that decodes."""
        super().gap(Direction.of(direction), lost)

    def restart(self, direction: Direction | str) -> None:
        super().restart(Direction.of(direction))

    @property
    def client(self) -> FrameBuffer:
        return self.buffers[Direction.CLIENT_TO_BROKER]

    @property
    def broker(self) -> FrameBuffer:
        return self.buffers[Direction.BROKER_TO_CLIENT]


def describe(event: Any) -> str:
    """A one-line summary of an event, for logs and the command line."""
    if isinstance(event, StreamLost):
        return f"{event.direction.sender} stream lost at {event.stream_offset}: {event.reason}"
    if isinstance(event, SaslToken):
        side = "client" if event.from_client else "broker"
        return f"{side} SASL {event.mechanism} token, {event.length} bytes"
    kind = "request" if isinstance(event, RequestEvent) else "response"
    if event.decoded is not None:
        return (
            f"{kind} {type(event.decoded.body).__name__} v{event.decoded.api_version} "
            f"correlation {event.correlation_id}"
        )
    return f"{kind} correlation {event.correlation_id}: {event.error}"
