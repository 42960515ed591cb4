"""Exchanges as the JSON lines ``kafka-epochs decode`` prints, written straight as text.

The reference is :func:`kafka_epochs.rendering.exchange_json` (a dict per exchange) written by
:func:`kafka_epochs.rendering.json_line`. :class:`LineWriter` gives the same text, character for
character (tests hold the two equal on real clients' captures), for what nearly all traffic is:
pairs and lone requests, their bodies read whole, as projections (``--fields``) or not at all
(``--headers-only``). It builds no dict: times are formatted once per second, endpoints once per
connection, headers and bodies go through the generated renderers, and error codes are looked
for only in classes that can hold one. The rest (SASL tokens, SaslAuthenticate's hidden auth
bytes) it leaves to the reference, by returning None.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from time import gmtime, strftime
from typing import Any

from kafka_epochs.capture import Flow
from kafka_epochs.decoded import Decoded, PlainResponse
from kafka_epochs.exchanges import Exchange, Kind, api_name, message_api
from kafka_epochs.framing import HeldRequest, RequestEvent, ResponseEvent
from kafka_epochs.projection.bodies import ProjectedBody, error_paths
from kafka_epochs.rendering import (
    SASL_AUTHENTICATE,
    SECOND_FORMAT,
    any_error_code,
    error_codes,
    has_error_codes,
    split_time,
)
from kafka_epochs.wire.json_text import json_renderer

__all__ = ["LineWriter"]

_ESCAPE = json.encoder.encode_basestring  # json's C escaper, as ensure_ascii=False writes strings
_LISTS = json.JSONEncoder(ensure_ascii=False)
_NO_FLOW = ("null", "null")
_PAIR = '{"kind": "pair", "time": '  # how a pair's line starts
_UNKNOWN: Any = object()
_TEXTS_KEPT = 256  # shared bodies' texts kept at once (a memo keeps a few dozen small bodies a message)
_FLOWS_KEPT = 65_536  # connections whose texts are kept at once (lines come connection by connection)
_CLIENT_IDS_KEPT = 256  # client ids whose request headers' texts are kept, per kind (a few, as a rule)
_HEADER_TEXT_KEPT = 512  # characters of a request header's text at most, to be kept (a client id can be 32 KiB)
_CORRELATION_KEY = '"correlation_id": '
#: what a line says alike of the frames of one kind (see ``LineWriter._kind``)
_Kind = tuple[str, Any, str, str, "dict[Any, str] | None"]
_SECONDS_KEPT = 64  # whole seconds' texts kept at once (lines come in time order, give or take a request's wait)
#: "000" to "999", by the number: looking three digits up costs a third of formatting them with a
#: format spec (``f"{n:03d}"``), and every line writes two times and a latency
_DIGITS3 = tuple([str(n)[1:] for n in range(1000, 2000)])
#: the thousandths of a latency as its float's repr ends: ".0", ".5", ".05", ".123"
_THOUSANDTHS = (".0", *[("." + digits).rstrip("0") for digits in _DIGITS3[1:]])


class LineWriter:
    """Writes exchanges as JSON lines; one per run of the command (it caches per connection)."""

    __slots__ = (
        "_endpoints",
        "_error_checks",
        "_error_columns",
        "_flows",
        "_kinds",
        "_names",
        "_next_second",
        "_plain_profiles",
        "_renderers",
        "_second",
        "_second_text",
        "_second_texts",
        "_texts",
        "secrets",
    )

    def __init__(self, *, secrets: bool = False) -> None:
        self.secrets = secrets
        self._second = math.nan  # the whole second of the last time written, and its text
        self._next_second = math.nan
        self._second_text = ""
        # the texts of recent whole seconds: a pair sent in one second and answered in the next
        # moves the writer's second back and forth, and each move would format the time anew
        self._second_texts: dict[float, str] = {}
        self._endpoints: dict[Flow, tuple[str, str]] = {}
        self._renderers: dict[tuple[type, int], Any] = {}
        self._names: dict[type, str] = {}
        # what a pair's line repeats: per connection, and per (class, version, header version, profile)
        self._flows: dict[Flow | None, str] = {}
        # (and per plain request reader: see _plain_kind)
        self._kinds: dict[Any, _Kind] = {}
        self._plain_profiles: dict[PlainResponse, str] = {}  # a plain response's profile key
        self._error_checks: dict[type, Callable[[Any], bool] | None] = {}
        self._error_columns: dict[tuple[str, ...], tuple[str, ...]] = {}  # a projection's error code columns
        self._texts: dict[int, tuple[Any, int, str]] = {}  # a shared body's text, by the body object's id

    def line(self, exchange: Exchange, capture: str | None = None) -> str | None:
        """The exchange's line (with a leading ``capture`` key when given), or None where only
        the reference renders it."""
        kind = exchange.kind
        if kind is Kind.SASL_TOKEN:
            return None
        req, resp = exchange.request, exchange.response
        if (
            kind is Kind.PAIR
            and req is not None
            and resp is not None
            and req.decoded is not None
            and resp.decoded is not None
            and exchange.problem is None
        ):
            return self.pair(exchange.flow, req, resp, capture)
        if req is not None and req.api_key == SASL_AUTHENTICATE and not self.secrets:
            return None  # its auth bytes are hidden by the reference
        first = req if req is not None else resp
        flow = exchange.flow
        client, broker = _NO_FLOW if flow is None else (self._endpoints.get(flow) or self._endpoint(flow))
        start = exchange.request_time_ns
        parts = [
            "{" if capture is None else f'{{"capture": {_ESCAPE(capture)}, ',
            f'"kind": "{kind.value}", "time": {self._time(exchange.timestamp_ns if start is None else start)}, ',
            f'"client": {client}, "broker": {broker}, "correlation_id": ',
            "null" if first is None or first.correlation_id is None else str(first.correlation_id),
            f', "api": {self._api(exchange, req, resp)}, "api_key": ',
            "null" if req is None or req.api_key is None else str(req.api_key),
            ', "api_version": ',
            "null" if req is None or req.api_version is None else str(req.api_version),
        ]
        if resp is not None and start is not None and resp.timestamp_ns is not None:
            latency = _latency(resp.timestamp_ns - start)
            parts.append(f', "response_time": {self._time(resp.timestamp_ns)}, "latency_ms": {latency}')
        if req is not None:
            self._event(parts, "request", req)
        if resp is not None:
            self._event(parts, "response", resp)
            if resp.decoded is not None and resp.decoded.body is not None:
                parts.append(self._errors(resp.decoded.body))
        if exchange.problem:
            parts.append(f', "problem": {_ESCAPE(exchange.problem)}')
        parts.append("}")
        return "".join(parts)

    def pair(self, flow: Flow | None, req: RequestEvent, resp: ResponseEvent, capture: str | None = None) -> str | None:
        """:meth:`line` of a pair from its two events (no :class:`Exchange` needed); both must
        hold their decoded frames (nearly every pair of a capture does)."""
        response = resp.decoded
        assert response is not None
        trouble = "" if resp.error is None and not resp.warnings else self._trouble("response", resp)
        return self.answered(flow, req, response, resp.timestamp_ns, capture, trouble)

    def answered(
        self,
        flow: Flow | None,
        req: RequestEvent | HeldRequest,
        response: Decoded,
        end: int | None,
        capture: str | None = None,
        trouble: str = "",
    ) -> str | None:
        """:meth:`pair` of a request event and the decoded frame of its response, seen at ``end``
        with nothing to say of it but ``trouble`` (its error and warnings keys, if any): what a
        reader that makes no response event writes."""
        kind = self._kinds.get((response.message, response.api_version, response.header_version, response.profile))
        if kind is None:
            kind = self._kind(req, response, "response")
        header = kind[1](response.header)
        return self._line(
            flow, req, header, response.body, response.shared, response.api_version, kind[2], end, capture, trouble
        )

    def answered_plainly(
        self,
        flow: Flow | None,
        req: RequestEvent | HeldRequest,
        plain: PlainResponse,
        body: Any,
        shared: bool,
        end: int | None,
        capture: str | None = None,
    ) -> str | None:
        """:meth:`answered` of a response read by ``plain`` (its body, and whether it is shared):
        the header, a plain one, holds the correlation id of the request it answers."""
        profile = self._plain_profiles.get(plain)
        if profile is None:
            profile = self._plain_profiles[plain] = f', "response_profile": {_ESCAPE(plain.profile)}'
        header = f'{{"correlation_id": {req.correlation_id}}}'
        return self._line(flow, req, header, body, shared, plain.api_version, profile, end, capture, "")

    def _line(
        self,
        flow: Flow | None,
        req: RequestEvent | HeldRequest,
        response_header: str,
        body: Any,
        shared: bool,
        version: int,
        response_profile: str,
        end: int | None,
        capture: str | None,
        trouble: str,
    ) -> str | None:
        """A pair's line, from its request (an event, or held the plain way: framing.HeldRequest)
        and what its response says: the header's text,
        the body (``shared``: see :class:`~kafka_epochs.decoded.BodyMemo`) read at ``version``,
        the profile's key, its error and warnings keys (``trouble``)."""
        start, correlation_id = req.timestamp_ns, req.correlation_id
        api_key: int | None
        if isinstance(req, HeldRequest):  # (what its header says is the frame's: no header object)
            plain = req.plain
            asked = self._kinds.get(plain) or self._plain_kind(req)
            api_key, asked_body, asked_shared, asked_version = plain.api_key, req.body, req.shared, plain.api_version
            # the request header's text: the kind's start, its correlation id, its client's rest
            rests = asked[4]
            rest = None if rests is None else rests.get(req.client_id)
            if rest is None:
                head = self._header(asked, plain.read_header(req.frame, 4, len(req.frame))[0])
            else:
                head = f"{asked[3]}{correlation_id}{rest}"
            request_trouble = ""
        else:
            request = req.decoded
            assert request is not None
            asked = self._kinds.get(
                (request.message, request.api_version, request.header_version, request.profile)
            ) or self._kind(req, request, "request")
            api_key, asked_body, asked_shared, asked_version = (
                req.api_key,
                request.body,
                request.shared,
                request.api_version,
            )
            header, rests = request.header, asked[4]
            rest = None if rests is None or header._unknown_tags is not None else rests.get(header.client_id)
            head = self._header(asked, header) if rest is None else f"{asked[3]}{header.correlation_id}{rest}"
            request_trouble = "" if req.error is None and not req.warnings else self._trouble("request", req)
        if api_key == SASL_AUTHENTICATE and not self.secrets and (_auth(asked_body) or _auth(body)):
            return None  # its auth bytes are hidden by the reference
        if start is not None and end is not None:
            # both times in the second of the time before, as nearly always: _time's first way,
            # inline (a time in a later second gives a million microseconds or more)
            second = self._second
            sent_at, answered_at = start / 1e9, end / 1e9
            if second <= sent_at and second <= answered_at:
                sent_micro = round((sent_at - second) * 1e6)
                answered_micro = round((answered_at - second) * 1e6)
                if sent_micro < 1_000_000 and answered_micro < 1_000_000:
                    text = self._second_text
                    sent = f'{text}{_DIGITS3[sent_micro // 1000]}{_DIGITS3[sent_micro % 1000]}Z"'
                    timing = (
                        f', "response_time": {text}{_DIGITS3[answered_micro // 1000]}'
                        f'{_DIGITS3[answered_micro % 1000]}Z", "latency_ms": {_latency(end - start)}'
                    )
                else:
                    sent, timing = self._times(start, end)
            else:
                sent, timing = self._times(start, end)
        else:
            sent = self._time((end or 0) if start is None else start)
            timing = ""
        return (
            f"{_PAIR if capture is None else self._pair_start(capture)}"
            f"{sent}{self._flows.get(flow) or self._flow_text(flow)}"
            f"{'null' if correlation_id is None else correlation_id}{asked[0]}{timing}"
            f', "request_header": {head}'
            f"{'' if asked_body is None else self._body('request', asked_body, asked_shared, asked_version)}"
            f"{asked[2]}{request_trouble}"
            f', "response_header": {response_header}'
            f"{'' if body is None else self._body('response', body, shared, version)}{response_profile}{trouble}"
            f"{'' if body is None else self._errors(body)}}}"
        )

    def _plain_kind(self, req: HeldRequest) -> _Kind:
        """:meth:`_kind` of a request held the plain way, kept by its plain reader too."""
        event = req.event()
        decoded = event.decoded
        assert decoded is not None
        kind = self._kinds.get((decoded.message, decoded.api_version, decoded.header_version, decoded.profile))
        if kind is None:
            kind = self._kind(event, decoded, "request")
        self._kinds[req.plain] = kind
        return kind

    def _pair_start(self, capture: str) -> str:
        """A pair's line up to its time, with the capture's key first."""
        return f'{{"capture": {_ESCAPE(capture)}, {_PAIR[1:]}'

    def _times(self, start: int, end: int) -> tuple[str, str]:
        """A pair's time text and its timing keys, by :meth:`_time`."""
        sent = self._time(start)
        return sent, f', "response_time": {self._time(end)}, "latency_ms": {_latency(end - start)}'

    def _kind(self, event: RequestEvent | ResponseEvent | HeldRequest, decoded: Decoded, label: str) -> _Kind:
        """What a line says alike of every frame of one (class, version, header version, profile):
        for a request, its api's keys (``, "api": ..., "api_key": ..., "api_version": ...``); the
        header's renderer; the profile's key; for a request whose header has a client id, its
        header's text up to the correlation id, and the rest by client id (see :meth:`_header`)."""
        api = ""
        if label == "request":
            key, version = event.api_key, event.api_version  # type: ignore[union-attr]
            api = (
                f', "api": {self._message_name(decoded.message)}, "api_key": {"null" if key is None else key}, '
                f'"api_version": {"null" if version is None else version}'
            )
        header = decoded.header
        render = self._renderers.get((type(header), decoded.header_version)) or self._renderer(
            header, decoded.header_version
        )
        start: str = ""
        rests: dict[Any, str] | None = None
        if label == "request" and decoded.header_version >= 1:
            text = render(header)
            at = text.find(_CORRELATION_KEY)  # (written before the client id: the key itself)
            if at >= 0:
                start, rests = text[: at + len(_CORRELATION_KEY)], {}
        kind = (api, render, f', "{label}_profile": {_ESCAPE(decoded.profile)}', start, rests)
        self._kinds[decoded.message, decoded.api_version, decoded.header_version, decoded.profile] = kind
        return kind

    @staticmethod
    def _header(kind: _Kind, header: Any) -> str:
        """A request header's text, by the kind's renderer; of one without unknown tagged fields,
        the rest after its correlation id is kept by client id, for the next of the client: its
        start is the kind's (the api key and version), the rest its client id's."""
        text: str = kind[1](header)
        start, rests = kind[3], kind[4]
        if rests is not None and header._unknown_tags is None and len(text) <= _HEADER_TEXT_KEPT:
            correlation_id = str(header.correlation_id)
            if text.startswith(start) and text.startswith(correlation_id, len(start)):
                if len(rests) >= _CLIENT_IDS_KEPT:
                    rests.clear()
                rests[header.client_id] = text[len(start) + len(correlation_id) :]
        return text

    def _body(self, label: str, body: Any, shared: bool, version: int) -> str:
        """A body's keys: the fields asked for (and why some could not be read), or the whole
        body (read at ``version``; ``shared``: read once for bytes that repeat)."""
        if type(body) is ProjectedBody:
            text = ""
            if body.columns:  # else only what pairing needs was read: nothing asked for
                text = f', "{label}": {self._shared_text(body, 0) if shared else _projected_text(body)}'
            if body.note:
                text += f', "{label}_fields_note": {_ESCAPE(body.note)}'
            return text
        if shared:  # a body read once for bytes that repeat: its text is made once too
            return f', "{label}": {self._shared_text(body, version)}'
        return f', "{label}": {self._render(body, version)}'

    @staticmethod
    def _trouble(label: str, event: RequestEvent | ResponseEvent) -> str:
        """An event's error and warnings, where it has them."""
        text = ""
        if event.error is not None:
            text = f', "{label}_error": {_ESCAPE(str(event.error))}'
        if event.warnings:
            text += f', "{label}_warnings": {_LISTS.encode(list(event.warnings))}'
        return text

    def _flow_text(self, flow: Flow | None) -> str:
        """``, "client": ..., "broker": ..., "correlation_id": `` of a connection."""
        client, broker = _NO_FLOW if flow is None else (self._endpoints.get(flow) or self._endpoint(flow))
        if len(self._flows) >= _FLOWS_KEPT:
            self._flows.clear()  # (a capture of millions of connections must not keep a text for each)
        text = self._flows[flow] = f', "client": {client}, "broker": {broker}, "correlation_id": '
        return text

    def _renderer(self, obj: Any, version: int) -> Any:
        renderer = self._renderers[type(obj), version] = json_renderer(type(obj), version, ascii=False)
        return renderer

    def _event(self, parts: list[str], label: str, event: RequestEvent | ResponseEvent) -> None:
        """A request's or response's keys: header, body (whole, projected or none), profile, error, warnings."""
        decoded = event.decoded
        if decoded is not None:
            parts.append(f', "{label}_header": {self._render(decoded.header, decoded.header_version)}')
            if decoded.body is not None:  # (None: headers only, the body was not read)
                parts.append(self._body(label, decoded.body, decoded.shared, decoded.api_version))
            parts.append(f', "{label}_profile": {_ESCAPE(decoded.profile)}')
        parts.append(self._trouble(label, event))

    def _errors(self, body: Any) -> str:
        """The ``errors`` key of a response body: its non-zero error codes (none said when the
        body was not read, or was projected on no error code)."""
        if type(body) is ProjectedBody:
            # the error codes among the fields asked for: none asked, none said
            columns = body.columns
            paths = body.error_paths
            if paths is None:  # (a body not made by a FieldsReader: its columns say)
                paths = self._error_columns.get(tuple(columns))
                if paths is None:
                    paths = self._error_columns[tuple(columns)] = error_paths(columns)
            if not paths:
                return ""
            found = None
            for path in paths:
                if any(columns[path]):
                    found = error_codes(body)
                    break
        else:
            check = self._error_checks.get(type(body), _UNKNOWN)
            if check is _UNKNOWN:
                check = self._error_checks[type(body)] = self._error_check(type(body))
            found = error_codes(body) if check is not None and check(body) else None
        return f', "errors": {_LISTS.encode(found) if found else "[]"}'

    @staticmethod
    def _error_check(message: type) -> Callable[[Any], bool] | None:
        return any_error_code(message) if has_error_codes(message) else None

    def _shared_text(self, body: Any, version: int) -> str:
        """The text of a body shared by frames whose bytes repeat (``decoded.BodyMemo``), made
        once per body object (a shared body is not changed: the memo's readers only read)."""
        texts = self._texts
        kept = texts.get(id(body))
        if kept is not None and kept[1] == version:  # (kept[0] is body: held, its id is not reused)
            return kept[2]
        text = _projected_text(body) if type(body) is ProjectedBody else self._render(body, version)
        if len(texts) >= _TEXTS_KEPT:
            texts.clear()
        texts[id(body)] = (body, version, text)
        return text

    def _render(self, obj: Any, version: int) -> str:
        renderer = self._renderers.get((type(obj), version)) or self._renderer(obj, version)
        text: str = renderer(obj)
        return text

    def _api(self, exchange: Exchange, req: Any, resp: Any) -> str:
        for event in (req, resp):
            if event is not None and event.decoded is not None:
                return self._message_name(event.decoded.message)
        named = api_name(exchange)  # a frame that did not decode: its api key's name
        return "null" if named is None else _ESCAPE(named)

    def _message_name(self, message: type) -> str:
        """The api's name as JSON text ("Metadata"), from the request's or response's class."""
        name = self._names.get(message)
        if name is None:
            name = self._names[message] = _ESCAPE(message_api(message))
        return name

    def _endpoint(self, flow: Flow) -> tuple[str, str]:
        texts = tuple(
            _ESCAPE(f"[{end.address}]:{end.port}" if ":" in end.address else f"{end.address}:{end.port}")
            for end in (flow.client, flow.broker)
        )
        if len(self._endpoints) >= _FLOWS_KEPT:
            self._endpoints.clear()
        self._endpoints[flow] = texts  # type: ignore[assignment]
        return texts  # type: ignore[return-value]

    def _time(self, ns: int) -> str:
        """``rendering``'s time text, quoted: the float ``ns / 1e9`` split into whole seconds and
        microseconds rounded half to even, as ``datetime.fromtimestamp`` splits it."""
        time = ns / 1e9
        second = self._second
        if second <= time < self._next_second:  # the second of the time before, as nearly always:
            micro = round((time - second) * 1e6)  # (exact: the two floats are within a factor of 2)
            if micro < 1_000_000:
                return f'{self._second_text}{_DIGITS3[micro // 1000]}{_DIGITS3[micro % 1000]}Z"'
        second, micro = split_time(time)
        if second != self._second:
            texts = self._second_texts
            text = texts.get(second)
            if text is None:
                if len(texts) >= _SECONDS_KEPT:
                    texts.clear()
                text = texts[second] = '"' + strftime(SECOND_FORMAT, gmtime(second)) + "."
            self._second_text = text
            self._second = second
            self._next_second = second + 1.0
        return f'{self._second_text}{micro:06d}Z"'


