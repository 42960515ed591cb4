"""A report's values built by hand (no Spark): one partition fenced, one stray, times in ms."""

from __future__ import annotations

from kafka_epochs.report.model import (
    ACCEPTED,
    FENCED,
    FENCED_RESPONSE,
    STALE_REQUEST,
    STOP_FENCED,
    STOP_REPLICA_FENCED,
    UNKNOWN,
    ControlRequest,
    ControlRule,
    EpochSighting,
    Frame,
    Incident,
    Marker,
    PartitionView,
    ReportData,
    Summary,
)

T0 = 1_700_000_000_000_000_000
MS = 1_000_000
PRODUCER, CONTROLLER, BROKER = "10.0.0.1:50001", "10.0.0.20:40000", "10.0.0.10:9092"


def frame(ms: int, client: str = PRODUCER, correlation_id: int = 1) -> Frame:
    return Frame("story.pcap", ms, T0 + ms * MS, client, BROKER, correlation_id, decodable=True)


def produce_fenced() -> Incident:
    return Incident(
        STALE_REQUEST,
        frame(30, correlation_id=4),
        "Produce",
        12,
        "c1",
        "orders",
        0,
        FENCED,
        requested_epoch=4,
        leader_epoch=5,
        broker_error=FENCED,
    )


def fetch_unknown() -> Incident:
    return Incident(
        STALE_REQUEST,
        frame(40, correlation_id=5),
        "Fetch",
        12,
        "c1",
        "orders",
        1,
        UNKNOWN,
        requested_epoch=4,
        leader_epoch=3,
    )


def stop_fenced() -> Incident:
    return Incident(
        STOP_REPLICA_FENCED,
        frame(60, CONTROLLER, 2),
        "StopReplica",
        3,
        "c1",
        "orders",
        1,
        FENCED,
        requested_epoch=2,
        leader_epoch=3,
        delete=True,
        broker_error=FENCED,
    )


def stale_controller() -> Incident:
    return Incident(
        FENCED_RESPONSE,
        frame(111, CONTROLLER, 4),
        "LeaderAndIsr",
        7,
        "c1",
        None,
        None,
        "STALE_CONTROLLER_EPOCH",
        path="error_code",
    )


def orders_0() -> PartitionView:
    view = PartitionView("c1", "orders", 0)
    view.sightings = [EpochSighting(T0 + 11 * MS, 5, 1, "Metadata"), EpochSighting(T0 + 50 * MS, 7, 1, "LeaderAndIsr")]
    view.markers = [
        Marker(frame(20, correlation_id=3), "Produce", 12, 5, 5, ACCEPTED),
        Marker(frame(30, correlation_id=4), "Produce", 12, 4, 5, FENCED),
    ]
    view.rules = [ControlRule(T0 + 50 * MS, "LeaderAndIsr INCREMENTAL epoch 7", frame(50, CONTROLLER, 1))]
    view.incidents = [produce_fenced()]
    view.requests_seen = 2
    view.incidents_seen = 1
    return view


def orders_1() -> PartitionView:
    view = PartitionView("c1", "orders", 1)
    view.sightings = [EpochSighting(T0 + 11 * MS, 3, 1, "Metadata"), EpochSighting(T0 + 110 * MS, 2, 1, "LeaderAndIsr")]
    view.markers = [
        Marker(frame(40, correlation_id=5), "Fetch", 12, 4, 3, UNKNOWN),
        Marker(frame(60, CONTROLLER, 2), "StopReplica", 3, 2, 3, STOP_FENCED),
    ]
    view.incidents = [fetch_unknown(), stop_fenced()]
    view.requests_seen = 9
    view.incidents_seen = 5  # three more than listed
    return view


def report_data() -> ReportData:
    summary = Summary(
        first_ns=T0,
        last_ns=T0 + 130 * MS,
        frames=24,
        clients=[PRODUCER, CONTROLLER],
        brokers=[BROKER],
        partitions=2,
        clusters=["c1"],
        counts={
            ("stale_request", "KIP-359", FENCED): 1,
            ("stale_request", "KIP-320", UNKNOWN): 1,
            ("stop_replica_fenced", "KIP-570", FENCED): 1,
        },
        disagreements=0,
    )
    control = [
        ControlRequest(frame(50, CONTROLLER, 1), "c1", 5, "INCREMENTAL", ("orders-0", "orders-1")),
        ControlRequest(frame(130, CONTROLLER, 6), "c1", 5, "FULL", ("orders-0",), strays=("orders-1",)),
    ]
    return ReportData(
        summary=summary,
        partitions=[orders_1(), orders_0()],
        partitions_left_out=3,
        incidents_left_out=7,
        other_incidents=[stale_controller()],
        control_requests=control,
        sources=["story.pcap"],
    )
