"""The fixed-offset parts of a batch of frames, read with numpy straight from the Arrow buffers.

A request frame starts ``size:int32 api_key:int16 api_version:int16 correlation_id:int32``
and (header v1+) ``client_id_length:int16``; a response frame ``size:int32 correlation_id:int32``.
Those sit at the same offsets in every frame, so one vectorized gather per field reads them for
the whole batch, and the Python loop that follows touches only the bodies. Each field comes with
a mask saying where the bytes were there to read: a truncated frame still shows what it has.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
import pyarrow as pa  # type: ignore[import-untyped]  # pyarrow ships no type stubs
import pyarrow.compute as pc  # type: ignore[import-untyped]

from kafka_epochs.protocol_refs import Entry, Lookup

Ints = npt.NDArray[np.int64]
Mask = npt.NDArray[np.bool_]

_REQUEST = "request"
_RESPONSE = "response"


@dataclass
class Headers:
    """Per-row header fields of a batch; ``*_ok`` masks say where a value was read."""

    starts: Ints  # frame boundaries, as offsets into ``data``
    ends: Ints
    data: npt.NDArray[np.uint8]  # the frames' bytes, back to back (the Arrow data buffer)
    present: Mask  # the frame is not null
    direction: pa.StringArray  # "request" / "response" as given; null where neither
    given_direction: pa.Array | None  # the caller's column, for error messages
    is_response: Mask
    size_ok: Mask  # the size prefix matches the frame's length
    api_key: Ints
    api_key_ok: Mask
    api_version: Ints
    api_version_ok: Mask
    correlation_id: Ints
    correlation_id_ok: Mask
    client_id: pa.StringArray
    entries: list[Entry | None]  # what decodes the body; None: unknown api/version, or no header
    header_version: Ints  # -1 where there is no entry
    body_start: Ints  # where the body starts; -1 where the Python fast path cannot tell
    sasl_mechanism: list[str | None]  # a raw SASL token's mechanism (no Kafka header); else None
    #: no direction column was given: every frame is read as a request, and only an exact reading
    #: counts (a response's bytes can pass a tolerant request decoder)
    direction_assumed: bool = False


def read_headers(
    frames: pa.Array,
    direction: pa.Array | None,
    request_api_key: pa.Array | None,
    request_api_version: pa.Array | None,
    lookup: Lookup,
    sasl_mechanism: pa.Array | None = None,
) -> Headers:
    n = len(frames)
    starts, ends, data = _bounds(frames)
    length = ends - starts
    present = _mask(frames.is_valid())
    names, is_response, direction_ok = _directions(direction, n)
    # raw SASL tokens have no header to read: they are neither requests nor responses here
    tokens = np.zeros(n, dtype=bool) if sasl_mechanism is None else _mask(sasl_mechanism.is_valid())
    direction_ok = direction_ok & ~tokens
    requests = present & direction_ok & ~is_response
    responses = present & direction_ok & is_response

    size = _gather(data, starts, length >= 4, ">i4")
    size_ok = (length >= 4) & (size == length - 4)

    # requests carry their api key and version; a response only its correlation id
    key_ok = requests & (length >= 8)
    api_key = _gather(data, starts + 4, key_ok, ">i2")
    api_version = _gather(data, starts + 6, key_ok, ">i2")
    version_ok = key_ok.copy()
    corr_ok = (requests & (length >= 12)) | (responses & (length >= 8))
    correlation_id = _gather(data, starts + np.where(is_response, 4, 8), corr_ok, ">i4")
    if request_api_key is not None and request_api_version is not None:
        # a response's api key and version are its request's, which the caller paired with it
        req_key, req_key_ok = _ints(request_api_key)
        req_version, req_version_ok = _ints(request_api_version)
        api_key = np.where(is_response, req_key, api_key)
        api_version = np.where(is_response, req_version, api_version)
        key_ok = np.where(is_response, direction_ok & req_key_ok, key_ok)
        version_ok = np.where(is_response, direction_ok & req_version_ok, version_ok)

    # Kafka's keys and versions are int16 >= 0; anything else (garbage, a bad join) looks nothing up
    in_range = (api_key >= 0) & (api_key <= 0x7FFF) & (api_version >= 0) & (api_version <= 0x7FFF)
    key_ok &= (api_key >= -0x8000) & (api_key <= 0x7FFF)
    version_ok &= (api_version >= -0x8000) & (api_version <= 0x7FFF)
    entries, header_version = _entries(lookup, api_key, api_version, key_ok & version_ok & in_range, is_response)

    # request header v1+: client_id (int16 length, -1 for null) right after the correlation id
    has_length = requests & (header_version >= 1) & (length >= 14)
    client_id_length = _gather(data, starts + 12, has_length, ">i2")
    client_end = 14 + np.maximum(client_id_length, 0)
    client_ok = has_length & (client_id_length >= -1) & (client_end <= length)
    client_id, replaced = _strings(data, starts + 14, np.where(client_ok, client_id_length, -1))
    # a client id that is not UTF-8 is read with replacement characters, as Kafka's Java side
    # reads it: those rows go to the per-frame decoder, which does so and says it in a warning
    client_ok &= ~replaced

    body_start = np.full(n, -1, dtype=np.int64)
    fast = size_ok & (header_version >= 0)
    body_start = np.where(fast & requests & (header_version == 0), starts + 12, body_start)
    body_start = np.where(fast & requests & (header_version == 1) & client_ok, starts + client_end, body_start)
    body_start = np.where(fast & responses & (header_version == 0), starts + 8, body_start)
    # flexible headers end with tagged fields: the fast path takes the common "none" (one 0 byte)
    # and leaves any real tags to the full per-frame decoder
    no_request_tags = _no_tags(data, starts + client_end, fast & requests & (header_version == 2) & client_ok, ends)
    body_start = np.where(no_request_tags, starts + client_end + 1, body_start)
    no_response_tags = _no_tags(data, starts + 8, fast & responses & (header_version == 1), ends)
    body_start = np.where(no_response_tags, starts + 9, body_start)

    return Headers(
        starts=starts,
        ends=ends,
        data=data,
        present=present,
        direction=names,
        given_direction=direction,
        is_response=is_response,
        size_ok=size_ok,
        api_key=api_key,
        api_key_ok=key_ok,
        api_version=api_version,
        api_version_ok=version_ok,
        correlation_id=correlation_id,
        correlation_id_ok=corr_ok,
        client_id=client_id,
        entries=entries,
        header_version=header_version,
        body_start=body_start,
        sasl_mechanism=[None] * n if sasl_mechanism is None else sasl_mechanism.to_pylist(),
        direction_assumed=direction is None,
    )


def _bounds(frames: pa.Array) -> tuple[Ints, Ints, npt.NDArray[np.uint8]]:
    """Start and end offset of each frame in the data buffer, and that buffer as bytes."""
    if pa.types.is_large_binary(frames.type):
        offset_type: type[np.integer] = np.int64
    elif pa.types.is_binary(frames.type):
        offset_type = np.int32
    else:
        raise TypeError(f"frames must be a binary Arrow array, not {frames.type}")
    n = len(frames)
    _, offsets_buffer, data_buffer = frames.buffers()
    if offsets_buffer is None:  # an empty array may come without buffers
        offsets = np.zeros(n + 1, dtype=np.int64)
    else:
        # the offsets buffer is shared by slices of the array: ``frames.offset`` is where ours begin
        offsets = np.frombuffer(offsets_buffer, dtype=offset_type)[frames.offset : frames.offset + n + 1]
        offsets = offsets.astype(np.int64)
    if data_buffer is None:
        data = np.zeros(0, dtype=np.uint8)
    else:
        data = np.frombuffer(data_buffer, dtype=np.uint8)
    # a null row may still have offsets; it is skipped through the validity masks
    return offsets[:-1], offsets[1:], data


def _gather(data: npt.NDArray[np.uint8], at: Ints, mask: Mask, dtype: str) -> Ints:
    """The big-endian integer of ``dtype`` at ``at`` for rows in ``mask``; 0 elsewhere."""
    out = np.zeros(len(at), dtype=np.int64)
    rows = np.flatnonzero(mask)
    if rows.size:
        width = np.dtype(dtype).itemsize
        # one (rows, width) block of bytes, reinterpreted as one big-endian integer per row
        block = data[at[rows, None] + np.arange(width)]
        out[rows] = block.view(dtype).ravel()
    return out


def _no_tags(data: npt.NDArray[np.uint8], at: Ints, mask: Mask, ends: Ints) -> Mask:
    """Rows in ``mask`` whose byte at ``at`` exists and is 0: an empty tagged-field section."""
    readable = mask & (at < ends)
    out = np.zeros(len(at), dtype=np.bool_)
    rows = np.flatnonzero(readable)
    out[rows] = data[at[rows]] == 0
    return out


def _strings(data: npt.NDArray[np.uint8], at: Ints, lengths: Ints) -> tuple[pa.StringArray, Mask]:
    """A string per row from ``lengths`` bytes at ``at`` (null where the length is negative), and
    the rows whose bytes were not UTF-8 (read with U+FFFD replacements).

    Built by gathering every row's bytes into one buffer (no Python loop), then letting Arrow
    check the UTF-8; only a batch that fails the check is looked at row by row.
    """
    n = len(at)
    valid = lengths >= 0
    sizes = np.where(valid, lengths, 0)
    offsets = np.zeros(n + 1, dtype=np.int32)
    np.cumsum(sizes, out=offsets[1:])
    # for output byte j of row i: source at[i] + (j - offsets[i])
    source = np.repeat(at - offsets[:-1], sizes) + np.arange(offsets[-1])
    chars = data[source]
    bitmap = np.packbits(valid, bitorder="little")  # Arrow validity: one bit per row, LSB first
    strings = pa.StringArray.from_buffers(n, pa.py_buffer(offsets), pa.py_buffer(chars), pa.py_buffer(bitmap))
    replaced = np.zeros(n, dtype=np.bool_)
    try:
        strings.validate(full=True)
    except pa.ArrowInvalid:
        texts = []
        for i, raw in enumerate(strings.cast(pa.binary()).to_pylist()):
            texts.append(_utf8_replacing(raw, replaced, i))
        strings = pa.array(texts, pa.string())
    return strings, replaced


def _utf8_replacing(raw: bytes | None, replaced: Mask, i: int) -> str | None:
    if raw is None:
        return None
    try:
        return raw.decode()
    except UnicodeDecodeError:
        replaced[i] = True
        return raw.decode("utf-8", "replace")


def _directions(direction: pa.Array | None, n: int) -> tuple[pa.StringArray, Mask, Mask]:
    """Each row's direction (null unless "request" or "response"); with no column, all requests."""
    if direction is None:
        return pa.repeat(pa.scalar(_REQUEST), n), np.zeros(n, dtype=np.bool_), np.ones(n, dtype=np.bool_)
    direction = direction.cast(pa.string())
    is_response = pc.fill_null(pc.equal(direction, _RESPONSE), False)
    known = pc.or_(pc.fill_null(pc.equal(direction, _REQUEST), False), is_response)
    names = pc.if_else(known, direction, pa.scalar(None, pa.string()))
    return names, _mask(is_response), _mask(known)


