"""Real transactional producers against the loopback broker: one committed and one aborted
transaction each (InitProducerId with a transactional id, FindCoordinator, AddPartitionsToTxn,
Produce, EndTxn), and their captures decoded whole with the default profile and no spec directory."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from kafka_epochs import Protocol
from kafka_epochs.records import decode_records
from kafka_epochs.traffic import api_name, decode_capture

from .broker import ADD_PARTITIONS_TO_TXN, END_TXN, INIT_PRODUCER_ID, LoopbackBroker
from .test_capture_roundtrip import SPARK, spark_rows_without_errors, to_capture

TOPIC, TXN_ID, TIMEOUT = "transacted", "kafka-epochs-txn", 15.0


def transact_kafka_python(bootstrap: str) -> None:
    from kafka import KafkaProducer

    producer = KafkaProducer(
        bootstrap_servers=bootstrap,
        transactional_id=TXN_ID,
        request_timeout_ms=int(TIMEOUT * 1000),
        max_block_ms=int(TIMEOUT * 1000),
    )
    try:
        producer.init_transactions()
        for commit in (True, False):
            producer.begin_transaction()
            producer.send(TOPIC, key=b"k", value=b"committed" if commit else b"aborted", partition=0)
            if commit:
                producer.commit_transaction()
            else:
                # sent first: a transaction that never added a partition ends without an EndTxn
                producer.flush(TIMEOUT)
                producer.abort_transaction()
    finally:
        producer.close(timeout=5)


def transact_confluent(bootstrap: str) -> None:
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": TXN_ID, "log_level": 0})
    producer.init_transactions(TIMEOUT)
    for commit in (True, False):
        producer.begin_transaction()
        producer.produce(TOPIC, key=b"k", value=b"committed" if commit else b"aborted", partition=0)
        if commit:
            producer.commit_transaction(TIMEOUT)
        else:
            producer.flush(TIMEOUT)  # so the aborted record reaches the broker first
            producer.abort_transaction(TIMEOUT)


PRODUCERS: dict[str, tuple[str, Callable[[str], None]]] = {
    "kafka-python": ("kafka", transact_kafka_python),
    "confluent-kafka": ("confluent_kafka", transact_confluent),
}


@pytest.mark.parametrize("client", list(PRODUCERS))
def test_transactional_session_decodes_whole(client: str, tmp_path: Path) -> None:
    module, run = PRODUCERS[client]
    pytest.importorskip(module)
    with LoopbackBroker(Protocol.apache(), transactions=True) as broker:
        broker.create_topic(TOPIC)
        run(broker.bootstrap)
    assert broker.errors == []
    init = broker.requests(INIT_PRODUCER_ID)
    assert init and init[0].request.body.transactional_id == TXN_ID
    producer_id = init[0].response.producer_id
    assert broker.requests(ADD_PARTITIONS_TO_TXN) and broker.requests(END_TXN)
    assert broker.ended_transactions == [(TXN_ID, producer_id, True), (TXN_ID, producer_id, False)]
    stored = [b for raw in broker.topics[TOPIC].partitions[0].batches for b in decode_records(raw)]
    assert [r.value for b in stored for r in b.records] == [b"committed", b"aborted"]
    assert all(b.is_transactional and b.producer_id == producer_id for b in stored)
    path = tmp_path / f"{client}-txn.pcap"
    to_capture(broker.recordings, path)
    assert spark_rows_without_errors(path) > 0 or not SPARK  # spark-decode reads every frame too
    exchanges = list(decode_capture(path, Protocol.auto()))
    assert all(x.ok for x in exchanges), [(api_name(x), x.problem) for x in exchanges if not x.ok]
    assert {"InitProducerId", "AddPartitionsToTxn", "EndTxn", "Produce"} <= {api_name(x) for x in exchanges}
