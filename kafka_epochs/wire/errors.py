"""The wire runtime's view of the project's exceptions (defined in :mod:`kafka_epochs.errors`).

Kept so that the runtime and generated code name their errors from inside ``wire``; everything
else imports them from :mod:`kafka_epochs.errors`.
"""

from __future__ import annotations

from kafka_epochs.errors import DecodeError, EncodeError, KafkaEpochsError, UnsupportedVersionError

__all__ = ["DecodeError", "EncodeError", "KafkaEpochsError", "UnsupportedVersionError"]
