"""The errors the capture reader raises or reports, all under :class:`KafkaEpochsError`."""

from __future__ import annotations

from kafka_epochs.errors import DecodeError, KafkaEpochsError


class CaptureError(KafkaEpochsError):
    """Base class of the capture module's own errors."""


class CaptureFormatError(CaptureError, DecodeError):
    """A pcap or pcapng file that breaks its format.

    ``offset`` is a byte position in the (decompressed) file and ``path`` names the structure,
    e.g. ``pcapng.enhanced_packet.interface_id``. Raised when the file is not a capture at all;
    reported as a :class:`~kafka_epochs.capture.records.BadRecord` when one record is broken.
    """


class UnsupportedPacket(CaptureError):
    """A well-formed packet this reader does not follow: an IP fragment, an unknown link type.

    Such packets are reported (their bytes may be part of a Kafka stream, whose reassembly will then
    show a gap), unlike packets that are merely not TCP, which are only counted.
    """

    def __init__(self, reason: str) -> None:
        self.reason = reason
        super().__init__(reason)
