"""What an audit report shows, as plain values: no Spark, no plotting.

The Spark side (:mod:`kafka_epochs.spark.audit_report`) fills these from an ``AuditResult``;
anything else that can say the same (a test, another engine) can build them by hand.
Times are nanoseconds since 1970 (the capture's clock); a time that is not known is None.
"""

from __future__ import annotations

from dataclasses import dataclass, field

#: Verdicts a marker can carry, in the order the legend lists them.
ACCEPTED = "accepted"
FENCED = "FENCED_LEADER_EPOCH"
UNKNOWN = "UNKNOWN_LEADER_EPOCH"
STOP_FENCED = "fenced StopReplica"
STALE_CONTROL = "STALE_CONTROLLER_EPOCH"
NO_EPOCH = "no epoch known"
#: a verdict the broker's own answer contradicts (the audit's timeline is likely incomplete)
DISPUTED = "verdict the broker contradicts"
VERDICTS = (ACCEPTED, FENCED, UNKNOWN, STOP_FENCED, STALE_CONTROL, DISPUTED, NO_EPOCH)

#: Incident kinds: the audit table each comes from.
STALE_REQUEST = "stale_request"
STOP_REPLICA_FENCED = "stop_replica_fenced"
FENCED_RESPONSE = "fenced_response"
DISAGREEMENT = "disagreement"


@dataclass(frozen=True)
class Frame:
    """Where a frame is in the captures: enough to find it again."""

    capture: str | None
    seq: int | None
    time_ns: int | None
    client: str | None
    broker: str | None
    correlation_id: int | None
    #: the capture is a file where the report was made, so the page can offer a decode command
    decodable: bool = False


@dataclass(frozen=True)
class EpochSighting:
    """A leader epoch seen for the partition (a Metadata answer or a LeaderAndIsr request)."""

    time_ns: int | None
    epoch: int
    leader: int | None
    source: str  # the api it was seen in


@dataclass(frozen=True)
class Marker:
    """A request (or StopReplica) that named an epoch for the partition, with the audit's verdict."""

    frame: Frame
    api: str
    api_version: int
    epoch: int
    leader_epoch: int | None  # the leader's epoch at that time, as far as the capture shows
    verdict: str  # one of VERDICTS


@dataclass(frozen=True)
class ControlRule:
    """A controller request for the partition, drawn as a vertical rule."""

    time_ns: int | None
    label: str  # "LeaderAndIsr FULL", "LeaderAndIsr INCREMENTAL", "StopReplica delete", ...
    frame: Frame


@dataclass(frozen=True)
class Incident:
    """A row of one of the audit's incident tables, with what is needed to explain it."""

    kind: str  # STALE_REQUEST, STOP_REPLICA_FENCED, FENCED_RESPONSE or DISAGREEMENT
    frame: Frame
    api: str | None
    api_version: int | None
    cluster: str | None
    topic: str | None
    partition: int | None
    error: str | None  # the audit's verdict, or the broker's error for a fenced response
    requested_epoch: int | None = None
    leader_epoch: int | None = None
    broker_error: str | None = None
    path: str | None = None  # where in the response the error sits (fenced responses)
    delete: bool | None = None  # StopReplica
    profile: str | None = None
    warnings: tuple[str, ...] = ()


@dataclass
class PartitionView:
    """One partition's plot: its epochs, the requests that named one, the controller's requests."""

    cluster: str | None
    topic: str | None
    partition: int
    sightings: list[EpochSighting] = field(default_factory=list)
    markers: list[Marker] = field(default_factory=list)
    rules: list[ControlRule] = field(default_factory=list)
    incidents: list[Incident] = field(default_factory=list)
    #: how many requests named an epoch for it; markers may hold fewer (thinned evenly over time)
    requests_seen: int = 0
    #: how many incidents it had; ``incidents`` may list fewer (the first ones)
    incidents_seen: int = 0

    @property
    def name(self) -> str:
        return f"{self.topic if self.topic is not None else '?'}-{self.partition}"


@dataclass(frozen=True)
class ControlRequest:
    """A LeaderAndIsr request as the stray-partition view (KIP-516 types, KIP-550 strays) sees it."""

    frame: Frame
    cluster: str | None
    api_version: int
    kind: str  # "FULL", "INCREMENTAL" or "" (before v5 there is no type)
    partitions: tuple[str, ...]  # the "topic-N" names it lists
    #: for a FULL request: partitions earlier requests gave this broker that it no longer lists
    strays: tuple[str, ...] = ()


@dataclass
class Summary:
    first_ns: int | None
    last_ns: int | None
    frames: int  # frames the audit read an event from
    clients: list[str]
    brokers: list[str]
    partitions: int  # distinct (cluster, topic, partition) seen
    clusters: list[str]
    #: (kind, KIP rule, error) -> how many incidents
    counts: dict[tuple[str, str, str], int]
    disagreements: int
    #: frames that could carry an epoch and did not decode: the verdicts do not cover them
    unreadable: int = 0
    #: why, the most frequent reasons first: (error, how many frames)
    unreadable_reasons: list[tuple[str, int]] = field(default_factory=list)
    #: cluster ids that name several clusters (told apart by their topics' ids) -> their names
    split_ids: dict[str, list[str]] = field(default_factory=dict)
    #: captures that could not be read whole (not a capture, cut short, bytes missing, bad
    #: packets): (capture, its first problem, how many problems); frames may be missing from them
    capture_problems: list[tuple[str, str, int]] = field(default_factory=list)

    @property
    def complete(self) -> bool:
        """Whether the verdicts cover everything the captures held: every frame that could carry
        an epoch was read, and every capture was read whole."""
        return not self.unreadable and not self.capture_problems

    @property
    def coverage(self) -> str:
        """ "the verdicts cover N of M frames", or "" when every frame was read."""
        if not self.unreadable:
            return ""
        return f"the verdicts cover {self.frames:,} of {self.frames + self.unreadable:,} frames that carry epochs"


@dataclass
class ReportData:
    summary: Summary
    partitions: list[PartitionView]  # the ones drawn, most incidents first
    partitions_left_out: int  # partitions with incidents that were not drawn
    incidents_left_out: int  # incidents of the partitions not drawn (counted in the summary)
    #: incidents about no partition (a response-level STALE_CONTROLLER_EPOCH, say)
    other_incidents: list[Incident] = field(default_factory=list)
    control_requests: list[ControlRequest] = field(default_factory=list)
    control_requests_left_out: int = 0
    title: str = "kafka-epochs audit"
    sources: list[str] = field(default_factory=list)  # the captures or tables audited


def check_limits(max_partitions: int, max_incidents: int, max_markers: int) -> None:
    """ValueError for a negative limit of what a report shows: both engines cut their ranked
    lists by slicing, and a negative slice would drop from the end (a report silently short)."""
    for name, limit in (
        ("max_partitions", max_partitions),
        ("max_incidents", max_incidents),
        ("max_markers", max_markers),
    ):
        if limit < 0:
            raise ValueError(f"{name} is a count, 0 or more, not {limit}")
