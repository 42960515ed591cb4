"""Which cluster a broker connection belongs to (pure Python: kafka_epochs.spark.clusters)."""

from __future__ import annotations

import pytest

from kafka_epochs.spark.clusters import ClusterInfo, assign_clusters

A, B = "/caps/a.pcap", "/caps/b.pcap"
LOOP = "127.0.0.1:9092"


def test_two_captures_of_one_loopback_endpoint_stay_apart_without_ids() -> None:
    names = assign_clusters([(A, LOOP), (B, LOOP)], [], [])
    assert names == {(A, LOOP): f"a.pcap {LOOP}", (B, LOOP): f"b.pcap {LOOP}"}
    # the broker key takes the endpoint at its word: one broker, one cluster
    assert set(assign_clusters([(A, LOOP), (B, LOOP)], [], [], "broker").values()) == {f"brokers {LOOP}"}


def test_cluster_ids_name_clusters_and_join_captures() -> None:
    infos = [
        ClusterInfo(A, LOOP, "id-1", (LOOP,)),
        ClusterInfo(B, LOOP, "id-2", (LOOP,)),
        ClusterInfo(B, "10.0.0.9:9092", "id-1", ("10.0.0.9:9092",)),
    ]
    brokers = [(A, LOOP), (B, LOOP), (B, "10.0.0.9:9092")]
    names = assign_clusters(brokers, infos, [])
    assert names == {(A, LOOP): "cluster id-1", (B, LOOP): "cluster id-2", (B, "10.0.0.9:9092"): "cluster id-1"}
    assert assign_clusters(brokers, infos, [], "cluster-id") == names
    assert set(assign_clusters(brokers, infos, [], "capture").values()) == {"a.pcap", "b.pcap"}


def test_metadata_lists_and_topic_ids_link_brokers() -> None:
    b1, b2, b3 = "10.0.0.1:9092", "10.0.0.2:9092", "10.0.0.3:9092"
    infos = [ClusterInfo(A, b1, None, (b1, b2))]  # b1 answered Metadata listing b2
    names = assign_clusters([(A, b1), (A, b2), (A, b3)], infos, [])
    assert names[(A, b1)] == names[(A, b2)] == f"a.pcap {b1}" and names[(A, b3)] == f"a.pcap {b3}"
    # b3 was seen with a topic id b2 also carried: the same cluster (topic ids are random uuids)
    linked = assign_clusters([(A, b1), (A, b2), (A, b3)], infos, [(A, b2, "t-id"), (A, b3, "t-id")])
    assert len(set(linked.values())) == 1
    # a listed member's cluster id names the whole component
    named = assign_clusters([(A, b1), (A, b2)], [ClusterInfo(A, b1, "x", (b1, b2))], [])
    assert set(named.values()) == {"cluster x"}


def test_brokers_never_covered_by_an_id_are_grouped_per_capture_under_cluster_id() -> None:
    names = assign_clusters([(A, "h:1"), (A, "h:2")], [], [], "cluster-id")
    assert set(names.values()) == {"a.pcap (no cluster id)"}


def test_a_table_without_captures_or_brokers_is_one_cluster() -> None:
    assert assign_clusters([(None, None)], [], []) == {(None, None): "(no capture) ?"}


def test_unknown_keys_are_refused() -> None:
    with pytest.raises(ValueError, match="cluster key must be one of"):
        assign_clusters([], [], [], "topic")
