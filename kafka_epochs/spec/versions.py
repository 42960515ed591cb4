"""Version ranges as the spec format writes them: ``"3"``, ``"1-4"``, ``"2+"`` and ``"none"``."""

from __future__ import annotations

import re
from dataclasses import dataclass

#: The highest version a range can name; ``"N+"`` is open up to here (Kafka uses Short.MAX_VALUE).
MAX_VERSION = 0x7FFF

_RANGE = re.compile(r"(\d+)(?:(\+)|-(\d+))?")


@dataclass(frozen=True, slots=True)
class Versions:
    """An inclusive range ``low..high`` of versions; empty when ``low > high``."""

    low: int
    high: int

    @classmethod
    def parse(cls, text: str) -> Versions:
        """Parse the spec's notation; raises ``ValueError`` with the offending text."""
        text = text.strip()
        if text == "none":
            return NO_VERSIONS
        m = _RANGE.fullmatch(text)
        if m is None:
            raise ValueError(f"invalid version range {text!r} (expected N, A-B, N+ or none)")
        low = int(m.group(1))
        if m.group(2):
            high = MAX_VERSION
        elif m.group(3) is not None:
            high = int(m.group(3))
        else:
            high = low
        if low > MAX_VERSION or high > MAX_VERSION:
            raise ValueError(f"version range {text!r} goes past {MAX_VERSION}")
        if low > high:
            raise ValueError(f"version range {text!r} is backwards")
        return cls(low, high)

    @property
    def empty(self) -> bool:
        return self.low > self.high

    @property
    def open_ended(self) -> bool:
        return not self.empty and self.high == MAX_VERSION

    def __contains__(self, version: object) -> bool:
        return isinstance(version, int) and self.low <= version <= self.high

    def intersect(self, other: Versions) -> Versions:
        low, high = max(self.low, other.low), min(self.high, other.high)
        return Versions(low, high) if low <= high else NO_VERSIONS

    def covers(self, other: Versions) -> bool:
        """True when every version of ``other`` is in this range (an empty range is covered by all)."""
        return other.empty or (self.low <= other.low and other.high <= self.high)

    def __iter__(self):  # type: ignore[no-untyped-def]
        return iter(range(self.low, self.high + 1))

    def __str__(self) -> str:
        if self.empty:
            return "none"
        if self.high == MAX_VERSION:
            return f"{self.low}+"
        if self.low == self.high:
            return str(self.low)
        return f"{self.low}-{self.high}"


NO_VERSIONS = Versions(1, 0)
ALL_VERSIONS = Versions(0, MAX_VERSION)