def _ints(column: pa.Array) -> tuple[Ints, Mask]:
    """An integer column as int64 values (0 for nulls) and its validity."""
    valid = _mask(column.is_valid())
    values = pc.fill_null(column, 0).to_numpy(zero_copy_only=False).astype(np.int64)
    return values, valid


def _mask(booleans: pa.Array) -> Mask:
    return np.asarray(booleans.to_numpy(zero_copy_only=False), dtype=np.bool_)


def _entries(
    lookup: Lookup,
    api_key: Ints,
    api_version: Ints,
    ok: Mask,
    is_response: Mask,
) -> tuple[list[Entry | None], Ints]:
    """Each row's Entry and header version (-1: none), looked up once per distinct (key, version, direction)."""
    combined = np.where(ok, (api_key << 17) | (api_version << 1) | is_response, -1)
    distinct, inverse = np.unique(combined, return_inverse=True)
    found: list[Entry | None] = []
    for code in distinct.tolist():
        if code < 0:
            found.append(None)
            continue
        key, version, response = code >> 17, (code >> 1) & 0xFFFF, code & 1
        found.append(lookup.entry(key, version, _RESPONSE if response else _REQUEST))
    header_versions = np.array([-1 if e is None else e.header_version for e in found], dtype=np.int64)
    return [found[i] for i in inverse.tolist()], header_versions[inverse.reshape(-1)]
