"""Stray partitions as the LeaderAndIsr requests of a capture show them (KIP-516 types, KIP-550).

A FULL LeaderAndIsr request lists every partition the broker should host; one that earlier
requests to the same broker listed, that no StopReplica with deletion removed since, and that
the FULL request leaves out, is a stray: the broker deletes it. Only what the capture holds is
known: a partition given to the broker before the capture began cannot be named.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable

from kafka_epochs.report.model import ControlRequest

FULL = "FULL"


def with_strays(
    requests: Iterable[ControlRequest], deleted: Iterable[tuple[int, str | None, str | None, str]] = ()
) -> list[ControlRequest]:
    """``requests`` in capture order, each FULL one with its ``strays`` filled in.

    ``deleted``: (time_ns, cluster, broker, partition name) of StopReplica deletions, which take
    a partition off its broker as a FULL request would.
    """
    ordered = sorted(requests, key=lambda r: (r.frame.time_ns or 0, r.frame.seq or 0))
    deletions = sorted(deleted, key=lambda d: d[0])
    hosted: dict[tuple[str | None, str | None], set[str]] = {}
    out = []
    at = 0
    for request in ordered:
        now = request.frame.time_ns or 0
        while at < len(deletions) and deletions[at][0] <= now:
            _, cluster, broker, name = deletions[at]
            hosted.get((cluster, broker), set()).discard(name)
            at += 1
        key = (request.cluster, request.frame.broker)
        known = hosted.setdefault(key, set())
        listed = set(request.partitions)
        if request.kind == FULL:
            request = dataclasses.replace(request, strays=tuple(sorted(known - listed, key=_order)))
            known.intersection_update(listed)
        known.update(listed)
        out.append(request)
    return out


def _order(name: str) -> tuple[str, int]:
    topic, _, number = name.rpartition("-")
    return (topic, int(number)) if number.isdigit() else (name, -1)
