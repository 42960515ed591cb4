"""Which Kafka cluster each broker a capture talks to belongs to (the epoch audit's first key).

Leader epochs are per partition of one cluster: two independent clusters (a test and a staging
cluster, four captures of four set-ups) both have an ``orders-0`` with unrelated epochs, and
judging one's requests against the other's timeline gives verdicts no broker ever gave. So every
broker connection is put in a cluster, from what the capture shows:

* a broker that answered Metadata (or DescribeCluster) is in one cluster with the brokers it
  listed;
* the cluster id those answers carry (Metadata v2+, DescribeCluster) names the cluster, and
  brokers reporting the same id are one cluster, in whatever captures they are;
* a topic id (a random uuid) seen through two brokers puts them in one cluster.

``key`` chooses how much of that is used:

``auto`` (the default)
    all three; brokers are told apart per capture file (two captures' ``127.0.0.1:9092`` are
    usually two different loopback clusters) unless a cluster id or topic id links them.
``capture``
    one cluster per capture file, nothing else.
``broker``
    broker endpoints alone, across captures: Metadata answers join a broker with those it lists;
    the same ``host:port`` in two captures is one broker.
``cluster-id``
    the reported cluster id only (Metadata answers attribute it to the brokers they list); brokers
    never covered by one are grouped per capture under ``<capture> (no cluster id)``.

A cluster is named by its id (``cluster <id>``) when one is known, else by its capture and its
lowest broker endpoint, so that a table says where its verdicts come from.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass

CLUSTER_KEYS = ("auto", "capture", "broker", "cluster-id")

Node = tuple[str | None, str | None]  # (capture, broker endpoint); capture None where keys ignore it


@dataclass(frozen=True)
class ClusterInfo:
    """One Metadata or DescribeCluster answer: who answered, the id it gave, the brokers it listed."""

    capture: str | None
    broker: str | None
    cluster_id: str | None
    members: tuple[str, ...] = ()


class _Components:
    """Union-find over nodes, each component collecting the cluster ids seen for it."""

    def __init__(self) -> None:
        self.parent: dict[Node, Node] = {}
        self.ids: dict[Node, set[str]] = {}

    def find(self, node: Node) -> Node:
        self.parent.setdefault(node, node)
        root = node
        while self.parent[root] != root:
            root = self.parent[root]
        while self.parent[node] != root:  # path compression keeps later finds short
            self.parent[node], node = root, self.parent[node]
        return root

    def union(self, a: Node, b: Node) -> None:
        ra, rb = self.find(a), self.find(b)
        if ra != rb:
            self.parent[max(ra, rb, key=_order)] = min(ra, rb, key=_order)

    def add_id(self, node: Node, cluster_id: str) -> None:
        self.ids.setdefault(node, set()).add(cluster_id)

    def component_ids(self) -> dict[Node, set[str]]:
        out: dict[Node, set[str]] = {}
        for node, ids in self.ids.items():
            out.setdefault(self.find(node), set()).update(ids)
        return out


def _order(node: Node) -> tuple[str, str]:
    return (node[0] or "", node[1] or "")


def assign_clusters(
    brokers: Iterable[Node],
    infos: Iterable[ClusterInfo],
    topic_ids: Iterable[tuple[str | None, str | None, str]],
    key: str = "auto",
) -> dict[Node, str]:
    """(capture, broker) -> cluster name, for every pair in ``brokers`` (see the module docstring).

    ``topic_ids``: (capture, broker, topic id) for each topic id seen on a broker connection.
    """
    if key not in CLUSTER_KEYS:
        raise ValueError(f"cluster key must be one of {', '.join(CLUSTER_KEYS)}, not {key!r}")
    pairs = list(dict.fromkeys(brokers))
    if key == "capture":
        return {pair: _capture_name(pair[0]) for pair in pairs}
    infos = list(infos)
    scoped = key != "broker"  # whether a node is a broker of one capture, or a broker anywhere

    def node(capture: str | None, broker: str | None) -> Node:
        return (capture if scoped else None, broker)

    parts = _Components()
    for pair in pairs:
        parts.find(node(*pair))
    for info in infos:
        answering = node(info.capture, info.broker)
        for member in info.members:  # the answering broker and those it lists are one cluster
            parts.union(answering, node(info.capture, member))
        if info.cluster_id and key != "broker":
            parts.add_id(answering, info.cluster_id)
    if key in ("auto", "cluster-id"):
        by_id: dict[str, Node] = {}
        for root, reported in parts.component_ids().items():
            for cluster_id in reported:  # one id anywhere is one cluster: captures join through it
                parts.union(root, by_id.setdefault(cluster_id, root))
    if key == "auto":
        by_topic: dict[str, Node] = {}
        for capture, broker, topic_id in topic_ids:
            here = node(capture, broker)
            parts.union(here, by_topic.setdefault(topic_id, here))
    ids = parts.component_ids()
    members: dict[Node, list[Node]] = {}
    for pair in pairs:
        members.setdefault(parts.find(node(*pair)), []).append(pair)
    names: dict[Node, str] = {}
    for root, group in members.items():
        known = sorted(ids.get(root, ()))
        for pair in group:
            if known:
                names[pair] = "cluster " + "+".join(known)
            elif key == "cluster-id":
                names[pair] = f"{_capture_name(pair[0])} (no cluster id)"
            elif key == "broker":
                names[pair] = "brokers " + min(p[1] or "?" for p in group)
            else:
                names[pair] = f"{_capture_name(pair[0])} {min(p[1] or '?' for p in group)}"
    return names


def _capture_name(capture: str | None) -> str:
    return os.path.basename(capture) if capture else "(no capture)"
