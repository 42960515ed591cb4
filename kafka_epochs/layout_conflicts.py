"""Which version numbers two generated packages lay out differently, told by their layout
digests (``_layouts.py``) and message tables (``_index.py``) without loading any message."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def conflicting_versions(
    first_digests: Mapping[str, tuple[str, ...]],
    first_index: Mapping[str, Any],
    second_digests: Mapping[str, tuple[str, ...]],
    second_index: Mapping[str, Any],
) -> frozenset[tuple[int, str, int]]:
    """(api key, kind, version) of every message version both packages define, with different
    wire layouts: a frame of such a version may be either's."""
    found: set[tuple[int, str, int]] = set()
    for name, digests in second_digests.items():
        ours = first_digests.get(name)
        row = second_index.get(name)
        if ours is None or row is None or row[0] is None:
            continue
        api_key, kind, low, _, _ = row
        first_low = first_index[name][2]
        for offset, digest in enumerate(digests):
            at = low + offset - first_low
            if 0 <= at < len(ours) and ours[at] != digest:
                found.add((api_key, kind, low + offset))
    return frozenset(found)
