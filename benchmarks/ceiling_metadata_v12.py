"""A hand-written decoder of MetadataResponse v12: the CPython ceiling for the decode benchmark.

This is what a careful person would write by hand for exactly one message and one version,
with no generator in the loop: precompiled ``struct.Struct`` objects for each run of fixed-size
fields, a one-byte fast path for compact lengths (with a general varint fallback), a table of
``unpack_from`` functions for small int32 arrays, and local-variable aliases in the loops.

It builds objects of the same shape as kafka-epochs' generated classes, so that the benchmark
compares equal work: slotted objects with the same attribute names, ``list`` for arrays,
``str`` (or ``None``) for strings, ``uuid.UUID`` for uuids, ``bool`` for booleans, and
``_unknown_tags = None`` on every struct. Tagged-field sections are assumed empty, but checked:
a non-empty one raises :class:`CeilingError` rather than being skipped silently.

Safety is the same as the generated fast path's: array counts are bounded by the bytes left
(so a corrupt count cannot allocate a huge list), and reading past the end raises.
"""

from __future__ import annotations

import struct
from uuid import UUID, SafeUUID

__all__ = [
    "Broker",
    "CeilingError",
    "MetadataResponseV12",
    "Partition",
    "Topic",
    "decode",
]


class CeilingError(ValueError):
    """The bytes are not a MetadataResponse v12 this decoder handles."""


# Slots in the spec's field order, as in the generated classes.


class Broker:
    __slots__ = ("node_id", "host", "port", "rack", "_unknown_tags")  # noqa: RUF023
    node_id: int
    host: str
    port: int
    rack: str | None
    _unknown_tags: dict[int, bytes] | None


class Partition:
    __slots__ = (  # noqa: RUF023
        "error_code",
        "partition_index",
        "leader_id",
        "leader_epoch",
        "replica_nodes",
        "isr_nodes",
        "offline_replicas",
        "_unknown_tags",
    )
    error_code: int
    partition_index: int
    leader_id: int
    leader_epoch: int
    replica_nodes: list[int]
    isr_nodes: list[int]
    offline_replicas: list[int]
    _unknown_tags: dict[int, bytes] | None


class Topic:
    __slots__ = (  # noqa: RUF023
        "error_code",
        "name",
        "topic_id",
        "is_internal",
        "partitions",
        "topic_authorized_operations",
        "_unknown_tags",
    )
    error_code: int
    name: str | None
    topic_id: UUID
    is_internal: bool
    partitions: list[Partition]
    topic_authorized_operations: int
    _unknown_tags: dict[int, bytes] | None


class MetadataResponseV12:
    __slots__ = (  # noqa: RUF023
        "throttle_time_ms",
        "brokers",
        "cluster_id",
        "controller_id",
        "topics",
        "cluster_authorized_operations",
        "_unknown_tags",
    )
    throttle_time_ms: int
    brokers: list[Broker]
    cluster_id: str | None
    controller_id: int
    topics: list[Topic]
    cluster_authorized_operations: int
    _unknown_tags: dict[int, bytes] | None


_INT16 = struct.Struct(">h").unpack_from
_INT32 = struct.Struct(">i").unpack_from
_PARTITION_HEAD = struct.Struct(">hiii").unpack_from  # error_code, partition_index, leader_id, leader_epoch
_UUID_BOOL = struct.Struct(">16s?").unpack_from  # topic_id, is_internal

_SMALL_ARRAYS = 64
#: ``_INT32_ARRAY[n]`` unpacks ``n`` big-endian int32s.
_INT32_ARRAY = tuple(struct.Struct(f">{n}i").unpack_from for n in range(_SMALL_ARRAYS))

_new_uuid = object.__new__
_set = object.__setattr__
_SAFE_UNKNOWN = SafeUUID.unknown
_from_bytes = int.from_bytes


