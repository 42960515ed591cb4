"""Captured traffic to exchanges: the capture pipeline and framing joined, nothing rendered.

:func:`decode_capture` reads a pcap/pcapng file and yields one :class:`Exchange` per
request/response pair, in the order responses complete, plus one per thing that could not be
paired or decoded (an unanswered request, an unmatched response, a gap in the capture, a bad
packet), so nothing is dropped. :mod:`kafka_epochs.rendering` turns them into JSON-ready dicts.
"""

from __future__ import annotations

import enum
import functools
import typing
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

from kafka_epochs.capture import (
    CaptureSource,
    CaptureStats,
    CaptureStreams,
    Direction,
    Discarded,
    EndReason,
    Flow,
    Gap,
    PacketError,
    Resync,
    StreamData,
    StreamEnd,
    StreamStart,
)
from kafka_epochs.capture.pipeline import FrameSink
from kafka_epochs.capture.reassembly.connections import DEFAULT_MAX_CONNECTIONS
from kafka_epochs.framing import (
    DEFAULT_MAX_FRAME,
    Connection,
    FrameDecoding,
    RequestEvent,
    ResponseEvent,
    SaslToken,
    StreamLost,
)
from kafka_epochs.protocol import BodyReader, Protocol
from kafka_epochs.protocol_refs import api_name_of
from kafka_epochs.values import Value

Item_co = typing.TypeVar("Item_co", covariant=True)


class Kind(enum.StrEnum):
    PAIR = "pair"  # a request and its response
    REQUEST = "request"  # a request with no response: none expected (acks=0) or none captured
    RESPONSE = "response"  # a response whose request was not captured
    GAP = "gap"  # bytes missing from the capture
    PACKET_ERROR = "packet_error"  # a packet that could not be read
    STREAM_LOST = "stream_lost"  # a direction became unreadable
    SASL_TOKEN = "sasl_token"  # a raw SASL token and the broker's answer, after a SaslHandshake v0
    CUT_OFF = "cut_off"  # a stream ended inside a frame (the connection closed, was given up, or the capture ended)


class Exchange(Value):
    __slots__ = ("flow", "kind", "problem", "request", "request_time_ns", "response", "timestamp_ns", "tokens")
    kind: Kind
    timestamp_ns: int
    flow: Flow | None
    request: RequestEvent | None
    response: ResponseEvent | None
    problem: str | None  # what went wrong, for everything but a clean pair
    request_time_ns: int | None
    tokens: tuple[SaslToken, ...]  # for SASL_TOKEN: the client's token, then the broker's answer

    def __init__(
        self,
        kind: Kind,
        timestamp_ns: int,
        flow: Flow | None = None,
        request: RequestEvent | None = None,
        response: ResponseEvent | None = None,
        problem: str | None = None,
        request_time_ns: int | None = None,
        tokens: tuple[SaslToken, ...] = (),
    ) -> None:
        self.kind = kind
        self.timestamp_ns = timestamp_ns
        self.flow = flow
        self.request = request
        self.response = response
        self.problem = problem
        self.request_time_ns = request_time_ns
        self.tokens = tokens

    @property
    def ok(self) -> bool:
        """A pair (or an acks=0 request, or a SASL round trip) whose frames all decoded."""
        if self.problem is not None:
            return False
        if self.kind is Kind.SASL_TOKEN:
            return True
        req, resp = self.request, self.response
        if req is None:
            return resp is not None and resp.error is None
        return req.error is None and (resp is None or resp.error is None)


class DecodeSummary(Value):
    __slots__ = (
        "capture",
        "cut_off",
        "exchanges",
        "pairs",
        "per_api",
        "problems",
        "requests",
        "responses",
        "unanswered",
    )
    exchanges: int
    pairs: int
    requests: int
    responses: int
    problems: int
    unanswered: int  # requests that expected a response and saw none
    cut_off: int  # frames a stream ended inside of
    per_api: dict[str, int]
    capture: CaptureStats | None

    def __init__(
        self,
        exchanges: int = 0,
        pairs: int = 0,
        requests: int = 0,
        responses: int = 0,
        problems: int = 0,
        unanswered: int = 0,
        cut_off: int = 0,
        per_api: dict[str, int] | None = None,
        capture: CaptureStats | None = None,
    ) -> None:
        self.exchanges = exchanges
        self.pairs = pairs
        self.requests = requests
        self.responses = responses
        self.problems = problems
        self.unanswered = unanswered
        self.cut_off = cut_off
        self.per_api = {} if per_api is None else per_api
        self.capture = capture

    def count(self, exchange: Exchange) -> None:
        self.exchanges += 1
        self.pairs += exchange.kind is Kind.PAIR
        self.requests += exchange.request is not None
        self.responses += exchange.response is not None
        self.problems += not exchange.ok
        kind = exchange.kind
        if kind is not Kind.PAIR:
            self.unanswered += kind is Kind.REQUEST and exchange.problem is not None
            self.cut_off += kind is Kind.CUT_OFF
        name = api_name(exchange)
        if name:
            self.per_api[name] = self.per_api.get(name, 0) + 1

    def count_pairs(self, pairs: dict[Any, int]) -> None:
        """:meth:`count` of pairs whose two frames decoded whole, as counts by request message."""
        for message, count in pairs.items():
            self.exchanges += count
            self.pairs += count
            self.requests += count
            self.responses += count
            name = message_api(message)
            self.per_api[name] = self.per_api.get(name, 0) + count


