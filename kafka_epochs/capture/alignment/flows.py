"""Which TCP connections are Kafka, and which end of each is the broker.

A connection is Kafka when either end uses a *Kafka port*: the configured ones (9092 by default),
and, with auto-detection on, every port learnt from an ApiVersions handshake. The broker is the end
on the Kafka port; when both ends are on one, the end that answered the SYN, else the lower port.

Auto-detection: a connection on no known port is held back (its handshake and first payload
segments, a bounded number) until its first payload bytes arrive. If they are an ApiVersions
request (api key 18: what every modern client sends first), the receiving end's port becomes a
Kafka port, and this connection, the held ones on that port, and later ones on it are followed
(earlier ones dropped as "not Kafka" come back mid-stream: their first bytes are gone). Anything
else as the first payload, or the server speaking first, marks the connection not Kafka.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable

from kafka_epochs.capture.events import Direction, Endpoint, Flow
from kafka_epochs.capture.network.tcp import ACK, FIN, RST, SYN, Segment
from kafka_epochs.capture.stats import CaptureStats
from kafka_epochs.resync import REQUEST_PREFIX, plausible_request

DEFAULT_PORTS = frozenset({9092})
API_VERSIONS_KEY = 18
#: Segments held per undecided connection; a connection still undecided after that many is not followed.
MAX_HELD_SEGMENTS = 32
#: Undecided connections held at once; one more gives up the oldest (a scan of other ports must
#: not grow memory without end).
MAX_UNDECIDED = 4096
#: Directions of connections remembered as decided, and connections remembered as not Kafka; past
#: that the oldest are forgotten (and decided again from their ports if they come back).
MAX_REMEMBERED = 131_072
EVICTED_UNDECIDED = "undecided connection given up (too many held)"
NOT_KAFKA = "not Kafka"
UNDECIDED = "undecided at end of capture"
BARE_ACK_UNDECIDED = "bare ACK of a connection not yet identified"

_Pair = tuple[Endpoint, Endpoint]
_Decision = tuple[Flow, Direction]


def looks_like_api_versions_request(first_bytes: bytes) -> bool:
    """Whether a connection's first client bytes begin an ApiVersions request frame."""
    return (
        len(first_bytes) >= REQUEST_PREFIX
        and first_bytes[4:6] == API_VERSIONS_KEY.to_bytes(2, "big")
        and plausible_request(first_bytes, 0)
    )


class _Undecided:
    """A connection on no known port, held until its first payload tells what it is."""

    __slots__ = ("client", "first_bytes", "first_sender", "segments")

    def __init__(self) -> None:
        self.segments: list[Segment] = []
        self.client: Endpoint | None = None  # known from the handshake
        self.first_sender: Endpoint | None = None
        self.first_bytes = b""


def _pair(a: Endpoint, b: Endpoint) -> _Pair:
    return (a, b) if a <= b else (b, a)


