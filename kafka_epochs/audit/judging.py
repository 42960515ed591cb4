"""The epoch audit's judging on the driver, batch after batch: what ``audit --follow`` prints from.

:func:`~kafka_epochs.spark.epoch_audit.audit_of_events` judges every event at once with Spark:
right for a directory of finished captures, but a follow that re-ran it for each new file spent
seconds of small Spark jobs on verdicts that cannot have changed. :class:`IncrementalAudit` gives
the same incidents (a test holds it to the Spark audit, table for table) from what earlier
batches leave behind: each partition's leader epochs with where each was first seen, where its
last judged request was, which cluster each broker connection is in, and the topic names known
per topic id. A batch's requests are judged against that; the earlier verdicts stand as they
were, since everything that decides them is unchanged, and that is checked batch by batch.

A batch can change what decided an earlier verdict. When it shows a leader epoch first seen
before a request already judged (captures of two hosts of one cluster landing out of time
order), the earlier requests of that partition are read back from the store and judged again
(``rejudged_partitions``). When its captures move an earlier broker to another cluster (a
cluster id or topic id links them), name a topic id that earlier events left unnamed, or add to
a capture already judged, everything stored is judged again from the start (``reload``, and
``rejudged`` says why), still on the driver.

Events are :data:`~kafka_epochs.spark.epoch_audit.EVENT_SCHEMA` rows; the incidents are dicts
with the columns of :func:`~kafka_epochs.spark.audit_report.incident_rows` (``kind`` one of
the four incident tables).
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa  # type: ignore[import-untyped]  # pyarrow ships no type stubs
import pyarrow.compute as pc  # type: ignore[import-untyped]

from kafka_epochs.audit.clusters import ClusterAssigner, ClusterInfo, Node, node_from
from kafka_epochs.audit.events import (
    AGREES,
    ANSWER,
    CLUSTER_INFO,
    DISAGREES,
    ERROR_RESPONSE,
    LEADER_EPOCH,
    NO_EPOCH,
    NO_PAIRING,
    NO_RESPONSE,
    REQUEST_EPOCH,
    STOP_REPLICA_EPOCH,
    verdict,
)
from kafka_epochs.epochs import EqualEpochPolicy, Errors
from kafka_epochs.report.model import DISAGREEMENT, FENCED_RESPONSE, STALE_REQUEST, STOP_REPLICA_FENCED

Event = dict[str, Any]
Incident = dict[str, Any]
PartitionKey = tuple[str | None, str | None, int | None]  # (cluster, topic, partition)
#: A place in capture order, nulls first as Spark sorts them: (time known, time, seq known, seq).
Position = tuple[bool, int, bool, int]
Connection = tuple[str | None, str | None, str | None, int | None]  # capture, client, broker, correlation id
#: The stored events a filter expression keeps (None: all of them), as a pyarrow dataset reads them.
Store = Callable[[pc.Expression | None], pa.Table]
CHECKS = (REQUEST_EPOCH, STOP_REPLICA_EPOCH)


def position(time_ns: int | None, seq: int | None) -> Position:
    return (time_ns is not None, time_ns or 0, seq is not None, seq or 0)


@dataclass
class _FirstSighting:
    """When an epoch of a partition was first seen: the earliest time, and the seq of the first
    sighting in (time, seq) order (the two ``_timeline`` columns the requests are placed against)."""

    time_ns: int | None
    first: Position
    seq: int | None

    def add(self, time_ns: int | None, seq: int | None) -> None:
        if time_ns is not None and (self.time_ns is None or time_ns < self.time_ns):
            self.time_ns = time_ns
        if position(time_ns, seq) < self.first:
            self.first, self.seq = position(time_ns, seq), seq

    @property
    def at(self) -> Position:
        return position(self.time_ns, self.seq)


@dataclass
class _State:
    """What the verdicts of the batches judged so far rest on."""

    captures: set[str | None] = field(default_factory=set)
    #: the links between broker connections seen so far (none is given twice)
    assigner: ClusterAssigner = field(default_factory=ClusterAssigner)
    clusters: dict[Node, str] = field(default_factory=dict)
    #: (cluster, topic id) -> the name events gave it (the least, as ``_named`` takes)
    names: dict[tuple[str, str], str] = field(default_factory=dict)
    #: (cluster, topic id) of events that came without a topic name and got none
    unnamed: set[tuple[str, str]] = field(default_factory=set)
    epochs: dict[PartitionKey, dict[int, _FirstSighting]] = field(default_factory=dict)
    #: the place of each partition's last judged request or StopReplica
    last_judged: dict[PartitionKey, Position] = field(default_factory=dict)


#: The version of :meth:`IncrementalAudit.snapshot`'s values (another is not restored).
SNAPSHOT_FORMAT = 1


def _required(value: Any, kind: type) -> Any:
    if type(value) is not kind:
        raise ValueError(f"{value!r} is not a {kind.__name__}")
    return value


def _optional(value: Any, kind: type) -> Any:
    return None if value is None else _required(value, kind)


def _pair(value: Any) -> tuple[str, str]:
    cluster, topic_id = value
    return _required(cluster, str), _required(topic_id, str)


def _partition(value: Any) -> PartitionKey:
    cluster, topic, partition = value
    return _optional(cluster, str), _optional(topic, str), _optional(partition, int)


def _position(value: Any) -> Position:
    time_known, time_ns, seq_known, seq = value
    return _required(time_known, bool), _required(time_ns, int), _required(seq_known, bool), _required(seq, int)


class LeaderEpochs:
    """A partition's epochs by the place each was first seen, to answer "the leader's epoch at a
    place" (the highest first seen at or before it) in a binary search, not a scan of every epoch."""

    __slots__ = ("_epochs", "_places")

    def __init__(self, firsts: Iterable[tuple[Position, int]]) -> None:
        """``firsts``: (where it was first seen, epoch) for each epoch of the partition."""
        ordered = sorted(firsts)
        self._places = [place for place, _ in ordered]
        self._epochs: list[int] = []  # the highest epoch up to each place
        for _, epoch in ordered:
            self._epochs.append(epoch if not self._epochs else max(epoch, self._epochs[-1]))

    @classmethod
    def of(cls, seen: dict[int, _FirstSighting]) -> LeaderEpochs:
        return cls((first.at, epoch) for epoch, first in seen.items())

    def at(self, place: Position) -> int | None:
        found = bisect.bisect_right(self._places, place)
        return self._epochs[found - 1] if found else None