def _latency(ns: int) -> str:
    """``float.__repr__(round(ns / 1e6, 3))``, the reference's milliseconds, for a span in ns.

    The float ``ns / 1e6`` is within 1.2e-7 ms of the true value below 1e15 ns, and a span that is
    not a whole number of microseconds plus exactly 500 ns is at least 1e-6 ms from a rounding
    tie: so ``round`` goes the way the integers say, and the repr of a number of thousandths is
    its digits (floats are 2.4e-7 apart there at most: no shorter text reads back to it). Ties,
    negative spans and huge ones take the float way."""
    micros, rest = divmod(ns, 1000)
    if rest == 500 or not 0 <= ns < 1_000_000_000_000_000:
        return float.__repr__(round(ns / 1e6, 3))
    if rest > 500:
        micros += 1
    return f"{micros // 1000}{_THOUSANDTHS[micros % 1000]}"


def _projected_text(body: ProjectedBody) -> str:
    """A projected body's columns as JSON text (the reference's ``json_line`` of ``to_dict()``)."""
    return body.int_text() or _LISTS.encode(body.to_dict())


def _auth(body: Any) -> bool:
    """Whether a SaslAuthenticate body, as read, holds auth bytes to hide (a body not read, or
    a projection without them, has none)."""
    if body is None:
        return False
    return type(body) is not ProjectedBody or "auth_bytes" in body.columns
