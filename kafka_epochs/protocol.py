"""Protocols: generated messages by name and api key, and whole frames (size prefix, headers, body).

Three profiles ship with the package, and any spec directory makes a fourth:

* ``Protocol.apache()``: every api key and version of Apache Kafka (3.9's specs plus the Kafka
  4.x client APIs), from the project's catalogue (``messages/apache/catalogue.json``).
* ``Protocol.kip()``: the seed KIP versions of ``messages/`` where they define a version, Apache's
  everywhere else.
* ``Protocol.auto()``: Apache's layouts, except that the four version numbers the KIPs and Apache
  give different bytes (Produce 12, ListOffsets 6, StopReplica 4, OffsetForLeaderEpoch 4) are read
  with whichever layout consumes the frame exactly, Apache's first.
* ``Protocol.from_specs(DIR)``: generated from any directory of Kafka-style JSON specs.

Every :class:`Decoded` frame says which layout read it (``profile``) and what was tolerated on
the way (``warnings``: trailing bytes, an ApiVersions answer in v0, an unstable version).

>>> proto = Protocol.kip()
>>> Req = proto.message("ApiVersionsRequest")
>>> frame = proto.encode_request(Req(client_software_name="app"), 3, correlation_id=7, client_id="c")
>>> proto.decode_request(frame).body.client_software_name
'app'
"""

from __future__ import annotations

__all__ = [
    "PROFILES",
    "AutoProtocol",
    "BodyReader",
    "Decoded",
    "Protocol",
    "ProtocolChain",
    "trailing_problem",
    "trailing_warning",
    "version_warnings",
]

import functools
import importlib
import struct
from collections.abc import Callable, Iterator
from contextlib import suppress
from types import ModuleType
from typing import TYPE_CHECKING, Any, cast

from kafka_epochs.decoded import (
    BodyReader,
    Decoded,
    FramePlan,
    checked_frame,
    read_body,
    read_header,
    reads_whole,
    trailing_problem,
    trailing_warning,
    version_warnings,
)
from kafka_epochs.encoded import api_key_of, frame_of
from kafka_epochs.errors import DecodeError
from kafka_epochs.wire.message import Message

if TYPE_CHECKING:  # the generator and pathlib load only when from_specs is used
    from pathlib import Path

    from kafka_epochs.codegen.cache import IndexRow
    from kafka_epochs.typed_profiles import ApacheProtocol, AutoProfile, KipProtocol


_SIZE = struct.Struct(">i")
_KEY_VERSION = struct.Struct(">hh")

CONTROLLED_SHUTDOWN = 7
API_VERSIONS = 18
UNSUPPORTED_VERSION = 35
#: The error code a v0 ApiVersions answer to a version the broker lacks begins with.
REFUSED = UNSUPPORTED_VERSION.to_bytes(2, "big")


