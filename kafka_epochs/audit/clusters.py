"""Which Kafka cluster each broker a capture talks to belongs to (the epoch audit's first key).

Leader epochs are per partition of one cluster: two independent clusters (a test and a staging
cluster, four captures of four set-ups) both have an ``orders-0`` with unrelated epochs, and
judging one's requests against the other's timeline gives verdicts no broker ever gave. So every
broker connection is put in a cluster, from what the capture shows:

* a broker that answered Metadata (or DescribeCluster) is in one cluster with the brokers it
  listed;
* the cluster id those answers carry (Metadata v2+, DescribeCluster) names the cluster, and
  brokers reporting the same id are one cluster, in whatever captures they are, unless their
  topics say otherwise: container set-ups often fix the id, so separate clusters may report one,
  but a topic id is a random uuid per cluster, and clusters that give one topic name different
  ids are different clusters. An id that names several clusters gives each its first broker
  connection (``cluster K (a.pcap 127.0.0.1:9092)``), and the audit says it split them;
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
from typing import Any

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


def node_from(value: Any) -> Node:
    """A node from its JSON form ``[capture, broker]``; ValueError for anything else."""
    if not (isinstance(value, list) and len(value) == 2 and all(v is None or isinstance(v, str) for v in value)):
        raise ValueError(f"not a node: {value!r}")
    return (value[0], value[1])


def _order(node: Node) -> tuple[str, str]:
    return (node[0] or "", node[1] or "")


def _text(value: Any) -> str:
    if not isinstance(value, str):
        raise ValueError(f"not a text: {value!r}")
    return value


def assign_clusters(
    brokers: Iterable[Node],
    infos: Iterable[ClusterInfo],
    topic_ids: Iterable[tuple[str | None, str | None, str]],
    key: str = "auto",
) -> dict[Node, str]:
    """(capture, broker) -> cluster name, for every pair in ``brokers`` (see the module docstring).

    ``topic_ids``: (capture, broker, topic id) for each topic id seen on a broker connection.
    """
    assigner = ClusterAssigner(key)
    assigner.add(brokers, infos, topic_ids)
    return assigner.names()


class ClusterAssigner:
    """:func:`assign_clusters` a little at a time: what is added links clusters as if it had
    all been given at once (a follow adds each micro-batch's connections, answers and topic
    ids, and keeps only the links they make, not every topic id seen)."""

    def __init__(self, key: str = "auto") -> None:
        if key not in CLUSTER_KEYS:
            raise ValueError(f"cluster key must be one of {', '.join(CLUSTER_KEYS)}, not {key!r}")
        self.key = key
        self._pairs: dict[Node, None] = {}
        self._parts = _Components()
        self._by_id: dict[str, Node] = {}  # a node of each cluster id's cluster
        self._by_topic: dict[str, Node] = {}  # a node of each topic id's cluster
        #: (key auto) the topic ids each node saw per topic name: two clusters that give one name
        #: different ids are two clusters, whatever cluster id they report
        self._named: dict[Node, dict[str, set[str]]] = {}

    def to_data(self) -> dict[str, Any]:
        """The assigner as JSON values (:meth:`from_data` reads them back)."""
        parts = self._parts
        return {
            "key": self.key,
            "pairs": [list(pair) for pair in self._pairs],
            "parent": [[list(a), list(b)] for a, b in parts.parent.items()],
            "ids": [[list(node), sorted(ids)] for node, ids in parts.ids.items()],
            "by_id": [[cluster_id, list(node)] for cluster_id, node in self._by_id.items()],
            "by_topic": [[topic_id, list(node)] for topic_id, node in self._by_topic.items()],
            "named": [
                [list(node), [[name, sorted(ids)] for name, ids in topics.items()]]
                for node, topics in self._named.items()
            ],
        }

    @classmethod
    def from_data(cls, data: Any) -> ClusterAssigner:
        """An assigner from :meth:`to_data`'s values; ValueError where they are not such values."""
        if not isinstance(data, dict):
            raise ValueError("not an assigner")
        assigner = cls(str(data["key"]))
        assigner._pairs = {node_from(pair): None for pair in data["pairs"]}
        assigner._parts.parent = {node_from(a): node_from(b) for a, b in data["parent"]}
        assigner._parts.ids = {node_from(node): {_text(i) for i in ids} for node, ids in data["ids"]}
        assigner._by_id = {_text(cluster_id): node_from(node) for cluster_id, node in data["by_id"]}
        assigner._by_topic = {_text(topic_id): node_from(node) for topic_id, node in data["by_topic"]}
        assigner._named = {
            node_from(node): {_text(name): {_text(i) for i in ids} for name, ids in topics}
            for node, topics in data["named"]
        }
        return assigner

    def _node(self, capture: str | None, broker: str | None) -> Node:
        # a node is a broker of one capture, or (key broker) a broker anywhere
        return (capture if self.key != "broker" else None, broker)

    def add(
        self,
        brokers: Iterable[Node],
        infos: Iterable[ClusterInfo] = (),
        topic_ids: Iterable[tuple[str | None, str | None, str]] = (),
        named_topics: Iterable[tuple[str | None, str | None, str, str]] = (),
    ) -> None:
        """``named_topics``: (capture, broker, topic name, topic id), what tells apart clusters
        that report one cluster id (a topic name with different ids in each)."""
        parts = self._parts
        for pair in brokers:
            if pair not in self._pairs:
                self._pairs[pair] = None
                parts.find(self._node(*pair))
        if self.key == "capture":
            return
        for info in infos:
            answering = self._node(info.capture, info.broker)
            for member in info.members:  # the answering broker and those it lists are one cluster
                parts.union(answering, self._node(info.capture, member))
            if info.cluster_id and self.key != "broker":
                parts.add_id(answering, info.cluster_id)
                if self.key == "cluster-id":  # one id anywhere is one cluster (auto: see _joined_by_id)
                    parts.union(answering, self._by_id.setdefault(info.cluster_id, answering))
        if self.key == "auto":
            for capture, broker, topic_id in topic_ids:
                here = self._node(capture, broker)
                parts.union(here, self._by_topic.setdefault(topic_id, here))
            for capture, broker, name, topic_id in named_topics:
                self._named.setdefault(self._node(capture, broker), {}).setdefault(name, set()).add(topic_id)

    def names(self) -> dict[Node, str]:
        """The cluster name of every (capture, broker) pair added so far."""
        if self.key == "capture":
            return {pair: _capture_name(pair[0]) for pair in self._pairs}
        return {pair: name for group, _, name in self._clusters() for pair in group}

    def split_ids(self) -> dict[str, list[str]]:
        """Cluster ids that name several clusters (key ``auto``: told apart by their topics),
        each with its clusters' names."""
        if self.key == "capture":
            return {}
        found: dict[str, set[str]] = {}
        for _, ids, name in self._clusters():
            for cluster_id in ids:
                found.setdefault(cluster_id, set()).add(name)
        return {cluster_id: sorted(found[cluster_id]) for cluster_id in sorted(found) if len(found[cluster_id]) > 1}

    def _clusters(self) -> list[tuple[list[Node], set[str], str]]:
        """Each cluster: its (capture, broker) pairs, its cluster ids, its name."""
        parts = self._parts
        ids = parts.component_ids()
        members: dict[Node, list[Node]] = {}
        for pair in self._pairs:
            members.setdefault(parts.find(self._node(*pair)), []).append(pair)
        groups = self._joined_by_id(members, ids) if self.key == "auto" else list(members.values())
        group_ids = [set().union(*(ids.get(parts.find(self._node(*p)), set()) for p in group)) for group in groups]
        holders: dict[str, int] = {}
        for known in group_ids:
            for cluster_id in known:
                holders[cluster_id] = holders.get(cluster_id, 0) + 1
        out = []
        for group, known in zip(groups, group_ids, strict=True):
            if known:
                name = "cluster " + "+".join(sorted(known))
                if any(holders[cluster_id] > 1 for cluster_id in known):
                    # one id, several clusters: each is told by its first broker connection
                    capture, broker = min((_capture_name(p[0]), p[1] or "?") for p in group)
                    name += f" ({capture} {broker})"
                out.append((group, known, name))
                continue
            # no id: named per capture, as ever (each pair its own capture's)
            lowest = min(p[1] or "?" for p in group)
            for pair in group:
                if self.key == "cluster-id":
                    name = f"{_capture_name(pair[0])} (no cluster id)"
                elif self.key == "broker":
                    name = "brokers " + lowest
                else:
                    name = f"{_capture_name(pair[0])} {lowest}"
                out.append(([pair], known, name))
        return out

    def _joined_by_id(self, members: dict[Node, list[Node]], ids: dict[Node, set[str]]) -> list[list[Node]]:
        """(key ``auto``) the components joined by the cluster ids they report, except where
        their topics say they are different clusters (a topic name with different ids on each
        side). Joined in a fixed order (ids sorted, components by their first node), so the
        result does not depend on the order things were added in."""
        parts = self._parts
        topics: dict[Node, dict[str, set[str]]] = {}
        for node, named in self._named.items():
            mine = topics.setdefault(parts.find(node), {})
            for name, topic_ids in named.items():
                mine.setdefault(name, set()).update(topic_ids)
        order = sorted(members, key=lambda root: min(_order(self._node(*p)) for p in members[root]))
        joined = _Components()
        merged: dict[Node, dict[str, set[str]]] = {root: topics.get(root, {}) for root in order}
        holding: dict[str, list[Node]] = {}
        for root in order:
            for cluster_id in ids.get(root, ()):
                holding.setdefault(cluster_id, []).append(root)
        for cluster_id in sorted(holding):
            for root in holding[cluster_id]:
                here = joined.find(root)
                for other in holding[cluster_id]:
                    there = joined.find(other)
                    if there == here:
                        break  # the first compatible cluster of this id it could join is its own
                    if _compatible(merged[here], merged[there]):
                        joined.union(here, there)
                        merged[joined.find(here)] = _merged(merged[here], merged[there])
                        break
        groups: dict[Node, list[Node]] = {}
        for root in order:
            groups.setdefault(joined.find(root), []).extend(members[root])
        return list(groups.values())


def _compatible(a: dict[str, set[str]], b: dict[str, set[str]]) -> bool:
    """Whether two clusters' topics let them be one: no topic name with disjoint id sets."""
    return all(a[name] & b[name] for name in a.keys() & b.keys())


def _merged(a: dict[str, set[str]], b: dict[str, set[str]]) -> dict[str, set[str]]:
    out = {name: set(topic_ids) for name, topic_ids in a.items()}
    for name, topic_ids in b.items():
        out.setdefault(name, set()).update(topic_ids)
    return out


def _capture_name(capture: str | None) -> str:
    return os.path.basename(capture) if capture else "(no capture)"
