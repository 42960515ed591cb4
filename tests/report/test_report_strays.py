"""Strays from a capture's LeaderAndIsr requests: what a FULL request leaves out of what the broker was given."""

from __future__ import annotations

from kafka_epochs.report.model import ControlRequest, Frame
from kafka_epochs.report.strays import with_strays


def request(ms: int, kind: str, names: tuple[str, ...], broker: str = "b1:9092", cluster: str = "c1") -> ControlRequest:
    return ControlRequest(Frame("x.pcap", ms, ms, "ctl:1", broker, ms), cluster, 5, kind, names)


def strays(
    requests: list[ControlRequest], deleted: tuple[tuple[int, str | None, str | None, str], ...] = ()
) -> list[tuple[str, ...]]:
    return [r.strays for r in with_strays(requests, deleted)]


def test_a_full_request_makes_strays_of_what_it_leaves_out() -> None:
    found = strays(
        [
            request(1, "INCREMENTAL", ("t-0", "t-1")),
            request(2, "INCREMENTAL", ("t-2",)),
            request(3, "FULL", ("t-0",)),
            request(4, "FULL", ("t-0", "t-5")),  # t-1 and t-2 were dealt with by the first FULL
        ]
    )
    assert found == [(), (), ("t-1", "t-2"), ()]


def test_partitions_sort_by_topic_then_number() -> None:
    found = strays([request(1, "INCREMENTAL", ("t-10", "t-2", "s-1")), request(2, "FULL", ())])
    assert found == [(), ("s-1", "t-2", "t-10")]


def test_each_broker_and_cluster_is_its_own() -> None:
    found = strays(
        [
            request(1, "INCREMENTAL", ("t-0",), broker="b1:9092"),
            request(2, "INCREMENTAL", ("t-1",), broker="b2:9092"),
            request(3, "INCREMENTAL", ("t-2",), cluster="c2"),
            request(4, "FULL", (), broker="b2:9092"),
        ]
    )
    assert found == [(), (), (), ("t-1",)]


def test_a_deleted_partition_is_no_stray() -> None:
    requests = [request(1, "INCREMENTAL", ("t-0", "t-1")), request(5, "FULL", ())]
    assert strays(requests, ((3, "c1", "b1:9092", "t-1"),)) == [(), ("t-0",)]
    assert strays(requests, ((9, "c1", "b1:9092", "t-1"),)) == [(), ("t-0", "t-1")]  # deleted after: too late


def test_requests_without_a_type_name_no_strays_but_count_as_given() -> None:
    found = strays([request(1, "", ("t-0",)), request(2, "FULL", ("t-1",))])
    assert found == [(), ("t-0",)]


def test_requests_are_taken_in_capture_order() -> None:
    out = with_strays([request(3, "FULL", ("t-0",)), request(1, "INCREMENTAL", ("t-0", "t-1"))])
    assert [(r.frame.seq, r.strays) for r in out] == [(1, ()), (3, ("t-1",))]
