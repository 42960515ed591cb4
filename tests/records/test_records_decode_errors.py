"""Bad bytes give a DecodeError naming the field, the byte and why: never another exception."""

from __future__ import annotations

import dataclasses
import struct

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kafka_epochs import DecodeError
from kafka_epochs.records import (
    Compression,
    LegacyMessage,
    Record,
    RecordBatch,
    decode_records,
    encode_batch,
    encode_legacy,
    encode_records,
)

from .helpers import ALL_CODECS, LEGACY_CODECS, raw_batch, raw_legacy, record_lists

FUZZ = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def sample_batch(codec: Compression = Compression.NONE) -> bytes:
    records = [Record(offset_delta=i, key=b"key", value=b"value %d" % i, headers=[("h", b"x")]) for i in range(4)]
    return encode_batch(records, compression=codec, base_offset=50)


def sample_legacy(magic: int, codec: Compression = Compression.NONE) -> bytes:
    messages = [LegacyMessage(offset=i, key=b"k", value=b"value %d" % i, timestamp=1000 + i) for i in range(3)]
    return encode_legacy(messages, magic=magic, compression=codec)


def flip(data: bytes, at: int) -> bytes:
    return data[:at] + bytes([data[at] ^ 0x01]) + data[at + 1 :]


# --- CRCs -------------------------------------------------------------------------------------


@pytest.mark.parametrize("codec", ALL_CODECS, ids=lambda c: c.name)
@settings(max_examples=30, deadline=None)
@given(where=st.floats(0, 1, exclude_max=True))
def test_one_flipped_byte_under_the_batch_crc_is_a_crc_error(codec: Compression, where: float) -> None:
    data = sample_batch(codec)
    stored = struct.unpack_from(">I", data, 17)[0]
    at = 17 + int(where * (len(data) - 17))  # the CRC field itself, or anything it covers
    with pytest.raises(DecodeError) as info:
        decode_records(flip(data, at))
    err = info.value
    assert err.path == "batches[0].crc" and err.offset == 17
    assert "crc mismatch" in err.reason and "CRC32C" in err.reason
    says = stored ^ 0x01000000 >> 8 * (at - 17) if at < 21 else stored
    assert f"{says:#010x}" in err.reason  # the CRC the batch carries...
    assert err.reason.count("0x") == 2  # ...and the one its bytes give


@pytest.mark.parametrize("codec", LEGACY_CODECS, ids=lambda c: c.name)
@pytest.mark.parametrize("magic", [0, 1])
def test_one_flipped_byte_under_a_message_crc_is_a_crc_error(magic: int, codec: Compression) -> None:
    data = sample_legacy(magic, codec)
    end = 12 + struct.unpack_from(">i", data, 8)[0]  # the first message; each has its own CRC
    for at in range(17, end, 3):  # past the magic byte, which decides the format
        with pytest.raises(DecodeError) as info:
            decode_records(flip(data, at))
        assert info.value.path == "batches[0].crc" and "CRC32)" in info.value.reason


def test_crc_check_can_be_skipped() -> None:
    data = bytearray(sample_batch())
    data[-1] ^= 0x01  # last byte of the last header's value
    [batch] = decode_records(bytes(data), verify_crc=False).entries
    assert batch.records[-1].headers == [("h", b"y")]  # type: ignore[union-attr]


# --- truncation -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "make",
    [
        sample_batch,
        lambda: encode_legacy([LegacyMessage(key=b"k", value=b"v")], magic=0),
        lambda: sample_legacy(1, Compression.GZIP),
    ],
    ids=["v2", "v0", "v1-gzip"],
)
def test_every_cut_of_the_last_entry_is_a_truncated_tail(make) -> None:  # type: ignore[no-untyped-def]
    whole = make()
    first = sample_batch()
    for cut in range(len(whole)):
        decoded = decode_records(first + whole[:cut])
        assert len(decoded.entries) == 1
        assert decoded.truncated_tail == cut
        if cut:
            with pytest.raises(DecodeError) as info:
                decode_records(first + whole[:cut], allow_truncated_tail=False)
            assert info.value.path == "batches[1]" and info.value.offset == len(first)
            assert "ends inside an entry" in info.value.reason


# --- framing ----------------------------------------------------------------------------------


