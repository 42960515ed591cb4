"""The one Python loop of a batch decode: each frame's body, read in place from the batch's bytes.

Frames whose header the vectorized pass fully understood go straight to the generated body
decoder, reading from one ``bytes`` of the whole batch (no per-frame copy, no header re-parse).
Everything else, and any frame whose body fails there, is decoded again the ordinary way
(``Protocol.decode_request`` / ``decode_response`` on the frame alone), so errors, warnings and
results are exactly the single-process decoder's, and one bad frame costs only its own row.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, cast

import numpy as np
import numpy.typing as npt

from kafka_epochs.protocol import BodyReader, Decoded, Protocol, trailing_problem, trailing_warning
from kafka_epochs.spark.headers import Headers, Ints
from kafka_epochs.wire.errors import DecodeError

NO_REQUEST = "response without its request: its api key and version are unknown"
#: On every row decoded without a direction column: what was assumed, and how to do better.
ASSUMED_REQUEST = (
    "no direction column: read as a request (from the kafka-capture source, pass its direction "
    "and request_api_key/request_api_version columns, or let decode_frames find them)"
)


Mask = npt.NDArray[np.bool_]

#: The error of a row that ``decode_bodies(..., only=)`` was told to leave alone (never rendered:
#: its caller drops it).
SKIPPED = "not decoded (not a row asked for)"
#: The warnings of every skipped row: one list, shared (a list per row cost 10% of a projection's
#: batch), never changed (the rows decoded get lists of their own).
_NO_WARNINGS: list[str] = []

#: Turns a decoded body into what its row keeps: (body, version read at, is a response) -> value.
#: Bodies are rendered as soon as they are read, so a batch never holds all its message objects
#: at once: holding them all measured ~30% slower, from the garbage collector scanning them.
Render = Callable[[Any, int, bool], Any]

#: Reads a body in place of ``Message.read``: (message class, bytes, offset, version, end) ->
#: (body, offset after it); a projection's columns, say (see :mod:`kafka_epochs.spark.projected`).
ReadBody = Callable[[Any, bytes, int, int, int], tuple[Any, int]]


@dataclass
class Bodies:
    """Per row: the rendered body (None on error), the error, the warnings."""

    values: list[Any] = field(default_factory=list)
    errors: list[str | None] = field(default_factory=list)
    warnings: list[list[str]] = field(default_factory=list)
    profiles: list[str | None] = field(default_factory=list)  # the layout that read each body

    def add(
        self,
        render: Render,
        body: Any,
        version: int,
        is_response: bool,
        warnings: list[str],
        profile: str,
        problem: str | None = None,
    ) -> None:
        """A body read; ``problem`` says why the reading is doubtful (the row keeps the body and is
        a problem row)."""
        try:
            value = render(body, version, is_response)
        except Exception as e:  # a body the renderer refuses fails its row only
            self.fail(_describe(e), warnings)
            return
        self.values.append(value)
        self.errors.append(problem)
        self.warnings.append(warnings)
        self.profiles.append(profile)

    def note(self, warning: str) -> None:
        """A row with nothing to decode and nothing wrong (a raw SASL token)."""
        self.values.append(None)
        self.errors.append(None)
        self.warnings.append([warning])
        self.profiles.append(None)

    def fail(self, error: str, warnings: list[str]) -> None:
        self.values.append(None)
        self.errors.append(error)
        self.warnings.append(warnings)
        self.profiles.append(None)


def _read_message(cls: Any, data: bytes, pos: int, version: int, end: int) -> tuple[Any, int]:
    body, stop = cls.read(data, pos, version, end)
    return body, stop


def decode_bodies(
    headers: Headers,
    protocol: Protocol,
    render: Render,
    read_body: ReadBody = _read_message,
    only: Mask | None = None,
) -> Bodies:
    """Every row's body; with ``only``, the rows it marks, and :data:`SKIPPED` in the others.

    A caller that keeps the rows of one message (``decode_api(..., fields=)``) marks them from
    the header pass, so the other rows cost nothing here; each marked row is decoded exactly as
    it would be among all of them.
    """
    if only is not None:
        picked = np.flatnonzero(only)
        if len(picked) < len(only):
            return _scattered(_decode_rows(headers, protocol, render, read_body, picked), picked, len(only))
    return _decode_rows(headers, protocol, render, read_body, None)


def _scattered(some: Bodies, picked: Ints, n: int) -> Bodies:
    """``some``, the bodies of rows ``picked``, in their places among ``n`` rows; :data:`SKIPPED` elsewhere."""
    out = Bodies([None] * n, [SKIPPED] * n, [_NO_WARNINGS] * n, [None] * n)
    for j, i in enumerate(picked.tolist()):
        out.values[i] = some.values[j]
        out.errors[i] = some.errors[j]
        out.warnings[i] = some.warnings[j]
        out.profiles[i] = some.profiles[j]
    return out


def _decode_rows(
    headers: Headers, protocol: Protocol, render: Render, read_body: ReadBody, picked: Ints | None
) -> Bodies:
    out = Bodies()
    if picked is None:
        whole, base = _batch_bytes(headers.data, headers.starts, headers.ends)
    else:
        whole, base = _batch_bytes(headers.data, headers.starts[picked], headers.ends[picked])
    columns = [
        headers.body_start,
        headers.starts,
        headers.ends,
        headers.api_version,
        headers.is_response,
    ]
    if picked is None:
        indices: Any = range(len(headers.starts))
        values = [c.tolist() for c in columns]
        entries = headers.entries
    else:
        indices = picked.tolist()
        values = [c[picked].tolist() for c in columns]
        entries = [headers.entries[i] for i in indices]
    rows = zip(indices, *values, entries, strict=True)
    for i, body_start, start, end, version, is_response, entry in rows:
        mechanism = headers.sasl_mechanism[i]
        if mechanism is not None:
            out.note(
                f"a raw SASL {mechanism} token of {end - start - 4} bytes (after a SaslHandshake v0): "
                "it has no Kafka header, and its bytes are credentials, so it is not decoded"
            )
            continue
        if body_start >= 0 and entry is not None and entry.cls is not None:
            try:
                body, stop = read_body(entry.cls, whole, body_start - base, version, end - base)
            except Exception:  # let the ordinary decoder say what is wrong, in its own words
                pass
            else:
                trailing = end - base - stop
                if trailing and headers.direction_assumed:
                    out.fail(_not_a_request(trailing), [ASSUMED_REQUEST])
                    continue
                problem = None
                if trailing:
                    warnings = [trailing_warning(trailing), *entry.warnings]
                    kind = "response" if is_response else "request"
                    problem = trailing_problem(entry.cls.API_KEY, kind, version, trailing)
                else:
                    warnings = list(entry.warnings)
                if headers.direction_assumed:
                    warnings.append(ASSUMED_REQUEST)
                out.add(render, body, version, is_response, warnings, entry.profile, problem)
                continue
        _slow_row(out, headers, i, whole[start - base : end - base], protocol, render, read_body)
    return out


def _batch_bytes(data: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> tuple[bytes, int]:
    """The bytes spanning every frame of the batch, copied once, and the offset they start at."""
    if not len(starts):
        return b"", 0
    low, high = int(starts.min()), int(ends.max())
    return data[low:high].tobytes(), low


def _slow_row(
    out: Bodies, headers: Headers, i: int, frame: bytes, protocol: Protocol, render: Render, read_body: ReadBody
) -> None:
    assumed = [ASSUMED_REQUEST] if headers.direction_assumed else []
    reader: BodyReader | None = None
    if hasattr(read_body, "attempt"):
        reader = cast(BodyReader, read_body)  # a ProjectingReader: it also tries layouts by projection
    elif read_body is not _read_message:

        def whole_frame(cls: Any, data: bytes, pos: int, version: int) -> tuple[Any, int]:
            return read_body(cls, data, pos, version, len(data))

        reader = whole_frame

    try:
        decoded = _decode_one(headers, i, frame, protocol, reader)
    except Exception as e:  # a bad frame must never fail the batch: its row carries the error
        out.fail(_describe(e), assumed)
        return
    if decoded.trailing and headers.direction_assumed:
        out.fail(_not_a_request(decoded.trailing), assumed)
        return
    out.add(
        render,
        decoded.body,
        decoded.api_version,
        bool(headers.is_response[i]),
        [*decoded.warnings, *assumed],
        decoded.profile,
        decoded.problem,
    )


def _not_a_request(trailing: int) -> str:
    return (
        f"does not read as a request: {trailing} bytes are left after the body (is it a response? "
        "without a direction column every frame is read as a request; pass direction_col and the "
        "request api key/version columns)"
    )


def _decode_one(headers: Headers, i: int, frame: bytes, protocol: Protocol, reader: BodyReader | None) -> Decoded:
    """One frame, decoded as ``kafka_epochs.framing`` does it."""
    if headers.direction[i].as_py() is None:
        raise ValueError(f"direction must be 'request' or 'response', not {_given(headers, i)}")
    if not headers.present[i]:
        raise ValueError("no frame (null)")
    if not headers.is_response[i]:
        return protocol.decode_request(frame, body_reader=reader)
    if not (headers.api_key_ok[i] and headers.api_version_ok[i]):
        raise ValueError(NO_REQUEST)
    return protocol.decode_response(frame, int(headers.api_key[i]), int(headers.api_version[i]), body_reader=reader)


def _given(headers: Headers, i: int) -> str:
    given = headers.given_direction
    return repr(None if given is None else given[i].as_py())


def _describe(error: Exception) -> str:
    if isinstance(error, (DecodeError, ValueError)):
        return str(error)
    return f"{type(error).__name__}: {error}"