def epoch_index(timeline: Iterable[Mapping[str, Any]]) -> dict[PartitionKey, LeaderEpochs]:
    """Each partition's :class:`LeaderEpochs` from timeline rows (``cluster``, ``topic``,
    ``partition``, ``leader_epoch``, ``first_seen_ns``, ``first_seen_seq``). What an engine that
    judges requests apart from the sightings (Spark's) hands its tasks: one row per epoch seen,
    however much traffic there was."""
    grouped: dict[PartitionKey, list[tuple[Position, int]]] = {}
    for row in timeline:
        if row["leader_epoch"] is not None:
            key = (row["cluster"], row["topic"], row["partition"])
            place = position(row["first_seen_ns"], row["first_seen_seq"])
            grouped.setdefault(key, []).append((place, row["leader_epoch"]))
    return {key: LeaderEpochs(places) for key, places in grouped.items()}


class Answers:
    """What the broker answered to judged requests: the exchanges answered at all (a response
    with the request's correlation id on its connection) and, per exchange and partition, the
    least epoch error the answer named. A check without a correlation id pairs with nothing."""

    __slots__ = ("answered", "errors")

    def __init__(self) -> None:
        self.answered: set[Connection] = set()
        self.errors: dict[tuple[Connection, str | None, int | None], str] = {}

    def add(
        self, kind: str, connection: Connection, topic: str | None, partition: int | None, error: str | None
    ) -> None:
        """Note an ``ANSWER`` or ``ERROR_RESPONSE`` event (others, and unpaired ones, say nothing)."""
        if connection[3] is None:
            return
        if kind == ANSWER:
            self.answered.add(connection)
        elif kind == ERROR_RESPONSE and error is not None:
            where = (connection, topic, partition)
            self.errors[where] = min(error, self.errors.get(where, error))

    def judge(
        self,
        kind: str,
        requested: int | None,
        leader: int | None,
        connection: Connection,
        topic: str | None,
        partition: int | None,
        equal_epoch: EqualEpochPolicy,
    ) -> tuple[str | None, str | None, str]:
        """A check's (verdict, broker_error, agreement): the audit's rule, whichever engine runs it."""
        judged = verdict(kind, requested, leader, equal_epoch)
        broker_error = self.errors.get((connection, topic, partition))
        return judged, broker_error, _agreement(judged, connection[3], connection in self.answered, broker_error)


