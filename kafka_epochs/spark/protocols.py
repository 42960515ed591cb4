"""Which protocol decodes a batch, named so that it survives the trip to Spark's workers.

A :class:`~kafka_epochs.protocol.Protocol` holds loaded modules and cannot be pickled, so the
Spark adapters ship a *reference* instead: ``None`` for the bundled specs, else a tuple of spec
directories. Each worker process resolves a reference once and keeps the result (Python workers
are reused across tasks, so the generated code is imported once per worker, not once per batch).
"""

from __future__ import annotations

import functools
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeAlias

from kafka_epochs.protocol import Protocol, ProtocolChain
from kafka_epochs.wire.message import Message

#: What the ``protocol=`` arguments accept.
ProtocolLike: TypeAlias = Protocol | ProtocolChain | str | os.PathLike[str] | Sequence[str | os.PathLike[str]] | None

#: A picklable stand-in: None (bundled) or spec directories, tried in order.
ProtocolRef: TypeAlias = tuple[str, ...] | None


def protocol_ref(protocol: ProtocolLike) -> ProtocolRef:
    """The picklable reference of a protocol, or of spec directories, for shipping to workers."""
    if protocol is None:
        return None
    if isinstance(protocol, Protocol):
        return None if protocol is Protocol.bundled() else (_absolute(protocol.origin),)
    if isinstance(protocol, ProtocolChain):
        return tuple(_one_ref(p) for p in protocol.protocols)
    if isinstance(protocol, (str, os.PathLike)):
        return (_absolute(protocol),)
    return tuple(_absolute(p) for p in protocol)


def resolve(protocol: ProtocolLike) -> Protocol | ProtocolChain:
    """A usable protocol: objects as given, references loaded once per process."""
    if isinstance(protocol, (Protocol, ProtocolChain)):
        return protocol
    return _load(protocol_ref(protocol))


@functools.cache
def _load(ref: ProtocolRef) -> Protocol | ProtocolChain:
    if ref is None:
        return Protocol.bundled()
    protocols = [Protocol.bundled() if d == _BUNDLED else Protocol.from_specs(d) for d in ref]
    return protocols[0] if len(protocols) == 1 else ProtocolChain(protocols)


#: How a chain names the bundled protocol inside a reference (it has no directory of its own).
_BUNDLED = "<bundled>"


def _one_ref(protocol: Protocol) -> str:
    return _BUNDLED if protocol is Protocol.bundled() else _absolute(protocol.origin)


def _absolute(path: str | os.PathLike[str]) -> str:
    if path == _BUNDLED:
        return _BUNDLED
    # workers may run with another working directory than the driver had
    return str(Path(path).resolve())


@dataclass(frozen=True, slots=True)
class Entry:
    """What decoding one (api key, version, direction) needs, looked up once per batch."""

    cls: type[Message]
    api_name: str  # "Produce": the message name without Request/Response
    header_version: int


class Lookup:
    """(api key, version, kind) -> :class:`Entry`, or None when the protocol lacks it; memoized."""

    def __init__(self, protocol: Protocol | ProtocolChain) -> None:
        self.protocol = protocol
        self._entries: dict[tuple[int, int, str], Entry | None] = {}

    def entry(self, api_key: int, api_version: int, kind: str) -> Entry | None:
        key = (api_key, api_version, kind)
        if key not in self._entries:
            self._entries[key] = self._find(api_key, api_version, kind)
        return self._entries[key]

    def _find(self, api_key: int, api_version: int, kind: str) -> Entry | None:
        chain = self.protocol
        single = chain.pick(api_key, api_version, kind) if isinstance(chain, ProtocolChain) else chain
        if api_version not in single.versions(api_key, kind):
            return None
        cls: Any = single.message_for(api_key, kind)
        if kind == "request":
            header_version = single.request_header_version(api_key, api_version)
        else:
            header_version = single.response_header_version(api_key, api_version)
        return Entry(cls, api_name_of(cls.__name__), header_version)

    def api_name(self, api_key: int, kind: str) -> str | None:
        """The api's name even for a version the protocol lacks (so a bad row still says which api)."""
        try:
            return api_name_of(self.protocol.message_for(api_key, kind).__name__)
        except KeyError:
            return None


def api_name_of(message_name: str) -> str:
    return message_name.removesuffix("Request").removesuffix("Response")
