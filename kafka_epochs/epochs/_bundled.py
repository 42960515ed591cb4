"""The generated message classes the rules answer with, fetched on first use.

Responses are built from ``Protocol.bundled()`` so that they are the real generated objects
that encode to the wire. Looking the classes up lazily keeps ``import kafka_epochs.epochs``
from loading the protocol (and keeps ``import kafka_epochs`` cheap, as design.md asks).
"""

from __future__ import annotations

from typing import Any


def message_class(name: str) -> Any:
    """A bundled message class by spec name, e.g. ``"StopReplicaResponse"``.

    Typed ``Any`` on purpose: the generated classes carry their fields in ``__slots__`` that
    mypy cannot see, and every caller here reads and writes those fields.
    """
    from kafka_epochs.protocol import Protocol

    return Protocol.bundled().message(name)
