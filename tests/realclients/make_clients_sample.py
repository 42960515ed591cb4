"""Make kafka_epochs/samples/clients.pcap: real clients only, at the versions they pick themselves.

    .venv/bin/python tests/realclients/make_clients_sample.py [OUT]

kafka-python (flexible versions: Metadata v13, Fetch v12), aiokafka (non-flexible: Metadata v5,
Fetch v11) and confluent-kafka/librdkafka (Metadata v13, a Kafka 4.x version) produce and consume
against the loopback broker, which serves them with the bundled Apache catalogue
(``Protocol.apache()``, no spec files). The README's second example decodes it with no flags.
"""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))  # `realclients` as a package, as pytest sees it

from kafka_epochs import Protocol  # noqa: E402
from kafka_epochs.capture.synth import RecordedConnection, write_capture  # noqa: E402
from realclients.drivers import record_session  # noqa: E402

OUT = HERE.parent.parent / "kafka_epochs" / "samples" / "clients.pcap"
SESSIONS = (("kafka-python", "gzip"), ("aiokafka", "lz4"), ("confluent-kafka", "zstd"))


def main() -> int:
    out = Path(sys.argv[1]) if len(sys.argv) > 1 else OUT
    connections: list[RecordedConnection] = []
    offset = 0
    for client, codec in SESSIONS:
        recordings = record_session(Protocol.apache(), client, codec=codec, count=6)
        # one session after the other on the capture's clock, as if recorded in a row
        start = min(when for rec in recordings for when, _, _ in rec.chunks)
        shift = offset - start if offset else 0
        for rec in recordings:
            chunks = [(when + shift, side, data) for when, side, data in rec.chunks]
            connections.append(RecordedConnection(rec.client_addr, rec.broker_addr, chunks))
        offset = max(when for conn in connections for when, _, _ in conn.chunks) + 100_000_000
    out.parent.mkdir(parents=True, exist_ok=True)
    packets = write_capture(out, connections)
    print(f"wrote {out} ({packets} packets, {out.stat().st_size} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
