"""A single-node Kafka broker for tests, built from this project's codec, on 127.0.0.1 only.

Real client libraries speak Apache Kafka's versions, so requests are decoded and responses
encoded with the protocol generated from Apache Kafka's own specs (the ``reference_protocol``
fixture). The broker keeps every partition's record batches in memory, as the producer sent
them except for the two header fields a real broker stamps (base offset and partition leader
epoch, which the batch CRC does not cover), and serves them back to consumers.

Every connection's raw bytes are recorded in both directions with their times
(:attr:`LoopbackBroker.recordings`), and every request with the response it got
(:attr:`LoopbackBroker.exchanges`). Anything the broker cannot serve (an unknown api, a version
it does not have, a frame that does not decode) closes that connection and is noted in
:attr:`LoopbackBroker.errors`, which a test should expect to be empty.

Options off by default widen it for ``benchmarks/real_shaped.py``: ``more_admin`` answers the rest
of the admin apis real admin clients send (:data:`MORE_ADMIN_APIS`), ``cluster`` makes several
brokers one cluster sharing their state (Metadata names them all and spreads the leaders), and
``host``/``port`` put a broker on another loopback address and a fixed port.

Each thread runs a loop that ends on :meth:`LoopbackBroker.stop` or, at the latest, when the
broker's lifetime (``max_lifetime_s``) is over; use the broker as a context manager so that it
stops even when a test fails.
"""

from __future__ import annotations

import contextlib
import socket
import struct
import threading
import time
import uuid
import zlib
from dataclasses import dataclass, field
from typing import Any

from kafka_epochs.framing import FrameBuffer
from kafka_epochs.protocol import Decoded, Protocol

# Api keys this broker serves.
PRODUCE = 0
FETCH = 1
LIST_OFFSETS = 2
METADATA = 3
OFFSET_COMMIT = 8
OFFSET_FETCH = 9
FIND_COORDINATOR = 10
JOIN_GROUP = 11
HEARTBEAT = 12
LEAVE_GROUP = 13
SYNC_GROUP = 14
ADD_PARTITIONS_TO_TXN = 24
ADD_OFFSETS_TO_TXN = 25
END_TXN = 26
TXN_OFFSET_COMMIT = 28
CREATE_TOPICS = 19
DELETE_TOPICS = 20
DESCRIBE_CONFIGS = 32
#: What ``admin=True`` adds, with the versions served at most (DeleteTopics v6 may name topics by id).
ADMIN_APIS = {CREATE_TOPICS: 7, DELETE_TOPICS: 5, DESCRIBE_CONFIGS: 4}
TOPIC_RESOURCE = 2
TOPIC_ALREADY_EXISTS = 36
#: The configs DescribeConfigs reports for every topic, as topic overrides (source 1: clients hide defaults).
TOPIC_CONFIGS = {"cleanup.policy": "delete", "retention.ms": "604800000", "segment.bytes": "1073741824"}
#: What ``groups=True`` adds: a one-node group coordinator, with the versions it serves at most
#: (OffsetCommit/OffsetFetch v10 name topics by id, which this broker's offset store does not).
GROUP_APIS = {OFFSET_COMMIT: 9, OFFSET_FETCH: 9, JOIN_GROUP: 9, HEARTBEAT: 4, LEAVE_GROUP: 5, SYNC_GROUP: 5}
#: KIP-848's consumer group protocol (Kafka 4): what librdkafka's group.protocol=consumer speaks.
CONSUMER_GROUP_HEARTBEAT = 68
API_VERSIONS = 18
SASL_HANDSHAKE = 17
INIT_PRODUCER_ID = 22
OFFSET_FOR_LEADER_EPOCH = 23
SASL_AUTHENTICATE = 36
#: What ``transactions=True`` adds (with a coordinator, as ``groups=True``): the client-side
#: transaction apis, at the versions before KIP-890's server-side changes (AddPartitionsToTxn v4+
#: is broker to broker; EndTxn v5 bumps epochs); InitProducerId v6 is unstable in its spec.
TXN_APIS = {INIT_PRODUCER_ID: 5, ADD_PARTITIONS_TO_TXN: 3, ADD_OFFSETS_TO_TXN: 3, END_TXN: 4, TXN_OFFSET_COMMIT: 3}

# Error codes (Apache Kafka's numbering).
NONE = 0
OFFSET_OUT_OF_RANGE = 1
CORRUPT_MESSAGE = 2
UNKNOWN_TOPIC_OR_PARTITION = 3
COORDINATOR_NOT_AVAILABLE = 15
UNKNOWN_MEMBER_ID = 25
UNSUPPORTED_SASL_MECHANISM = 33
UNSUPPORTED_VERSION = 35
SASL_AUTHENTICATION_FAILED = 58
MEMBER_ID_REQUIRED = 79
INVALID_REQUEST = 42
FENCED_LEADER_EPOCH = 74
UNKNOWN_LEADER_EPOCH = 75
UNKNOWN_TOPIC_ID = 100

#: What ``more_admin=True`` adds: the rest of the admin apis that kafka-python's, aiokafka's,
#: librdkafka's and kafkajs's admin clients send, answered with plausible results (names echoed,
#: every error code 0, nothing changed but the group and partition counts), at Apache's maxima.
MORE_ADMIN_APIS = {
    15: "DescribeGroups",
    16: "ListGroups",
    21: "DeleteRecords",
    29: "DescribeAcls",
    30: "CreateAcls",
    31: "DeleteAcls",
    33: "AlterConfigs",
    35: "DescribeLogDirs",
    37: "CreatePartitions",
    42: "DeleteGroups",
    43: "ElectLeaders",
    44: "IncrementalAlterConfigs",
    45: "AlterPartitionReassignments",
    46: "ListPartitionReassignments",
    47: "OffsetDelete",
    48: "DescribeClientQuotas",
    49: "AlterClientQuotas",
    50: "DescribeUserScramCredentials",
    51: "AlterUserScramCredentials",
    60: "DescribeCluster",
    61: "DescribeProducers",
    65: "DescribeTransactions",
    66: "ListTransactions",
}
SCRAM_SHA_256 = 1

#: Lowest versions served: record batches (magic 2) only, so Produce from v3 and Fetch from v4.
MIN_VERSIONS = {
    PRODUCE: 3,
    FETCH: 4,
    LIST_OFFSETS: 0,
    METADATA: 0,
    FIND_COORDINATOR: 0,
    API_VERSIONS: 0,
    INIT_PRODUCER_ID: 0,
    OFFSET_FOR_LEADER_EPOCH: 0,
}
#: Upper bounds whatever the spec directory holds: Produce v12 is Apache Kafka 4.0's in its specs
#: but this project's KIP-359 layout in its bundled ones, so no client may be offered it.
APACHE_CAPS = {PRODUCE: 11}
#: Served and advertised by default. FindCoordinator only answers COORDINATOR_NOT_AVAILABLE, but
#: librdkafka enables LZ4 only for brokers that list FindCoordinator v0 (its feature map takes
#: that as the mark of a broker from 0.8.2 on), so it is listed.
DEFAULT_APIS = (PRODUCE, FETCH, LIST_OFFSETS, METADATA, FIND_COORDINATOR, API_VERSIONS, OFFSET_FOR_LEADER_EPOCH)
#: Authorized-operations fields when the client did not ask for them (Integer.MIN_VALUE).
OPERATIONS_NOT_REQUESTED = -(2**31)
#: Where a v2 batch keeps the fields this broker reads or stamps.
_BASE_OFFSET = struct.Struct(">q")
_LEADER_EPOCH_AT = 12
_MAGIC_AT = 16
_LAST_OFFSET_DELTA = struct.Struct(">i")
_LAST_OFFSET_DELTA_AT = 23
_BATCH_HEADER = 61
_INT32 = struct.Struct(">i")


