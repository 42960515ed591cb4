"""Checks for the encoders' values: ints that must fit a field, and byte strings.

Each check names the field, so a bad value gives an EncodeError saying which one and why
rather than a ``struct.error`` from deep inside the encoder.
"""

from __future__ import annotations

from kafka_epochs.errors import EncodeError

_BYTES_LIKE = (bytes, bytearray, memoryview)


def check_int(value: object, bits: int, path: str) -> int:
    """``value`` if it is an int that fits in a signed ``bits``-bit field."""
    if not isinstance(value, int) or isinstance(value, bool):
        raise EncodeError(f"{path}: expected an int, got {type(value).__name__}")
    limit = 1 << (bits - 1)
    if not -limit <= value < limit:
        raise EncodeError(f"{path}: {value} does not fit in int{bits}")
    return int(value)  # an IntEnum, say, as a plain int


def check_bytes(value: object, path: str) -> bytes | None:
    """``value`` as bytes, or None; anything else (a str, say) is an EncodeError."""
    if value is None:
        return None
    if not isinstance(value, _BYTES_LIKE):
        raise EncodeError(f"{path}: expected bytes or None, got {type(value).__name__}")
    return bytes(value)
