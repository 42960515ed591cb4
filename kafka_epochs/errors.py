"""The exceptions kafka-epochs raises, split by who broke the rules (one root: KafkaEpochsError)."""

from __future__ import annotations


class KafkaEpochsError(Exception):
    """Base class of every error this library raises on purpose."""


class DecodeError(KafkaEpochsError, ValueError):
    """Bytes that are not a valid encoding: the peer (or the capture) broke the protocol.

    ``offset`` is the byte position of the failing read relative to the start of the buffer
    that was handed in, and ``path`` names the field, e.g. ``topics[3].partitions[0].leader_epoch``.
    """

    def __init__(self, reason: str, offset: int = -1, path: str = "", message: str = "") -> None:
        self.reason = reason
        self.offset = offset
        self.path = path
        self.message = message
        where = ".".join(p for p in (message, path) if p)
        text = reason
        if where:
            text += f" in {where}"
        if offset >= 0:
            text += f" at offset {offset}"
        super().__init__(text)


class EncodeError(KafkaEpochsError, ValueError):
    """A value that cannot be written at the requested version: the caller broke the rules."""


class UnsupportedVersionError(KafkaEpochsError, ValueError):
    """A message version that the message's spec does not define."""
