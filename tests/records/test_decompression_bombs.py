"""A decompression bomb (1 GiB of zeros, compressed) is refused quickly, within bounded memory.

The memory check runs the decoder in a fresh interpreter and reads its peak resident size:
decoding a 1 GiB bomb must raise a DecodeError having grown by about the 64 MiB limit, not 1 GiB.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
import zlib
from pathlib import Path

import pytest

from kafka_epochs import DecodeError
from kafka_epochs.records import DEFAULT_MAX_DECOMPRESSED, Compression, Record, decode_records, encode_batch

from .helpers import raw_batch, raw_legacy

MiB = 1 << 20
BOMB_SIZE = 1 << 30


def _zeros_in_chunks(feed) -> None:  # type: ignore[no-untyped-def]
    chunk = bytes(MiB)
    for _ in range(BOMB_SIZE // MiB):
        feed(chunk)


def make_bomb(kind: str) -> bytes:
    """1 GiB of zeros compressed, built without ever holding the 1 GiB."""
    import cramjam

    if kind == "gzip":
        packer = zlib.compressobj(1, zlib.DEFLATED, 31)
        parts: list[bytes] = []
        _zeros_in_chunks(lambda chunk: parts.append(packer.compress(chunk)))
        return b"".join(parts) + packer.flush()
    if kind in ("lz4", "zstd"):
        stream = cramjam.lz4.Compressor(block_linked=False) if kind == "lz4" else cramjam.zstd.Compressor(level=3)
        _zeros_in_chunks(stream.compress)
        return bytes(stream.finish())
    if kind == "snappy-raw":
        # One raw block whose preamble announces 1 GiB (bytes() of zeros maps no memory until written).
        return bytes(cramjam.snappy.compress_raw(bytes(BOMB_SIZE)))
    if kind == "snappy-xerial":
        block = bytes(cramjam.snappy.compress_raw(bytes(32 * 1024)))
        chunk = len(block).to_bytes(4, "big") + block
        return b"\x82SNAPPY\x00" + bytes([0, 0, 0, 1, 0, 0, 0, 1]) + chunk * (BOMB_SIZE // (32 * 1024))
    raise AssertionError(kind)


KINDS = {
    "gzip": Compression.GZIP,
    "lz4": Compression.LZ4,
    "zstd": Compression.ZSTD,
    "snappy-raw": Compression.SNAPPY,
    "snappy-xerial": Compression.SNAPPY,
}


@pytest.fixture(scope="module")
def bombs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("bombs")
    paths = {}
    for kind, codec in KINDS.items():
        path = folder / f"{kind}.batch"
        path.write_bytes(raw_batch(make_bomb(kind), attributes=int(codec)))
        paths[kind] = path
    return paths


@pytest.mark.parametrize("kind", list(KINDS))
def test_bomb_in_a_batch_is_refused_quickly(bombs: dict[str, Path], kind: str) -> None:
    data = bombs[kind].read_bytes()
    started = time.perf_counter()
    with pytest.raises(DecodeError) as info:
        decode_records(data)
    elapsed = time.perf_counter() - started
    assert elapsed < 2.0, f"{kind} bomb took {elapsed:.2f}s"
    assert info.value.path == "batches[0].records" and info.value.offset == 61
    assert f"max_decompressed={DEFAULT_MAX_DECOMPRESSED}" in info.value.reason


@pytest.mark.parametrize("magic", [0, 1])
@pytest.mark.parametrize("kind", ["gzip", "lz4", "snappy-xerial"])
def test_bomb_in_a_legacy_wrapper_is_refused(bombs: dict[str, Path], kind: str, magic: int) -> None:
    payload = bombs[kind].read_bytes()[61:]
    if kind == "lz4" and magic == 0:
        from kafka_epochs.records.codecs.lz4_codec import _with_header_checksum

        payload = _with_header_checksum(payload, include_magic=True)  # as a magic 0 writer leaves it
    with pytest.raises(DecodeError) as info:
        decode_records(raw_legacy(payload, magic=magic, attributes=int(KINDS[kind])), max_decompressed=8 * MiB)
    assert info.value.path == "batches[0].value"
    assert "max_decompressed=8388608" in info.value.reason


MEASURE = """
import json, re, sys, time
from kafka_epochs import DecodeError
from kafka_epochs.records import decode_records
import cramjam, crc32c, xxhash  # loaded up front, so that only decoding counts

def kib(field):
    return int(re.search(field + r":\\s+(\\d+)", open("/proc/self/status").read()).group(1))

report = {}
for name, path in json.loads(sys.argv[1]).items():
    blob = open(path, "rb").read()
    before = kib("VmRSS")
    with open("/proc/self/clear_refs", "w") as reset:
        reset.write("5")  # restart the peak (VmHWM) from here
    started = time.perf_counter()
    try:
        decode_records(blob)
        outcome = "decoded"
    except DecodeError as exc:
        outcome = exc.reason
    report[name] = {"outcome": outcome, "grew_mib": (kib("VmHWM") - before) / 1024,
                    "seconds": time.perf_counter() - started}
    del blob
print(json.dumps(report))
"""


@pytest.mark.skipif(not Path("/proc/self/clear_refs").exists(), reason="needs Linux's /proc peak-RSS reset")
def test_bombs_never_hold_much_more_than_the_limit(bombs: dict[str, Path]) -> None:
    paths = {kind: str(path) for kind, path in bombs.items()}
    done = subprocess.run(
        [sys.executable, "-c", MEASURE, json.dumps(paths)], capture_output=True, text=True, timeout=120, check=True
    )
    report = json.loads(done.stdout)
    print(report)
    limit_mib = DEFAULT_MAX_DECOMPRESSED / MiB
    for kind, row in report.items():
        assert "max_decompressed" in row["outcome"], (kind, row)
        # The limit's worth of output and the compressed payload's copy, never the 1 GiB.
        assert row["grew_mib"] < 1.5 * limit_mib, (kind, row)


@pytest.mark.parametrize("codec", list(Compression)[1:], ids=lambda c: c.name)
def test_limit_is_exact_and_shared_by_the_whole_call(codec: Compression) -> None:
    records = [Record(offset_delta=i, value=bytes(300)) for i in range(3)]
    batch = encode_batch(records, compression=codec)
    from kafka_epochs.records.record_encoder import record_bytes

    size = sum(len(record_bytes(r, "r")) for r in records)
    assert len(decode_records(batch, max_decompressed=size).entries) == 1
    with pytest.raises(DecodeError):
        decode_records(batch, max_decompressed=size - 1)
    with pytest.raises(DecodeError) as info:
        decode_records(batch + batch, max_decompressed=2 * size - 1)
    assert info.value.path == "batches[1].records"
    assert f"{size} already used" in info.value.reason
    assert len(decode_records(batch + batch, max_decompressed=2 * size).entries) == 2


def test_negative_limit_is_refused() -> None:
    with pytest.raises(ValueError, match="max_decompressed"):
        decode_records(b"", max_decompressed=-1)