class Protocol:
    """Message classes by name and by api key, plus framing with Kafka's header rules.

    An instance is one generated package (the catalogue, ``messages/`` or a spec directory);
    :class:`ProtocolChain` and :class:`AutoProtocol` combine several behind the same methods.
    """

    def __init__(
        self,
        index: dict[str, IndexRow],
        load: Callable[[str], ModuleType],
        origin: str,
        name: str | None = None,
    ) -> None:
        self._index = index
        self._load = load
        self.origin = origin
        self.name = name if name is not None else origin  # what Decoded.profile says
        self._classes: dict[str, type[Message]] = {}
        #: one of the package's generated tables by module name (``_layouts``, ``_paths``,
        #: ``_shapes``), or None where it has none (packages generated before that table existed)
        self._table: Callable[[str], ModuleType | None] = lambda part: None
        self._shapes: dict[str, Any] = {}
        self._plans: dict[tuple[int, int, str], FramePlan] = {}  # see frame_plan
        self._by_key: dict[tuple[int, str], str] = {}
        for message, (api_key, kind, *_rest) in index.items():
            if api_key is not None and kind in ("request", "response"):
                self._by_key[(api_key, kind)] = message

    def __repr__(self) -> str:
        return f"<Protocol {self.name}: {len(self._index)} messages from {self.origin}>"

    # -- construction -------------------------------------------------------------------------

    @classmethod
    def apache(cls) -> ApacheProtocol:
        """Every api key and version of Apache Kafka: 3.9's specs and the Kafka 4.x client APIs."""
        return cast("ApacheProtocol", _package("kafka_epochs.apache", "apache", "Apache Kafka catalogue"))

    @classmethod
    def kip(cls) -> KipProtocol:
        """The seed KIP versions of ``messages/``, layered over :meth:`apache` for everything else."""
        return cast("KipProtocol", _kip())

    @classmethod
    def auto(cls) -> AutoProfile:
        """Apache's layouts; a version number the KIPs gave other bytes is read with the layout that
        consumes the frame exactly (Apache's first), and each frame records which one did."""
        return cast("AutoProfile", _auto())

    @classmethod
    def bundled(cls) -> Protocol:
        """The package generated from ``messages/`` alone (8 APIs). Prefer :meth:`kip`, which also
        knows every other Apache API; kept for code written before the profiles existed."""
        return _package("kafka_epochs.messages", "kip", "bundled messages/")

    @classmethod
    def profile(cls, name: str | Path) -> Protocol:
        """A protocol by name: ``"apache"``, ``"kip"``, ``"auto"``, or a spec directory."""
        text = str(name)
        if text in PROFILES:
            return getattr(cls, text)()
        return cls.from_specs(name)

    @classmethod
    def from_specs(
        cls,
        spec_dir: str | Path,
        cache_dir: str | Path | None = None,
        *,
        on_generate: Callable[[Path], None] | None = None,
    ) -> Protocol:
        """A protocol for any directory of Kafka-style JSON specs, generated on first use.

        Generated code is cached (``$KAFKA_EPOCHS_CACHE``, else ``~/.cache/kafka-epochs``) under a
        digest of the specs and the generator, so later calls, in any process, skip generation.
        ``on_generate(cache_path)`` is called when generation is needed (it takes seconds).
        A directory without specs is refused (ValueError).
        """
        from kafka_epochs.codegen.cache import compiled_package, import_from

        package, directory = compiled_package(spec_dir, cache_dir, on_generate)
        index_module = import_from(package, directory, "_index")

        def load(name: str) -> ModuleType:
            return import_from(package, directory, name)

        protocol = cls(index_module.MESSAGES, load, str(spec_dir))
        protocol._table = lambda part: (
            import_from(package, directory, part) if (directory / f"{part}.py").exists() else None
        )
        return protocol

    @classmethod
    def from_package(cls, module: str) -> Protocol:
        """The protocol of a package written by ``kafka-epochs generate --out`` and importable as
        ``module`` (e.g. code a project commits, so it never generates at run time)."""
        from importlib.util import find_spec  # (only here: a decode's start does without it)

        importlib.import_module(module)  # a missing package raises ModuleNotFoundError, as an import would
        for part in ("_index", "_layouts"):
            if find_spec(f"{module}.{part}") is None:
                raise ValueError(
                    f"{module} is not a package generated by kafka-epochs generate (it has no {part} module)"
                )
        return _package(module, module, f"package {module}")

    # -- lookup -------------------------------------------------------------------------------

    def names(self) -> list[str]:
        return sorted(self._index)

    def __contains__(self, name: object) -> bool:
        return name in self._index

    def __iter__(self) -> Iterator[type[Message]]:
        return (self.message(name) for name in self.names())

    def message(self, name: str) -> type[Message]:
        """The class of a message by its spec name, e.g. ``"StopReplicaRequest"``."""
        cls = self._classes.get(name)
        if cls is None:
            if name not in self._index:
                raise KeyError(f"no message {name!r} in {self.origin}")
            cls = getattr(self._load(name), name)
            self._classes[name] = cls
        return cls

    def message_for(self, api_key: int, kind: str) -> type[Message]:
        """The request or response class of an api key."""
        return self.message(self._name_for(api_key, kind))

    def shape_for(self, api_key: int, kind: str) -> Any:
        """The request's or response's :meth:`shape` of an api key."""
        return self.shape(self._name_for(api_key, kind))

    def _name_for(self, api_key: int, kind: str) -> str:
        if kind not in ("request", "response"):
            raise ValueError(f"kind must be 'request' or 'response', not {kind!r}")
        name = self._by_key.get((api_key, kind))
        if name is None:
            raise KeyError(f"no {kind} for api key {api_key} in {self.origin}")
        return name

    def api_keys(self) -> list[int]:
        return sorted({key for key, kind in self._by_key if kind == "request"})

    def versions(self, api_key: int, kind: str = "request") -> range:
        name = self._by_key.get((api_key, kind))
        if name is None:
            return range(0)
        _, _, low, high, _ = self._index[name]
        return range(low, high + 1)

    def layouts(self, api_key: int, kind: str, version: int) -> list[Protocol]:
        """The packages whose layout may read this (api key, kind, version), in the order to try."""
        return [self] if version in self.versions(api_key, kind) else []

    def has_field_path(self, path: str) -> bool:
        """Whether some message of the protocol has the field ``path`` (one a projection of it
        would accept: ``topics[].partitions[].leader_epoch``, segments by attribute or spec name,
        ``[]`` optional). Answered from the package's table of paths, loading no message module,
        where the package has one (packages generated before it existed load every message)."""
        from kafka_epochs.projection.paths import has_path, walks_tree

        tree = self._field_paths()
        if tree is None:
            return any(has_path(self.message(name), path) for name in self.names())
        return walks_tree(tree, [segment.strip() for segment in path.split(".")])

    def closest_field_path(self, path: str) -> str | None:
        """The path most likely meant by one no message has (``errorCode``: ``error_code``), or None."""
        from kafka_epochs.projection.paths import closest_in_tree

        return closest_in_tree(self._field_paths(), path)

    def shape(self, name: str) -> Any:
        """A message's :class:`~kafka_epochs.wire.schema.Shape` (its field tables, no code), made
        from the package's ``_shapes.py`` without loading the message's module; the class itself
        where the package has no such table. What projections read bodies by (``--fields``)."""
        found = self._shapes.get(name)
        if found is None:
            if name not in self._index:
                raise KeyError(f"no message {name!r} in {self.origin}")
            table = self._table("_shapes")
            found = self._shapes[name] = self.message(name) if table is None else table.SHAPES[name]()
        return found

    def _field_paths(self) -> dict[str, Any] | None:
        table = self._table("_paths")
        return None if table is None else table.TREE

    def _layout_digests(self) -> dict[str, tuple[str, ...]]:
        """name -> a digest of each version's wire layout (first version first), from the package."""
        table = self._table("_layouts")
        if table is None:
            raise ValueError(f"{self!r} has no layout digests")
        return table.LAYOUTS

    def _flexible(self, api_key: int, kind: str, version: int) -> bool:
        name = self._by_key.get((api_key, kind))
        if name is None:
            raise KeyError(f"no {kind} for api key {api_key} in {self.origin}")
        first_flexible = self._index[name][4]
        return first_flexible is not None and version >= first_flexible

    # -- headers ------------------------------------------------------------------------------

    def request_header_version(self, api_key: int, api_version: int) -> int:
        """Kafka's rule: v2 for flexible request versions, else v1; v0 only for ControlledShutdown v0."""
        if api_key == CONTROLLED_SHUTDOWN and api_version == 0:
            return 0
        return 2 if self._flexible(api_key, "request", api_version) else 1

    def response_header_version(self, api_key: int, api_version: int) -> int:
        """Kafka's rule: v1 for flexible response versions, else v0; ApiVersions always v0.

        ApiVersionsResponse keeps header v0 so that a client can read the broker's answer (even
        an UNSUPPORTED_VERSION error) before either side knows which versions the other has.
        """
        if api_key == API_VERSIONS:
            return 0
        return 1 if self._flexible(api_key, "response", api_version) else 0

    # -- frames -------------------------------------------------------------------------------

    def encode_request(self, body: Message, version: int, correlation_id: int, client_id: str | None = "") -> bytes:
        """A size-prefixed request frame: header (version chosen by Kafka's rule) and body."""
        owner = self._owner(body, version)
        api_key = api_key_of(body)
        header_cls: Any = owner.message("RequestHeader")
        header = header_cls(
            request_api_key=api_key, request_api_version=version, correlation_id=correlation_id, client_id=client_id
        )
        return frame_of(header, owner.request_header_version(api_key, version), body, version)

    def encode_response(self, body: Message, version: int, correlation_id: int) -> bytes:
        """A size-prefixed response frame."""
        owner = self._owner(body, version)
        header_cls: Any = owner.message("ResponseHeader")
        header = header_cls(correlation_id=correlation_id)
        return frame_of(header, owner.response_header_version(api_key_of(body), version), body, version)

    def _owner(self, body: Message, version: int) -> Protocol:
        """The package whose class ``body`` is (its header rules apply)."""
        return self

    def decode_request(
        self, frame: bytes | bytearray | memoryview, *, strict: bool = False, body_reader: BodyReader | None = None
    ) -> Decoded:
        """Decode a size-prefixed request frame into its header and body.

        Bytes after the body are accepted, counted in ``Decoded.trailing`` and reported in
        ``Decoded.warnings`` (brokers ignore them); ``strict=True`` refuses them.
        ``body_reader`` reads the body instead of the message class's ``read`` (a projection's
        :class:`~kafka_epochs.projection.bodies.FieldsReader`, say); the header is read as always.
        """
        data = frame if type(frame) is bytes else bytes(frame)
        if len(data) < 8 or _SIZE.unpack_from(data, 0)[0] != len(data) - 4:
            data = checked_frame(data)  # raises for a size prefix that is not the frame's
            raise DecodeError("truncated: a request header needs at least 4 bytes", len(data), "request_api_key")
        api_key, api_version = _KEY_VERSION.unpack_from(data, 4)
        plan = self.frame_plan(api_key, api_version, "request", 4)
        notes: list[str] = []
        header, pos = read_header(plan.header_class, data, plan.header_version, strict, notes)
        return read_body(
            plan, "request", header, plan.header_version, data, pos, api_key, api_version, strict, body_reader, notes
        )

    def decode_response(
        self,
        frame: bytes | bytearray | memoryview,
        api_key: int,
        api_version: int,
        *,
        strict: bool = False,
        prefer: str | None = None,
        body_reader: BodyReader | None = None,
    ) -> Decoded:
        """Decode a size-prefixed response frame; the api key and version come from its request.

        ``prefer`` names the profile that read the request (``Decoded.profile``), so that where
        two layouts share a version number the response is tried with the request's first. A
        broker that lacks the requested ApiVersions version answers in v0 with
        UNSUPPORTED_VERSION, and Kafka's clients read it again as v0: so do we, with a warning.
        """
        data = frame if type(frame) is bytes else bytes(frame)
        if len(data) < 4 or _SIZE.unpack_from(data, 0)[0] != len(data) - 4:
            data = checked_frame(data)  # (raises: the size prefix is not the frame's)
        # the error code is the v0 body's first field, after the correlation id (ApiVersions
        # answers with a v0 header): read from the bytes, so that a projection falls back all the same
        refused = api_key == API_VERSIONS and api_version and data[8:10] == REFUSED
        if refused and not reads_whole(
            self.frame_plan(api_key, api_version, "response", -1), data, api_version, body_reader
        ):
            with suppress(DecodeError):  # as v0, without explaining first why v{api_version} does not read
                return self._as_v0(data, api_version, strict, prefer, body_reader)
        try:
            return self._decode_response(data, api_key, api_version, strict, prefer, body_reader)
        except DecodeError as first:
            if not refused:
                raise
            try:
                return self._as_v0(data, api_version, strict, prefer, body_reader)
            except DecodeError:
                raise first from None

    def _as_v0(self, data: bytes, version: int, strict: bool, prefer: str | None, reader: BodyReader | None) -> Decoded:
        decoded = self._decode_response(data, API_VERSIONS, 0, strict, prefer, reader)
        decoded.warnings.insert(0, f"ApiVersions v{version} answered in v0 (UNSUPPORTED_VERSION)")
        return decoded

    def _decode_response(
        self,
        data: bytes,
        api_key: int,
        api_version: int,
        strict: bool,
        prefer: str | None,
        body_reader: BodyReader | None = None,
    ) -> Decoded:
        plan = self.frame_plan(api_key, api_version, "response", -1)
        header_version, header_cls = plan.header_version, plan.header_class
        if prefer is not None and len(plan.layouts) > 1:
            layouts = sorted(plan.layouts, key=lambda p: p.name != prefer)  # stable: the request's layout first
            header_version = layouts[0].response_header_version(api_key, api_version)
            header_cls = layouts[0].message("ResponseHeader")
            plan = FramePlan(layouts, header_version, header_cls, plan.name, ())
        notes: list[str] = []
        header, pos = read_header(header_cls, data, header_version, strict, notes)
        return read_body(
            plan, "response", header, header_version, data, pos, api_key, api_version, strict, body_reader, notes
        )

    def frame_plan(self, api_key: int, api_version: int, kind: str, offset: int) -> FramePlan:
        """What decoding a frame of (api key, version, kind) needs, looked up once, not per frame
        (a capture repeats a few dozen of them)."""
        key = (api_key, api_version, kind)
        found = self._plans.get(key)
        if found is not None:
            return found
        layouts = self._layouts_or_fail(api_key, api_version, kind, offset)
        first = layouts[0]
        if kind == "request":
            header_version, header_cls = first.request_header_version(api_key, api_version), "RequestHeader"
        else:
            header_version, header_cls = first.response_header_version(api_key, api_version), "ResponseHeader"
        name = first._name_for(api_key, kind)
        notes: tuple[str, ...] = ()
        if len(layouts) == 1 and api_version == first.versions(api_key, kind).stop - 1:  # (only a last may be unstable)
            notes = tuple(version_warnings(first.shape(name), api_version))
        plan = self._plans[key] = FramePlan(layouts, header_version, first.message(header_cls), name, notes)
        return plan

    def _layouts_or_fail(self, api_key: int, api_version: int, kind: str, offset: int) -> list[Protocol]:
        layouts = self.layouts(api_key, kind, api_version)
        if layouts:
            return layouts
        known = self.versions(api_key, kind)
        where = offset + 2 if offset >= 0 else -1
        if not known:
            raise DecodeError(
                f"unknown api key {api_key} (v{api_version}): the {self.name} protocol has no such api",
                offset,
                "request_api_key",
            )
        name = self.message_for(api_key, kind).__name__
        newer = " (a newer Kafka than it knows?)" if api_version > known.stop - 1 else ""
        raise DecodeError(
            f"{name} v{api_version} is not in the {self.name} protocol (it has {known.start}-{known.stop - 1}){newer}",
            where,
            "request_api_version",
        )


