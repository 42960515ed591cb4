"""Which cluster a broker connection belongs to (pure Python: kafka_epochs.audit.clusters)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kafka_epochs.audit.clusters import CLUSTER_KEYS, ClusterAssigner, ClusterInfo, assign_clusters

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


# -- the assignment against a plain graph search, whole and a little at a time -------------------

CAPTURES = ("/c/one.pcap", "/c/two.pcap", "/c/three.pcap")
ENDPOINTS = ("10.0.0.1:9092", "10.0.0.2:9092", "10.0.0.3:9092")


def reachable_names(
    brokers: list[tuple[str, str]], infos: list[ClusterInfo], topic_ids: list[tuple[str, str, str]], key: str
) -> dict[tuple[str, str], str]:
    """The module docstring's rules read directly: nodes joined by edges, components by search."""
    if key == "capture":
        return {pair: pair[0].rsplit("/", 1)[-1] for pair in brokers}
    node = (lambda c, b: (None, b)) if key == "broker" else (lambda c, b: (c, b))
    edges: dict[Any, set[Any]] = {}

    def link(a: Any, b: Any) -> None:
        edges.setdefault(a, set()).add(b)
        edges.setdefault(b, set()).add(a)

    ids: dict[Any, set[str]] = {}
    for info in infos:
        answering = node(info.capture, info.broker)
        for member in info.members:
            link(answering, node(info.capture, member))
        if info.cluster_id and key != "broker":
            ids.setdefault(answering, set()).add(info.cluster_id)
    if key in ("auto", "cluster-id"):
        for a, a_ids in ids.items():
            for b, b_ids in ids.items():
                if a_ids & b_ids:
                    link(a, b)
    if key == "auto":
        for capture, broker, topic_id in topic_ids:
            for other_capture, other_broker, other_id in topic_ids:
                if topic_id == other_id:
                    link(node(capture, broker), node(other_capture, other_broker))
    component: dict[Any, int] = {}
    for start in [node(*pair) for pair in brokers] + list(edges):
        if start in component:
            continue
        todo = [start]
        while todo:
            here = todo.pop()
            if here not in component:
                component[here] = id(start)
                todo += edges.get(here, ())
    groups: dict[int, list[tuple[str, str]]] = {}
    for pair in brokers:
        groups.setdefault(component[node(*pair)], []).append(pair)
    names = {}
    for label, group in groups.items():
        known = sorted(set().union(*(i for n, i in ids.items() if component.get(n) == label)))
        for pair in group:
            if known:
                names[pair] = "cluster " + "+".join(known)
            elif key == "cluster-id":
                names[pair] = f"{pair[0].rsplit('/', 1)[-1]} (no cluster id)"
            elif key == "broker":
                names[pair] = "brokers " + min(p[1] for p in group)
            else:
                names[pair] = f"{pair[0].rsplit('/', 1)[-1]} {min(p[1] for p in group)}"
    return names


pairs = st.tuples(st.sampled_from(CAPTURES), st.sampled_from(ENDPOINTS))
infos = st.builds(
    ClusterInfo,
    st.sampled_from(CAPTURES),
    st.sampled_from(ENDPOINTS),
    st.sampled_from(("id-1", "id-2", None)),
    st.lists(st.sampled_from(ENDPOINTS), max_size=2).map(tuple),
)
topic_ids = st.tuples(st.sampled_from(CAPTURES), st.sampled_from(ENDPOINTS), st.sampled_from(("t-1", "t-2", "t-3")))


