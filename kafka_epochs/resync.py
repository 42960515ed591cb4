"""Finding where a Kafka frame may start in bytes that lost their framing.

Every Kafka frame is an int32 size followed by that many bytes; a request's starts with api key,
api version, correlation id and client id, a response's with the correlation id. When a capture
starts mid-stream, or a gap swallowed a frame boundary, the next boundary is found by testing
offsets with a *plausibility predicate* ``plausible(buffer, offset) -> bool``. The caller can
supply one (built from the protocol it knows); the defaults here check only the shape. Both the
capture's frame aligner (:mod:`kafka_epochs.capture.alignment`) and the pairer
(:mod:`kafka_epochs.pairing`, which adds a decoder's verdict as its plug-in) search with them:

* requests: size in 8..100 MiB, api key in 0..100, api version in 0..30, correlation id >= 0,
  client id null or of a length that fits the frame, with printable (or non-ASCII UTF-8) bytes;
* responses: size in 6..100 MiB (a version-0 Heartbeat response is 6 bytes, so the 8-byte floor of
  requests would miss real responses) and correlation id >= 0.

A predicate returns ``False`` when ``buffer`` holds too few bytes after ``offset`` to decide.
A :class:`FrameRule` pairs a predicate with an optional regular expression that matches (as a
zero-width lookahead) at every offset the predicate could accept: scanning megabytes of a frame's
body is then done by the regex engine, and the predicate only sees the candidates.
"""

from __future__ import annotations

import re
import struct
from collections.abc import Callable

ByteBuffer = bytes | bytearray
PlausibleFrame = Callable[[ByteBuffer, int], bool]

MAX_FRAME_SIZE = 100 * 1024 * 1024  # Kafka's default socket.request.max.bytes
MIN_REQUEST_SIZE = 8  # api key, api version, correlation id: request header v0 with an empty body
MIN_RESPONSE_SIZE = 6  # correlation id and a 2-byte error code
MAX_API_KEY = 100
MAX_API_VERSION = 30
REQUEST_PREFIX = 14  # size, api key, api version, correlation id, client id length
RESPONSE_PREFIX = 8  # size, correlation id

_REQUEST_HEAD = struct.Struct(">ihhih")
_RESPONSE_HEAD = struct.Struct(">ii")
# Bytes a client id may hold: printable ASCII, and the bytes of non-ASCII UTF-8.
_CLIENT_ID_BYTES = bytes(range(0x20, 0x7F)) + bytes(range(0x80, 0x100))


def plausible_request(buffer: ByteBuffer, offset: int) -> bool:
    """Whether a client-to-broker frame may start at ``offset`` (the default predicate)."""
    if len(buffer) - offset < REQUEST_PREFIX:
        return False
    size, api_key, api_version, correlation_id, client_id_length = _REQUEST_HEAD.unpack_from(buffer, offset)
    if not (
        MIN_REQUEST_SIZE <= size <= MAX_FRAME_SIZE
        and 0 <= api_key <= MAX_API_KEY
        and 0 <= api_version <= MAX_API_VERSION
        and correlation_id >= 0
    ):
        return False
    if client_id_length == -1:
        return True
    # After the size: api key 2, api version 2, correlation id 4, client id length 2.
    if client_id_length < 0 or 10 + client_id_length > size:
        return False
    start = offset + REQUEST_PREFIX
    visible = buffer[start : start + client_id_length]
    return not visible.translate(None, _CLIENT_ID_BYTES)


def plausible_response(buffer: ByteBuffer, offset: int) -> bool:
    """Whether a broker-to-client frame may start at ``offset`` (the default predicate)."""
    if len(buffer) - offset < RESPONSE_PREFIX:
        return False
    size, correlation_id = _RESPONSE_HEAD.unpack_from(buffer, offset)
    return MIN_RESPONSE_SIZE <= size <= MAX_FRAME_SIZE and correlation_id >= 0


def size_prefix_pattern(minimum: int, maximum: int) -> bytes:
    """A regex (bytes) matching 4 big-endian bytes that may encode an int32 in ``minimum..maximum``.

    Loose above (any value up to the top byte of ``maximum``), exact below for ``minimum < 256``,
    so runs of zero bytes, common in record data, are no candidates.
    """
    if not 0 < minimum < 256 <= maximum <= 0x7FFFFFFF:
        raise ValueError("size_prefix_pattern wants 0 < minimum < 256 <= maximum < 2**31")
    top = maximum >> 24
    alternatives = [
        rb"\x00\x00\x00[\x%02x-\xff]" % minimum,
        rb"\x00\x00[\x01-\xff][\x00-\xff]",
        rb"\x00[\x01-\xff][\x00-\xff]{2}",
    ]
    if top:
        alternatives.append(rb"[\x01-\x%02x][\x00-\xff]{3}" % top)
    return b"(?:" + b"|".join(alternatives) + b")"


# The patterns of where frames may start, as their text: ``re`` compiles one the first time a
# search needs it (and keeps it), not at every start of the command, where most captures never
# need a search and the two cost some 4 million instructions to compile.
REQUEST_CANDIDATES = (
    b"(?="
    + size_prefix_pattern(MIN_REQUEST_SIZE, MAX_FRAME_SIZE)
    + rb"\x00[\x00-\x%02x]\x00[\x00-\x%02x][\x00-\x7f])" % (MAX_API_KEY, MAX_API_VERSION)
)
RESPONSE_CANDIDATES = b"(?=" + size_prefix_pattern(MIN_RESPONSE_SIZE, MAX_FRAME_SIZE) + rb"[\x00-\x7f])"


def find_frame_start(
    data: ByteBuffer,
    start: int,
    plausible: PlausibleFrame,
    *,
    end: int | None = None,
    candidates: re.Pattern[bytes] | bytes | None = None,
) -> int | None:
    """The first offset in ``start..end-1`` (``end`` defaults to ``len(data)``) where ``plausible`` holds.

    With ``candidates`` (a pattern, or its text), only offsets where that pattern matches are
    tested; it must match wherever ``plausible`` could hold (it may look past ``end``: only the
    match's start must be before it).
    """
    stop = len(data) if end is None else min(end, len(data))
    if candidates is None:
        for offset in range(max(start, 0), stop):
            if plausible(data, offset):
                return offset
        return None
    search = (candidates if isinstance(candidates, re.Pattern) else re.compile(candidates)).search
    pos = max(start, 0)
    while pos < stop:
        match = search(data, pos)
        if match is None or match.start() >= stop:
            return None
        offset = match.start()
        if plausible(data, offset):
            return offset
        pos = offset + 1
    return None