@dataclass
class ConnectionRecording:
    """The raw bytes of one connection, in the order they crossed it.

    ``chunks`` holds ``(timestamp_ns, direction, data)``: direction ``"client"`` for bytes the
    client sent, ``"broker"`` for bytes the broker sent; ``timestamp_ns`` is ``time.time_ns()``
    when the bytes were received or handed to the socket.
    """

    client_addr: tuple[str, int]
    broker_addr: tuple[str, int]
    chunks: list[tuple[int, str, bytes]] = field(default_factory=list)

    def stream(self, direction: str) -> bytes:
        return b"".join(data for _, d, data in self.chunks if d == direction)


@dataclass
class Exchange:
    """One request and what the broker did with it."""

    connection: int  # index into the broker's recordings
    request_frame: bytes
    request: Decoded | None  # None when the broker answered without decoding (a too-new ApiVersions)
    response_frame: bytes | None = None
    response: Any = None  # the generated response message, None when none was sent
    response_version: int | None = None

    @property
    def api_key(self) -> int:
        return int(struct.unpack_from(">h", self.request_frame, 4)[0])

    @property
    def api_version(self) -> int:
        return int(struct.unpack_from(">h", self.request_frame, 6)[0])


@dataclass
class Partition:
    batches: list[bytes] = field(default_factory=list)  # stored v2 batches, offsets assigned
    base_offsets: list[int] = field(default_factory=list)
    next_offset: int = 0


@dataclass
class Topic:
    name: str
    topic_id: uuid.UUID
    partitions: list[Partition]


@dataclass
class Group:
    """A consumer group's state on the coordinator."""

    generation: int = 0
    leader: str = ""
    protocol: str = ""
    members: dict[str, dict[str, bytes]] = field(default_factory=dict)  # member id -> protocol -> metadata
    assignments: dict[str, bytes] = field(default_factory=dict)


class BrokerError(Exception):
    """A request this broker cannot serve; the connection is closed."""


