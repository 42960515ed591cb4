"""``Exchange.ok`` (counted twice per exchange by ``decode``) says what its definition says:
no problem, at least one frame, and no frame that failed to decode."""

from __future__ import annotations

import itertools
from types import SimpleNamespace

from kafka_epochs.exchanges import Exchange, Kind


def by_definition(exchange: Exchange) -> bool:
    if exchange.kind is Kind.SASL_TOKEN:
        return exchange.problem is None
    events = [e for e in (exchange.request, exchange.response) if e is not None]
    return exchange.problem is None and bool(events) and all(e.error is None for e in events)


def test_every_combination() -> None:
    frames = [None, SimpleNamespace(error=None), SimpleNamespace(error=ValueError("bad"))]
    seen = set()
    for kind, problem, request, response in itertools.product(Kind, [None, "lost"], frames, frames):
        exchange = Exchange(kind, 0, request=request, response=response, problem=problem)  # type: ignore[arg-type]
        assert exchange.ok == by_definition(exchange), (kind, problem, request, response)
        seen.add(exchange.ok)
    assert seen == {True, False}
