"""Whole frames from messages: what ``Protocol.encode_request`` and ``encode_response`` write."""

from __future__ import annotations

import struct

from kafka_epochs.errors import EncodeError, UnsupportedVersionError
from kafka_epochs.wire.message import Message

_SIZE = struct.Struct(">i")


def frame_of(header: Message, header_version: int, body: Message, version: int) -> bytes:
    """The size prefix, then ``header`` at ``header_version`` and ``body`` at ``version``."""
    if version not in type(body).VALID_VERSIONS:
        raise UnsupportedVersionError(f"{type(body).__name__} has no version {version}")
    out: list[bytes] = []
    header.write(out, header_version)
    body.write(out, version)
    size = sum(map(len, out))
    if size > 0x7FFFFFFF:
        raise EncodeError(f"frame of {size} bytes does not fit a 32-bit size prefix")
    out.insert(0, _SIZE.pack(size))
    return b"".join(out)


def api_key_of(body: Message) -> int:
    """The api key of a request's or response's body; EncodeError for any other message."""
    key = type(body).API_KEY
    if key is None:
        raise EncodeError(f"{type(body).__name__} is not a request or response (it has no api key)")
    return key