@functools.cache
def message_api(message: type) -> str:
    """The api a request or response class belongs to ("Metadata"), as summaries and filters name it."""
    return api_name_of(message.__name__)


def decode_capture(
    source: CaptureSource,
    protocol: Protocol,
    *,
    ports: set[int] | None = None,
    max_frame_size: int = DEFAULT_MAX_FRAME,
    summary: DecodeSummary | None = None,
    body_reader: BodyReader | None = None,
    max_connections: int = DEFAULT_MAX_CONNECTIONS,
) -> Iterator[Exchange]:
    """Every exchange in a capture, decoded with ``protocol`` (bodies through ``body_reader``
    where given: ``FieldsReader(paths)`` reads only those fields, ``FieldsReader([])`` none).

    What a connection leaves unfinished (requests never answered, a frame a stream ended inside
    of) is yielded when the connection ends, as problems; ``max_connections`` bounds the
    connections followed at once (see :class:`~kafka_epochs.capture.CaptureStreams`)."""

    decoding = FrameDecoding(protocol, body_reader)

    def open_connection(flow: Flow) -> ConnectionExchanges:
        connection = Connection(protocol, max_frame_size=max_frame_size, body_reader=body_reader, decoding=decoding)
        return ConnectionExchanges(flow, connection)

    return follow_connections(source, open_connection, ports=ports, summary=summary, max_connections=max_connections)


class ConnectionConsumer(typing.Protocol[Item_co]):
    """What :func:`follow_connections` asks of the consumer of one connection's streams."""

    def client(self, data: bytes, timestamp_ns: int) -> Iterable[Item_co]:
        """Bytes the client sent; what they complete."""
        ...

    def broker(self, data: bytes, timestamp_ns: int) -> Iterable[Item_co]:
        """Bytes the broker sent; what they complete."""
        ...

    def restart(self, direction: Direction) -> None:
        """The next bytes of ``direction`` start a frame (the capture followed frame sizes across a loss)."""
        ...

    def leftovers(self, end: StreamEnd | None) -> Iterable[Item_co]:
        """The connection is over (``end``: its last stream's end; None: the capture's): what it left unfinished."""
        ...


class SinkingConsumer(ConnectionConsumer[Item_co], typing.Protocol[Item_co]):
    """A consumer that can also take frames straight from the capture's lanes, when followed
    with ``sinks=True`` (a consumer without :meth:`frame_sink` is given its bytes as events)."""

    def frame_sink(self, direction: Direction, max_frame_size: int) -> FrameSink | None:
        """A sink for ``direction``'s frames (see :mod:`~kafka_epochs.capture.pipeline`): it
        takes whole frames its connection can take as they are, as ``client``/``broker`` would,
        and puts what it makes in the list it is given."""
        ...


class ConnectionExchanges:
    """One connection's exchanges, from a framing :class:`~kafka_epochs.framing.Connection`."""

    __slots__ = ("connection", "flow")

    def __init__(self, flow: Flow, connection: Connection) -> None:
        self.flow = flow
        self.connection = connection

    def client(self, data: bytes, timestamp_ns: int) -> list[Exchange]:
        flow = self.flow
        out = []
        for event in self.connection.feed(Direction.CLIENT_TO_BROKER, data, timestamp_ns):
            if type(event) is RequestEvent:
                if not event.expects_response:
                    when = event.timestamp_ns
                    out.append(Exchange(Kind.REQUEST, when or 0, flow, request=event, request_time_ns=when))
            elif type(event) is StreamLost:
                out.append(Exchange(Kind.STREAM_LOST, 0, flow, problem=f"client stream: {event.reason}"))
            # a SaslToken is reported with the broker's answer
        return out

    def broker(self, data: bytes, timestamp_ns: int) -> list[Exchange]:
        flow = self.flow
        return [
            broker_exchange(flow, reply, timestamp_ns) for reply in self.connection.broker_bytes(data, timestamp_ns)
        ]

    def restart(self, direction: Direction) -> None:
        self.connection.restart(direction)

    def leftovers(self, end: StreamEnd | None) -> Iterator[Exchange]:
        return _leftovers(self.flow, self.connection, end)


