"""A set of generated messages, and whole frames: size prefix, request/response headers, body.

>>> proto = Protocol.bundled()
>>> Req = proto.message("ApiVersionsRequest")
>>> frame = proto.encode_request(Req(client_software_name="app"), 3, correlation_id=7, client_id="c")
>>> proto.decode_request(frame).body.client_software_name
'app'
"""

from __future__ import annotations

import functools
import importlib
import struct
from collections.abc import Callable, Iterator
from types import ModuleType
from typing import TYPE_CHECKING, Any

from kafka_epochs.wire.errors import DecodeError, EncodeError, UnsupportedVersionError
from kafka_epochs.wire.message import Message

if TYPE_CHECKING:  # the generator and pathlib load only when from_specs is used
    from pathlib import Path

    from kafka_epochs.codegen.cache import IndexRow

_SIZE = struct.Struct(">i")
_KEY_VERSION = struct.Struct(">hh")

CONTROLLED_SHUTDOWN = 7
API_VERSIONS = 18


class Decoded:
    """A decoded request or response frame.

    ``trailing`` counts bytes after the body, when the caller allowed them (some clients send a
    few, and brokers accept them); it is always 0 for an exact decode. (A plain slotted class:
    the dataclass machinery would double the cost of ``import kafka_epochs.protocol``.)
    """

    __slots__ = ("api_key", "api_version", "body", "header", "header_version", "trailing")

    def __init__(
        self, header: Any, body: Any, api_key: int, api_version: int, header_version: int, trailing: int = 0,
    ) -> None:
        self.header = header  # a RequestHeader or ResponseHeader object
        self.body = body  # the generated message object
        self.api_key = api_key
        self.api_version = api_version
        self.header_version = header_version
        self.trailing = trailing

    def __repr__(self) -> str:
        return (f"Decoded(header={self.header!r}, body={self.body!r}, api_key={self.api_key}, "
                f"api_version={self.api_version}, header_version={self.header_version}, trailing={self.trailing})")

    def __eq__(self, other: object) -> bool:
        if type(other) is not Decoded:
            return NotImplemented
        return all(getattr(self, name) == getattr(other, name) for name in self.__slots__)

    __hash__ = None  # type: ignore[assignment]

    @property
    def correlation_id(self) -> int:
        return int(self.header.correlation_id)


class Protocol:
    """Message classes by name and by api key, plus framing with Kafka's header rules."""

    def __init__(self, index: dict[str, IndexRow], load: Callable[[str], ModuleType], origin: str) -> None:
        self._index = index
        self._load = load
        self.origin = origin
        self._classes: dict[str, type[Message]] = {}
        self._by_key: dict[tuple[int, str], str] = {}
        for name, (api_key, kind, *_rest) in index.items():
            if api_key is not None and kind in ("request", "response"):
                self._by_key[(api_key, kind)] = name

    def __repr__(self) -> str:
        return f"<Protocol {self.origin}: {len(self._index)} messages>"

    # -- construction -------------------------------------------------------------------------

    @classmethod
    def bundled(cls) -> Protocol:
        """The protocol generated from this project's ``messages/`` specs (KIP epoch versions)."""
        return _bundled()

    @classmethod
    def from_specs(cls, spec_dir: str | Path, cache_dir: str | Path | None = None) -> Protocol:
        """A protocol for any directory of Kafka-style JSON specs, generated on first use.

        Generated code is cached (``$KAFKA_EPOCHS_CACHE``, else ``~/.cache/kafka-epochs``) under a
        digest of the specs and the generator, so later calls, in any process, skip generation.
        """
        from kafka_epochs.codegen.cache import compiled_package, import_from

        package, directory = compiled_package(spec_dir, cache_dir)
        index_module = import_from(package, directory, "_index")

        def load(name: str) -> ModuleType:
            return import_from(package, directory, name)

        return cls(index_module.MESSAGES, load, str(spec_dir))

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
        if kind not in ("request", "response"):
            raise ValueError(f"kind must be 'request' or 'response', not {kind!r}")
        name = self._by_key.get((api_key, kind))
        if name is None:
            raise KeyError(f"no {kind} for api key {api_key} in {self.origin}")
        return self.message(name)

    def api_keys(self) -> list[int]:
        return sorted({key for key, kind in self._by_key if kind == "request"})

    def versions(self, api_key: int, kind: str = "request") -> range:
        name = self._by_key.get((api_key, kind))
        if name is None:
            return range(0)
        _, _, low, high, _ = self._index[name]
        return range(low, high + 1)

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

    def encode_request(
        self, body: Message, version: int, correlation_id: int, client_id: str | None = "",
    ) -> bytes:
        """A size-prefixed request frame: header (version chosen by Kafka's rule) and body."""
        api_key = _api_key(body)
        header_cls: Any = self.message("RequestHeader")
        header = header_cls(
            request_api_key=api_key, request_api_version=version, correlation_id=correlation_id,
            client_id=client_id,
        )
        return self._frame(header, self.request_header_version(api_key, version), body, version)

    def encode_response(self, body: Message, version: int, correlation_id: int) -> bytes:
        """A size-prefixed response frame."""
        header_cls: Any = self.message("ResponseHeader")
        header = header_cls(correlation_id=correlation_id)
        return self._frame(header, self.response_header_version(_api_key(body), version), body, version)

    def _frame(self, header: Message, header_version: int, body: Message, version: int) -> bytes:
        if version not in type(body).VALID_VERSIONS:
            raise UnsupportedVersionError(f"{type(body).__name__} has no version {version}")
        out: list[bytes] = []
        header.write(out, header_version)
        body.write(out, version)
        size = sum(map(len, out))
        if size > 0x7FFFFFFF:
            raise EncodeError(f"frame of {size} bytes does not fit a 32-bit size prefix")
        out.insert(0, _SIZE.pack(size))
        return b"".join(out)

    def decode_request(self, frame: bytes | bytearray | memoryview, *, allow_trailing: bool = False) -> Decoded:
        """Decode a size-prefixed request frame into its header and body.

        Bytes after the body are an error unless ``allow_trailing``; then their count is in
        ``Decoded.trailing``.
        """
        data = _checked_frame(frame)
        if len(data) < 8:
            raise DecodeError("truncated: a request header needs at least 4 bytes", len(data), "request_api_key")
        api_key, api_version = _KEY_VERSION.unpack_from(data, 4)
        body_cls = self._class_for(api_key, api_version, "request", 4)
        header_version = self.request_header_version(api_key, api_version)
        header, pos = self.message("RequestHeader").read(data, 4, header_version)
        body, trailing = _read_body(body_cls, data, pos, api_version, allow_trailing)
        return Decoded(header, body, api_key, api_version, header_version, trailing)

    def decode_response(
        self, frame: bytes | bytearray | memoryview, api_key: int, api_version: int, *, allow_trailing: bool = False,
    ) -> Decoded:
        """Decode a size-prefixed response frame; the api key and version come from its request."""
        data = _checked_frame(frame)
        body_cls = self._class_for(api_key, api_version, "response", -1)
        header_version = self.response_header_version(api_key, api_version)
        header, pos = self.message("ResponseHeader").read(data, 4, header_version)
        body, trailing = _read_body(body_cls, data, pos, api_version, allow_trailing)
        return Decoded(header, body, api_key, api_version, header_version, trailing)

    def _class_for(self, api_key: int, api_version: int, kind: str, offset: int) -> type[Message]:
        name = self._by_key.get((api_key, kind))
        if name is None:
            raise DecodeError(f"unknown api key {api_key}", offset, "request_api_key")
        cls = self.message(name)
        if api_version not in cls.VALID_VERSIONS:
            valid = cls.VALID_VERSIONS
            raise DecodeError(
                f"{name} has no version {api_version} (valid: {valid.start}-{valid.stop - 1})",
                offset + 2 if offset >= 0 else -1, "request_api_version")
        return cls


