"""Strategies and byte builders shared by the records tests.

The byte builders assemble batches and messages around a payload of the test's choosing (a bomb,
a corrupt frame), which the library's encoders, compressing real records, cannot be made to write.
"""

from __future__ import annotations

import struct
import zlib

import crc32c
from hypothesis import strategies as st

from kafka_epochs.records import Compression, LegacyMessage, Record

INT32 = st.integers(-(1 << 31), (1 << 31) - 1)
INT64 = st.integers(-(1 << 63), (1 << 63) - 1)
INT16 = st.integers(-(1 << 15), (1 << 15) - 1)

maybe_bytes = st.none() | st.binary(max_size=40)
# Few distinct names, so that repeated header keys are common.
header_keys = st.sampled_from(["", "a", "b", "trace-id", "ünï"]) | st.text(max_size=6)
headers = st.lists(st.tuples(header_keys, maybe_bytes), max_size=4)


@st.composite
def record_lists(draw: st.DrawFn, max_size: int = 6) -> list[Record]:
    count = draw(st.integers(0, max_size))
    records = []
    for i in range(count):
        records.append(
            Record(
                attributes=draw(st.integers(-128, 127)) if draw(st.booleans()) else 0,
                timestamp_delta=draw(INT32 | st.integers(0, 5000)),
                offset_delta=draw(st.just(i) | INT32),
                key=draw(maybe_bytes),
                value=draw(maybe_bytes | st.binary(min_size=200, max_size=2000)),
                headers=draw(headers),
            )
        )
    return records


@st.composite
def legacy_lists(draw: st.DrawFn, *, min_size: int = 0, max_size: int = 5) -> list[LegacyMessage]:
    """Messages for ``encode_legacy``; offsets start at 0 or above, as logs do."""
    count = draw(st.integers(min_size, max_size))
    first = draw(st.integers(0, 1 << 40))
    return [
        LegacyMessage(
            offset=first + i * draw(st.integers(1, 3)),
            key=draw(maybe_bytes),
            value=draw(maybe_bytes),
            timestamp=draw(st.integers(-1, 1 << 42)),
        )
        for i in range(count)
    ]


def raw_batch(
    payload: bytes, *, attributes: int = 0, count: int = 1, base_offset: int = 0, last_offset_delta: int = 0
) -> bytes:
    """A v2 batch whose records section is ``payload`` as given, with a correct CRC32C."""
    covered = struct.pack(">hiqqqhii", attributes, last_offset_delta, 0, 0, -1, -1, -1, count) + payload
    head = struct.pack(">qiib", base_offset, 9 + len(covered), -1, 2)
    return head + struct.pack(">I", crc32c.crc32c(covered)) + covered


def raw_legacy(
    value: bytes | None,
    *,
    magic: int = 1,
    attributes: int = 0,
    offset: int = 0,
    key: bytes | None = None,
    timestamp: int = 0,
) -> bytes:
    """One legacy message with ``value`` as given (a compressed set, for a wrapper), with a correct CRC32."""
    body = bytes((magic, attributes))
    if magic == 1:
        body += struct.pack(">q", timestamp)
    for field in (key, value):
        body += struct.pack(">i", -1) if field is None else struct.pack(">i", len(field)) + field
    return struct.pack(">qiI", offset, 4 + len(body), zlib.crc32(body)) + body


LEGACY_CODECS = [Compression.NONE, Compression.GZIP, Compression.SNAPPY, Compression.LZ4]
ALL_CODECS = list(Compression)
