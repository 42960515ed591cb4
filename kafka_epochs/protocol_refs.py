"""Which protocol decodes a batch, named so that it survives the trip to Spark's workers.

A :class:`~kafka_epochs.protocol.Protocol` holds loaded modules and cannot be pickled, so the
Spark adapters ship a *reference* instead: ``None`` for the default profile (``auto``), else a
tuple of profile names (``"apache"``, ``"kip"``, ``"auto"``) and spec directories, chained in
order. Each worker process resolves a reference once and keeps the result (Python workers are
reused across tasks, so the generated code is imported once per worker, not once per batch).
"""

from __future__ import annotations

import functools
import os
from collections.abc import Sequence
from typing import Any, TypeAlias

from kafka_epochs.protocol import PROFILES, Protocol, ProtocolChain, version_warnings
from kafka_epochs.values import FrozenValue
from kafka_epochs.wire.message import Message

_set = object.__setattr__  # how a frozen value's __init__ sets its fields

#: What the ``protocol=`` arguments accept: a Protocol, a profile name or spec directory, several
#: of those (chained), or None for the default profile.
ProtocolLike: TypeAlias = Protocol | str | os.PathLike[str] | Sequence[str | os.PathLike[str]] | None

#: A picklable stand-in: None (the default profile) or profile names and spec directories, in order.
ProtocolRef: TypeAlias = tuple[str, ...] | None

#: How a reference names ``Protocol.bundled()`` (``messages/`` alone; it has no directory).
_BUNDLED = "<bundled>"


def protocol_ref(protocol: ProtocolLike) -> ProtocolRef:
    """The picklable reference of a protocol, or of profile names / spec directories, for workers."""
    if protocol is None:
        return None
    if isinstance(protocol, Protocol):
        return _refs_of(protocol)
    if isinstance(protocol, (str, os.PathLike)):
        return (_one(protocol),)
    return tuple(_one(p) for p in protocol)


def _refs_of(protocol: Protocol) -> tuple[str, ...]:
    if protocol.name in PROFILES and protocol is Protocol.profile(protocol.name):
        return (protocol.name,)
    if protocol is Protocol.bundled():
        return (_BUNDLED,)
    if isinstance(protocol, ProtocolChain):
        return tuple(ref for member in protocol.protocols for ref in _refs_of(member))
    return (_absolute(protocol.origin),)


def _one(choice: str | os.PathLike[str]) -> str:
    text = os.fspath(choice)
    return text if text in PROFILES or text == _BUNDLED else _absolute(text)


def resolve(protocol: ProtocolLike) -> Protocol:
    """A usable protocol: objects as given, references loaded once per process."""
    if isinstance(protocol, Protocol):
        return protocol
    return _load(protocol_ref(protocol))


@functools.cache
def _load(ref: ProtocolRef) -> Protocol:
    if ref is None:
        return Protocol.auto()
    protocols = [Protocol.bundled() if r == _BUNDLED else Protocol.profile(r) for r in ref]
    return protocols[0] if len(protocols) == 1 else ProtocolChain(protocols)


def _absolute(path: str | os.PathLike[str]) -> str:
    # workers may run with another working directory than the driver had
    return os.path.realpath(path)


class Entry(FrozenValue):
    """What decoding one (api key, version, direction) needs, looked up once per batch."""

    __slots__ = ("api_name", "cls", "header_version", "profile", "warnings")
    cls: type[Message] | None  # None: several layouts share the version number; decode_* picks one
    api_name: str  # "Produce": the message name without Request/Response
    header_version: int
    profile: str  # the layout that reads it (Decoded.profile)
    warnings: tuple[str, ...]  # carried by every decode of it (an unstable version)

    def __init__(
        self, cls: type[Message] | None, api_name: str, header_version: int, profile: str, warnings: tuple[str, ...]
    ) -> None:
        _set(self, "cls", cls)
        _set(self, "api_name", api_name)
        _set(self, "header_version", header_version)
        _set(self, "profile", profile)
        _set(self, "warnings", warnings)


class Lookup:
    """(api key, version, kind) -> :class:`Entry`, or None when the protocol lacks it; memoized."""

    def __init__(self, protocol: Protocol) -> None:
        self.protocol = protocol
        self._entries: dict[tuple[int, int, str], Entry | None] = {}

    def entry(self, api_key: int, api_version: int, kind: str) -> Entry | None:
        key = (api_key, api_version, kind)
        if key not in self._entries:
            self._entries[key] = self._find(api_key, api_version, kind)
        return self._entries[key]

    def _find(self, api_key: int, api_version: int, kind: str) -> Entry | None:
        layouts = self.protocol.layouts(api_key, kind, api_version)
        if not layouts:
            return None
        single = layouts[0]  # the layouts of one version number agree on the header (flexibility)
        cls: Any = single.message_for(api_key, kind)
        if kind == "request":
            header_version = single.request_header_version(api_key, api_version)
        else:
            header_version = single.response_header_version(api_key, api_version)
        return Entry(
            cls if len(layouts) == 1 else None,
            api_name_of(cls.__name__),
            header_version,
            single.name,
            tuple(version_warnings(cls, api_version)),
        )

    def api_name(self, api_key: int, kind: str) -> str | None:
        """The api's name even for a version the protocol lacks (so a bad row still says which api)."""
        try:
            return api_name_of(self.protocol.message_for(api_key, kind).__name__)
        except KeyError:
            return None


def api_name_of(message_name: str) -> str:
    return message_name.removesuffix("Request").removesuffix("Response")
