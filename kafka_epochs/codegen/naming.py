"""Python names for spec names: snake_case attributes that never collide with keywords or methods."""

from __future__ import annotations

import keyword
import re

_BOUNDARY = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")

#: Attribute names the generated classes use themselves.
RESERVED = frozenset(
    {
        "encode",
        "decode",
        "read",
        "write",
        "to_dict",
        "from_dict",
        "API_KEY",
        "MESSAGE_TYPE",
        "VALID_VERSIONS",
        "FLEXIBLE_VERSIONS",
        "DEPRECATED_VERSIONS",
        "LATEST_VERSION_UNSTABLE",
    }
)


def snake_case(name: str) -> str:
    """``ThrottleTimeMs`` -> ``throttle_time_ms``, ``isKRaftController`` -> ``is_k_raft_controller``."""
    return _BOUNDARY.sub("_", name).lower()


def attribute_name(name: str) -> str:
    """The attribute a field gets: snake_case, with ``_`` appended if it would shadow something."""
    attr = snake_case(name)
    if keyword.iskeyword(attr) or keyword.issoftkeyword(attr) or attr in RESERVED:
        attr += "_"
    return attr
