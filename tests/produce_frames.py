"""Produce v12/v13 requests in the KIP-359 layout and in Apache's, for tests that tell layouts apart."""

from __future__ import annotations

import uuid

from kafka_epochs import Protocol
from kafka_epochs.records import Record, encode_batch

APACHE, KIP = Protocol.apache(), Protocol.kip()
BATCH = encode_batch([Record(key=b"k", value=b"v")])


def kip_produce(epoch: int) -> bytes:
    cls = KIP.message("ProduceRequest")
    body = cls(
        acks=-1,
        timeout_ms=500,
        topic_data=[
            cls.TopicProduceData(
                name="orders",
                partition_data=[cls.PartitionProduceData(index=2, current_leader_epoch=epoch, records=BATCH)],
            )
        ],
    )
    return KIP.encode_request(body, 12, correlation_id=5, client_id="kip-producer")


def apache_produce(version: int = 12) -> bytes:
    cls = APACHE.message("ProduceRequest")
    topic = cls.TopicProduceData(partition_data=[cls.PartitionProduceData(index=2, records=BATCH)])
    if version >= 13:
        topic.topic_id = uuid.UUID(int=9)
    else:
        topic.name = "orders"
    body = cls(acks=-1, timeout_ms=500, topic_data=[topic])
    return APACHE.encode_request(body, version, correlation_id=6, client_id="java-4.0")