@pytest.mark.parametrize("magic", [3, 7, -1, -128])
def test_unknown_magic(magic: int) -> None:
    data = bytearray(sample_batch())
    data[16] = magic & 0xFF
    with pytest.raises(DecodeError) as info:
        decode_records(bytes(data))
    assert info.value.path == "batches[0].magic" and info.value.offset == 16
    assert f"unknown magic {magic}" in info.value.reason


@pytest.mark.parametrize("size", [-1, 0, 13, -(1 << 31)])
def test_entry_size_below_any_format(size: int) -> None:
    data = bytearray(sample_batch())
    struct.pack_into(">i", data, 8, size)
    with pytest.raises(DecodeError) as info:
        decode_records(bytes(data))
    assert info.value.path == "batches[0].batch_length" and info.value.offset == 8


def test_batch_length_below_the_batch_header() -> None:
    data = bytearray(sample_batch())
    struct.pack_into(">i", data, 8, 30)
    with pytest.raises(DecodeError) as info:
        decode_records(bytes(data))
    assert info.value.path == "batches[0].batch_length" and "49" in info.value.reason


def test_error_paths_count_entries() -> None:
    bad = bytearray(sample_batch())
    bad[-1] ^= 1
    with pytest.raises(DecodeError) as info:
        decode_records(sample_legacy(1) + sample_batch() + bytes(bad))
    assert info.value.path == "batches[4].crc"  # three messages and a batch come first
    assert info.value.offset == len(sample_legacy(1)) + len(sample_batch()) + 17


# --- record fields (with a correct CRC, so the decoder gets that far) ---------------------------


def one_record(body: bytes) -> bytes:
    """A record with a correct length prefix (zig-zag varint of a length below 64)."""
    assert len(body) < 64
    return bytes([len(body) * 2]) + body


GOOD_RECORD = one_record(bytes([0, 0, 0, 0x02]) + b"k" + bytes([0x02]) + b"v" + bytes([0]))


@pytest.mark.parametrize(
    ("payload", "count", "path", "words"),
    [
        (GOOD_RECORD, 2, "batches[0].record_count", "cannot fit"),
        (GOOD_RECORD, (1 << 31) - 1, "batches[0].record_count", "cannot fit"),
        (GOOD_RECORD, -1, "batches[0].record_count", "negative"),
        (GOOD_RECORD + b"\x00", 1, "batches[0].records", "follow the last"),
        (GOOD_RECORD * 2, 1, "batches[0].records", "follow the last"),
        (bytes([0x7E]) + GOOD_RECORD[1:], 1, "batches[0].records[0].length", "does not fit"),
        (bytes([0x03]) + GOOD_RECORD[1:], 1, "batches[0].records[0].length", "does not fit"),
        (one_record(GOOD_RECORD[1:] + b"\x00"), 1, "batches[0].records[0].length", "fields take"),
        (one_record(bytes([0, 0, 0, 0x09, 0, 0, 0])), 1, "batches[0].records[0].key", "invalid length -5"),
        (one_record(bytes([0, 0, 0, 0x7E, 0, 0, 0])), 1, "batches[0].records[0].key", "needs 63 bytes"),
        (one_record(bytes([0, 0, 0, 1, 0x03, 0])), 1, "batches[0].records[0].value", "invalid length -2"),
        (one_record(bytes([0, 0, 0, 1, 1, 0x7E])), 1, "batches[0].records[0].header_count", "cannot fit"),
        (one_record(bytes([0, 0, 0, 1, 1, 0x01])), 1, "batches[0].records[0].header_count", "cannot fit"),
        (
            one_record(bytes([0, 0, 0, 1, 1, 2, 0x01, 0x00])),
            1,
            "batches[0].records[0].headers[0].key",
            "cannot be null",
        ),
        (one_record(bytes([0, 0, 0, 1, 1, 2, 0x02, 0xFF, 0x00])), 1, "batches[0].records[0].headers[0].key", "UTF-8"),
        (
            one_record(bytes([0, 0, 0, 1, 1, 2, 0x00, 0x05])),
            1,
            "batches[0].records[0].headers[0].value",
            "invalid length",
        ),
        (
            one_record(bytes([0, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x01])),
            1,
            "batches[0].records[0].timestamp_delta",
            "varlong",
        ),
        (
            one_record(bytes([0, 0, 0xFF, 0xFF, 0xFF, 0xFF, 0x7F, 1, 1, 0])),
            1,
            "batches[0].records[0].offset_delta",
            "32 bits",
        ),
        (one_record(bytes([0, 0, 0x80])) + bytes(4), 1, "batches[0].records[0].offset_delta", "past the end"),
    ],
)
def test_bad_record_fields(payload: bytes, count: int, path: str, words: str) -> None:
    with pytest.raises(DecodeError) as info:
        decode_records(raw_batch(payload, count=count))
    assert info.value.path == path, info.value
    assert words in info.value.reason, info.value
    assert 57 <= info.value.offset < 61 + len(payload) + 1  # from the record count on