def follow_connections(
    source: CaptureSource,
    open_connection: Callable[[Flow], ConnectionConsumer[Item_co]],
    *,
    ports: set[int] | None = None,
    summary: DecodeSummary | None = None,
    max_connections: int = DEFAULT_MAX_CONNECTIONS,
) -> Iterator[Item_co | Exchange]:
    """What each connection's consumer (made by ``open_connection`` at the connection's first
    bytes) makes of its streams, in the capture's order, with an exchange for each gap and each
    packet that could not be read (:func:`decode_capture` is this with :class:`ConnectionExchanges`)."""
    for made in follow_connection_batches(
        source, open_connection, ports=ports, summary=summary, max_connections=max_connections
    ):
        yield from made


def follow_connection_batches(
    source: CaptureSource,
    open_connection: Callable[[Flow], ConnectionConsumer[Item_co]],
    *,
    ports: set[int] | None = None,
    summary: DecodeSummary | None = None,
    max_connections: int = DEFAULT_MAX_CONNECTIONS,
    sinks: bool = False,
) -> Iterator[Iterable[Item_co | Exchange]]:
    """:func:`follow_connections`' items as made, a non-empty batch at a time (for a consumer
    of many small items, a step less per item). With ``sinks``, the :meth:`~SinkingConsumer.frame_sink`
    of each connection that has one takes the frames of in-order packets straight from the
    capture's lanes (same items, in the same order; no event per packet)."""
    follower: _Follower[Item_co] = _Follower(open_connection)
    streams = CaptureStreams(source, ports=ports, max_connections=max_connections, sinks=follower if sinks else None)
    if summary is not None:
        summary.capture = streams.stats
    for events in streams.batches():
        if made := follower.dispatch(events, 0):
            yield made
    for conn in follower.connections.values():  # (the capture's end ends every stream: none is left here)
        if left := list(conn.leftovers(None)):
            yield left


class _Follower(typing.Generic[Item_co]):
    """The connections of a capture, and what their consumers make of its events (and, as the
    pipeline's :class:`~kafka_epochs.capture.pipeline.Sinks`, of the frames taken from its lanes)."""

    def __init__(self, open_connection: Callable[[Flow], ConnectionConsumer[Item_co]]) -> None:
        self.open_connection = open_connection
        self.connections: dict[Flow, ConnectionConsumer[Item_co]] = {}
        self.live: dict[Flow, int] = {}  # the directions of each connection not yet ended, as bits of _BIT

    def sink(self, flow: Flow, direction: Direction, max_frame_size: int) -> FrameSink | None:
        conn = self.connections.get(flow)
        if conn is None:
            conn = self.connections[flow] = self.open_connection(flow)
        frame_sink = getattr(conn, "frame_sink", None)  # (see SinkingConsumer)
        return None if frame_sink is None else frame_sink(direction, max_frame_size)

    def deliver(self, events: list[Any], start: int) -> None:
        events[start:] = self.dispatch(events, start)

    def dispatch(self, events: Sequence[Any], start: int) -> list[Item_co | Exchange]:
        """What ``events[start:]`` make, in order (a sink's items among them pass as they are)."""
        connections = self.connections
        made: list[Item_co | Exchange] = []
        to_broker = Direction.CLIENT_TO_BROKER
        for index in range(start, len(events)):
            event = events[index]
            kind = type(event)
            if kind is StreamData:
                flow = event.flow
                conn = connections.get(flow)
                if conn is None:
                    conn = connections[flow] = self.open_connection(flow)
                if event.direction is to_broker:
                    made += conn.client(event.data, event.timestamp_ns)
                else:
                    made += conn.broker(event.data, event.timestamp_ns)
            elif kind is StreamStart:  # (a connection's starts and ends, two of each, before the rarer kinds)
                self.live[event.flow] = self.live.get(event.flow, 0) | _BIT[event.direction]
            elif kind is StreamEnd:
                made += self._ended(event)
            elif kind not in _EVENTS:
                made.append(event)  # what a sink made
            elif kind is Gap or kind is Resync:
                conn = connections.get(event.flow)
                if conn is not None:  # the capture follows frame sizes: the next bytes start a frame
                    conn.restart(event.direction)
                if kind is Gap:
                    missing = (
                        f"{event.length} bytes missing from the {event.direction} stream at offset "
                        f"{event.stream_offset} ({event.reason})"
                    )
                    made.append(Exchange(Kind.GAP, event.timestamp_ns, event.flow, problem=missing))
            elif kind is PacketError:
                unread = f"packet {event.packet}: {event.error}"
                made.append(Exchange(Kind.PACKET_ERROR, event.timestamp_ns, problem=unread))
        return made

    def _ended(self, event: StreamEnd) -> list[Item_co | Exchange]:
        """What a connection left unfinished, once every direction it had is over."""
        directions = self.live.get(event.flow)
        if directions is None:
            return []
        directions &= ~_BIT[event.direction]
        self.live[event.flow] = directions
        if directions:
            return []
        del self.live[event.flow]
        conn = self.connections.pop(event.flow, None)
        return [] if conn is None else list(conn.leftovers(event))


