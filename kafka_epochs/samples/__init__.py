"""Captures shipped with the package, to try the commands on (and what the docs quote)."""

from __future__ import annotations

from pathlib import Path

_HERE = Path(__file__).resolve().parent

#: A made-up story of epochs: a stale Produce, a fenced StopReplica, their answers.
SAMPLE_CAPTURE = _HERE / "sample.pcap"
#: Real clients' traffic: kafka-python, aiokafka and librdkafka producing and consuming.
CLIENTS_CAPTURE = _HERE / "clients.pcap"
