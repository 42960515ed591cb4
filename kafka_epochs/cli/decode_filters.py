"""What ``decode``'s filters select: apis, topics, clients, brokers, correlation ids, errors."""

from __future__ import annotations

from typing import Any

from kafka_epochs.values import Value

__all__ = ["ExchangeFilter", "api_names", "has_problem"]


class ExchangeFilter(Value):
    """What ``--api``, ``--topic``, ``--client``, ``--broker``, ``--correlation-id`` and
    ``--errors-only`` select; empty means everything."""

    __slots__ = ("_api_name", "apis", "brokers", "clients", "correlation_ids", "errors_only", "topics")
    apis: set[str]
    topics: set[str]
    clients: set[str]
    brokers: set[str]
    correlation_ids: set[int]
    errors_only: bool

    def __init__(
        self,
        apis: set[str] | None = None,
        topics: set[str] | None = None,
        clients: set[str] | None = None,
        brokers: set[str] | None = None,
        correlation_ids: set[int] | None = None,
        errors_only: bool = False,
    ) -> None:
        self.apis = set() if apis is None else apis
        self.topics = set() if topics is None else topics
        self.clients = set() if clients is None else clients
        self.brokers = set() if brokers is None else brokers
        self.correlation_ids = set() if correlation_ids is None else correlation_ids
        self.errors_only = errors_only
        from kafka_epochs.exchanges import api_name  # here, not per exchange nor for every command

        self._api_name = api_name

    def __bool__(self) -> bool:
        return bool(
            self.apis or self.topics or self.clients or self.brokers or self.correlation_ids or self.errors_only
        )

    def matches_flow(self, exchange: Any) -> bool:
        """The filters that need no rendering: api, correlation id, client, broker."""
        if self.apis and self._api_name(exchange) not in self.apis:
            return False
        if self.correlation_ids and _correlation_id(exchange) not in self.correlation_ids:
            return False
        flow = exchange.flow
        if self.clients and not (
            _endpoint_matches(flow, "client", self.clients) or _client_id(exchange) in self.clients
        ):
            return False
        return not self.brokers or _endpoint_matches(flow, "broker", self.brokers)

    def matches_content(self, exchange: Any, row: dict[str, Any]) -> bool:
        """The filters that read the rendered exchange: topic, errors only."""
        if self.topics and not self.topics & _topics_in(row):
            return False
        return not self.errors_only or has_problem(exchange, row)

    def describe(self) -> str:
        parts = [
            f"--api {' '.join(sorted(self.apis))}" if self.apis else "",
            f"--topic {' '.join(sorted(self.topics))}" if self.topics else "",
            f"--client {' '.join(sorted(self.clients))}" if self.clients else "",
            f"--broker {' '.join(sorted(self.brokers))}" if self.brokers else "",
            f"--correlation-id {' '.join(map(str, sorted(self.correlation_ids)))}" if self.correlation_ids else "",
            "--errors-only" if self.errors_only else "",
        ]
        return ", ".join(p for p in parts if p)


def api_names(protocol: Any, wanted: list[str]) -> set[str]:
    """``--api`` values as the names exchanges carry; ValueError naming the known ones otherwise."""
    from kafka_epochs.traffic import SASL_TOKENS

    known = {
        name.removesuffix("Request").removesuffix("Response")
        for name in protocol.names()
        if name.endswith(("Request", "Response"))
    } | {SASL_TOKENS}
    by_lower = {name.lower(): name for name in known}
    names = set()
    for text in wanted:
        if text.lstrip("-").isdigit():
            try:
                names.add(protocol.message_for(int(text), "request").__name__.removesuffix("Request"))
            except KeyError:
                raise ValueError(
                    f"--api {text}: no api has key {text} (known keys: {', '.join(map(str, protocol.api_keys()))})"
                ) from None
            continue
        bare = text.lower().removesuffix("request").removesuffix("response")
        if bare not in by_lower:
            raise ValueError(
                f"--api {text}: no such api{_closest(bare, by_lower)}; known apis: {', '.join(sorted(known))}"
            )
        names.add(by_lower[bare])
    return names


def _closest(text: str, by_lower: dict[str, str]) -> str:
    import difflib

    near = difflib.get_close_matches(text, list(by_lower), n=1)
    return f" (did you mean {by_lower[near[0]]}?)" if near else ""


def _correlation_id(exchange: Any) -> int | None:
    event = exchange.request or exchange.response
    return None if event is None else event.correlation_id


def _client_id(exchange: Any) -> str | None:
    request = exchange.request
    if request is None or request.decoded is None:
        return None
    return getattr(request.decoded.header, "client_id", None)


def _endpoint_matches(flow: Any, side: str, wanted: set[str]) -> bool:
    if flow is None:
        return False
    end = flow.client if side == "client" else flow.broker
    address = str(end.address)
    with_port = f"[{address}]:{end.port}" if ":" in address else f"{address}:{end.port}"
    return address in wanted or with_port in wanted or f"{address}:{end.port}" in wanted


#: Field names that hold a topic's name or id, in every api that names topics.
_TOPIC_FIELDS = frozenset({"topic", "topic_name", "topic_id"})


def _topics_in(row: dict[str, Any]) -> set[str]:
    """Topic names and ids a rendered exchange mentions: ``topic``, ``topic_name`` and ``topic_id``
    fields anywhere, and ``name`` fields of elements of arrays called ``topics``."""
    found: set[str] = set()
    stack: list[tuple[Any, bool]] = [(row.get("request"), False), (row.get("response"), False)]
    while stack:
        value, in_topics = stack.pop()
        if isinstance(value, dict):
            for key, item in value.items():
                if isinstance(item, str) and (key in _TOPIC_FIELDS or (in_topics and key == "name")):
                    found.add(item)
                elif isinstance(item, (dict, list)):
                    stack.append((item, key == "topics"))
        elif isinstance(value, list):
            stack.extend((item, in_topics) for item in value)
    return found


def has_problem(exchange: Any, row: dict[str, Any]) -> bool:
    """A frame that did not decode or pair, a non-zero response error code, a bad record batch."""
    return not exchange.ok or bool(row.get("errors") or row.get("record_errors"))