_BIT = {Direction.CLIENT_TO_BROKER: 1, Direction.BROKER_TO_CLIENT: 2}
_EVENTS = frozenset({StreamData, StreamStart, StreamEnd, Gap, Discarded, Resync, PacketError})


def _leftovers(flow: Flow, conn: Connection, end: StreamEnd | None) -> Iterator[Exchange]:
    """What a connection left unfinished when it ended: SASL tokens and requests never answered,
    and a frame that a stream ended inside of."""
    evicted = end is not None and end.reason is EndReason.EVICTED
    why = (
        "no response before the connection was given up (idle too long, or too many connections at once)"
        if evicted
        else "no response in the capture"
    )
    for token in conn.unanswered_tokens():
        yield Exchange(
            Kind.SASL_TOKEN,
            token.timestamp_ns or 0,
            flow,
            tokens=(token,),
            problem="no answer to this SASL token in the capture",
            request_time_ns=token.timestamp_ns,
        )
    for request in conn.unanswered():
        yield Exchange(
            Kind.REQUEST,
            request.timestamp_ns or 0,
            flow,
            request=request,
            problem=why,
            request_time_ns=request.timestamp_ns,
        )
    for direction, what in ((Direction.CLIENT_TO_BROKER, "request"), (Direction.BROKER_TO_CLIENT, "response")):
        buffer = conn.buffers[direction]
        if buffer.buffered:
            held = buffer.peek()
            size = f" of a {int.from_bytes(held[:4], 'big', signed=True) + 4:,}-byte frame" if len(held) >= 4 else ""
            yield Exchange(
                Kind.CUT_OFF,
                end.timestamp_ns if end is not None else 0,
                flow,
                problem=(
                    f"the {direction} stream ends inside a frame: {len(held):,} bytes{size} captured "
                    f"(a {what} cut off{' when the connection was given up' if evicted else ''})"
                ),
            )


def broker_exchange(flow: Flow, event: ResponseEvent | SaslToken | StreamLost, timestamp_ns: int) -> Exchange:
    """The exchange a broker frame completes (a pair, most of the time)."""
    if isinstance(event, SaslToken):
        asked = event.request
        if asked is None:
            return Exchange(
                Kind.SASL_TOKEN,
                event.timestamp_ns or 0,
                flow,
                tokens=(event,),
                problem="a SASL token from the broker that answers no client token",
            )
        return Exchange(
            Kind.SASL_TOKEN, event.timestamp_ns or 0, flow, tokens=(asked, event), request_time_ns=asked.timestamp_ns
        )
    if isinstance(event, StreamLost):
        return Exchange(Kind.STREAM_LOST, timestamp_ns, flow, problem=f"broker stream: {event.reason}")
    if event.request is None:
        return Exchange(
            Kind.RESPONSE,
            event.timestamp_ns or 0,
            flow,
            response=event,
            problem="response to a request that was not captured",
        )
    return Exchange(
        Kind.PAIR,
        event.timestamp_ns or 0,
        flow,
        request=event.request,
        response=event,
        request_time_ns=event.request.timestamp_ns,
    )


#: How SASL token exchanges are named where apis are (summaries, ``--api``).
SASL_TOKENS = "SaslTokens"


def api_name(exchange: Exchange) -> str | None:
    """ "Produce", "Metadata"...: the message class name without Request/Response; for frames that
    did not decode (a version newer than the protocol knows, a damaged body), the name Kafka gives
    the request's api key, so filters and summaries still see which api it was."""
    if exchange.kind is Kind.SASL_TOKEN:
        return SASL_TOKENS
    req, resp = exchange.request, exchange.response
    for event in (req, resp):
        if event is not None and event.decoded is not None:
            return message_api(event.decoded.message)
    if req is None and resp is not None:
        req = resp.request
    return None if req is None or req.api_key is None else kafka_api_names().get(req.api_key)


@functools.cache
def kafka_api_names() -> dict[int, str]:
    """Api key -> Kafka's name for the api ("Produce"), from the bundled Apache catalogue."""
    from kafka_epochs.apache._index import MESSAGES

    return {
        key: name.removesuffix("Request")
        for name, (key, kind, *_) in MESSAGES.items()
        if kind == "request" and key is not None
    }
