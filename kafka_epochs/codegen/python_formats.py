"""What both halves of the Python backend share: struct formats, their sizes, runs of fixed fields."""

from __future__ import annotations

from kafka_epochs.spec.model import FieldSpec

#: A compact string length (n + 1) above this is longer than Kafka's 32767-byte string limit.
COMPACT_STRING_LIMIT = "0x8000"


FIXED_SIZES = {"?": 1, "b": 1, "B": 1, "h": 2, "H": 2, "i": 4, "I": 4, "q": 8, "d": 8, "16s": 16}


FORMAT_NAMES = {"?": "o", "16s": "u"}


def fmt_name(fmt: str) -> str:
    return "".join(FORMAT_NAMES.get(c, c) for c in split_fmt(fmt))


def split_fmt(fmt: str) -> list[str]:
    out: list[str] = []
    i = 0
    while i < len(fmt):
        if fmt.startswith("16s", i):
            out.append("16s")
            i += 3
        else:
            out.append(fmt[i])
            i += 1
    return out


def fixed_runs(fields: list[FieldSpec]) -> list[list[FieldSpec]]:
    """Group consecutive fixed-width fields so each group is one ``struct`` call."""
    groups: list[list[FieldSpec]] = []
    for f in fields:
        if f.type.is_fixed and groups and groups[-1][0].type.is_fixed:
            groups[-1].append(f)
        else:
            groups.append([f])
    return groups