class Rejudge(Exception):
    """A batch changes what an earlier verdict rested on (the message says what)."""


class IncrementalAudit:
    """The audit's incidents, batch by batch (see the module docstring).

    ``stored`` reads the events stored so far, the current batch's included, that a filter
    keeps: what a batch that changes earlier verdicts is judged again with.
    """

    def __init__(
        self,
        stored: Store,
        *,
        equal_epoch: EqualEpochPolicy = EqualEpochPolicy.ACCEPT,
        cluster_key: str = "auto",
    ) -> None:
        self.stored = stored
        self.equal_epoch = equal_epoch
        self.cluster_key = cluster_key
        self.state = _State(assigner=ClusterAssigner(cluster_key))
        #: why the last batch was judged with everything stored (None: it was judged alone)
        self.rejudged: str | None = None
        self.rejudgings = 0
        #: the partitions whose earlier requests the last batch had judged again
        self.rejudged_partitions: set[PartitionKey] = set()

    def reload(self) -> list[Incident]:
        """Judge everything stored from the start: the incidents of all of it."""
        return self.judge_all(self.stored(None).to_pylist())

    def judge_all(self, events: list[Event]) -> list[Incident]:
        """Judge ``events`` from a fresh start, all at once: their incidents (what the in-process
        engine does). Each event is given the ``cluster`` and topic name it was judged with."""
        self.state = _State(assigner=ClusterAssigner(self.cluster_key))
        return self._judge(events)

    def split_ids(self) -> dict[str, list[str]]:
        """Cluster ids that name several clusters among the events judged (see
        :meth:`~kafka_epochs.audit.clusters.ClusterAssigner.split_ids`)."""
        return self.state.assigner.split_ids()

    def snapshot(self) -> dict[str, Any]:
        """What the verdicts so far rest on, as JSON values, to :meth:`restore` in another run.

        Plain data, not a pickle: a state directory others can write to must not be able to
        run code as the user who resumes from it."""
        state = self.state
        return {
            "format": SNAPSHOT_FORMAT,
            "cluster_key": self.cluster_key,
            "equal_epoch": self.equal_epoch.value,
            "captures": sorted(state.captures, key=lambda c: (c is not None, c or "")),
            "assigner": state.assigner.to_data(),
            "clusters": [[list(node), name] for node, name in state.clusters.items()],
            "names": [[list(key), name] for key, name in state.names.items()],
            "unnamed": sorted(list(key) for key in state.unnamed),
            "epochs": [
                [list(key), [[epoch, [s.time_ns, list(s.first), s.seq]] for epoch, s in seen.items()]]
                for key, seen in state.epochs.items()
            ],
            "last_judged": [[list(key), list(at)] for key, at in state.last_judged.items()],
        }

    def restore(self, snapshot: Any) -> None:
        """Carry on from a :meth:`snapshot` taken with the same cluster key and policy; a
        ValueError (the state unchanged) for anything that is not such a snapshot."""
        if not isinstance(snapshot, dict) or snapshot.get("format") != SNAPSHOT_FORMAT:
            raise ValueError("not a snapshot of this version's judging")
        if (snapshot["cluster_key"], snapshot["equal_epoch"]) != (self.cluster_key, self.equal_epoch.value):
            raise ValueError("the snapshot was taken with another cluster key or equal-epoch policy")
        try:
            state = _State(
                captures={_optional(c, str) for c in snapshot["captures"]},
                assigner=ClusterAssigner.from_data(snapshot["assigner"]),
                clusters={node_from(node): _required(name, str) for node, name in snapshot["clusters"]},
                names={_pair(key): _required(name, str) for key, name in snapshot["names"]},
                unnamed={_pair(key) for key in snapshot["unnamed"]},
                epochs={
                    _partition(key): {
                        _required(epoch, int): _FirstSighting(_optional(t, int), _position(first), _optional(q, int))
                        for epoch, (t, first, q) in seen
                    }
                    for key, seen in snapshot["epochs"]
                },
                last_judged={_partition(key): _position(at) for key, at in snapshot["last_judged"]},
            )
        except (KeyError, TypeError, ValueError) as e:
            raise ValueError(f"not a snapshot of this version's judging ({e})") from None
        self.state = state

    def add(self, batch: pa.Table) -> list[Incident]:
        """The incidents of ``batch``'s events judged after those before, with those of earlier
        requests its epochs judge again; or, when the batch changes more than epochs, of
        everything stored, judged again."""
        self.rejudged = None
        self.rejudged_partitions = set()
        try:
            return self._judge(batch.to_pylist())
        except Rejudge as why:  # the state is half-updated: reload starts a new one
            self.rejudged = str(why)
            self.rejudgings += 1
            return self.reload()

    # -- one batch ---------------------------------------------------------------------------

    def _judge(self, events: list[Event]) -> list[Incident]:
        state = self.state
        fresh = not state.captures
        captures = {e["capture"] for e in events}
        if not fresh and captures & state.captures:
            raise Rejudge("a capture already judged has more events")
        state.captures |= captures
        self._assign_clusters(state, events, fresh)
        self._name_topics(state, events, fresh)
        moved = self._see_epochs(state, events, fresh)
        incidents = self._incidents(state, events)
        if moved:
            incidents += self._judged_again(state, moved, captures)
        return incidents

    def _judged_again(self, state: _State, keys: set[PartitionKey], new: set[str | None]) -> list[Incident]:
        """The incidents of the earlier requests of ``keys``, read back from the store and judged
        with the epochs known now (with their captures' answers, for the broker's word)."""
        self.rejudged_partitions = keys
        partitions = {key[2] for key in keys}
        where = pc.field("partition").isin([p for p in partitions if p is not None])
        if None in partitions:
            where = where | pc.field("partition").is_null()
        earlier = [
            e
            for e in self.stored(pc.field("kind").isin(list(CHECKS)) & where).to_pylist()
            if e["capture"] not in new and self._placed(state, e) in keys
        ]
        if not earlier:
            return []
        captures = list({e["capture"] for e in earlier})
        answers = self.stored(pc.field("kind").isin([ANSWER, ERROR_RESPONSE]) & pc.field("capture").isin(captures))
        for e in (answers := answers.to_pylist()):
            self._placed(state, e)
        return self._incidents(state, earlier + answers, responses=False)

    @staticmethod
    def _placed(state: _State, e: Event) -> PartitionKey:
        """A stored event given the cluster and topic name it has now; its partition's key."""
        e["cluster"] = state.clusters[(e["capture"], e["broker"])]
        _name_topic(state, e)
        return (e["cluster"], e["topic"], e["partition"])

    def _assign_clusters(self, state: _State, events: list[Event], fresh: bool) -> None:
        brokers: dict[Node, None] = {}
        infos: dict[ClusterInfo, None] = {}
        topic_ids: dict[tuple[str | None, str | None, str], None] = {}
        named: dict[tuple[str | None, str | None, str, str], None] = {}
        for e in events:
            brokers[(e["capture"], e["broker"])] = None
            if e["kind"] == CLUSTER_INFO:
                infos[ClusterInfo(e["capture"], e["broker"], e["cluster_id"], tuple(e["members"] or ()))] = None
            if e["topic_id"] is not None:
                topic_ids[(e["capture"], e["broker"], e["topic_id"])] = None
                if e["topic"]:
                    named[(e["capture"], e["broker"], e["topic"], e["topic_id"])] = None
        state.assigner.add(brokers, infos, topic_ids, named)
        clusters = state.assigner.names()
        if not fresh:
            moved = [node for node, name in state.clusters.items() if clusters[node] != name]
            if moved:
                raise Rejudge(f"{len(moved)} broker connection(s) judged before are in another cluster now")
        state.clusters = clusters
        for e in events:
            e["cluster"] = clusters[(e["capture"], e["broker"])]

    def _name_topics(self, state: _State, events: list[Event], fresh: bool) -> None:
        learnt: dict[tuple[str, str], str] = {}
        for e in events:
            if e["topic_id"] is not None and e["topic"]:
                key = (e["cluster"], e["topic_id"])
                learnt[key] = min(e["topic"], learnt.get(key, e["topic"]))
        for key, name in learnt.items():
            known = state.names.get(key)
            if not fresh and (key in state.unnamed or (known is not None and name < known)):
                raise Rejudge("a topic id judged before has a name now")
            state.names[key] = name if known is None else min(known, name)
        for e in events:
            if not _name_topic(state, e) and e["topic_id"] is not None:
                state.unnamed.add((e["cluster"], e["topic_id"]))

    def _see_epochs(self, state: _State, events: list[Event], fresh: bool) -> set[PartitionKey]:
        """Records the events' epoch sightings; returns the partitions where one moved a first
        sighting before (or past) a request judged in an earlier batch."""
        moved: set[PartitionKey] = set()
        for e in events:
            if e["kind"] != LEADER_EPOCH or e["epoch"] is None:
                continue
            key: PartitionKey = (e["cluster"], e["topic"], e["partition"])
            seen = state.epochs.setdefault(key, {})
            first = seen.get(e["epoch"])
            before = None if first is None else first.at
            if first is None:
                first = seen[e["epoch"]] = _FirstSighting(e["time_ns"], position(e["time_ns"], e["seq"]), e["seq"])
            else:
                first.add(e["time_ns"], e["seq"])
            judged = state.last_judged.get(key)
            if fresh or judged is None or first.at == before:
                continue
            # the place moves earlier, or later (a known time after sightings without one): a
            # request judged after either place may see another leader epoch now
            if min(first.at, before or first.at) <= judged:
                moved.add(key)
        return moved

    def _incidents(self, state: _State, events: list[Event], *, responses: bool = True) -> list[Incident]:
        answers = Answers()
        for e in events:
            if e["kind"] in (ANSWER, ERROR_RESPONSE):
                connection = (e["capture"], e["client"], e["broker"], e["correlation_id"])
                answers.add(e["kind"], connection, e["topic"], e["partition"], e["error"])
        out: list[Incident] = []
        indexes: dict[PartitionKey, LeaderEpochs] = {}  # the epochs do not change while judging
        for e in events:
            if e["kind"] == ERROR_RESPONSE:
                if responses:
                    out.append(_incident(e, FENCED_RESPONSE, error=e["error"], path=e["path"]))
            elif e["kind"] in (REQUEST_EPOCH, STOP_REPLICA_EPOCH):
                key = (e["cluster"], e["topic"], e["partition"])
                at = position(e["time_ns"], e["seq"])
                index = indexes.get(key)
                if index is None:
                    index = indexes[key] = LeaderEpochs.of(state.epochs.get(key, {}))
                leader = index.at(at)
                state.last_judged[key] = max(at, state.last_judged.get(key, at))
                connection = (e["capture"], e["client"], e["broker"], e["correlation_id"])
                judged, broker_error, agreement = answers.judge(
                    e["kind"], e["epoch"], leader, connection, e["topic"], e["partition"], self.equal_epoch
                )
                if agreement == DISAGREES:
                    kind = DISAGREEMENT
                elif judged is None or judged == Errors.NONE.name:
                    continue
                else:
                    kind = STALE_REQUEST if e["kind"] == REQUEST_EPOCH else STOP_REPLICA_FENCED
                delete = e["delete"] if kind != STALE_REQUEST else None
                out.append(
                    _incident(
                        e,
                        kind,
                        error=judged,
                        requested_epoch=e["epoch"],
                        leader_epoch=leader,
                        broker_error=broker_error,
                        delete=delete,
                    )
                )
        return out