@functools.cache
def _bundled() -> Protocol:
    index = importlib.import_module("kafka_epochs.messages._index")

    def load(name: str) -> ModuleType:
        return importlib.import_module(f"kafka_epochs.messages.{name}")

    return Protocol(index.MESSAGES, load, "bundled messages/")


def _api_key(body: Message) -> int:
    key = type(body).API_KEY
    if key is None:
        raise EncodeError(f"{type(body).__name__} is not a request or response (it has no api key)")
    return key


def _checked_frame(frame: bytes | bytearray | memoryview) -> bytes:
    data = frame if type(frame) is bytes else bytes(frame)
    if len(data) < 4:
        raise DecodeError("truncated: a frame starts with a 4-byte size", 0, "size")
    size = _SIZE.unpack_from(data, 0)[0]
    if size != len(data) - 4:
        raise DecodeError(f"the size prefix says {size} bytes but {len(data) - 4} follow", 0, "size")
    return data


def _read_body(cls: type[Message], data: bytes, pos: int, version: int, allow_trailing: bool) -> tuple[Message, int]:
    body, end = cls.read(data, pos, version)
    trailing = len(data) - end
    if trailing and not allow_trailing:
        raise DecodeError(f"{trailing} trailing bytes after the body", end, "", f"{cls.__name__} v{version}")
    return body, trailing


class ProtocolChain:
    """Several protocols tried in order: the first that defines a frame's api and version decodes it.

    So one capture of clients of mixed Kafka versions decodes, given e.g. Kafka 3.9's and 4.x's
    spec folders. It offers what framing needs of a :class:`Protocol`.
    """

    def __init__(self, protocols: list[Protocol]) -> None:
        if not protocols:
            raise ValueError("a ProtocolChain needs at least one protocol")
        self.protocols = protocols

    def __repr__(self) -> str:
        return f"<ProtocolChain {' > '.join(p.origin for p in self.protocols)}>"

    def pick(self, api_key: int, api_version: int, kind: str) -> Protocol:
        """The first protocol defining this api and version (else the first, for its error)."""
        for protocol in self.protocols:
            if api_version in protocol.versions(api_key, kind):
                return protocol
        return self.protocols[0]

    def message_for(self, api_key: int, kind: str) -> type[Message]:
        for protocol in self.protocols:
            if protocol.versions(api_key, kind):
                return protocol.message_for(api_key, kind)
        raise KeyError(f"no {kind} for api key {api_key} in {self!r}")

    def decode_request(self, frame: bytes | bytearray | memoryview, *, allow_trailing: bool = False) -> Decoded:
        data = _checked_frame(frame)
        if len(data) < 8:
            return self.protocols[0].decode_request(data, allow_trailing=allow_trailing)
        api_key, api_version = _KEY_VERSION.unpack_from(data, 4)
        return self.pick(api_key, api_version, "request").decode_request(data, allow_trailing=allow_trailing)

    def decode_response(
        self, frame: bytes | bytearray | memoryview, api_key: int, api_version: int, *, allow_trailing: bool = False,
    ) -> Decoded:
        protocol = self.pick(api_key, api_version, "response")
        return protocol.decode_response(frame, api_key, api_version, allow_trailing=allow_trailing)
