"""Captured traffic straight to JSON lines: the layers between a connection's bytes and its lines
fused, for what nearly every connection is.

:func:`~kafka_epochs.exchanges.decode_capture` goes through layers, each with its objects (a
pairer cutting frames, events, exchanges, a printer asking what each exchange is); on captures
of real clients those layers cost more than the decoding itself (``benchmarks/floor_headers_only.py``).
A :class:`LineConnection` follows one connection with none of them: it cuts frames, decodes each
with the plug-in of :class:`~kafka_epochs.framing.Connection` (:class:`~kafka_epochs.framing.FrameDecoding`,
so its frames read as the layered path reads them), holds request events by correlation id and
writes each answer's line at once with :meth:`~kafka_epochs.json_lines.LineWriter.answered`
(from the response's quick read: no response event is made unless a filter, a fallback or the
general way needs one).

It takes only what it can take exactly. At the first thing it does not (a SASL handshake v0,
after which raw tokens travel; a Produce with ``acks=0``; a response to no request it holds; a
frame too short for a header or too large to trust; a connection that ends with requests
unanswered or a frame cut off) it hands the connection over to a
:class:`~kafka_epochs.framing.Connection` in the state the layered path would have reached (the
same buffers, the same requests pending, the frame it stopped at not yet taken), and takes it
back once that state is one it can follow again (:attr:`~kafka_epochs.pairing.Pairer.plain`: the
SASL tokens exchanged, say). A pair whose frames did not decode whole, or whose line only the
reference renders (SaslAuthenticate's hidden bytes), comes out as an
:class:`~kafka_epochs.exchanges.Exchange`, as from the layered path. A test holds the lines of
both paths equal, character for character and in order, over real clients' captures.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Iterable, Iterator
from typing import Any, cast

from kafka_epochs.capture import CaptureSource, Direction, Flow, StreamEnd
from kafka_epochs.capture.pipeline import FrameSink
from kafka_epochs.capture.reassembly.connections import DEFAULT_MAX_CONNECTIONS
from kafka_epochs.exchanges import ConnectionExchanges, DecodeSummary, Exchange, Kind, follow_connection_batches
from kafka_epochs.framing import (
    DEFAULT_MAX_FRAME,
    DEFAULT_MAX_PENDING,
    Connection,
    FrameBuffer,
    FrameDecoding,
    FrameTooLarge,
    HeldRequest,
    RequestEvent,
    ResponseEvent,
)
from kafka_epochs.json_lines import LineWriter
from kafka_epochs.pairing import INT32, PRODUCE, REQUEST_HEAD, SASL_HANDSHAKE
from kafka_epochs.protocol import API_VERSIONS, REFUSED, BodyReader, Protocol

__all__ = ["LineConnection", "decode_lines"]

_CLIENT = Direction.CLIENT_TO_BROKER
_BROKER = Direction.BROKER_TO_CLIENT
_UNSET: Any = object()
#: a request frame's size, api key and version, correlation id, and its client id's length
_HEAD_AND_CLIENT_ID = struct.Struct(">ihhih")
_CLIENT_ID = _HEAD_AND_CLIENT_ID.size  # where the client id's bytes start
#: A frame's taker: (frame, stream offset, time, where its line goes) -> whether it took it.
_Take = Callable[[bytes, int, int, list[str | Exchange]], bool]


def decode_lines(
    source: CaptureSource,
    protocol: Protocol,
    writer: LineWriter,
    *,
    capture: str | None = None,
    ports: set[int] | None = None,
    max_frame_size: int = DEFAULT_MAX_FRAME,
    summary: DecodeSummary,
    body_reader: BodyReader | None = None,
    max_connections: int = DEFAULT_MAX_CONNECTIONS,
    keep: Callable[[Exchange], bool] | None = None,
) -> Iterator[Iterable[str | Exchange]]:
    """What :func:`~kafka_epochs.exchanges.decode_capture` yields, in its order and in batches
    (what each piece of the capture completes), with each pair whose frames decoded whole
    already written by ``writer`` as its line (with ``capture`` as the line's first key when
    given) and counted in ``summary``; the rest come as exchanges, which the caller counts and
    renders as it would any. With ``keep`` (a filter of exchanges that needs no rendering, such
    as the command's ``--api`` or ``--client``), a pair it refuses is counted and not written."""

    decoding = FrameDecoding(protocol, body_reader, memo=True)  # (bodies are only read here, to write lines)
    # the pairs written as lines, by request message, counted in the summary before each batch
    # goes out (a dict entry a pair instead of a summary's method call with its six updates)
    pairs: dict[Any, int] = {}

    def open_connection(flow: Flow) -> LineConnection:
        connection = Connection(protocol, max_frame_size=max_frame_size, body_reader=body_reader, decoding=decoding)
        return LineConnection(flow, connection, writer, pairs, capture, keep)

    batches = follow_connection_batches(
        source, open_connection, ports=ports, summary=summary, max_connections=max_connections, sinks=True
    )
    for batch in batches:
        if pairs:
            summary.count_pairs(pairs)
            pairs.clear()
        yield batch
    if pairs:  # (the last batch's, when the source ends without one more)
        summary.count_pairs(pairs)
        pairs.clear()


def _whole_frames(buffer: FrameBuffer, data: bytes, timestamp_ns: int, take: _Take, out: list[Any], limit: int) -> int:
    """Has ``take`` take the frames ``data`` holds whole from its start (sizes up to ``limit``),
    moving ``buffer``'s stream offset past each; stops at the first it refuses. The bytes taken."""
    pos, length = 0, len(data)
    while length - pos >= 4:
        size = INT32.unpack_from(data, pos)[0]
        end = pos + 4 + size
        if size < 0 or size > limit or end > length:
            break
        if not take(data if pos == 0 and end == length else data[pos:end], buffer.offset, timestamp_ns, out):
            break
        buffer.offset += 4 + size
        pos = end
    return pos


def _whole_at_start(data: bytes, limit: int) -> bool:
    """Whether ``data`` starts with a whole frame of a size up to ``limit``."""
    if len(data) < 4:
        return False
    size = INT32.unpack_from(data, 0)[0]
    return 0 <= size <= limit and 4 + size <= len(data)


class LineConnection:
    """One connection's lines (see the module docstring); a consumer for
    :func:`~kafka_epochs.exchanges.follow_connection_batches`.

    ``connection`` is the layered path it hands over to: until then only its decoding plug-in,
    its buffers and its dict of pending requests are used, as that path would use them."""

    __slots__ = (
        "_broker",
        "_client",
        "_decoding",
        "_pending",
        "_plain_requests",
        "_plain_responses",
        "_request_readers",
        "_response_readers",
        "capture",
        "connection",
        "flow",
        "keep",
        "layered",
        "pairs",
        "writer",
    )

    def __init__(
        self,
        flow: Flow,
        connection: Connection,
        writer: LineWriter,
        pairs: dict[Any, int],
        capture: str | None,
        keep: Callable[[Exchange], bool] | None = None,
    ) -> None:
        self.flow = flow
        self.keep = keep
        self.connection = connection
        self.writer = writer
        self.pairs = pairs  # the pairs written (or kept out by ``keep``), by request message: see decode_lines
        self.capture = capture
        self.layered: ConnectionExchanges | None = None  # set when handed over
        self._client = connection.buffers[_CLIENT]
        self._broker = connection.buffers[_BROKER]
        # the pairer's own dict (handing over needs no copy), which holds HeldRequests too until then
        self._pending = cast("dict[int, RequestEvent | HeldRequest]", connection.pending)
        self._decoding = connection.decoding
        # the decoding's readers, looked up here: every frame this reads is whole and ``bytes``
        self._request_readers = connection.decoding.request_readers
        self._response_readers = connection.decoding.response_readers
        self._plain_responses = connection.decoding.plain_responses
        self._plain_requests = connection.decoding.plain_requests

    # -- the consumer --------------------------------------------------------------------------

    def client(self, data: bytes, timestamp_ns: int) -> list[str | Exchange]:
        if self.layered is not None:
            return self._layered(self.layered.client(data, timestamp_ns))
        return self._frames(self._client, data, timestamp_ns, self._request)

    def broker(self, data: bytes, timestamp_ns: int) -> list[str | Exchange]:
        if self.layered is not None:
            return self._layered(self.layered.broker(data, timestamp_ns))
        return self._frames(self._broker, data, timestamp_ns, self._response)

    def _layered(self, exchanges: list[Exchange]) -> list[str | Exchange]:
        """What the layered path made; once its connection is plain again (a SASL v0 token
        exchange over), the connection comes back to this one."""
        if self.connection.plain:
            self.layered = None
        return exchanges  # type: ignore[return-value]

    def restart(self, direction: Direction) -> None:
        self.connection.restart(direction)  # (the layered path's own: drops the partial frame)

    def leftovers(self, end: StreamEnd | None) -> Iterator[Exchange]:
        if self.layered is None:
            if not (self.connection.pending or self._client.buffered or self._broker.buffered):
                return iter(())
            self._events_pending()
            self.layered = ConnectionExchanges(self.flow, self.connection)
        return self.layered.leftovers(end)

    def _events_pending(self) -> None:
        """The requests held the plain way, made the events the layered path holds (in place:
        the dict is the layered path's own, and its order the order they came in)."""
        pending = self._pending
        for correlation_id, request in pending.items():
            if isinstance(request, HeldRequest):
                pending[correlation_id] = request.event()

    # -- frames --------------------------------------------------------------------------------

    def frame_sink(self, direction: Direction, max_frame_size: int) -> FrameSink:
        """The capture's lanes hand this the frames of in-order packets (see
        :mod:`~kafka_epochs.capture.pipeline`); it takes those it can take as they are, while
        nothing is buffered and the connection is not handed over, and leaves the rest to
        :meth:`client`/:meth:`broker`. Data inside a frame begun before goes where its event
        would have gone: to :meth:`client`/:meth:`broker`, with no event made."""
        client = direction is _CLIENT
        buffer = self._client if client else self._broker
        take = self._request if client else self._response
        limit = min(max_frame_size, buffer.max_frame_size)
        rest_of_frame = self.client if client else self.broker

        def sink(data: bytes, timestamp_ns: int, out: list[Any], inside: bool) -> int:
            if inside:
                out += rest_of_frame(data, timestamp_ns)
                return len(data)
            if self.layered is not None or buffer.buffered or type(data) is not bytes:
                return 0  # (a packet's data not ``bytes``, from a source of its own: the buffer copies it)
            length = len(data)
            if length >= 4 and INT32.unpack_from(data, 0)[0] == length - 4 <= limit:
                # one whole frame, what four packets in five of real clients' traffic hold: taken
                # as _whole_frames takes it, without its loop
                if not take(data, buffer.offset, timestamp_ns, out):
                    return 0
                buffer.offset += length
                return length
            taken = _whole_frames(buffer, data, timestamp_ns, take, out, limit)
            if len(data) - taken >= 4:
                # A frame that begins here and goes on in later packets (a fetch response comes
                # in several): buffered as its event would have buffered it, and its end is
                # what the pipeline's aligner follows.
                end = taken + 4 + INT32.unpack_from(data, taken)[0]
                if len(data) < end <= taken + 4 + limit:
                    buffer.feed(data[taken:] if taken else data)
                    return end
            return taken

        return sink

    def _frames(self, buffer: FrameBuffer, data: bytes, timestamp_ns: int, take: _Take) -> list[str | Exchange]:
        """The lines (and exchanges) the frames ``data`` completes make, as the pairer cuts them:
        straight from ``data`` while nothing is buffered, else through the buffer."""
        out: list[str | Exchange] = []
        if not buffer.buffered and type(data) is bytes:
            limit = buffer.max_frame_size
            pos = _whole_frames(buffer, data, timestamp_ns, take, out, limit)
            if pos == len(data):
                return out
            if pos:
                data = data[pos:]
            if _whole_at_start(data, limit):  # (so ``take`` refused it)
                return self._hand_over(buffer, data, timestamp_ns, out)
        buffer.feed(data)
        while True:
            try:
                frame = buffer.next_frame()
            except FrameTooLarge:
                return self._hand_over(buffer, b"", timestamp_ns, out)
            if frame is None:
                return out
            if not take(frame, buffer.offset - len(frame), timestamp_ns, out):
                buffer.put_back(frame)
                return self._hand_over(buffer, b"", timestamp_ns, out)

    def _request(self, frame: bytes, offset: int, timestamp_ns: int, out: list[str | Exchange]) -> bool:
        """Hold a request frame for its answer; False for one only the layered path takes."""
        if len(frame) >= _CLIENT_ID:
            _, api_key, api_version, correlation_id, size = _HEAD_AND_CLIENT_ID.unpack_from(frame, 0)
        elif len(frame) >= REQUEST_HEAD.size:
            _, api_key, api_version, correlation_id = REQUEST_HEAD.unpack_from(frame, 0)
            size = -2  # (no room for a client id)
        else:
            return False
        pending = self._pending
        if len(pending) >= DEFAULT_MAX_PENDING:
            return False
        decoding = self._decoding
        plain = self._plain_requests.get(api_key * 65536 + api_version, _UNSET)  # (see below)
        if plain is _UNSET:
            plain = decoding.plain_request(api_key, api_version)
        start = _CLIENT_ID + size  # where the client id ends
        if (
            plain is not None
            and size >= 0
            and start <= len(frame)
            and api_key != SASL_HANDSHAKE
            and (plain.header_version == 1 or (start < len(frame) and frame[start] == 0))
        ):
            # nearly every request: its header holds a client id (and in v2 no tagged field),
            # and only its body is read; the header's values are the frame's (HeldRequest)
            try:
                client_id = frame[_CLIENT_ID:start].decode()
            except UnicodeDecodeError:
                client_id = None  # (the general way reads it with replacements, and says so)
            if client_id is not None:
                if not plain.reads_body:  # (its body starts in the frame: nothing more to look at)
                    pending[correlation_id] = HeldRequest(
                        frame, offset, timestamp_ns, correlation_id, client_id, plain, None, False
                    )
                    return True
                got = plain.read_body(frame, start if plain.header_version == 1 else start + 1)
                if got is not None:
                    body = got[0]
                    if api_key == PRODUCE and body is not None and getattr(body, "acks", 1) == 0:
                        return False  # (never answered: see RequestEvent.expects_response)
                    held = HeldRequest(frame, offset, timestamp_ns, correlation_id, client_id, plain, body, got[1])
                    pending[correlation_id] = held
                    return True
        # FrameDecoding.request_event's quick way, without its calls (every frame taken here is
        # whole and ``bytes``); the key is framing.reader_key's, computed in place
        read = self._request_readers.get(api_key * 65536 + api_version, _UNSET)
        if read is _UNSET:
            read = decoding.reader(api_key, api_version, True)
        decoded = None if read is None else read(frame)
        if decoded is None:  # the general way (which tries the quick way again, to no avail)
            request = decoding.request_event(frame, offset, timestamp_ns, api_key, api_version, correlation_id)
        else:
            request = RequestEvent(frame, offset, timestamp_ns, api_key, api_version, correlation_id, decoded)
        if api_key == PRODUCE and not request.expects_response:
            return False
        if api_key == SASL_HANDSHAKE:
            handshake = decoding.sasl_handshake(request)
            if handshake is not None and handshake[0] == 0:
                return False  # raw tokens follow: the pairer tells them from requests
        pending[correlation_id] = request
        return True

    def _response(self, frame: bytes, offset: int, timestamp_ns: int, out: list[str | Exchange]) -> bool:
        """Write the line of the pair a response frame completes; False for one only the layered path takes."""
        if len(frame) < 8:
            return False
        correlation_id = INT32.unpack_from(frame, 4)[0]
        pending = self._pending
        request = pending.get(correlation_id)
        if request is None:
            return False
        del pending[correlation_id]
        decoding = self._decoding
        api_key: int | None
        api_version: int | None
        event: RequestEvent | None  # (None while the request is held: made only where needed)
        if isinstance(request, HeldRequest):
            held, event, asked = request, None, request.plain
            api_key, api_version, message, clean = asked.api_key, asked.api_version, asked.message, True
        else:
            held, event = None, request
            api_key, api_version, clean = request.api_key, request.api_version, request.error is None
            message = None if request.decoded is None else request.decoded.message
        if api_key == API_VERSIONS and api_version and frame[8:10] == REFUSED:
            # a broker without the ApiVersions version asked answers in v0 (UNSUPPORTED_VERSION):
            # the general way reads it so, with its warning; the quick ways would fail first
            api_version = None  # (so that neither is tried)
        if api_key is not None and api_version is not None and clean and self.keep is None:
            # nearly every pair: the response's header is the plain one, and only its body is
            # read, for its line (no header, decoded frame or response event made)
            plain = self._plain_responses.get(api_key * 65536 + api_version, _UNSET)  # (see _request)
            if plain is _UNSET:
                plain = decoding.plain_response(api_key, api_version)
            if plain is not None:
                start = plain.body_start
                if start == 8 or (len(frame) > 8 and frame[8] == 0):
                    got = plain.read_body(frame, start)
                    if got is not None:
                        line = self.writer.answered_plainly(
                            self.flow, request, plain, got[0], got[1], timestamp_ns, self.capture
                        )
                        if line is not None:
                            pairs = self.pairs
                            pairs[message] = pairs.get(message, 0) + 1
                            out.append(line)
                            return True
        # FrameDecoding.quick_response, without its calls (see _request)
        decoded = None
        if api_key is not None and api_version is not None:
            read = self._response_readers.get(api_key * 65536 + api_version, _UNSET)
            if read is _UNSET:
                read = decoding.reader(api_key, api_version, False)
            if read is not None:
                decoded = read(frame)
        if decoded is not None and clean and self.keep is None:
            # nearly every pair: its line, with no response event made
            line = self.writer.answered(self.flow, request, decoded, timestamp_ns, self.capture)
            if line is not None:
                pairs = self.pairs
                pairs[message] = pairs.get(message, 0) + 1
                out.append(line)
                return True
        if event is None:
            assert held is not None
            event = held.event()  # (what the rest needs: the layered path's events)
        request = event
        if decoded is None:
            response = decoding.response_event(frame, offset, timestamp_ns, correlation_id, request)
        else:
            response = ResponseEvent(frame, offset, timestamp_ns, correlation_id, request, decoded)
        line = None
        if request.error is None and response.error is None:
            keep = self.keep
            if keep is not None and not keep(self._exchange(request, response, timestamp_ns)):
                message = request.decoded.message  # type: ignore[union-attr]
                self.pairs[message] = self.pairs.get(message, 0) + 1
                return True  # counted, not printed
            line = self.writer.pair(self.flow, request, response, self.capture)
        if line is None:
            out.append(self._exchange(request, response, timestamp_ns))
        else:
            message = request.decoded.message  # type: ignore[union-attr]
            self.pairs[message] = self.pairs.get(message, 0) + 1
            out.append(line)
        return True

    def _exchange(self, request: RequestEvent, response: ResponseEvent, timestamp_ns: int) -> Exchange:
        """The pair as the layered path yields it."""
        return Exchange(Kind.PAIR, timestamp_ns, self.flow, request, response, request_time_ns=request.timestamp_ns)

    def _hand_over(
        self, buffer: FrameBuffer, rest: bytes, timestamp_ns: int, out: list[str | Exchange]
    ) -> list[str | Exchange]:
        """From here on the connection is the layered path's: ``rest`` (the bytes from the frame
        not taken on, or nothing when they are in the buffer) is fed to it."""
        self._events_pending()
        layered = self.layered = ConnectionExchanges(self.flow, self.connection)
        taken = layered.client if buffer is self._client else layered.broker
        out.extend(taken(rest, timestamp_ns))
        return out
