"""The codecs' Kafka-specific framing: xerial snappy, LZ4's magic 0 header checksum, gzip members."""

from __future__ import annotations

import os
import struct
import subprocess
import sys
import zlib

import cramjam
import lz4.frame
import pytest
import xxhash

from kafka_epochs import DecodeError
from kafka_epochs.records import Compression, LegacyMessage, Record, decode_records, encode_batch, encode_legacy
from kafka_epochs.records.codecs import compress
from kafka_epochs.records.codecs.snappy_codec import XERIAL_CHUNK_INPUT, XERIAL_MAGIC
from kafka_epochs.records.record_encoder import record_bytes

from .helpers import raw_batch, raw_legacy

RECORDS = [Record(offset_delta=i, key=b"k%d" % i, value=os.urandom(8) * 400) for i in range(40)]
BODY = b"".join(record_bytes(r, "r") for r in RECORDS)


def decoded_records(data: bytes) -> list[Record]:
    [batch] = decode_records(data).entries
    return batch.records  # type: ignore[union-attr]


# --- snappy -------------------------------------------------------------------------------------


def test_snappy_is_written_in_xerial_framing_with_32k_chunks() -> None:
    packed = compress(Compression.SNAPPY, BODY, 2)
    assert packed.startswith(XERIAL_MAGIC + struct.pack(">ii", 1, 1))
    pos, chunks = 16, []
    while pos < len(packed):
        (size,) = struct.unpack_from(">i", packed, pos)
        chunks.append(bytes(cramjam.snappy.decompress_raw(packed[pos + 4 : pos + 4 + size])))
        pos += 4 + size
    assert b"".join(chunks) == BODY
    assert [len(c) for c in chunks[:-1]] == [XERIAL_CHUNK_INPUT] * (len(chunks) - 1)


def test_raw_snappy_without_framing_decodes() -> None:
    """librdkafka, among others, writes raw snappy; xerial's reader (and Kafka) take it too."""
    raw = bytes(cramjam.snappy.compress_raw(BODY))
    data = raw_batch(raw, attributes=int(Compression.SNAPPY), count=len(RECORDS))
    assert decoded_records(data) == RECORDS
    wrapper = raw_legacy(bytes(cramjam.snappy.compress_raw(raw_legacy(b"inner"))), attributes=2)
    [message] = decode_records(wrapper).entries
    assert [m.value for m in message.inner] == [b"inner"]  # type: ignore[union-attr]


def test_xerial_version_fields_are_not_checked() -> None:
    """Some producers write the two version ints little-endian; Kafka's readers ignore them."""
    packed = compress(Compression.SNAPPY, BODY, 2)
    swapped = XERIAL_MAGIC + struct.pack("<ii", 1, 1) + packed[16:]
    assert decoded_records(raw_batch(swapped, attributes=2, count=len(RECORDS))) == RECORDS


@pytest.mark.parametrize(
    ("tail", "words"),
    [
        (struct.pack(">i", -5) + b"xxxx", "overruns"),
        (struct.pack(">i", 100) + b"xxxx", "overruns"),
        (b"\x00\x00", "cut off"),
        (struct.pack(">i", 4) + b"\xff\xff\xff\xff", "corrupt"),
    ],
)
def test_broken_xerial_chunks(tail: bytes, words: str) -> None:
    with pytest.raises(DecodeError) as info:
        decode_records(raw_batch(XERIAL_MAGIC + bytes(8) + tail, attributes=2, count=0))
    assert words in info.value.reason and info.value.path == "batches[0].records"


def test_empty_snappy_payloads() -> None:
    assert decoded_records(raw_batch(b"", attributes=2, count=0)) == []
    assert decoded_records(raw_batch(XERIAL_MAGIC + bytes(8), attributes=2, count=0)) == []
    assert compress(Compression.SNAPPY, b"", 2) == b"\x00"  # raw: a header alone trips kafka-python


# --- lz4 ----------------------------------------------------------------------------------------


def hc_at(frame: bytes) -> int:
    assert frame[4] & 0x01 == 0  # no dictionary id
    return 14 if frame[4] & 0x08 else 6  # after FLG, BD and, when flagged, the 8-byte content size


def header_checksum(frame: bytes) -> tuple[int, int, int]:
    """(stored HC, the standard HC, Kafka's broken magic 0 HC): byte 1 of an xxHash32 of the descriptor."""
    at = hc_at(frame)
    standard = (xxhash.xxh32_intdigest(frame[4:at]) >> 8) & 0xFF
    broken = (xxhash.xxh32_intdigest(frame[:at]) >> 8) & 0xFF
    return frame[at], standard, broken