#: The columns :func:`judge_exchanges` appends to the checks it judges.
VERDICT_FIELDS = [
    pa.field("leader_epoch", pa.int32()),
    pa.field("verdict", pa.string()),
    pa.field("broker_error", pa.string()),
    pa.field("agreement", pa.string()),
]
_REPLIES = pa.array([ANSWER, ERROR_RESPONSE])
_CHECKS = pa.array(list(CHECKS))


def judge_exchanges(
    table: pa.Table, epochs: dict[PartitionKey, LeaderEpochs], equal_epoch: EqualEpochPolicy
) -> pa.Table:
    """The checks (requests and StopReplicas naming an epoch) of ``table``, judged.

    ``table``: placed events (a ``cluster`` column, topics named) holding, for each exchange it
    has a check of, the exchange's answer and epoch errors too; ``epochs``: every partition's
    leader epochs (:func:`epoch_index`). The checks come back, every column kept, with
    :data:`VERDICT_FIELDS`: ``leader_epoch`` (the highest epoch first seen at or before the
    check, in capture order), ``verdict``, ``broker_error`` and ``agreement``, by the rule the
    driver-side judging applies. For an engine that judges exchanges apart (Spark's, in tasks
    that each hold whole exchanges); column by column, so no row becomes a dict.
    """
    connection = ["capture", "client", "broker", "correlation_id"]
    answers = Answers()
    replies = table.filter(pc.is_in(table.column("kind"), _REPLIES))
    kinds, *where = (replies.column(c).to_pylist() for c in ("kind", *connection, "topic", "partition", "error"))
    for kind, capture, client, broker, correlation_id, topic, partition, error in zip(kinds, *where, strict=True):
        answers.add(kind, (capture, client, broker, correlation_id), topic, partition, error)
    checks = table.filter(pc.is_in(table.column("kind"), _CHECKS))
    columns = (*connection, "cluster", "topic", "partition", "kind", "epoch", "time_ns", "seq")
    capture, client, broker, correlation_id, cluster, topic, partition, kind, epoch, time_ns, seq = (
        checks.column(c).to_pylist() for c in columns
    )
    out: tuple[list[Any], list[Any], list[Any], list[Any]] = ([], [], [], [])
    none = LeaderEpochs(())
    for i in range(checks.num_rows):
        leader = epochs.get((cluster[i], topic[i], partition[i]), none).at(position(time_ns[i], seq[i]))
        exchange = (capture[i], client[i], broker[i], correlation_id[i])
        found = answers.judge(kind[i], epoch[i], leader, exchange, topic[i], partition[i], equal_epoch)
        out[0].append(leader)
        for column, value in zip(out[1:], found, strict=True):
            column.append(value)
    for f, values in zip(VERDICT_FIELDS, out, strict=True):
        checks = checks.append_column(f, pa.array(values, f.type))
    return checks