PROFILES = ("apache", "kip", "auto")


class ProtocolChain(Protocol):
    """Several protocols tried in order: the first that defines a frame's api and version decodes it.

    So one capture of clients of mixed Kafka versions decodes, given e.g. Kafka 3.9's and 4.x's
    spec folders; and the ``kip`` profile is ``messages/`` chained before the Apache catalogue.
    """

    def __init__(self, protocols: list[Protocol], name: str | None = None) -> None:
        if not protocols:
            raise ValueError("a ProtocolChain needs at least one protocol")
        self.protocols = protocols
        self._plans = {}
        self.origin = " > ".join(p.origin for p in protocols)
        self.name = name if name is not None else " > ".join(p.name for p in protocols)

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name}: {' > '.join(p.name for p in self.protocols)}>"

    def pick(self, api_key: int, api_version: int, kind: str) -> Protocol:
        """The first protocol defining this api and version; else the first that knows the api at
        all (whose error then names the versions it has: the closest miss), else the first."""
        for protocol in self.protocols:
            if api_version in protocol.versions(api_key, kind):
                return protocol
        for protocol in self.protocols:
            if protocol.versions(api_key, kind):
                return protocol
        return self.protocols[0]

    def has_field_path(self, path: str) -> bool:
        return any(protocol.has_field_path(path) for protocol in self.protocols)

    def closest_field_path(self, path: str) -> str | None:
        return next(filter(None, (protocol.closest_field_path(path) for protocol in self.protocols)), None)

    def layouts(self, api_key: int, kind: str, version: int) -> list[Protocol]:
        for protocol in self.protocols:
            found = protocol.layouts(api_key, kind, version)
            if found:
                return found
        return []

    def names(self) -> list[str]:
        return sorted({name for p in self.protocols for name in p.names()})

    def __contains__(self, name: object) -> bool:
        return any(name in p for p in self.protocols)

    def message(self, name: str) -> type[Message]:
        return self._owner_of(name).message(name)

    def shape(self, name: str) -> Any:
        return self._owner_of(name).shape(name)

    def _owner_of(self, name: str) -> Protocol:
        for protocol in self.protocols:
            if name in protocol:
                return protocol
        raise KeyError(f"no message {name!r} in {self.origin}")

    def _name_for(self, api_key: int, kind: str) -> str:
        for protocol in self.protocols:
            if protocol.versions(api_key, kind):
                return protocol._name_for(api_key, kind)
        raise KeyError(f"no {kind} for api key {api_key} in {self!r}")

    def api_keys(self) -> list[int]:
        return sorted({key for p in self.protocols for key in p.api_keys()})

    def versions(self, api_key: int, kind: str = "request") -> range:
        ranges = [r for p in self.protocols if (r := p.versions(api_key, kind))]
        if not ranges:
            return range(0)
        return range(min(r.start for r in ranges), max(r.stop for r in ranges))

    def _flexible(self, api_key: int, kind: str, version: int) -> bool:
        return self.pick(api_key, version, kind)._flexible(api_key, kind, version)

    def _owner(self, body: Message, version: int) -> Protocol:
        name = type(body).__name__
        for protocol in self.protocols:
            if name in protocol and protocol.message(name) is type(body):
                return protocol._owner(body, version)
        # a class from elsewhere (another spec directory): the header rules of whoever has its version
        return self.pick(api_key_of(body), version, type(body).MESSAGE_TYPE)