def _uuid(raw: bytes) -> UUID:
    # UUID(bytes=raw) re-validates its argument; this builds the same immutable object directly.
    u = _new_uuid(UUID)
    _set(u, "int", _from_bytes(raw, "big"))
    _set(u, "is_safe", _SAFE_UNKNOWN)
    return u


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    """An unsigned varint of up to five bytes (the slow path: values of 128 and more)."""
    value = 0
    shift = 0
    while True:
        b = data[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        if b < 0x80:
            return value, pos
        shift += 7
        if shift > 28:
            raise CeilingError("varint longer than five bytes")


def _int32_array(data: bytes, pos: int, n: int, end: int) -> list[int]:
    """The rare int32 array: null (refused: never null in this message) or of 64 and more items."""
    if n < 0:
        raise CeilingError("null int32 array")
    if 4 * n > end - pos:
        raise CeilingError("int32 array longer than the bytes left")
    return list(struct.unpack_from(f">{n}i", data, pos))


def _no_tags(data: bytes, pos: int) -> int:
    if data[pos] != 0:
        raise CeilingError(f"unexpected tagged fields at offset {pos}")
    return pos + 1


def decode(data: bytes) -> MetadataResponseV12:
    """Decode one MetadataResponse v12 body (no size prefix, no header) that fills ``data``."""
    try:
        return _decode(data)
    except (struct.error, IndexError, UnicodeDecodeError) as e:  # truncated or corrupt input
        raise CeilingError(f"malformed MetadataResponse v12: {e}") from e


def _decode(data: bytes) -> MetadataResponseV12:
    end = len(data)
    int16 = _INT16
    int32 = _INT32
    partition_head = _PARTITION_HEAD
    uuid_bool = _UUID_BOOL
    int32_array = _int32_array
    int32s = _INT32_ARRAY
    small = _SMALL_ARRAYS
    make_uuid = _uuid

    r = MetadataResponseV12()
    r._unknown_tags = None
    r.cluster_authorized_operations = -2147483648  # not in v12: the spec default
    (r.throttle_time_ms,) = int32(data, 0)
    pos = 4

    # brokers
    n = data[pos]
    if n < 0x80:
        pos += 1
    else:
        n, pos = _varint(data, pos)
    n -= 1
    if n < 0 or n > end - pos:
        raise CeilingError("bad broker count")
    brokers: list[Broker] = []
    for _ in range(n):
        b = Broker()
        b._unknown_tags = None
        (b.node_id,) = int32(data, pos)
        pos += 4
        k = data[pos]
        if k < 0x80:
            pos += 1
        else:
            k, pos = _varint(data, pos)
        k -= 1
        if k < 0:
            raise CeilingError("null broker host")
        b.host = data[pos : pos + k].decode()
        pos += k
        (b.port,) = int32(data, pos)
        pos += 4
        k = data[pos]
        if k < 0x80:
            pos += 1
        else:
            k, pos = _varint(data, pos)
        if k == 0:
            b.rack = None
        else:
            k -= 1
            b.rack = data[pos : pos + k].decode()
            pos += k
        if data[pos] != 0:
            raise CeilingError(f"unexpected tagged fields at offset {pos}")
        pos += 1
        brokers.append(b)
    r.brokers = brokers

    # cluster_id (nullable)
    k = data[pos]
    if k < 0x80:
        pos += 1
    else:
        k, pos = _varint(data, pos)
    if k == 0:
        r.cluster_id = None
    else:
        k -= 1
        r.cluster_id = data[pos : pos + k].decode()
        pos += k
    (r.controller_id,) = int32(data, pos)
    pos += 4

    # topics
    n = data[pos]
    if n < 0x80:
        pos += 1
    else:
        n, pos = _varint(data, pos)
    n -= 1
    if n < 0 or n > end - pos:
        raise CeilingError("bad topic count")
    topics: list[Topic] = []
    add_topic = topics.append
    for _ in range(n):
        t = Topic()
        t._unknown_tags = None
        (t.error_code,) = int16(data, pos)
        pos += 2
        k = data[pos]
        if k < 0x80:
            pos += 1
        else:
            k, pos = _varint(data, pos)
        if k == 0:
            t.name = None
        else:
            k -= 1
            t.name = data[pos : pos + k].decode()
            pos += k
        raw_id, t.is_internal = uuid_bool(data, pos)
        t.topic_id = make_uuid(raw_id)
        pos += 17

        m = data[pos]
        if m < 0x80:
            pos += 1
        else:
            m, pos = _varint(data, pos)
        m -= 1
        if m < 0 or m > end - pos:
            raise CeilingError("bad partition count")
        partitions: list[Partition] = []
        add_partition = partitions.append
        for _ in range(m):
            p = Partition()
            p._unknown_tags = None
            p.error_code, p.partition_index, p.leader_id, p.leader_epoch = partition_head(data, pos)
            pos += 14
            k = data[pos]
            if k < 0x80:
                pos += 1
            else:
                k, pos = _varint(data, pos)
            k -= 1
            if 0 <= k < small:
                p.replica_nodes = list(int32s[k](data, pos))
            else:
                p.replica_nodes = int32_array(data, pos, k, end)
            pos += 4 * k
            k = data[pos]
            if k < 0x80:
                pos += 1
            else:
                k, pos = _varint(data, pos)
            k -= 1
            if 0 <= k < small:
                p.isr_nodes = list(int32s[k](data, pos))
            else:
                p.isr_nodes = int32_array(data, pos, k, end)
            pos += 4 * k
            k = data[pos]
            if k < 0x80:
                pos += 1
            else:
                k, pos = _varint(data, pos)
            k -= 1
            if 0 <= k < small:
                p.offline_replicas = list(int32s[k](data, pos))
            else:
                p.offline_replicas = int32_array(data, pos, k, end)
            pos += 4 * k
            if data[pos] != 0:
                raise CeilingError(f"unexpected tagged fields at offset {pos}")
            pos += 1
            add_partition(p)
        t.partitions = partitions

        (t.topic_authorized_operations,) = int32(data, pos)
        pos += 4
        if data[pos] != 0:
            raise CeilingError(f"unexpected tagged fields at offset {pos}")
        pos += 1
        add_topic(t)
    r.topics = topics

    pos = _no_tags(data, pos)
    if pos != end:
        # Slices never fail, so a string cut short shows up here as a position past the end.
        raise CeilingError(f"decoded {pos} bytes of {end}")
    return r