class LoopbackBroker:
    """A threaded single-node broker on 127.0.0.1 and an ephemeral port."""

    def __init__(
        self,
        protocol: Protocol,
        *,
        node_id: int = 1,
        partitions: int = 3,
        leader_epoch: int = 7,
        auto_create: bool = True,
        max_versions: dict[int, int] | None = None,
        advertise: tuple[int, ...] = DEFAULT_APIS,
        fetch_wait_cap_s: float = 0.1,
        max_lifetime_s: float = 120.0,
        cluster_id: str = "kafka-epochs-loopback",
        sasl_users: dict[str, str] | None = None,
        sasl_authenticate: bool = False,
        groups: bool = False,
        admin: bool = False,
        transactions: bool = False,
        more_admin: bool = False,
        cluster: LoopbackBroker | None = None,
        host: str = "127.0.0.1",
        port: int = 0,
        consumer_groups: bool = False,
    ) -> None:
        self.protocol = protocol
        self.node_id = node_id
        self.default_partitions = partitions
        self.leader_epoch = leader_epoch
        self.auto_create = auto_create
        self.fetch_wait_cap_s = fetch_wait_cap_s
        self.max_lifetime_s = max_lifetime_s
        self.cluster_id = cluster_id
        # Versions advertised: what the reference protocol has (Apache's maximum), capped by
        # max_versions, from this broker's minimum.
        self.versions: dict[int, tuple[int, int]] = {}
        caps = {**APACHE_CAPS, **(max_versions or {})}
        for key in advertise:
            known = protocol.versions(key)
            high = min(known.stop - 1, caps.get(key, known.stop - 1))
            self.versions[key] = (MIN_VERSIONS.get(key, known.start), high)
        # SASL/PLAIN (user -> password): a SaslHandshake is then required. Without SaslAuthenticate
        # advertised, clients fall back to handshake v0 and raw tokens with no Kafka header.
        self.sasl_users = sasl_users
        if sasl_users is not None:
            self.versions[SASL_HANDSHAKE] = (0, 1 if sasl_authenticate else 0)
            if sasl_authenticate:
                self.versions[SASL_AUTHENTICATE] = (0, min(2, protocol.versions(SASL_AUTHENTICATE).stop - 1))
        self._raw_token_next: set[int] = set()  # connections whose next frame is a raw SASL token
        # a group coordinator for consumer groups: this node for every group
        self.groups = groups or transactions
        if transactions:
            for key, high in TXN_APIS.items():
                self.versions[key] = (0, min(high, protocol.versions(key).stop - 1))
        #: (transactional id, producer id, committed?) for every EndTxn, in order
        self.ended_transactions: list[tuple[str, int, bool]] = []
        self._txn_producers: dict[str, int] = {}
        if self.groups:
            for key, high in GROUP_APIS.items():
                self.versions[key] = (0, min(high, protocol.versions(key).stop - 1))
        if admin or more_admin:
            for key, high in ADMIN_APIS.items():
                self.versions[key] = (0, min(high, protocol.versions(key).stop - 1))
        if more_admin:
            self.groups = True
            for key in (*GROUP_APIS, *MORE_ADMIN_APIS):
                self.versions[key] = (0, min(GROUP_APIS.get(key, 99), protocol.versions(key).stop - 1))
        if consumer_groups:  # KIP-848: the coordinator assigns every partition of what a member subscribes
            self.groups = True
            for key, high in GROUP_APIS.items():
                self.versions[key] = (0, min(high, protocol.versions(key).stop - 1))
            self.versions[CONSUMER_GROUP_HEARTBEAT] = (0, min(1, protocol.versions(CONSUMER_GROUP_HEARTBEAT).stop - 1))
        for key, high in (max_versions or {}).items():  # a cap applies to the apis the options add, too
            if key in self.versions:
                low = self.versions[key][0]
                self.versions[key] = (low, max(low, min(high, self.versions[key][1])))
        self.group_state: dict[str, Group] = {}
        self.committed: dict[tuple[str, str, int], int] = {}  # (group, topic, partition) -> offset
        self.topics: dict[str, Topic] = {}
        self.recordings_list: list[ConnectionRecording] = []
        self.exchanges: list[Exchange] = []
        self.errors: list[str] = []
        self._lock = threading.Lock()
        self._data = threading.Condition(self._lock)  # notified when a partition grows
        #: The brokers of this one's cluster, this one included, in node order. With ``cluster``
        #: (a started broker), this broker joins that one's cluster: it shares its topics, groups,
        #: offsets and transactions (and its lock), Metadata names every member and spreads the
        #: partition leaders over them, and FindCoordinator spreads the coordinators.
        self.members: list[LoopbackBroker] = [self]
        if cluster is not None:
            self.members = cluster.members
            self.members.append(self)
            self.topics, self.group_state, self.committed = cluster.topics, cluster.group_state, cluster.committed
            self._txn_producers, self.ended_transactions = cluster._txn_producers, cluster.ended_transactions
            self._lock, self._data = cluster._lock, cluster._data
            self.cluster_id = cluster.cluster_id
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self._sockets: list[socket.socket] = []
        self._listener: socket.socket | None = None
        self._deadline = 0.0
        self._next_producer_id = 1000 * node_id
        self.host = host  # another loopback address (127.0.0.2, ...) lets brokers share a port
        self.port = port  # 0: an ephemeral one

    # -- lifecycle ----------------------------------------------------------------------------

    def start(self) -> LoopbackBroker:
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind((self.host, self.port))
        listener.listen(64)
        listener.settimeout(0.05)
        self._listener = listener
        self.port = listener.getsockname()[1]
        self._deadline = time.monotonic() + self.max_lifetime_s
        self._spawn(self._accept_loop, "broker-accept")
        return self

    def stop(self, timeout: float = 5.0) -> None:
        """Stop accepting, close every connection and join every thread (bounded by ``timeout``)."""
        self._stop.set()
        with self._data:
            self._data.notify_all()
        end = time.monotonic() + timeout
        accept, *_ = self._threads or [None]
        if accept is not None:
            accept.join(timeout)  # after this no connection can be added
        with self._lock:
            sockets = list(self._sockets)
        for sock in sockets:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
        for thread in list(self._threads):
            thread.join(max(0.0, end - time.monotonic()))
            if thread.is_alive():
                self.errors.append(f"thread {thread.name} did not stop within {timeout} s")
        for sock in sockets:
            sock.close()
        if self._listener is not None:
            self._listener.close()

    def __enter__(self) -> LoopbackBroker:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def bootstrap(self) -> str:
        return f"{self.host}:{self.port}"

    @property
    def recordings(self) -> list[ConnectionRecording]:
        """Every connection so far, with copies of its chunks taken under the lock."""
        with self._lock:
            return [ConnectionRecording(r.client_addr, r.broker_addr, list(r.chunks)) for r in self.recordings_list]

    def requests(self, api_key: int) -> list[Exchange]:
        with self._lock:
            return [x for x in self.exchanges if x.api_key == api_key]

    def create_topic(self, name: str, partitions: int | None = None) -> Topic:
        with self._lock:
            return self._create(name, partitions)

    def _create(self, name: str, partitions: int | None = None) -> Topic:
        topic = self.topics.get(name)
        if topic is None:
            count = self.default_partitions if partitions is None else partitions
            topic = Topic(name, uuid.uuid4(), [Partition() for _ in range(count)])
            self.topics[name] = topic
        return topic

    def _spawn(self, target: Any, name: str, *args: Any) -> None:
        thread = threading.Thread(target=target, args=args, name=name, daemon=True)
        self._threads.append(thread)
        thread.start()

    def _running(self) -> bool:
        return not self._stop.is_set() and time.monotonic() < self._deadline

    # -- sockets ------------------------------------------------------------------------------

    def _accept_loop(self) -> None:
        assert self._listener is not None
        while self._running():
            try:
                sock, addr = self._listener.accept()
            except TimeoutError:
                continue
            except OSError:
                break
            sock.settimeout(0.05)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            with self._lock:
                index = len(self.recordings_list)
                self.recordings_list.append(ConnectionRecording(addr, sock.getsockname()))
                self._sockets.append(sock)
            self._spawn(self._serve, f"broker-conn-{index}", sock, index)

    def _serve(self, sock: socket.socket, index: int) -> None:
        frames = FrameBuffer()
        recording = self.recordings_list[index]
        try:
            while self._running():
                try:
                    data = sock.recv(1 << 16)
                except TimeoutError:
                    continue
                except OSError:
                    return
                if not data:
                    return
                with self._lock:
                    recording.chunks.append((time.time_ns(), "client", data))
                frames.feed(data)
                for frame in frames:
                    reply = self._handle(frame, index)
                    if reply is not None:
                        sent_at = time.time_ns()
                        sock.sendall(reply)  # recorded once the client has it all
                        with self._lock:
                            recording.chunks.append((sent_at, "broker", reply))
        except BrokerError as e:
            with self._lock:
                self.errors.append(f"connection {index} closed: {e}")
        except OSError:
            pass  # the client went away mid-send
        except Exception as e:  # a frame that does not decode, or a bug here: the test must see it
            with self._lock:
                self.errors.append(f"connection {index} closed: {type(e).__name__}: {e}")
        finally:
            sock.close()

    # -- requests -----------------------------------------------------------------------------

    def _handle(self, frame: bytes, index: int) -> bytes | None:
        if index in self._raw_token_next:
            self._raw_token_next.discard(index)
            if not self._plain_ok(frame[4:]):
                raise BrokerError("SASL/PLAIN authentication failed (raw token)")  # Kafka closes, too
            return struct.pack(">i", 0)  # PLAIN's answer: an empty token, size-prefixed, no header
        if len(frame) < 12:
            raise BrokerError(f"a {len(frame)}-byte frame is too short for a request header")
        _, api_key, version, correlation_id = struct.unpack_from(">ihhi", frame, 0)
        if api_key == API_VERSIONS and version > self.versions[API_VERSIONS][1]:
            # Kafka's rule: a too-new ApiVersions request gets a v0 answer with
            # UNSUPPORTED_VERSION and the list, so that the client can retry at a version we have.
            body = self._api_versions_body(UNSUPPORTED_VERSION)
            return self._reply(Exchange(index, frame, None), body, 0, correlation_id)
        if api_key not in self.versions:
            raise BrokerError(f"api key {api_key} (v{version}) is not served by this broker")
        low, high = self.versions[api_key]
        if not low <= version <= high:
            raise BrokerError(f"api key {api_key} v{version} is outside the advertised {low}-{high}")
        decoded = self.protocol.decode_request(frame)
        exchange = Exchange(index, frame, decoded)
        if api_key == SASL_HANDSHAKE:
            body = self._sasl_handshake(decoded.body, version, index)
            return self._reply(exchange, body, version, correlation_id)
        handler = {
            API_VERSIONS: self._api_versions,
            METADATA: self._metadata,
            PRODUCE: self._produce,
            LIST_OFFSETS: self._list_offsets,
            FETCH: self._fetch,
            INIT_PRODUCER_ID: self._init_producer_id,
            FIND_COORDINATOR: self._find_coordinator,
            OFFSET_FOR_LEADER_EPOCH: self._offset_for_leader_epoch,
            SASL_AUTHENTICATE: self._sasl_authenticate,
            JOIN_GROUP: self._join_group,
            SYNC_GROUP: self._sync_group,
            HEARTBEAT: self._heartbeat,
            LEAVE_GROUP: self._leave_group,
            OFFSET_COMMIT: self._offset_commit,
            OFFSET_FETCH: self._offset_fetch,
            CREATE_TOPICS: self._create_topics,
            DELETE_TOPICS: self._delete_topics,
            DESCRIBE_CONFIGS: self._describe_configs,
            ADD_PARTITIONS_TO_TXN: self._add_partitions_to_txn,
            ADD_OFFSETS_TO_TXN: self._add_offsets_to_txn,
            END_TXN: self._end_txn,
            TXN_OFFSET_COMMIT: self._txn_offset_commit,
            CONSUMER_GROUP_HEARTBEAT: self._consumer_group_heartbeat,
        }.get(api_key) or getattr(self, "_" + _snake(MORE_ADMIN_APIS[api_key]))
        body = handler(decoded.body, version)
        if body is None:  # acks=0: no answer, but the request is kept
            with self._lock:
                self.exchanges.append(exchange)
            return None
        return self._reply(exchange, body, version, correlation_id)

    def _reply(self, exchange: Exchange, body: Any, version: int, correlation_id: int) -> bytes:
        frame = self.protocol.encode_response(body, version, correlation_id)
        exchange.response, exchange.response_version, exchange.response_frame = body, version, frame
        with self._lock:
            self.exchanges.append(exchange)
        return frame

    def _msg(self, name: str) -> Any:
        return self.protocol.message(name)

    # ApiVersions -------------------------------------------------------------------------------

    def _api_versions_body(self, error_code: int) -> Any:
        cls = self._msg("ApiVersionsResponse")
        keys = [
            cls.ApiVersion(api_key=key, min_version=low, max_version=high)
            for key, (low, high) in sorted(self.versions.items())
        ]
        return cls(error_code=error_code, api_keys=keys, throttle_time_ms=0)

    def _api_versions(self, request: Any, version: int) -> Any:
        return self._api_versions_body(NONE)

    # SASL/PLAIN --------------------------------------------------------------------------------

    def _plain_ok(self, token: bytes) -> bool:
        """A PLAIN token is authzid NUL user NUL password (RFC 4616)."""
        parts = token.split(b"\x00")
        if len(parts) != 3 or self.sasl_users is None:
            return False
        user, password = parts[1].decode(errors="replace"), parts[2].decode(errors="replace")
        return self.sasl_users.get(user) == password

    def _sasl_handshake(self, request: Any, version: int, index: int) -> Any:
        ok = self.sasl_users is not None and request.mechanism == "PLAIN"
        if ok and version == 0:
            self._raw_token_next.add(index)
        return self._msg("SaslHandshakeResponse")(
            error_code=NONE if ok else UNSUPPORTED_SASL_MECHANISM, mechanisms=["PLAIN"]
        )

    def _sasl_authenticate(self, request: Any, version: int) -> Any:
        ok = self._plain_ok(request.auth_bytes)
        return self._msg("SaslAuthenticateResponse")(
            error_code=NONE if ok else SASL_AUTHENTICATION_FAILED,
            error_message=None if ok else "bad user or password",
            auth_bytes=b"",
        )

    # Metadata ----------------------------------------------------------------------------------

    def _metadata(self, request: Any, version: int) -> Any:
        cls = self._msg("MetadataResponse")
        may_create = self.auto_create and (version < 4 or request.allow_auto_topic_creation)
        with self._lock:
            if request.topics is None or (version == 0 and not request.topics):
                wanted = [(name, None) for name in sorted(self.topics)]
            else:
                wanted = [(t.name, t.topic_id) for t in request.topics]
            topics = []
            for name, topic_id in wanted:
                topic = self._lookup(name, topic_id)
                if topic is None and name is not None and may_create:
                    topic = self._create(name)
                if topic is None:
                    code = UNKNOWN_TOPIC_OR_PARTITION if name is not None else UNKNOWN_TOPIC_ID
                    topics.append(
                        cls.MetadataResponseTopic(
                            error_code=code,
                            name=name,
                            topic_id=topic_id or uuid.UUID(int=0),
                            partitions=[],
                            topic_authorized_operations=OPERATIONS_NOT_REQUESTED,
                        )
                    )
                    continue
                partitions = []
                for i in range(len(topic.partitions)):
                    replicas = self._replicas(topic.name, i)
                    partitions.append(
                        cls.MetadataResponsePartition(
                            error_code=NONE,
                            partition_index=i,
                            leader_id=replicas[0],
                            leader_epoch=self.leader_epoch,
                            replica_nodes=replicas,
                            isr_nodes=replicas,
                            offline_replicas=[],
                        )
                    )
                topics.append(
                    cls.MetadataResponseTopic(
                        error_code=NONE,
                        name=topic.name,
                        topic_id=topic.topic_id,
                        is_internal=False,
                        partitions=partitions,
                        topic_authorized_operations=OPERATIONS_NOT_REQUESTED,
                    )
                )
        brokers = [
            cls.MetadataResponseBroker(node_id=b.node_id, host=b.host, port=b.port, rack=None) for b in self.members
        ]
        return cls(
            throttle_time_ms=0,
            brokers=brokers,
            cluster_id=self.cluster_id,
            controller_id=self.members[0].node_id,
            topics=topics,
            cluster_authorized_operations=OPERATIONS_NOT_REQUESTED,
        )

    def _replicas(self, topic: str, partition: int) -> list[int]:
        """A partition's replicas, its leader first: this node alone, or up to three cluster members."""
        count = len(self.members)
        first = zlib.crc32(topic.encode()) + partition
        return [self.members[(first + k) % count].node_id for k in range(min(3, count))]

    def _coordinator(self, key: str) -> LoopbackBroker:
        return self.members[zlib.crc32(key.encode()) % len(self.members)]

    def _lookup(self, name: str | None, topic_id: uuid.UUID | None) -> Topic | None:
        if name is not None:
            return self.topics.get(name)
        for topic in self.topics.values():
            if topic.topic_id == topic_id:
                return topic
        return None

    # Produce -----------------------------------------------------------------------------------

    def _produce(self, request: Any, version: int) -> Any:
        cls = self._msg("ProduceResponse")
        responses = []
        with self._data:
            for topic_data in request.topic_data:
                topic = self.topics.get(topic_data.name)
                if topic is None and self.auto_create:
                    topic = self._create(topic_data.name)
                partitions = []
                for part in topic_data.partition_data:
                    code, base = self._append(topic, part.index, part.records)
                    partitions.append(
                        cls.PartitionProduceResponse(
                            index=part.index,
                            error_code=code,
                            base_offset=base,
                            log_append_time_ms=-1,
                            log_start_offset=0 if code == NONE else -1,
                            record_errors=[],
                            error_message=None,
                        )
                    )
                responses.append(cls.TopicProduceResponse(name=topic_data.name, partition_responses=partitions))
            self._data.notify_all()
        if request.acks == 0:
            return None
        return cls(responses=responses, throttle_time_ms=0)

    def _append(self, topic: Topic | None, index: int, records: bytes | None) -> tuple[int, int]:
        """Split ``records`` into v2 batches, give them offsets and store them (lock held)."""
        if topic is None or not 0 <= index < len(topic.partitions):
            return UNKNOWN_TOPIC_OR_PARTITION, -1
        data = records or b""
        batches: list[bytearray] = []
        pos = 0
        while pos < len(data):
            if len(data) - pos < _BATCH_HEADER:
                return CORRUPT_MESSAGE, -1
            length = _INT32.unpack_from(data, pos + 8)[0]
            end = pos + 12 + length
            if data[pos + _MAGIC_AT] != 2 or length < _BATCH_HEADER - 12 or end > len(data):
                return CORRUPT_MESSAGE, -1
            batches.append(bytearray(data[pos:end]))
            pos = end
        partition = topic.partitions[index]
        base = partition.next_offset
        for batch in batches:
            _BASE_OFFSET.pack_into(batch, 0, partition.next_offset)
            _INT32.pack_into(batch, _LEADER_EPOCH_AT, self.leader_epoch)
            partition.batches.append(bytes(batch))
            partition.base_offsets.append(partition.next_offset)
            partition.next_offset += _LAST_OFFSET_DELTA.unpack_from(batch, _LAST_OFFSET_DELTA_AT)[0] + 1
        return NONE, base

    # ListOffsets -------------------------------------------------------------------------------

    def _list_offsets(self, request: Any, version: int) -> Any:
        cls = self._msg("ListOffsetsResponse")
        topics = []
        with self._lock:
            for wanted in request.topics:
                topic = self.topics.get(wanted.name)
                partitions = []
                for p in wanted.partitions:
                    code, offset = self._offset_at(topic, p.partition_index, p.timestamp)
                    if code == NONE:
                        code = self._epoch_check(p.current_leader_epoch if version >= 4 else -1)
                    answer = cls.ListOffsetsPartitionResponse(partition_index=p.partition_index, error_code=code)
                    if version == 0:
                        answer.old_style_offsets = [offset] if code == NONE else []
                    else:
                        answer.timestamp = -1
                        answer.offset = offset if code == NONE else -1
                        answer.leader_epoch = self.leader_epoch if version >= 4 else -1
                    partitions.append(answer)
                topics.append(cls.ListOffsetsTopicResponse(name=wanted.name, partitions=partitions))
        return cls(throttle_time_ms=0, topics=topics)

    def _offset_at(self, topic: Topic | None, index: int, timestamp: int) -> tuple[int, int]:
        if topic is None or not 0 <= index < len(topic.partitions):
            return UNKNOWN_TOPIC_OR_PARTITION, -1
        if timestamp == -2:  # earliest
            return NONE, 0
        if timestamp == -1:  # latest
            return NONE, topic.partitions[index].next_offset
        return INVALID_REQUEST, -1  # lookups by time are beyond this broker

    def _epoch_check(self, current_leader_epoch: int) -> int:
        if current_leader_epoch in (-1, self.leader_epoch):
            return NONE
        return UNKNOWN_LEADER_EPOCH if current_leader_epoch > self.leader_epoch else FENCED_LEADER_EPOCH

    # Fetch ------------------------------------------------------------------------------------

    def _fetch(self, request: Any, version: int) -> Any:
        cls = self._msg("FetchResponse")
        wait = min(request.max_wait_ms / 1000.0, self.fetch_wait_cap_s)
        deadline = time.monotonic() + max(0.0, wait)
        with self._data:
            while True:
                responses, size = self._fetch_once(cls, request, version)
                left = deadline - time.monotonic()
                if size >= max(1, request.min_bytes) or left <= 0 or not self._running():
                    break
                self._data.wait(left)
        return cls(throttle_time_ms=0, error_code=NONE, session_id=0, responses=responses)

    def _fetch_once(self, cls: Any, request: Any, version: int) -> tuple[list[Any], int]:
        by_id = version >= 13
        budget = request.max_bytes if version >= 3 else 2**31 - 1
        total = 0
        responses = []
        for wanted in request.topics:
            topic = self._lookup(None if by_id else wanted.topic, wanted.topic_id if by_id else None)
            partitions = []
            for p in wanted.partitions:
                data = cls.PartitionData(
                    partition_index=p.partition,
                    error_code=NONE,
                    high_watermark=-1,
                    last_stable_offset=-1,
                    log_start_offset=-1,
                    aborted_transactions=None,
                    preferred_read_replica=-1,
                    records=b"",
                )
                partitions.append(data)
                if topic is None or not 0 <= p.partition < len(topic.partitions):
                    data.error_code = UNKNOWN_TOPIC_ID if by_id else UNKNOWN_TOPIC_OR_PARTITION
                    continue
                code = self._epoch_check(p.current_leader_epoch if version >= 9 else -1)
                partition = topic.partitions[p.partition]
                if code == NONE and not 0 <= p.fetch_offset <= partition.next_offset:
                    code = OFFSET_OUT_OF_RANGE
                data.error_code = code
                data.high_watermark = data.last_stable_offset = partition.next_offset
                data.log_start_offset = 0
                if code != NONE:
                    continue
                chosen = self._batches_from(
                    partition, p.fetch_offset, min(p.partition_max_bytes, budget - total), first=total == 0
                )
                data.records = b"".join(chosen)
                total += len(data.records)
            if by_id:
                responses.append(cls.FetchableTopicResponse(topic_id=wanted.topic_id, partitions=partitions))
            else:
                responses.append(cls.FetchableTopicResponse(topic=wanted.topic, partitions=partitions))
        return responses, total

    @staticmethod
    def _batches_from(partition: Partition, offset: int, limit: int, first: bool) -> list[bytes]:
        """Whole batches holding ``offset`` and after, within ``limit`` bytes (Kafka, KIP-74: the
        first batch of the response goes out even when it alone is over the limit)."""
        chosen: list[bytes] = []
        size = 0
        for base, batch in zip(partition.base_offsets, partition.batches, strict=True):
            last = base + _LAST_OFFSET_DELTA.unpack_from(batch, _LAST_OFFSET_DELTA_AT)[0]
            if last < offset:
                continue
            if size + len(batch) > limit and not (first and not chosen):
                break
            chosen.append(batch)
            size += len(batch)
        return chosen

    # The rest ----------------------------------------------------------------------------------

    def _init_producer_id(self, request: Any, version: int) -> Any:
        with self._lock:
            producer_id = self._txn_producers.get(request.transactional_id) if request.transactional_id else None
            if producer_id is None:
                producer_id = self._next_producer_id
                self._next_producer_id += 1
                if request.transactional_id:
                    self._txn_producers[request.transactional_id] = producer_id
        return self._msg("InitProducerIdResponse")(
            throttle_time_ms=0, error_code=NONE, producer_id=producer_id, producer_epoch=0
        )

    # Transactions: accepted as asked; stored batches stay as they are (no markers are written,
    # so the tests read transactional records back with read_uncommitted, or not at all) ---------

    def _add_partitions_to_txn(self, request: Any, version: int) -> Any:
        cls = self._msg("AddPartitionsToTxnResponse")
        return cls(
            results_by_topic_v3_and_below=[
                cls.AddPartitionsToTxnTopicResult(
                    name=topic.name,
                    results_by_partition=[
                        cls.AddPartitionsToTxnPartitionResult(partition_index=p, partition_error_code=NONE)
                        for p in topic.partitions
                    ],
                )
                for topic in request.v3_and_below_topics
            ]
        )

    def _add_offsets_to_txn(self, request: Any, version: int) -> Any:
        return self._msg("AddOffsetsToTxnResponse")(error_code=NONE)

    def _txn_offset_commit(self, request: Any, version: int) -> Any:
        cls = self._msg("TxnOffsetCommitResponse")
        with self._lock:
            for topic in request.topics:
                for p in topic.partitions:
                    self.committed[(request.group_id, topic.name, p.partition_index)] = p.committed_offset
        return cls(
            topics=[
                cls.TxnOffsetCommitResponseTopic(
                    name=t.name,
                    partitions=[
                        cls.TxnOffsetCommitResponsePartition(partition_index=p.partition_index, error_code=NONE)
                        for p in t.partitions
                    ],
                )
                for t in request.topics
            ]
        )

    def _end_txn(self, request: Any, version: int) -> Any:
        with self._lock:
            self.ended_transactions.append((request.transactional_id, request.producer_id, request.committed))
        return self._msg("EndTxnResponse")(
            error_code=NONE, producer_id=request.producer_id, producer_epoch=request.producer_epoch
        )

    def _find_coordinator(self, request: Any, version: int) -> Any:
        """With ``groups``, this node coordinates every group; otherwise none is available."""
        cls = self._msg("FindCoordinatorResponse")
        if self.groups and version < 4:
            node = self._coordinator(request.key)
            return cls(throttle_time_ms=0, error_code=NONE, node_id=node.node_id, host=node.host, port=node.port)
        if self.groups:
            nodes = {key: self._coordinator(key) for key in request.coordinator_keys}
            return cls(
                throttle_time_ms=0,
                coordinators=[
                    cls.Coordinator(key=key, node_id=node.node_id, host=node.host, port=node.port, error_code=NONE)
                    for key, node in nodes.items()
                ],
            )
        if version < 4:
            return cls(
                throttle_time_ms=0,
                error_code=COORDINATOR_NOT_AVAILABLE,
                error_message="no coordinators here",
                node_id=-1,
                host="",
                port=-1,
            )
        return cls(
            throttle_time_ms=0,
            coordinators=[
                cls.Coordinator(
                    key=key,
                    node_id=-1,
                    host="",
                    port=-1,
                    error_code=COORDINATOR_NOT_AVAILABLE,
                    error_message="no coordinators here",
                )
                for key in request.coordinator_keys
            ],
        )

    # Admin -------------------------------------------------------------------------------------

    def _create_topics(self, request: Any, version: int) -> Any:
        cls = self._msg("CreateTopicsResponse")
        results = []
        with self._lock:
            for wanted in request.topics:
                exists = wanted.name in self.topics
                if not exists and not request.validate_only:
                    count = wanted.num_partitions if wanted.num_partitions > 0 else None
                    self._create(wanted.name, count)
                topic = self.topics.get(wanted.name)
                results.append(
                    cls.CreatableTopicResult(
                        name=wanted.name,
                        topic_id=topic.topic_id if topic is not None else uuid.UUID(int=0),
                        error_code=TOPIC_ALREADY_EXISTS if exists else NONE,
                        num_partitions=len(topic.partitions) if topic is not None else wanted.num_partitions,
                        replication_factor=1,
                        configs=[],
                    )
                )
        return cls(topics=results)

    def _delete_topics(self, request: Any, version: int) -> Any:
        cls = self._msg("DeleteTopicsResponse")
        names = list(request.topic_names) if version < 6 else [t.name for t in request.topics]
        with self._lock:
            gone = {name: self.topics.pop(name, None) is not None for name in names}
        return cls(
            responses=[
                cls.DeletableTopicResult(name=name, error_code=NONE if found else UNKNOWN_TOPIC_OR_PARTITION)
                for name, found in gone.items()
            ]
        )

    def _describe_configs(self, request: Any, version: int) -> Any:
        cls = self._msg("DescribeConfigsResponse")
        results = []
        for resource in request.resources:
            known = resource.resource_type == TOPIC_RESOURCE and resource.resource_name in self.topics
            keys = resource.configuration_keys or list(TOPIC_CONFIGS)
            configs = (
                [
                    cls.DescribeConfigsResourceResult(
                        name=key,
                        value=TOPIC_CONFIGS.get(key),
                        read_only=False,
                        config_source=1,
                        is_default=False,
                        is_sensitive=False,
                        synonyms=[],
                    )
                    for key in keys
                    if key in TOPIC_CONFIGS
                ]
                if known
                else []
            )
            results.append(
                cls.DescribeConfigsResult(
                    error_code=NONE if known else UNKNOWN_TOPIC_OR_PARTITION,
                    resource_type=resource.resource_type,
                    resource_name=resource.resource_name,
                    configs=configs,
                )
            )
        return cls(results=results)

    # Groups: one node, members joining one at a time (every join completes at once) -------------

    def _join_group(self, request: Any, version: int) -> Any:
        cls = self._msg("JoinGroupResponse")
        with self._lock:
            group = self.group_state.setdefault(request.group_id, Group())
            member_id = request.member_id
            if not member_id:
                member_id = f"{request.group_id}-member-{uuid.uuid4().hex[:8]}"
                if version >= 4:  # KIP-394: the client must join again with the id it was given
                    return cls(
                        error_code=MEMBER_ID_REQUIRED,
                        generation_id=-1,
                        member_id=member_id,
                        leader="",
                        protocol_name="",
                        members=[],
                    )
            group.members[member_id] = {p.name: p.metadata for p in request.protocols}
            group.generation += 1
            group.leader = group.leader if group.leader in group.members else member_id
            group.protocol = request.protocols[0].name
            members = (
                [
                    cls.JoinGroupResponseMember(member_id=m, metadata=protocols.get(group.protocol, b""))
                    for m, protocols in group.members.items()
                ]
                if member_id == group.leader
                else []
            )
            return cls(
                error_code=NONE,
                generation_id=group.generation,
                protocol_type=request.protocol_type,
                protocol_name=group.protocol,
                leader=group.leader,
                member_id=member_id,
                members=members,
            )

    def _sync_group(self, request: Any, version: int) -> Any:
        cls = self._msg("SyncGroupResponse")
        with self._lock:
            group = self.group_state.get(request.group_id)
            if group is None or request.member_id not in group.members:
                return cls(error_code=UNKNOWN_MEMBER_ID, assignment=b"")
            if request.member_id == group.leader:
                group.assignments = {a.member_id: a.assignment for a in request.assignments}
            return cls(
                error_code=NONE,
                protocol_type=request.protocol_type,
                protocol_name=group.protocol,
                assignment=group.assignments.get(request.member_id, b""),
            )

    def _consumer_group_heartbeat(self, request: Any, version: int) -> Any:
        """KIP-848, as simply as a coordinator can: every member gets every partition of the topics
        it subscribes to (the tests run one member a group), at member epoch 1."""
        cls = self._msg("ConsumerGroupHeartbeatResponse")
        member_id = request.member_id or f"{request.group_id}-member-{uuid.uuid4().hex[:8]}"
        if request.member_epoch == -1:  # leaving
            return cls(error_code=NONE, member_id=member_id, member_epoch=-1, heartbeat_interval_ms=1000)
        with self._lock:
            topics = [self.topics[name] for name in request.subscribed_topic_names or () if name in self.topics]
        assignment = cls.Assignment(
            topic_partitions=[
                cls.TopicPartitions(topic_id=t.topic_id, partitions=list(range(len(t.partitions)))) for t in topics
            ]
        )
        return cls(
            error_code=NONE, member_id=member_id, member_epoch=1, heartbeat_interval_ms=1000, assignment=assignment
        )

    def _heartbeat(self, request: Any, version: int) -> Any:
        with self._lock:
            group = self.group_state.get(request.group_id)
            known = group is not None and request.member_id in group.members
        return self._msg("HeartbeatResponse")(error_code=NONE if known else UNKNOWN_MEMBER_ID)

    def _leave_group(self, request: Any, version: int) -> Any:
        cls = self._msg("LeaveGroupResponse")
        leaving = [m.member_id for m in request.members] if version >= 3 else [request.member_id]
        with self._lock:
            group = self.group_state.get(request.group_id)
            for member_id in leaving:
                if group is not None:
                    group.members.pop(member_id, None)
        return cls(
            error_code=NONE,
            members=[cls.MemberResponse(member_id=m, error_code=NONE) for m in leaving] if version >= 3 else [],
        )

    def _offset_commit(self, request: Any, version: int) -> Any:
        cls = self._msg("OffsetCommitResponse")
        topics = []
        with self._lock:
            for topic in request.topics:
                partitions = []
                for p in topic.partitions:
                    self.committed[(request.group_id, topic.name, p.partition_index)] = p.committed_offset
                    partitions.append(
                        cls.OffsetCommitResponsePartition(partition_index=p.partition_index, error_code=NONE)
                    )
                topics.append(cls.OffsetCommitResponseTopic(name=topic.name, partitions=partitions))
        return cls(topics=topics)

    def _offset_fetch(self, request: Any, version: int) -> Any:
        cls = self._msg("OffsetFetchResponse")
        if version >= 8:  # KIP-709: several groups per request
            return cls(
                groups=[
                    cls.OffsetFetchResponseGroup(
                        group_id=g.group_id,
                        error_code=NONE,
                        topics=[
                            cls.OffsetFetchResponseTopics(
                                name=name,
                                partitions=[
                                    cls.OffsetFetchResponsePartitions(
                                        partition_index=i, committed_offset=offset, metadata=""
                                    )
                                    for i, offset in parts
                                ],
                            )
                            for name, parts in self._committed(g.group_id, g.topics)
                        ],
                    )
                    for g in request.groups
                ]
            )
        return cls(
            error_code=NONE,
            topics=[
                cls.OffsetFetchResponseTopic(
                    name=name,
                    partitions=[
                        cls.OffsetFetchResponsePartition(partition_index=i, committed_offset=offset, metadata="")
                        for i, offset in parts
                    ],
                )
                for name, parts in self._committed(request.group_id, request.topics)
            ],
        )

    def _committed(self, group_id: str, wanted: Any) -> list[tuple[str, list[tuple[int, int]]]]:
        """(topic, [(partition, offset or -1)]) for the topics asked (all committed ones for None)."""
        with self._lock:
            if wanted is None:
                names = sorted({t for g, t, _ in self.committed if g == group_id})
                asked = [(n, sorted(p for g, t, p in self.committed if (g, t) == (group_id, n))) for n in names]
            else:
                asked = [(t.name, list(t.partition_indexes)) for t in wanted]
            return [(name, [(i, self.committed.get((group_id, name, i), -1)) for i in parts]) for name, parts in asked]

    def _offset_for_leader_epoch(self, request: Any, version: int) -> Any:
        cls = self._msg("OffsetForLeaderEpochResponse")
        topics = []
        with self._lock:
            for wanted in request.topics:
                topic = self.topics.get(wanted.topic)
                partitions = []
                for p in wanted.partitions:
                    result = cls.EpochEndOffset(error_code=NONE, partition=p.partition, leader_epoch=-1, end_offset=-1)
                    partitions.append(result)
                    if topic is None or not 0 <= p.partition < len(topic.partitions):
                        result.error_code = UNKNOWN_TOPIC_OR_PARTITION
                        continue
                    result.error_code = self._epoch_check(p.current_leader_epoch if version >= 2 else -1)
                    if result.error_code == NONE and p.leader_epoch >= self.leader_epoch:
                        # One epoch ever: it ends at the log end.
                        result.leader_epoch = self.leader_epoch
                        result.end_offset = topic.partitions[p.partition].next_offset
                topics.append(cls.OffsetForLeaderTopicResult(topic=wanted.topic, partitions=partitions))
        return cls(throttle_time_ms=0, topics=topics)

    # More admin (``more_admin=True``): plausible answers, every error code 0 ----------------------

    def _describe_groups(self, request: Any, version: int) -> Any:
        cls = self._msg("DescribeGroupsResponse")
        described = []
        with self._lock:
            for group_id in request.groups:
                group = self.group_state.get(group_id)
                members = [
                    cls.DescribedGroupMember(
                        member_id=member_id,
                        client_id="",
                        client_host="/127.0.0.1",
                        member_metadata=protocols.get(group.protocol, b""),
                        member_assignment=group.assignments.get(member_id, b""),
                    )
                    for member_id, protocols in (group.members.items() if group is not None else ())
                ]
                described.append(
                    cls.DescribedGroup(
                        error_code=NONE,
                        group_id=group_id,
                        group_state=("Stable" if members else "Empty") if group is not None else "Dead",
                        protocol_type="consumer" if group is not None else "",
                        protocol_data=group.protocol if group is not None else "",
                        members=members,
                        authorized_operations=OPERATIONS_NOT_REQUESTED,
                    )
                )
        return cls(throttle_time_ms=0, groups=described)

    def _list_groups(self, request: Any, version: int) -> Any:
        cls = self._msg("ListGroupsResponse")
        with self._lock:
            groups = [
                cls.ListedGroup(
                    group_id=name,
                    protocol_type="consumer",
                    group_state="Stable" if group.members else "Empty",
                    group_type="classic",
                )
                for name, group in sorted(self.group_state.items())
            ]
        return cls(throttle_time_ms=0, error_code=NONE, groups=groups)

    def _delete_groups(self, request: Any, version: int) -> Any:
        cls = self._msg("DeleteGroupsResponse")
        with self._lock:
            for name in request.groups_names:
                self.group_state.pop(name, None)
        return cls(results=[cls.DeletableGroupResult(group_id=name, error_code=NONE) for name in request.groups_names])

    def _describe_cluster(self, request: Any, version: int) -> Any:
        cls = self._msg("DescribeClusterResponse")
        return cls(
            error_code=NONE,
            endpoint_type=request.endpoint_type if version >= 1 else 1,
            cluster_id=self.cluster_id,
            controller_id=self.members[0].node_id,
            brokers=[cls.DescribeClusterBroker(broker_id=b.node_id, host=b.host, port=b.port) for b in self.members],
            cluster_authorized_operations=OPERATIONS_NOT_REQUESTED,
        )

    def _create_partitions(self, request: Any, version: int) -> Any:
        cls = self._msg("CreatePartitionsResponse")
        results = []
        with self._lock:
            for wanted in request.topics:
                topic = self.topics.get(wanted.name)
                if topic is not None and not request.validate_only:
                    topic.partitions.extend(Partition() for _ in range(wanted.count - len(topic.partitions)))
                code = NONE if topic is not None else UNKNOWN_TOPIC_OR_PARTITION
                results.append(cls.CreatePartitionsTopicResult(name=wanted.name, error_code=code))
        return cls(results=results)

    def _alter_configs(self, request: Any, version: int, name: str = "AlterConfigsResponse") -> Any:
        cls = self._msg(name)
        return cls(
            responses=[
                cls.AlterConfigsResourceResponse(
                    error_code=NONE, resource_type=r.resource_type, resource_name=r.resource_name
                )
                for r in request.resources
            ]
        )

    def _incremental_alter_configs(self, request: Any, version: int) -> Any:
        return self._alter_configs(request, version, "IncrementalAlterConfigsResponse")

    def _describe_acls(self, request: Any, version: int) -> Any:
        cls = self._msg("DescribeAclsResponse")
        name = request.resource_name_filter or "kafka-epochs"
        acl = cls.AclDescription(principal="User:alice", host="*", operation=3, permission_type=3)
        resource = cls.DescribeAclsResource(
            resource_type=request.resource_type_filter if request.resource_type_filter > 1 else TOPIC_RESOURCE,
            resource_name=name,
            pattern_type=3,
            acls=[acl],
        )
        return cls(error_code=NONE, resources=[resource])

    def _create_acls(self, request: Any, version: int) -> Any:
        cls = self._msg("CreateAclsResponse")
        return cls(results=[cls.AclCreationResult(error_code=NONE) for _ in request.creations])

    def _delete_acls(self, request: Any, version: int) -> Any:
        cls = self._msg("DeleteAclsResponse")
        return cls(
            filter_results=[
                cls.DeleteAclsFilterResult(
                    error_code=NONE,
                    matching_acls=[
                        cls.DeleteAclsMatchingAcl(
                            error_code=NONE,
                            resource_type=f.resource_type_filter if f.resource_type_filter > 1 else TOPIC_RESOURCE,
                            resource_name=f.resource_name_filter or "kafka-epochs",
                            pattern_type=3,
                            principal=f.principal_filter or "User:alice",
                            host=f.host_filter or "*",
                            operation=f.operation if f.operation > 1 else 3,
                            permission_type=f.permission_type if f.permission_type > 1 else 3,
                        )
                    ],
                )
                for f in request.filters
            ]
        )

    def _describe_log_dirs(self, request: Any, version: int) -> Any:
        cls = self._msg("DescribeLogDirsResponse")
        with self._lock:
            wanted = (
                [(t.topic, list(t.partitions)) for t in request.topics]
                if request.topics is not None
                else [(name, list(range(len(t.partitions)))) for name, t in sorted(self.topics.items())]
            )
            topics = [
                cls.DescribeLogDirsTopic(
                    name=name,
                    partitions=[
                        cls.DescribeLogDirsPartition(
                            partition_index=i, partition_size=sum(map(len, self._partition(name, i).batches))
                        )
                        for i in parts
                    ],
                )
                for name, parts in wanted
            ]
        result = cls.DescribeLogDirsResult(
            error_code=NONE, log_dir="/var/lib/kafka/data", topics=topics, total_bytes=2**40, usable_bytes=2**39
        )
        return cls(error_code=NONE, results=[result])

    def _partition(self, topic: str, index: int) -> Partition:
        known = self.topics.get(topic)
        return known.partitions[index] if known is not None and 0 <= index < len(known.partitions) else Partition()

    def _delete_records(self, request: Any, version: int) -> Any:
        cls = self._msg("DeleteRecordsResponse")
        with self._lock:
            topics = [
                cls.DeleteRecordsTopicResult(
                    name=t.name,
                    partitions=[
                        cls.DeleteRecordsPartitionResult(
                            partition_index=p.partition_index,
                            low_watermark=p.offset
                            if p.offset >= 0
                            else self._partition(t.name, p.partition_index).next_offset,
                            error_code=NONE,
                        )
                        for p in t.partitions
                    ],
                )
                for t in request.topics
            ]
        return cls(topics=topics)

    def _elect_leaders(self, request: Any, version: int) -> Any:
        cls = self._msg("ElectLeadersResponse")
        with self._lock:
            wanted = (
                [(t.topic, list(t.partitions)) for t in request.topic_partitions]
                if request.topic_partitions is not None
                else [(name, list(range(len(t.partitions)))) for name, t in sorted(self.topics.items())]
            )
        return cls(
            error_code=NONE,
            replica_election_results=[
                cls.ReplicaElectionResult(
                    topic=name, partition_result=[cls.PartitionResult(partition_id=i, error_code=NONE) for i in parts]
                )
                for name, parts in wanted
            ],
        )

    def _alter_partition_reassignments(self, request: Any, version: int) -> Any:
        cls = self._msg("AlterPartitionReassignmentsResponse")
        return cls(
            error_code=NONE,
            responses=[
                cls.ReassignableTopicResponse(
                    name=t.name,
                    partitions=[
                        cls.ReassignablePartitionResponse(partition_index=p.partition_index, error_code=NONE)
                        for p in t.partitions
                    ],
                )
                for t in request.topics
            ],
        )

    def _list_partition_reassignments(self, request: Any, version: int) -> Any:
        cls = self._msg("ListPartitionReassignmentsResponse")
        return cls(error_code=NONE, topics=[])

    def _offset_delete(self, request: Any, version: int) -> Any:
        cls = self._msg("OffsetDeleteResponse")
        with self._lock:
            for t in request.topics:
                for p in t.partitions:
                    self.committed.pop((request.group_id, t.name, p.partition_index), None)
        return cls(
            error_code=NONE,
            topics=[
                cls.OffsetDeleteResponseTopic(
                    name=t.name,
                    partitions=[
                        cls.OffsetDeleteResponsePartition(partition_index=p.partition_index, error_code=NONE)
                        for p in t.partitions
                    ],
                )
                for t in request.topics
            ],
        )

    def _describe_client_quotas(self, request: Any, version: int) -> Any:
        cls = self._msg("DescribeClientQuotasResponse")
        entry = cls.EntryData(
            entity=[cls.EntityData(entity_type="client-id", entity_name="kafka-epochs")],
            values=[cls.ValueData(key="producer_byte_rate", value=1048576.0)],
        )
        return cls(error_code=NONE, entries=[entry])

    def _alter_client_quotas(self, request: Any, version: int) -> Any:
        cls = self._msg("AlterClientQuotasResponse")
        return cls(
            entries=[
                cls.EntryData(
                    error_code=NONE,
                    entity=[cls.EntityData(entity_type=e.entity_type, entity_name=e.entity_name) for e in entry.entity],
                )
                for entry in request.entries
            ]
        )

    def _describe_user_scram_credentials(self, request: Any, version: int) -> Any:
        cls = self._msg("DescribeUserScramCredentialsResponse")
        users = (
            [u.name for u in request.users] if request.users is not None else sorted(self.sasl_users or {"alice": ""})
        )
        return cls(
            error_code=NONE,
            results=[
                cls.DescribeUserScramCredentialsResult(
                    user=user,
                    error_code=NONE,
                    credential_infos=[cls.CredentialInfo(mechanism=SCRAM_SHA_256, iterations=4096)],
                )
                for user in users
            ],
        )

    def _alter_user_scram_credentials(self, request: Any, version: int) -> Any:
        cls = self._msg("AlterUserScramCredentialsResponse")
        users = dict.fromkeys([d.name for d in request.deletions] + [u.name for u in request.upsertions])
        return cls(results=[cls.AlterUserScramCredentialsResult(user=user, error_code=NONE) for user in users])

    def _describe_producers(self, request: Any, version: int) -> Any:
        cls = self._msg("DescribeProducersResponse")
        return cls(
            topics=[
                cls.TopicResponse(
                    name=t.name,
                    partitions=[
                        cls.PartitionResponse(partition_index=i, error_code=NONE, active_producers=[])
                        for i in t.partition_indexes
                    ],
                )
                for t in request.topics
            ]
        )

    def _list_transactions(self, request: Any, version: int) -> Any:
        cls = self._msg("ListTransactionsResponse")
        with self._lock:
            states = [
                cls.TransactionState(transactional_id=tid, producer_id=pid, transaction_state="CompleteCommit")
                for tid, pid in sorted(self._txn_producers.items())
            ]
        return cls(error_code=NONE, unknown_state_filters=[], transaction_states=states)

    def _describe_transactions(self, request: Any, version: int) -> Any:
        cls = self._msg("DescribeTransactionsResponse")
        with self._lock:
            known = dict(self._txn_producers)
        return cls(
            transaction_states=[
                cls.TransactionState(
                    error_code=NONE,
                    transactional_id=tid,
                    transaction_state="CompleteCommit" if tid in known else "Empty",
                    transaction_timeout_ms=60000,
                    transaction_start_time_ms=-1,
                    producer_id=known.get(tid, -1),
                    producer_epoch=0,
                    topics=[],
                )
                for tid in request.transactional_ids
            ]
        )


def _snake(name: str) -> str:
    """``DescribeGroups`` -> ``describe_groups``."""
    return "".join("_" + c.lower() if c.isupper() else c for c in name).lstrip("_")