class FlowClassifier:
    """Decides, segment by segment, whether the segment's connection is Kafka and its direction."""

    def __init__(
        self, ports: Iterable[int] | None = None, *, auto_detect: bool = True, stats: CaptureStats | None = None
    ) -> None:
        self.ports: set[int] = set(DEFAULT_PORTS if ports is None else ports)
        self.auto_detect = auto_detect
        self.stats = stats if stats is not None else CaptureStats()
        # Ordered, to forget the oldest in O(1) (a dict would scan past the entries deleted from its front).
        self._decided: OrderedDict[_Pair, _Decision] = OrderedDict()  # keyed by (source, destination) as sent
        self._undecided: OrderedDict[_Pair, _Undecided] = OrderedDict()  # keyed by the ordered pair
        self._not_kafka: OrderedDict[_Pair, None] = OrderedDict()  # a set in order of insertion
        self._released: list[tuple[Flow, Direction, Segment]] = []

    def classify(self, segment: Segment) -> _Decision | None:
        """``(flow, direction)`` for a Kafka segment; ``None`` when it is not Kafka or held back.

        Held segments come back, in order, from :meth:`take_released` once their connection is
        found to be Kafka.
        """
        decided = self._decided.get((segment.source, segment.destination))
        if decided is not None:
            return decided
        return self._classify_new(segment)

    def decided(self, segment: Segment) -> _Decision | None:
        """``(flow, direction)`` of a segment of a connection already found to be Kafka, else None
        (a look that decides nothing)."""
        return self._decided.get((segment.source, segment.destination))

    def opening(self, source: Endpoint, destination: Endpoint) -> _Decision | None:
        """:meth:`classify` of a SYN without ACK from ``source`` to ``destination``, where it
        decides at once: a connection on a Kafka port of which nothing is known (else None,
        and nothing changed: :meth:`classify` judges it)."""
        ports = self.ports
        source_on, destination_on = source.port in ports, destination.port in ports
        if not (source_on or destination_on) or (source, destination) in self._decided:
            return None
        pair = _pair(source, destination)
        if pair in self._not_kafka or pair in self._undecided:
            return None
        # (as _flow_on_ports: the end on a Kafka port is the broker; on both, the SYN's sender is the client)
        flow = Flow(destination, source) if source_on and not destination_on else Flow(source, destination)
        return self._decide(flow, source, destination)

    def take_released(self) -> list[tuple[Flow, Direction, Segment]]:
        released, self._released = self._released, []
        return released

    def finish(self) -> None:
        """The capture is over: connections still undecided are counted as ignored."""
        for undecided in self._undecided.values():
            self.stats.ignored[UNDECIDED] += len(undecided.segments)
        self._undecided.clear()

    # -- internals

    def _classify_new(self, segment: Segment) -> _Decision | None:
        source, destination = segment.source, segment.destination
        pair = _pair(source, destination)
        opening = segment.flags & (SYN | ACK) == SYN
        if pair in self._not_kafka:
            if not opening:
                self.stats.ignored[NOT_KAFKA] += 1
                return None
            del self._not_kafka[pair]  # a new connection on the same 4-tuple is judged afresh
        if source.port in self.ports or destination.port in self.ports:
            undecided = self._undecided.pop(pair, None)
            flow = self._flow_on_ports(segment, undecided)
            if undecided is None:
                return self._decide(flow, segment.source, segment.destination)
            self._release(flow, [*undecided.segments, segment])
            return None
        if not self.auto_detect:
            self._reject(pair, 1)
            return None
        self._hold(pair, segment)
        return None

    def _flow_on_ports(self, segment: Segment, undecided: _Undecided | None) -> Flow:
        source, destination = segment.source, segment.destination
        source_on = source.port in self.ports
        destination_on = destination.port in self.ports
        if source_on != destination_on:
            return Flow(destination, source) if source_on else Flow(source, destination)
        client = undecided.client if undecided is not None else None
        if client is None and segment.flags & SYN:
            client = destination if segment.flags & ACK else source
        if client is None:
            client = source if source.port > destination.port else destination
        return Flow(client, destination if client == source else source)

    def _decide(self, flow: Flow, source: Endpoint, destination: Endpoint) -> _Decision:
        """Both directions of ``flow`` decided; the one from ``source`` to ``destination``."""
        decided = self._decided
        decided[(flow.client, flow.broker)] = (flow, Direction.CLIENT_TO_BROKER)
        decided[(flow.broker, flow.client)] = (flow, Direction.BROKER_TO_CLIENT)
        found = decided[(source, destination)]
        while len(decided) > MAX_REMEMBERED:
            decided.popitem(last=False)
        return found

    def _release(self, flow: Flow, segments: list[Segment]) -> None:
        for held in segments:
            flow, direction = self._decide(flow, held.source, held.destination)
            self._released.append((flow, direction, held))

    def _reject(self, pair: _Pair, segments: int) -> None:
        self._not_kafka[pair] = None
        if len(self._not_kafka) > MAX_REMEMBERED:
            self._not_kafka.popitem(last=False)
        self.stats.ignored[NOT_KAFKA] += segments

    def _hold(self, pair: _Pair, segment: Segment) -> None:
        undecided = self._undecided.get(pair)
        if undecided is None:
            if len(self._undecided) >= MAX_UNDECIDED:
                _, oldest = self._undecided.popitem(last=False)
                self.stats.ignored[EVICTED_UNDECIDED] += len(oldest.segments)
            undecided = self._undecided[pair] = _Undecided()
        flags = segment.flags
        if flags & SYN:
            undecided.client = segment.destination if flags & ACK else segment.source
        if segment.payload or flags & (SYN | FIN | RST):
            undecided.segments.append(segment)
        else:
            self.stats.ignored[BARE_ACK_UNDECIDED] += 1  # nothing to reassemble in it
        if segment.payload:
            if undecided.first_sender is None:
                undecided.first_sender = segment.source
            if segment.source == undecided.first_sender and len(undecided.first_bytes) < REQUEST_PREFIX:
                undecided.first_bytes += segment.payload[:REQUEST_PREFIX]
        verdict = self._verdict(undecided)
        if verdict is None:
            if len(undecided.segments) > MAX_HELD_SEGMENTS:
                del self._undecided[pair]
                self._reject(pair, len(undecided.segments))
            return None
        del self._undecided[pair]
        if not verdict:
            self._reject(pair, len(undecided.segments))
            return None
        client = undecided.first_sender
        if client is None:  # a verdict needs a first sender; this keeps the type checker informed
            return None
        broker = pair[1] if pair[0] == client else pair[0]
        self.learn_port(broker.port)
        self._release(Flow(client, broker), undecided.segments)
        return None

    @staticmethod
    def _verdict(undecided: _Undecided) -> bool | None:
        """True: Kafka; False: not; None: too few bytes yet."""
        if undecided.first_sender is None:
            return None
        if undecided.client is not None and undecided.first_sender != undecided.client:
            return False  # the server spoke first: Kafka brokers never do
        if len(undecided.first_bytes) < REQUEST_PREFIX:
            return None
        return looks_like_api_versions_request(undecided.first_bytes)

    def learn_port(self, port: int) -> None:
        """Make ``port`` a Kafka port: connections held or dropped on it are followed from now on."""
        if port in self.ports:
            return
        self.ports.add(port)
        self.stats.detected_ports.add(port)
        # Connections held on this port are Kafka too; rejected ones get another chance.
        for pair in [p for p in self._undecided if p[0].port == port or p[1].port == port]:
            undecided = self._undecided.pop(pair)
            if undecided.segments:
                first = undecided.segments[0]
                self._release(self._flow_on_ports(first, undecided), undecided.segments)
        self._not_kafka = OrderedDict((p, None) for p in self._not_kafka if p[0].port != port and p[1].port != port)
