"""LZ4 frames through cramjam, with Kafka's magic 0 header-checksum quirk.

Kafka reads LZ4 as one frame of independent blocks. Its first LZ4 writer (magic 0, Kafka 0.8-0.9)
computed the frame descriptor's checksum byte (HC) over the 4 magic bytes as well as the
descriptor, which no LZ4 library accepts. Kafka still writes that broken HC for magic 0, and
skips the HC check when it reads magic 0; magic 1 and 2 use the standard checksum (KIP-57).
We do the same: for magic 0 we write the broken byte, and on read we replace whatever HC byte is
there with the correct one before the library sees the frame. The HC is a byte of an xxHash32,
which the ``xxhash`` package computes.
"""

from __future__ import annotations

from kafka_epochs.records.codecs.bounded import decompress_into_bounded

_FRAME_MAGIC = b"\x04\x22\x4d\x18"
#: FLG bits that add fields to the frame descriptor (LZ4 frame format 1.6).
_FLG_CONTENT_SIZE = 0x08
_FLG_DICT_ID = 0x01


def compress(data: bytes, magic: int) -> bytes:
    import cramjam

    # Kafka's reader decompresses each block on its own: linked blocks would not decode there.
    packer = cramjam.lz4.Compressor(content_checksum=False, block_linked=False)
    packer.compress(data)
    frame = bytes(packer.finish())
    if magic == 0:
        frame = _with_header_checksum(frame, include_magic=True)
    return frame


def decompress(data: bytes | memoryview, magic: int, limit: int) -> bytes:
    import cramjam

    if magic == 0:
        data = _with_header_checksum(bytes(data), include_magic=False)
    return decompress_into_bounded(cramjam.lz4.decompress_into, data, limit, "lz4")


def _with_header_checksum(frame: bytes, *, include_magic: bool) -> bytes:
    """``frame`` with its HC byte recomputed: Kafka's broken way, or the standard way.

    A frame too short to have an HC is returned unchanged, for the decoder to reject.
    """
    import xxhash

    if len(frame) < 7 or not frame.startswith(_FRAME_MAGIC):
        return frame
    flg = frame[4]
    hc_at = 6 + (8 if flg & _FLG_CONTENT_SIZE else 0) + (4 if flg & _FLG_DICT_ID else 0)
    if hc_at >= len(frame):
        return frame
    covered = frame[0 if include_magic else 4 : hc_at]
    hc = (xxhash.xxh32_intdigest(covered) >> 8) & 0xFF
    return frame[:hc_at] + bytes((hc,)) + frame[hc_at + 1 :]