def incidents(judged: pa.Table) -> pa.Table:
    """The checks :func:`judge_exchanges` judged that are incidents: stale or fenced, or
    contradicted by the broker (those judged fine, or with no epoch known, and not contradicted
    are not)."""
    verdicts = judged.column("verdict")
    stale = pc.and_(pc.is_valid(verdicts), pc.not_equal(verdicts, Errors.NONE.name))
    return judged.filter(pc.or_(pc.fill_null(stale, False), pc.equal(judged.column("agreement"), DISAGREES)))


def epoch_errors(table: pa.Table) -> pa.Table:
    """The epoch errors answers gave (``error_response`` events) of ``table``, with the columns
    :func:`judge_exchanges` appends, empty: what a judging task hands on besides its verdicts."""
    errors = table.filter(pc.equal(table.column("kind"), ERROR_RESPONSE))
    for f in VERDICT_FIELDS:
        errors = errors.append_column(f, pa.nulls(errors.num_rows, f.type))
    return errors


def _name_topic(state: _State, e: Event) -> str | None:
    """The event's topic name: its own, else (an empty name is no name) the one its topic id
    has in its cluster, else none. Sets it on the event too."""
    if not e["topic"]:
        e["topic"] = state.names.get((e["cluster"], e["topic_id"])) if e["topic_id"] is not None else None
    return e["topic"]


