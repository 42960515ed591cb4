"""Real clients' admin calls (CreateTopics, DescribeConfigs, DeleteTopics) against the loopback
broker, and their captures decoded whole with the default profile and no spec directory."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from kafka_epochs import Protocol
from kafka_epochs.traffic import api_name, decode_capture

from .broker import CREATE_TOPICS, DELETE_TOPICS, DESCRIBE_CONFIGS, TOPIC_CONFIGS, LoopbackBroker
from .test_capture_roundtrip import SPARK, spark_rows_without_errors, to_capture

TOPIC, TIMEOUT = "administered", 15.0


def admin_kafka_python(bootstrap: str) -> dict[str, str]:
    from kafka.admin import ConfigResource, ConfigResourceType, KafkaAdminClient, NewTopic

    admin = KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=int(TIMEOUT * 1000))
    try:
        admin.create_topics([NewTopic(TOPIC, num_partitions=4, replication_factor=1)])
        described = admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, TOPIC)])
        admin.delete_topics([TOPIC])
    finally:
        admin.close()
    # kafka-python 3 answers {resource type: {name: {config: {"value": ..., ...}}}}
    return {name: entry["value"] for name, entry in described["topic"][TOPIC].items()}


def admin_confluent(bootstrap: str) -> dict[str, str]:
    from confluent_kafka.admin import AdminClient, ConfigResource, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 0})
    for future in admin.create_topics([NewTopic(TOPIC, num_partitions=4, replication_factor=1)]).values():
        future.result(TIMEOUT)
    resource = ConfigResource("topic", TOPIC)
    described = admin.describe_configs([resource])[resource].result(TIMEOUT)
    configs = {name: entry.value for name, entry in described.items()}
    for future in admin.delete_topics([TOPIC], operation_timeout=5).values():
        future.result(TIMEOUT)
    return configs


ADMINS: dict[str, tuple[str, Callable[[str], dict[str, str]]]] = {
    "kafka-python": ("kafka", admin_kafka_python),
    "confluent-kafka": ("confluent_kafka", admin_confluent),
}


@pytest.mark.parametrize("client", list(ADMINS))
def test_admin_session_decodes_whole(client: str, tmp_path: Path) -> None:
    module, run = ADMINS[client]
    pytest.importorskip(module)
    with LoopbackBroker(Protocol.apache(), admin=True) as broker:
        configs = run(broker.bootstrap)
    assert broker.errors == []
    assert configs == TOPIC_CONFIGS
    created = broker.requests(CREATE_TOPICS)
    assert created and created[0].request.body.topics[0].num_partitions == 4
    assert broker.requests(DESCRIBE_CONFIGS) and broker.requests(DELETE_TOPICS)
    assert TOPIC not in broker.topics
    path = tmp_path / f"{client}-admin.pcap"
    to_capture(broker.recordings, path)
    assert spark_rows_without_errors(path) > 0 or not SPARK  # spark-decode reads every frame too
    exchanges = list(decode_capture(path, Protocol.auto()))
    assert all(x.ok for x in exchanges), [(api_name(x), x.problem) for x in exchanges if not x.ok]
    assert {"CreateTopics", "DescribeConfigs", "DeleteTopics"} <= {api_name(x) for x in exchanges}
