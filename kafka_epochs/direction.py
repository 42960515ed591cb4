"""Which way bytes travel on a Kafka connection: the one vocabulary for it.

A connection has a client and a broker; requests go from the client, responses from the broker.
Captures, framing and the Spark columns all name a direction with :class:`Direction`; the words
other layers print are its properties (``sender`` "client"/"broker", ``frame_kind``
"request"/"response", the value of the Spark ``direction`` column).
"""

from __future__ import annotations

from enum import StrEnum


class Direction(StrEnum):
    CLIENT_TO_BROKER = "client_to_broker"
    BROKER_TO_CLIENT = "broker_to_client"

    @property
    def reverse(self) -> Direction:
        if self is Direction.CLIENT_TO_BROKER:
            return Direction.BROKER_TO_CLIENT
        return Direction.CLIENT_TO_BROKER

    @property
    def sender(self) -> str:
        """ "client" or "broker": who writes the bytes."""
        return "client" if self is Direction.CLIENT_TO_BROKER else "broker"

    @property
    def frame_kind(self) -> str:
        """ "request" or "response": what its frames are (the Spark ``direction`` column's value)."""
        return "request" if self is Direction.CLIENT_TO_BROKER else "response"

    @classmethod
    def of(cls, name: str | Direction) -> Direction:
        """A direction from any of its names: the enum, its value, the sender or the frame kind."""
        if isinstance(name, Direction):
            return name
        found = _BY_NAME.get(name)
        if found is None:
            raise ValueError(f"not a direction: {name!r} (client, broker, request, response or a Direction)")
        return found


_BY_NAME = {
    **{d.value: d for d in Direction},
    **{d.sender: d for d in Direction},
    **{d.frame_kind: d for d in Direction},
}
