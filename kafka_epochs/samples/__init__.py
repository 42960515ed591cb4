"""Captures shipped with the package, to try the commands on (and what the docs quote).

``SAMPLE_CAPTURE`` and ``CLIENTS_CAPTURE`` are :class:`pathlib.Path` objects, made when first
asked for (importing pathlib costs about 2 ms, and every command's start imports this module for
its help text, which takes the paths as text: ``SAMPLE_CAPTURE_FILE``, ``CLIENTS_CAPTURE_FILE``).
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pathlib import Path

_HERE = os.path.dirname(os.path.realpath(__file__))

#: A made-up story of epochs: a stale Produce, a fenced StopReplica, their answers.
SAMPLE_CAPTURE_FILE = os.path.join(_HERE, "sample.pcap")
#: Real clients' traffic: kafka-python, aiokafka and librdkafka producing and consuming.
CLIENTS_CAPTURE_FILE = os.path.join(_HERE, "clients.pcap")

_FILES = {"SAMPLE_CAPTURE": SAMPLE_CAPTURE_FILE, "CLIENTS_CAPTURE": CLIENTS_CAPTURE_FILE}


def __getattr__(name: str) -> Path:
    text = _FILES.get(name)
    if text is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from pathlib import Path

    path = Path(text)
    globals()[name] = path  # (asked once)
    return path