@settings(max_examples=300, deadline=None)
@given(
    brokers=st.lists(pairs, min_size=1, max_size=8, unique=True),
    given_infos=st.lists(infos, max_size=4),
    given_topics=st.lists(topic_ids, max_size=5),
    key=st.sampled_from(CLUSTER_KEYS),
    cut=st.integers(0, 8),
)
def test_assignment_whole_and_in_parts_agrees_with_a_graph_search(
    brokers: list[tuple[str, str]],
    given_infos: list[ClusterInfo],
    given_topics: list[tuple[str, str, str]],
    key: str,
    cut: int,
) -> None:
    # every broker an answer or a topic id speaks of is a connection of the capture
    known = set(brokers)
    known |= {(i.capture, m) for i in given_infos for m in (i.broker, *i.members)}
    known |= {(c, b) for c, b, _ in given_topics}
    brokers = sorted(known)
    expected = reachable_names(brokers, given_infos, given_topics, key)
    assert assign_clusters(brokers, given_infos, given_topics, key) == expected
    parts = ClusterAssigner(key)
    parts.add(brokers[:cut], given_infos[: cut // 2], given_topics[:cut])
    parts.add(brokers[cut:], given_infos[cut // 2 :], given_topics[cut:])
    assert parts.names() == expected


def test_a_cluster_id_joins_what_another_id_named() -> None:
    # one broker reported two ids (a migrated cluster); another capture's broker only the first
    infos = [ClusterInfo(A, LOOP, "id-1", ()), ClusterInfo(A, LOOP, "id-2", ()), ClusterInfo(B, LOOP, "id-1", ())]
    whole = assign_clusters([(A, LOOP), (B, LOOP)], infos, [])
    assert whole == {(A, LOOP): "cluster id-1+id-2", (B, LOOP): "cluster id-1+id-2"}
    parts = ClusterAssigner()
    parts.add([(B, LOOP)], infos[2:])
    assert parts.names() == {(B, LOOP): "cluster id-1"}
    parts.add([(A, LOOP)], infos[:2])
    assert parts.names() == whole


ENDPOINTS_8 = tuple(f"127.0.0.{11 + n}:9092" for n in range(8))
SET_UPS = [f"/caps/{name}.pcap" for name in ("kafka-python", "aiokafka", "confluent", "kafkajs")]


def _set_ups(topic_ids: list[str | None]) -> tuple[list[tuple[str, str]], list[ClusterInfo], list[Any]]:
    """Four captures of eight brokers on the same endpoints, each answering with one fixed
    cluster id, each naming topic ``orders`` with the given id (None: no topic id seen)."""
    brokers = [(c, e) for c in SET_UPS for e in ENDPOINTS_8]
    infos = [ClusterInfo(c, ENDPOINTS_8[0], "fixed-id", ENDPOINTS_8) for c in SET_UPS]
    named = [(c, ENDPOINTS_8[0], "orders", t) for c, t in zip(SET_UPS, topic_ids, strict=True) if t is not None]
    return brokers, infos, named


def test_clusters_that_fix_one_id_are_told_apart_by_their_topic_ids() -> None:
    """Container set-ups fix the cluster id: four separate clusters report one. Their topics
    (one name, a random id in each) say they are four, and the split is said."""
    brokers, infos, named = _set_ups(["t-1", "t-2", "t-3", "t-4"])
    assigner = ClusterAssigner()
    assigner.add(brokers, infos, [(c, b, t) for c, b, _, t in named], named)
    names = assigner.names()
    assert len(set(names.values())) == 4
    assert {names[(SET_UPS[0], e)] for e in ENDPOINTS_8} == {"cluster fixed-id (kafka-python.pcap 127.0.0.11:9092)"}
    assert list(assigner.split_ids()) == ["fixed-id"] and len(assigner.split_ids()["fixed-id"]) == 4
    # keyed by cluster id, the id is one cluster wherever it is seen
    by_id = ClusterAssigner("cluster-id")
    by_id.add(brokers, infos, [(c, b, t) for c, b, _, t in named], named)
    assert set(by_id.names().values()) == {"cluster fixed-id"} and by_id.split_ids() == {}


@pytest.mark.parametrize(
    ("topic_ids", "clusters"),
    [
        (["t-1", "t-1", "t-1", "t-1"], 1),  # one cluster seen four times (a rotating capture's files)
        ([None, None, None, None], 1),  # nothing tells them apart: the id joins them, as before
        (["t-1", None, "t-1", "t-2"], 2),  # the fourth names orders otherwise: a cluster of its own
        (["t-1", "t-2", "t-1", "t-2"], 2),
    ],
)
def test_the_id_joins_what_the_topics_do_not_tell_apart(topic_ids: list[str | None], clusters: int) -> None:
    brokers, infos, named = _set_ups(topic_ids)
    whole = ClusterAssigner()
    whole.add(brokers, infos, [(c, b, t) for c, b, _, t in named], named)
    assert len(set(whole.names().values())) == clusters
    assert bool(whole.split_ids()) == (clusters > 1)
    # added a capture at a time (as a follow does), it ends where all at once does
    parts = ClusterAssigner()
    for capture in reversed(SET_UPS):
        mine = [n for n in named if n[0] == capture]
        parts.add(
            [b for b in brokers if b[0] == capture],
            [i for i in infos if i.capture == capture],
            [(c, b, t) for c, b, _, t in mine],
            mine,
        )
    assert parts.names() == whole.names()
    # and it survives the follow's JSON state
    again = ClusterAssigner.from_data(json.loads(json.dumps(whole.to_data())))
    assert again.names() == whole.names()