def test_errors_inside_compressed_records_point_at_the_payload() -> None:
    import cramjam

    payload = bytes(cramjam.zstd.compress(GOOD_RECORD + b"\x00"))
    with pytest.raises(DecodeError) as info:
        decode_records(raw_batch(payload, attributes=int(Compression.ZSTD)))
    assert info.value.path == "batches[0].records" and info.value.offset == 61
    assert f"at byte {len(GOOD_RECORD)} of the decompressed records" in info.value.reason


# --- codecs -----------------------------------------------------------------------------------


@pytest.mark.parametrize("codec_id", [5, 6, 7])
def test_unknown_codec_in_a_batch(codec_id: int) -> None:
    with pytest.raises(DecodeError) as info:
        decode_records(raw_batch(GOOD_RECORD, attributes=codec_id))
    assert info.value.path == "batches[0].attributes" and info.value.offset == 21
    assert f"unknown compression codec {codec_id}" in info.value.reason


@pytest.mark.parametrize("magic", [0, 1])
def test_zstd_is_not_valid_in_legacy_messages_when_strict(magic: int) -> None:
    with pytest.raises(DecodeError) as info:
        decode_records(raw_legacy(b"anything", magic=magic, attributes=int(Compression.ZSTD)), strict=True)
    assert info.value.path == "batches[0].attributes"
    assert "zstd compression is not valid with magic" in info.value.reason


@pytest.mark.parametrize("magic", [0, 1])
def test_zstd_in_a_legacy_wrapper_decodes_with_a_warning(magic: int) -> None:
    """kafkajs writes zstd wrappers with magic 1, which brokers have stored: decode them, and say so.
    The compressed set is made by the zstandard library, not by this project."""
    import zstandard

    inner = raw_legacy(b"one", magic=magic, offset=0) + raw_legacy(b"two", magic=magic, offset=1)
    wrapper = raw_legacy(
        zstandard.ZstdCompressor().compress(inner), magic=magic, attributes=int(Compression.ZSTD), offset=1
    )
    decoded = decode_records(wrapper + raw_legacy(b"plain", magic=magic, offset=2))
    assert [m.value for m in decoded[0].inner] == [b"one", b"two"]
    assert decoded[1].value == b"plain"
    assert decoded.warnings == [
        f"batches[0]: zstd compression is not valid with magic {magic}; decoded anyway, as a broker may have stored it"
    ]
    with pytest.raises(DecodeError, match="unknown compression codec 6"):  # unknown codecs stay errors
        decode_records(raw_legacy(b"anything", magic=magic, attributes=6))


@pytest.mark.parametrize("codec", ALL_CODECS[1:], ids=lambda c: c.name)
@pytest.mark.parametrize("garbage", [b"", b"\x00", b"not compressed at all, just text", bytes(range(256)) * 4])
def test_corrupt_compressed_payload(codec: Compression, garbage: bytes) -> None:
    with pytest.raises(DecodeError) as info:
        decode_records(raw_batch(garbage, attributes=int(codec)))
    assert info.value.path.startswith("batches[0].record") and info.value.offset >= 61  # raw snappy b"\x00" is empty