class AutoProtocol(ProtocolChain):
    """Apache first; where Apache and the KIP specs give one version number different bytes, both
    layouts are tried and the one that reads the frame exactly wins (Apache's on a tie, with a warning)."""

    def __init__(self, apache: Protocol, kip: Protocol) -> None:
        from kafka_epochs.layout_conflicts import conflicting_versions

        super().__init__([apache, kip], name="auto")
        self._conflicts = conflicting_versions(
            apache._layout_digests(), apache._index, kip._layout_digests(), kip._index
        )

    def layouts(self, api_key: int, kind: str, version: int) -> list[Protocol]:
        if (api_key, kind, version) in self._conflicts:
            return list(self.protocols)
        return super().layouts(api_key, kind, version)

    def conflicts(self) -> list[tuple[int, str, int]]:
        """(api key, kind, version) that Apache and the KIP specs lay out differently."""
        return sorted(self._conflicts)


# -- shared steps ---------------------------------------------------------------------------------


def _optional_module(module: str) -> ModuleType | None:
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError:
        return None


@functools.cache
def _package(module: str, name: str, origin: str) -> Protocol:
    index = importlib.import_module(f"{module}._index")

    def load(message: str) -> ModuleType:
        return importlib.import_module(f"{module}.{message}")

    protocol = Protocol(index.MESSAGES, load, origin, name)
    protocol._table = lambda part: _optional_module(f"{module}.{part}")
    return protocol


@functools.cache
def _kip() -> Protocol:
    return ProtocolChain([Protocol.bundled(), Protocol.apache()], name="kip")


@functools.cache
def _auto() -> Protocol:
    return AutoProtocol(Protocol.apache(), Protocol.bundled())