def _agreement(judged: str | None, correlation_id: int | None, answered: bool, broker_error: str | None) -> str:
    if judged is None:
        return NO_EPOCH
    if correlation_id is None:
        return NO_PAIRING
    if not answered:
        return NO_RESPONSE
    if judged == Errors.NONE.name:
        return AGREES if broker_error is None else DISAGREES
    return AGREES if broker_error == judged else DISAGREES


_FRAME_COLUMNS = ("capture", "seq", "time_ns", "client", "broker", "correlation_id")
_EVENT_COLUMNS = ("cluster", "api", "api_version", "topic", "partition", "profile", "warnings")


def _incident(e: Event, kind: str, **values: Any) -> Incident:
    row = {c: e[c] for c in (*_FRAME_COLUMNS, *_EVENT_COLUMNS)}
    row.update(requested_epoch=None, leader_epoch=None, broker_error=None, path=None, delete=None, error=None)
    row.update(values)
    row["kind"] = kind
    return row


#: The columns incidents are ordered by, after time and seq: what tells apart the incidents of
#: one frame, and frames of two captures at one time and seq (both engines sort by them, nulls
#: first, so that neither order rests on how rows happened to arrive).
TIE_BREAKERS = ("partition", "kind", "topic", "path", "capture")


def in_capture_order(incidents: Iterable[Incident]) -> list[Incident]:
    """Sorted as the audit prints: time, seq, then :data:`TIE_BREAKERS` (nulls first, as Spark sorts)."""

    def order(row: Incident) -> tuple[Any, ...]:
        rest = [
            (row[c] is not None, row[c] if row[c] is not None else 0 if c == "partition" else "") for c in TIE_BREAKERS
        ]
        return (*position(row["time_ns"], row["seq"]), *rest)

    return sorted(incidents, key=order)
