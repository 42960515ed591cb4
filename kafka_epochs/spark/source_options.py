"""The ``kafka-capture`` source's options and read partitions, shared by its batch and stream readers."""

from __future__ import annotations

import json

from pyspark.sql.datasource import InputPartition

from kafka_epochs.capture.network.tcp import PORTS
from kafka_epochs.protocol_refs import ProtocolRef, protocol_ref

__all__ = ["FORMAT", "CapturePartition", "option_ints", "option_paths", "option_ports", "option_specs"]

#: The name to give ``spark.read.format``.
FORMAT = "kafka-capture"


def option_paths(options: dict[str, str]) -> list[str]:
    """``load(path)`` arrives as option ``path``; ``load([a, b])`` as ``paths``, a JSON list."""
    paths: list[str] = []
    if options.get("paths"):
        paths.extend(json.loads(options["paths"]))
    if options.get("path"):
        paths.append(options["path"])
    if not paths:
        raise ValueError(f"{FORMAT}: give the capture files, e.g. spark.read.format({FORMAT!r}).load(path)")
    return paths


def option_ints(options: dict[str, str], name: str, shown: str | None = None) -> list[int] | None:
    """Option ``name`` (Spark gives option names in lower case) as whole numbers, separated by
    commas or spaces; ``shown`` is how the user spelt it, for the error."""
    text = options.get(name)
    if not text:
        return None
    try:
        return [int(part) for part in text.replace(",", " ").split()]
    except ValueError:
        raise ValueError(f"{FORMAT}: {shown or name} takes whole numbers, not {text!r}") from None


def option_ports(options: dict[str, str]) -> list[int] | None:
    """Option ``ports``: TCP ports (a number outside 1 to 65535 is a typo that would follow nothing)."""
    ports = option_ints(options, "ports")
    for port in ports or ():
        if port not in PORTS:
            raise ValueError(f"{FORMAT}: ports takes TCP ports (1 to 65535), not {port}")
    return ports


def option_specs(options: dict[str, str]) -> ProtocolRef:
    """``protocol`` (or its older name ``specs``): profile names ("apache", "kip", "auto") or spec
    directories, a JSON list or one value; absent means the default profile, ``auto``."""
    text = options.get("protocol") or options.get("specs")
    if not text:
        return None
    return protocol_ref(json.loads(text) if text.startswith("[") else [text])


class CapturePartition(InputPartition):
    """One task's share: a file, and which of its flow buckets."""

    def __init__(self, path: str, bucket: int, buckets: int) -> None:
        super().__init__((path, bucket, buckets))
        self.path = path
        self.bucket = bucket
        self.buckets = buckets