def test_legacy_wrapper_problems() -> None:
    inner_v1 = raw_legacy(b"x", magic=1)
    gzip = Compression.GZIP
    from kafka_epochs.records.codecs import compress

    cases = {
        "a wrapper message needs a value": raw_legacy(None, attributes=gzip),
        "inside a magic 1 wrapper": raw_legacy(compress(gzip, raw_legacy(b"x", magic=0), 1), attributes=gzip),
        "a compressed message inside a compressed message": raw_legacy(
            compress(gzip, raw_legacy(compress(gzip, inner_v1, 1), attributes=gzip), 1), attributes=gzip
        ),
        "no inner messages": raw_legacy(compress(gzip, b"", 1), attributes=gzip),
        "runs past the end of the decompressed message set": raw_legacy(
            compress(gzip, inner_v1[:-1], 1), attributes=gzip
        ),
        "needs 12 bytes": raw_legacy(compress(gzip, inner_v1 + b"\x00" * 5, 1), attributes=gzip),
    }
    for words, data in cases.items():
        with pytest.raises(DecodeError) as info:
            decode_records(data)
        assert words in info.value.reason, (words, info.value)
        assert info.value.path.startswith("batches[0]")


def test_legacy_field_problems() -> None:
    good = raw_legacy(b"value", key=b"key")
    grown = bytearray(good)
    struct.pack_into(">i", grown, 8, struct.unpack_from(">i", grown, 8)[0] + 1)
    cases = {
        "batches[0].key": raw_legacy(b"v")[:26] + struct.pack(">i", -7) + raw_legacy(b"v")[30:],
        "batches[0].value": bytes(grown) + b"\x00",
    }
    for path, data in cases.items():
        with pytest.raises(DecodeError) as info:
            decode_records(data, verify_crc=False)
        assert info.value.path == path, info.value


# --- fuzzing: any bytes decode or raise DecodeError -------------------------------------------


SEEDS = [sample_batch(c) for c in ALL_CODECS] + [sample_legacy(m, c) for m in (0, 1) for c in LEGACY_CODECS]


def _content(entry: object) -> object:
    """An entry without what encoding recomputes: sizes, CRCs, a wrapper message's compressed value."""
    if isinstance(entry, RecordBatch):
        return dataclasses.replace(entry, batch_length=0, crc=0)
    assert isinstance(entry, LegacyMessage)
    if entry.inner is None:
        return dataclasses.replace(entry, crc=0)
    return dataclasses.replace(entry, crc=0, value=None, inner=[_content(m) for m in entry.inner])  # type: ignore[misc]


def decodes_and_round_trips(data: bytes, **options: bool) -> None:
    """Bytes either raise DecodeError or decode to entries that encode and decode back the same."""
    try:
        decoded = decode_records(data, **options)
    except DecodeError:
        return
    again = decode_records(encode_records(decoded.entries))
    assert [_content(e) for e in again.entries] == [_content(e) for e in decoded.entries]


@FUZZ
@given(
    seed=st.sampled_from(SEEDS),
    edits=st.lists(st.tuples(st.integers(0, 10_000), st.integers(0, 255)), min_size=1, max_size=4),
    verify=st.booleans(),
)
def test_mutated_entries_never_raise_anything_but_decode_error(seed: bytes, edits, verify: bool) -> None:  # type: ignore[no-untyped-def]
    data = bytearray(seed)
    for at, value in edits:
        data[at % len(data)] = value
    decodes_and_round_trips(bytes(data), verify_crc=verify)


@FUZZ
@given(records=record_lists(4), codec=st.sampled_from(ALL_CODECS), data=st.data())
def test_bad_payloads_under_good_crcs_never_raise_anything_but_decode_error(records, codec, data) -> None:  # type: ignore[no-untyped-def]
    batch = encode_batch(records, compression=Compression.NONE)
    payload = bytearray(batch[61:])
    for _ in range(data.draw(st.integers(0, 3))):
        if payload:
            payload[data.draw(st.integers(0, len(payload) - 1))] = data.draw(st.integers(0, 255))
    from kafka_epochs.records.codecs import compress

    count = data.draw(st.integers(-2, len(records) + 2))
    packed = compress(codec, bytes(payload), 2)
    decodes_and_round_trips(raw_batch(packed, attributes=int(codec), count=count))


@FUZZ
@given(blob=st.binary(max_size=300))
def test_random_bytes_never_raise_anything_but_decode_error(blob: bytes) -> None:
    decodes_and_round_trips(blob)
