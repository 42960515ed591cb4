"""Captured traffic to exchanges: the capture pipeline and framing joined, nothing rendered.

:func:`decode_capture` reads a pcap/pcapng file and yields one :class:`Exchange` per
request/response pair, in the order responses complete, plus one per thing that could not be
paired or decoded (an unanswered request, an unmatched response, a gap in the capture, a bad
packet), so nothing is dropped. :mod:`kafka_epochs.rendering` turns them into JSON-ready dicts.
"""

from __future__ import annotations

import enum
import functools
from collections.abc import Iterator
from dataclasses import dataclass, field

from kafka_epochs.capture import (
    CaptureSource,
    CaptureStats,
    CaptureStreams,
    Direction,
    Flow,
    Gap,
    PacketError,
    Resync,
    StreamData,
)
from kafka_epochs.framing import DEFAULT_MAX_FRAME, Connection, RequestEvent, ResponseEvent, SaslToken, StreamLost
from kafka_epochs.protocol import BodyReader, Protocol


class Kind(enum.StrEnum):
    PAIR = "pair"  # a request and its response
    REQUEST = "request"  # a request with no response: none expected (acks=0) or none captured
    RESPONSE = "response"  # a response whose request was not captured
    GAP = "gap"  # bytes missing from the capture
    PACKET_ERROR = "packet_error"  # a packet that could not be read
    STREAM_LOST = "stream_lost"  # a direction became unreadable
    SASL_TOKEN = "sasl_token"  # a raw SASL token and the broker's answer, after a SaslHandshake v0


@dataclass(slots=True)
class Exchange:
    kind: Kind
    timestamp_ns: int
    flow: Flow | None = None
    request: RequestEvent | None = None
    response: ResponseEvent | None = None
    problem: str | None = None  # what went wrong, for everything but a clean pair
    request_time_ns: int | None = None
    tokens: tuple[SaslToken, ...] = ()  # for SASL_TOKEN: the client's token, then the broker's answer

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


@dataclass(slots=True)
class DecodeSummary:
    exchanges: int = 0
    pairs: int = 0
    requests: int = 0
    responses: int = 0
    problems: int = 0
    per_api: dict[str, int] = field(default_factory=dict)
    capture: CaptureStats | None = None

    def count(self, exchange: Exchange) -> None:
        self.exchanges += 1
        self.pairs += exchange.kind is Kind.PAIR
        self.requests += exchange.request is not None
        self.responses += exchange.response is not None
        self.problems += not exchange.ok
        name = api_name(exchange)
        if name:
            self.per_api[name] = self.per_api.get(name, 0) + 1


def decode_capture(
    source: CaptureSource,
    protocol: Protocol,
    *,
    ports: set[int] | None = None,
    max_frame_size: int = DEFAULT_MAX_FRAME,
    summary: DecodeSummary | None = None,
    body_reader: BodyReader | None = None,
) -> Iterator[Exchange]:
    """Every exchange in a capture, decoded with ``protocol`` (bodies through ``body_reader``
    where given: ``FieldsReader(paths)`` reads only those fields, ``FieldsReader([])`` none)."""
    streams = CaptureStreams(source, ports=ports)
    if summary is not None:
        summary.capture = streams.stats
    connections: dict[Flow, Connection] = {}
    to_broker = Direction.CLIENT_TO_BROKER
    for event in streams:
        if type(event) is StreamData:
            flow = event.flow
            conn = connections.get(flow)
            if conn is None:
                conn = connections[flow] = Connection(protocol, max_frame_size=max_frame_size, body_reader=body_reader)
            if event.direction is to_broker:
                for out in conn.feed(to_broker, event.data, event.timestamp_ns):
                    if type(out) is RequestEvent:
                        if not out.expects_response:
                            yield Exchange(
                                Kind.REQUEST, out.timestamp_ns or 0, flow, request=out, request_time_ns=out.timestamp_ns
                            )
                    elif type(out) is StreamLost:
                        yield Exchange(Kind.STREAM_LOST, 0, flow, problem=f"client stream: {out.reason}")
                    # a SaslToken is reported with the broker's answer
            else:
                for reply in conn.broker_bytes(event.data, event.timestamp_ns):
                    yield _broker_event(flow, reply, event.timestamp_ns)
        elif isinstance(event, (Gap, Resync)):
            conn = connections.get(event.flow)
            if conn is not None:  # the capture follows frame sizes: the next bytes start a frame
                conn.restart(event.direction)
            if isinstance(event, Gap):
                yield Exchange(
                    Kind.GAP,
                    event.timestamp_ns,
                    event.flow,
                    problem=(
                        f"{event.length} bytes missing from the {event.direction} stream at offset "
                        f"{event.stream_offset} ({event.reason})"
                    ),
                )
        elif isinstance(event, PacketError):
            yield Exchange(Kind.PACKET_ERROR, event.timestamp_ns, problem=f"packet {event.packet}: {event.error}")
    for flow, conn in connections.items():
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
                problem="no response in the capture",
                request_time_ns=request.timestamp_ns,
            )


def _broker_event(flow: Flow, event: ResponseEvent | SaslToken | StreamLost, timestamp_ns: int) -> Exchange:
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
            name = event.decoded.message.__name__
            return name.removesuffix("Request").removesuffix("Response")
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
