"""Projected decoders: read the fields a query asks for straight into columns, building no objects.

    >>> from kafka_epochs import Protocol
    >>> metadata = Protocol.apache().message("MetadataResponse")
    >>> wanted = projection(metadata, ["topics[].name", "topics[].partitions[].leader_epoch"])
    >>> columns = wanted.decode(body, 12)  # doctest: +SKIP
    >>> columns["topics[].partitions[].leader_epoch"]  # doctest: +SKIP
    [4, 4, 7]

A projection names fields by path (see :mod:`kafka_epochs.projection.paths` for the syntax and
for what a row is: one per element of the innermost array walked, enclosing values repeated).
For each version it is used at, a function is generated that walks the body and skips every
field not asked for; it is compiled once and cached with the projection. Values are what the
full decoder gives (``str``, ``bytes``, ``int``, ``bool``, ``float``, ``uuid.UUID``, lists for
arrays of primitives); a field the version does not carry is None, and an array of structs it
does not carry gives no rows.

Errors follow the full decoder's contract: bytes that do not hold the message at that version
raise :class:`~kafka_epochs.wire.errors.DecodeError` with the offset and field path, found by
the same checked decoder; the columns are left as they were before the call. What a projection
does not read it does not check: the UTF-8 of a string it skips, or a tag it steps over, is not
looked at.
"""

from __future__ import annotations

import _thread  # (threading's locks without importing threading at every start)
from collections.abc import Callable, Sequence
from typing import Any

from kafka_epochs.projection.paths import Node, has_path, resolve
from kafka_epochs.wire.code_cache import compile_cached
from kafka_epochs.wire.errors import DecodeError

__all__ = ["Projection", "has_path", "projection"]

ProjectFn = Callable[..., int]


class Projection:
    """Chosen fields of one message, read into columns at any of its versions."""

    def __init__(self, message: Any, paths: Sequence[str]) -> None:
        if isinstance(paths, str):
            raise TypeError("paths is a list of field paths, not one string")
        self.message = message
        root, canonical = resolve(message, tuple(paths))
        self._root: Node = root
        #: the paths as given, written out in full (``[]`` on each array of structs walked)
        self.paths: tuple[str, ...] = canonical
        self._functions: dict[int, ProjectFn] = {}
        self._lock = _thread.allocate_lock()

    def __repr__(self) -> str:
        return f"Projection({self.message.__name__}, {list(self.paths)!r})"

    def empty(self) -> list[list[Any]]:
        """Fresh columns, one list per path, in the order of :attr:`paths`."""
        return [[] for _ in self.paths]

    def decode(self, data: bytes | bytearray | memoryview, version: int) -> dict[str, list[Any]]:
        """The columns of one body (exactly ``data``), keyed by path."""
        columns = self.empty()
        self.read_into(columns, data, version)
        return dict(zip(self.paths, columns, strict=True))

    def read_into(
        self,
        columns: list[list[Any]],
        data: bytes | bytearray | memoryview,
        version: int,
        offset: int = 0,
        end: int | None = None,
    ) -> int:
        """Append the rows of the body ``data[offset:end]`` to ``columns``; returns how many.

        The body must fill the range exactly (trailing bytes are an error, as for
        ``Message.decode``). On an error, ``columns`` are truncated back to where they were.
        """
        before = len(columns[0])
        self.read(columns, data, version, offset, end, exact=True)
        return len(columns[0]) - before

    def read(
        self,
        columns: list[list[Any]],
        data: bytes | bytearray | memoryview,
        version: int,
        offset: int = 0,
        end: int | None = None,
        *,
        exact: bool = False,
        explain: bool = True,
    ) -> int:
        """Append the rows of the body starting at ``offset`` to ``columns``; returns the offset
        after it, as ``Message.read`` does (never past ``end``; with ``exact``, exactly ``end``).

        ``explain=False`` is for trying a layout: bytes it does not fit raise a DecodeError that
        names no field, without the checked decoder's walk to find one."""
        if type(data) is not bytes:
            data = bytes(data)
        if end is None:
            end = len(data)
        function = self._functions.get(version) or self.function(version)
        before = len(columns[0])
        try:
            pos = function(data, offset, end, *columns)
            if pos == end or (pos < end and not exact):
                return pos
        except DecodeError:
            raise
        except Exception:
            pos = -1
        for column in columns:
            del column[before:]
        if not explain:
            raise DecodeError(f"{self.message.__name__} v{version} does not fit these bytes", offset, "")
        raise self._error(data, offset, end, version, pos)

    def function(self, version: int) -> ProjectFn:
        """The generated function for ``version`` (compiled on first use, then cached)."""
        with self._lock:
            found = self._functions.get(version)
            if found is not None:
                return found
            if version not in self.message.VALID_VERSIONS:
                from kafka_epochs.wire.message import _unsupported

                raise _unsupported(self.message, version)
            source, namespace = self.source(version)
            code = compile_cached(source, f"<projection of {self.message.__name__} v{version}>")
            exec(code, namespace)
            found = self._functions[version] = namespace["project"]
            return found

    def source(self, version: int) -> tuple[str, dict[str, Any]]:
        """The generated source for ``version`` and the globals it runs with (for reading)."""
        from kafka_epochs.projection.emit import emit  # (once per version: a run without projections does without it)

        return emit(self.message, version, self._root)

    def _error(self, data: bytes, offset: int, end: int, version: int, pos: int) -> DecodeError:
        label = f"{self.message.__name__} v{version}"
        if offset <= pos < end:
            # Only a body read in full can leave bytes over; check it reads in full before saying so.
            from kafka_epochs.wire.checked import check

            stop = check(self.message, data, offset, end, version)
            if stop < end:
                return DecodeError(f"{end - stop} trailing bytes after the message", stop, "", label)
        from kafka_epochs.wire.checked import explain

        return explain(self.message, data, offset, end, version)


_CACHE: dict[tuple[Any, tuple[str, ...]], Projection] = {}


def projection(message: Any, paths: Sequence[str]) -> Projection:
    """The projection of ``message`` on ``paths``, shared by every caller that asks for the same."""
    key = (message, tuple(paths))
    found = _CACHE.get(key)
    if found is None:
        found = _CACHE[key] = Projection(message, paths)
    return found
