"""Real clients over SASL_PLAINTEXT/PLAIN against the loopback broker, and their captures decoded.

Without SaslAuthenticate advertised, a client must use SaslHandshake v0, after which its PLAIN
token crosses the wire raw (no Kafka header) and the broker answers with an empty raw frame;
with SaslAuthenticate advertised, the token travels inside a Kafka request. Either way the
capture must decode whole with the default profile, and the password must not be printed.
"""

from __future__ import annotations

import io
import json
from contextlib import redirect_stdout
from pathlib import Path
from typing import Any

import pytest

from kafka_epochs import Protocol
from kafka_epochs.cli import main
from kafka_epochs.traffic import Kind, decode_capture

from .broker import SASL_AUTHENTICATE, SASL_HANDSHAKE, LoopbackBroker
from .test_capture_roundtrip import SPARK, spark_rows_without_errors, to_capture

USER, PASSWORD = "alice", "pw-not-to-print"
TIMEOUT = 15.0


def produce_kafka_python(bootstrap: str, password: str, timeout: float = TIMEOUT) -> None:
    from kafka import KafkaProducer

    producer = KafkaProducer(
        bootstrap_servers=bootstrap,
        client_id="kafka-epochs-sasl",
        security_protocol="SASL_PLAINTEXT",
        sasl_mechanism="PLAIN",
        sasl_plain_username=USER,
        sasl_plain_password=password,
        acks=1,
        request_timeout_ms=int(timeout * 1000),
        max_block_ms=int(timeout * 1000),
        bootstrap_timeout_ms=int(timeout * 1000),
    )
    try:
        producer.send("secured", key=b"k", value=b"v", partition=0).get(timeout)
    finally:
        producer.close(timeout=5)


def produce_confluent(bootstrap: str, password: str) -> None:
    from confluent_kafka import KafkaException, Producer

    errors: list[str] = []
    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "client.id": "kafka-epochs-sasl",
            "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": "PLAIN",
            "sasl.username": USER,
            "sasl.password": password,
            "acks": 1,
            "message.timeout.ms": int(TIMEOUT * 1000),
            "log_level": 0,
            "error_cb": lambda e: errors.append(str(e)),
        }
    )
    producer.produce(
        "secured", key=b"k", value=b"v", partition=0, on_delivery=lambda e, m: errors.append(str(e)) if e else None
    )
    if producer.flush(TIMEOUT) or errors:
        raise KafkaException(f"not delivered: {errors}")


CLIENTS = {"kafka-python": ("kafka", produce_kafka_python), "confluent-kafka": ("confluent_kafka", produce_confluent)}


def session(client: str, tmp_path: Path, *, authenticate: bool) -> tuple[LoopbackBroker, Path]:
    module, produce = CLIENTS[client]
    pytest.importorskip(module)
    with LoopbackBroker(Protocol.apache(), sasl_users={USER: PASSWORD}, sasl_authenticate=authenticate) as broker:
        broker.create_topic("secured")
        produce(broker.bootstrap, PASSWORD)
    path = tmp_path / f"{client}-sasl.pcap"
    to_capture(broker.recordings, path)
    assert spark_rows_without_errors(path) > 0 or not SPARK  # spark-decode reads every frame too
    return broker, path


def decoded_rows(path: Path) -> tuple[int, list[dict[str, Any]], str]:
    out = io.StringIO()
    with redirect_stdout(out):
        code = main(["decode", str(path), "--quiet"])
    text = out.getvalue()
    return code, [json.loads(line) for line in text.splitlines()], text


@pytest.mark.parametrize("client", list(CLIENTS))
def test_raw_tokens_after_a_v0_handshake(client: str, tmp_path: Path) -> None:
    broker, path = session(client, tmp_path, authenticate=False)
    assert broker.errors == []
    handshakes = broker.requests(SASL_HANDSHAKE)
    assert handshakes and {x.api_version for x in handshakes} == {0}
    assert all(x.response.error_code == 0 for x in handshakes)
    exchanges = list(decode_capture(path, Protocol.auto()))
    assert all(x.ok for x in exchanges), [x.problem for x in exchanges if not x.ok]
    tokens = [x for x in exchanges if x.kind is Kind.SASL_TOKEN]
    assert len(tokens) == len(handshakes)  # one PLAIN round trip per connection
    # authzid (kafka-python sends the user again, librdkafka nothing), NUL, user, NUL, password
    assert all(x.tokens[0].frame[4:].endswith(f"\0{USER}\0{PASSWORD}".encode()) for x in tokens)
    code, rows, text = decoded_rows(path)
    assert code == 0 and PASSWORD not in text
    assert {r["api"] for r in rows} >= {"SaslHandshake", "SaslTokens", "Produce", "Metadata"}


@pytest.mark.parametrize("client", list(CLIENTS))
def test_tokens_inside_sasl_authenticate(client: str, tmp_path: Path) -> None:
    broker, path = session(client, tmp_path, authenticate=True)
    assert broker.errors == []
    assert broker.requests(SASL_AUTHENTICATE)
    exchanges = list(decode_capture(path, Protocol.auto()))
    assert all(x.ok for x in exchanges) and not any(x.kind is Kind.SASL_TOKEN for x in exchanges)
    code, _, text = decoded_rows(path)
    assert code == 0 and PASSWORD not in text


def test_a_wrong_password_is_refused() -> None:
    pytest.importorskip("kafka")
    with LoopbackBroker(Protocol.apache(), sasl_users={USER: PASSWORD}) as broker:
        broker.create_topic("secured")
        with pytest.raises(Exception):  # noqa: B017  (the client's own error type, whichever it raises)
            produce_kafka_python(broker.bootstrap, "wrong", timeout=2.0)  # it retries until then
    assert any("authentication failed" in e for e in broker.errors)