def test_lz4_frames_use_independent_blocks() -> None:
    frame = compress(Compression.LZ4, BODY, 2)
    assert frame[4] & 0x20  # Kafka's reader decompresses each block on its own
    assert lz4.frame.decompress(frame) == BODY


def test_lz4_header_checksum_is_standard_for_magic_1_and_2() -> None:
    for magic in (1, 2):
        stored, standard, _ = header_checksum(compress(Compression.LZ4, BODY, magic))
        assert stored == standard


def test_lz4_magic_0_writes_kafkas_broken_header_checksum() -> None:
    frame = compress(Compression.LZ4, BODY, 0)
    stored, standard, broken = header_checksum(frame)
    assert stored == broken != standard
    with pytest.raises(RuntimeError):
        lz4.frame.decompress(frame)  # which is why a standard reader needs the fix-up


@pytest.mark.parametrize("which", ["broken", "standard"])
def test_lz4_magic_0_reads_either_header_checksum(which: str) -> None:
    """Kafka skips the HC check for magic 0, so frames from fixed and unfixed writers both read."""
    inner = b"".join(raw_legacy(b"v%d" % i, magic=0, offset=i) for i in range(3))
    frame = bytes(lz4.frame.compress(inner, block_linked=False))
    if which == "broken":
        at = hc_at(frame)
        frame = frame[:at] + bytes([header_checksum(frame)[2]]) + frame[at + 1 :]
    [wrapper] = decode_records(raw_legacy(frame, magic=0, attributes=3, offset=2)).entries
    assert [(m.offset, m.value) for m in wrapper.inner] == [(0, b"v0"), (1, b"v1"), (2, b"v2")]  # type: ignore[union-attr]


def test_lz4_magic_1_rejects_a_broken_header_checksum() -> None:
    frame = compress(Compression.LZ4, raw_legacy(b"v"), 1)
    broken = frame[:6] + bytes([header_checksum(frame)[2]]) + frame[7:]
    with pytest.raises(DecodeError) as info:
        decode_records(raw_legacy(broken, magic=1, attributes=3))
    assert "headerChecksum" in info.value.reason and info.value.path == "batches[0].value"


def test_lz4_magic_0_round_trip() -> None:
    messages = [LegacyMessage(offset=i, value=b"value") for i in range(5)]
    [wrapper] = decode_records(encode_legacy(messages, magic=0, compression=Compression.LZ4)).entries
    assert [m.offset for m in wrapper.inner] == list(range(5))  # type: ignore[union-attr]


# --- gzip -------------------------------------------------------------------------------------


def gzip(data: bytes) -> bytes:
    packer = zlib.compressobj(6, zlib.DEFLATED, 31)
    return packer.compress(data) + packer.flush()


def test_gzip_members_are_concatenated() -> None:
    half = len(BODY) // 2
    data = raw_batch(gzip(BODY[:half]) + gzip(BODY[half:]), attributes=1, count=len(RECORDS))
    assert decoded_records(data) == RECORDS


@pytest.mark.parametrize(
    ("payload", "words"),
    [
        (gzip(BODY)[:-9], "ends before"),
        (gzip(BODY) + b"trailing", "corrupt"),
        (zlib.compress(BODY), "corrupt"),  # zlib, not gzip
    ],
)
def test_broken_gzip(payload: bytes, words: str) -> None:
    with pytest.raises(DecodeError) as info:
        decode_records(raw_batch(payload, attributes=1, count=len(RECORDS)))
    assert words in info.value.reason


def test_output_is_deterministic() -> None:
    for codec in Compression:
        assert encode_batch(RECORDS, compression=codec) == encode_batch(RECORDS, compression=codec)


# --- cost ---------------------------------------------------------------------------------------


def test_compression_libraries_load_only_when_used() -> None:
    probe = (
        "import sys\n"
        "import kafka_epochs\n"
        "assert 'kafka_epochs.records' not in sys.modules\n"
        "from kafka_epochs.records import decode_records, encode_batch, Record\n"
        "decode_records(encode_batch([Record(value=b'x')]))\n"
        "heavy = {'cramjam', 'xxhash', 'lz4', 'zstandard', 'snappy'}\n"
        "print(sorted(heavy & set(sys.modules)))\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=60)
    assert done.stdout.strip() == "[]"
