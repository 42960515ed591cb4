"""kafka-epochs: a Kafka wire-protocol codec generated from Kafka's JSON message specs.

Import cost is kept small: the protocol and message modules load on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kafka_epochs.errors import DecodeError, EncodeError, KafkaEpochsError, UnsupportedVersionError

if TYPE_CHECKING:
    from kafka_epochs.protocol import Decoded, Protocol

__all__ = ["DecodeError", "Decoded", "EncodeError", "KafkaEpochsError", "Protocol", "UnsupportedVersionError"]
__version__ = "0.1.0"


def __getattr__(name: str) -> Any:
    if name in ("Protocol", "Decoded"):
        from kafka_epochs import protocol

        return getattr(protocol, name)
    raise AttributeError(f"module 'kafka_epochs' has no attribute {name!r}")
