"""Source of a projected decoder: one straight-line function per (message, version, projection).

The function walks a body's bytes as the full decoder does, but keeps only the wanted values
and builds no objects: fixed-width fields it does not want are stepped over by offset
arithmetic (folded into the ``struct`` format of the values it does want, as ``x`` pad bytes),
strings, bytes and arrays of fixed-width values by their length prefix, and tag sections by
their sizes. Each wanted value lands in a local variable; at the end of each element of the
row array the values of that level are appended to their columns, and the values of enclosing
levels are repeated over the rows their elements produced (see :mod:`.paths` for the rows).

Like the full decoders, the function checks only what keeps it bounded (array counts against
the bytes left, tag sizes against their section) and otherwise trusts the bytes; its caller
checks the end position and, on any failure, has the checked decoder explain it.
"""

from __future__ import annotations

import struct
from itertools import count
from typing import Any

from kafka_epochs.codegen.source import Source
from kafka_epochs.projection import runtime
from kafka_epochs.projection.paths import Node
from kafka_epochs.wire.schema import EMPTY_ARRAY, EMPTY_STRUCT, FieldInfo

__all__ = ["emit"]

#: struct code and width of each fixed-width kind
_FIXED: dict[str, tuple[str, int]] = {
    "bool": ("?", 1),
    "int8": ("b", 1),
    "int16": ("h", 2),
    "uint16": ("H", 2),
    "int32": ("i", 4),
    "uint32": ("I", 4),
    "int64": ("q", 8),
    "float64": ("d", 8),
    "uuid": ("16s", 16),
}
_LENGTH_PREFIXED = ("string", "bytes", "records")


class _Level:
    """The values of one row level: the message, or one element of an array of the row chain."""

    def __init__(self, innermost: bool) -> None:
        self.innermost = innermost
        self.columns: list[int] = []


def emit(message: Any, version: int, root: Node, name: str = "project") -> tuple[str, dict[str, Any]]:
    """The source of ``name(data, pos, end, c0, c1, ...) -> pos`` and the globals it needs."""
    return _Emitter(message, version).function(root, name)


class _Emitter:
    def __init__(self, message: Any, version: int) -> None:
        self.version = version
        self.flexible = version in message.FLEXIBLE_VERSIONS
        self.message = message
        self.src = Source()
        self.globals: dict[str, Any] = {
            "_uvarint": runtime.read_uvarint,
            "_Malformed": runtime.Malformed,
            "_skip_compact": runtime.skip_compact,
            "_skip_compact_array": runtime.skip_compact_array,
            "_classic_null": runtime.classic_null,
            "_skip_tags": runtime.skip_tags,
            "_repeat": runtime.repeat,
            "_uuid": runtime.uuid_from_bytes,
            "_fixed_items": runtime.fixed_items,
        }
        self._names = count()
        #: the byte at ``pos`` is already in ``n``: the fixed run before a compact length read it
        self.loaded = False

    # -- names -----------------------------------------------------------------------------

    def fresh(self, stem: str) -> str:
        return f"{stem}{next(self._names)}"

    def const(self, value: Any, stem: str = "_K") -> str:
        for name, known in self.globals.items():
            if known is value and name.startswith(stem):
                return name
        name = self.fresh(stem)
        self.globals[name] = value
        return name

    def unpacker(self, fmt: str) -> str:
        name = "_S_" + fmt.replace("16s", "U").replace("?", "T")  # a valid identifier
        if name not in self.globals:
            self.globals[name] = struct.Struct(">" + fmt).unpack_from
        return name

    # -- the function ----------------------------------------------------------------------

    def function(self, root: Node, name: str) -> tuple[str, dict[str, Any]]:
        columns = _columns(root)
        params = ", ".join(["data", "pos", "end", *(f"c{i}" for i in columns)])
        level = _Level(innermost=not _walks_array(root))
        # Rows are counted by the length of one column of the innermost level, which gets one
        # value per row: no counter to keep.
        self.rows = f"len(c{_columns(_innermost(root))[0]})"
        with self.src.block(f"def {name}({params}):"):
            if not level.innermost:
                self.src(f"r0 = {self.rows}")
            self.struct(self.message, root, "end", level)
            self.row_end(level, None if level.innermost else "r0")
            self.src("return pos")
        return self.src.text(), self.globals

    def row_end(self, level: _Level, start: str | None) -> None:
        """Put the level's values in their columns, once per row it produced (``start``: the
        variable holding the row count when the level began; None for the innermost level)."""
        if level.innermost:
            for column in level.columns:
                self.src(f"c{column}.append(v{column})")
            return
        if not level.columns:
            return
        self.src(f"k = {self.rows} - {start}")
        with self.src.block("if k:"):
            for column in level.columns:
                self.src(f"c{column}.extend(_repeat(v{column}, k))")

    # -- structs ---------------------------------------------------------------------------

    def struct(self, cls: Any, node: Node | None, end: str, level: _Level | None) -> None:
        """Walk one struct's fields (``node`` None: nothing wanted, skip it all)."""
        v = self.version
        present = [f for f in cls._FIELDS if f.present(v)]
        if node is not None and level is not None:
            for f in cls._FIELDS:
                if not f.present(v) and node.wants(f.attr):
                    self.absent(f, node, level, default=False)
        regular = [f for f in present if not f.is_tagged(v)]
        run: list[FieldInfo] = []
        for f in regular:
            if f.kind in _FIXED:
                run.append(f)
                continue
            self.fixed_run(run, node, level, then_length=self.starts_with_length(f))
            run = []
            self.value(f, node, end, level)
            assert not self.loaded, "a preloaded length byte was not used"
        self.fixed_run(run, node, level)
        if self.flexible:
            self.tags(cls, [f for f in present if f.is_tagged(v)], node, end, level)

    def starts_with_length(self, f: FieldInfo) -> bool:
        """Whether ``f`` begins with a compact length (whose first byte a fixed run can read)."""
        return (f.kind in _LENGTH_PREFIXED and self.compact(f)) or (f.kind == "array" and self.flexible)

    def fixed_run(
        self, run: list[FieldInfo], node: Node | None, level: _Level | None, then_length: bool = False
    ) -> None:
        """Read the wanted values of a run of fixed-width fields in one ``struct`` call; with
        ``then_length``, the first byte of the length that follows too (into ``n``)."""
        if not run:
            return
        fmt = ""
        targets: list[str] = []
        uuids: list[str] = []
        width = 0
        skipped = 0
        for f in run:
            code, size = _FIXED[f.kind]
            width += size
            column = self.leaf(f, node, level)
            if column is None:
                skipped += size
                continue
            if skipped:
                fmt += f"{skipped}x"
                skipped = 0
            fmt += code
            targets.append(f"v{column}")
            if f.kind == "uuid":
                uuids.append(f"v{column}")
        if targets and then_length:
            fmt += f"{skipped}xB" if skipped else "B"
            targets.append("n")
            self.loaded = True
        if targets:
            self.src(f"{', '.join(targets)}, = {self.unpacker(fmt)}(data, pos)")
            for target in uuids:
                self.src(f"{target} = _uuid({target})")
        self.src(f"pos += {width}")

    def leaf(self, f: FieldInfo, node: Node | None, level: _Level | None) -> int | None:
        """The column of ``f`` when it is wanted as a value (and noted on the level), else None."""
        if node is None or level is None or f.attr not in node.leaves:
            return None
        column = node.leaves[f.attr]
        if column not in level.columns:  # bound on several paths (null, absent tag, present)
            level.columns.append(column)
        return column

    def absent(self, f: FieldInfo, node: Node, level: _Level, default: bool) -> None:
        """Bind the values a field does not carry: None, or (``default``) its spec default.

        A wanted array of structs that is absent gives no rows, so nothing is bound for it.
        """
        if f.attr in node.leaves:
            column = self.leaf(f, node, level)
            value = f.default if default else None
            if value is EMPTY_ARRAY:
                self.src(f"v{column} = []")
            elif value is None or isinstance(value, (bool, int, str)):
                self.src(f"v{column} = {value!r}")
            else:
                self.src(f"v{column} = {self.const(value)}")
        elif f.attr in node.structs:
            child = node.structs[f.attr]
            # a default struct's fields take their own defaults; a null default, None
            inner_default = default and f.default is EMPTY_STRUCT
            for g in f.struct._FIELDS:
                if child.wants(g.attr):
                    self.absent(g, child, level, default=inner_default and g.present(self.version))

    # -- one value -------------------------------------------------------------------------

    def value(self, f: FieldInfo, node: Node | None, end: str, level: _Level | None) -> None:
        if f.kind in _FIXED:
            self.fixed_run([f], node, level)
        elif f.kind in _LENGTH_PREFIXED:
            column = self.leaf(f, node, level)
            nullable = f.is_nullable(self.version)
            if column is None:
                self.skip_length_prefixed(f.kind, self.compact(f), nullable)
            else:
                self.read_length_prefixed(f.kind, self.compact(f), nullable, f"v{column}")
        elif f.kind == "array":
            self.array(f, node, end, level)
        elif f.kind == "struct":
            self.plain_struct(f, node, end, level)
        else:  # pragma: no cover - the generator emits no other kind
            raise ValueError(f"unknown kind {f.kind}")

    def compact(self, f: FieldInfo) -> bool:
        if f.compact is not None:
            return f.compact[0] <= self.version <= f.compact[1]
        return self.flexible

    def skip_length_prefixed(self, kind: str, compact: bool, nullable: bool) -> None:
        src = self.src
        if compact:
            self.load_n()
            with src.block("if 0 < n < 0x80:"):
                src("pos += n")
            with src.block("elif n and 0 < data[pos + 1] < 0x80:"):  # a two-byte length (the ~1 KiB batch)
                src("pos += ((n & 0x7F) | (data[pos + 1] << 7)) + 1")
            with src.block("else:"):
                src(f"pos = _skip_compact(data, pos, {nullable})")
            return
        width = 2 if kind == "string" else 4
        src(f"n = {self.unpacker('h' if width == 2 else 'i')}(data, pos)[0]")
        with src.block("if n >= 0:"):
            src(f"pos += {width} + n")
        with src.block("else:"):
            src(f"pos = _classic_null(n, pos + {width}, {nullable})")

    def read_length_prefixed(self, kind: str, compact: bool, nullable: bool, target: str) -> None:
        """``target`` = the value (None when null, where ``nullable``)."""
        src = self.src
        string = kind == "string"
        if compact:
            self.uvarint_n(string_limit=string)
            src("n -= 1")
        else:
            width = 2 if string else 4
            src(f"n = {self.unpacker('h' if string else 'i')}(data, pos)[0]")
            src(f"pos += {width}")
        with src.block("if n < 0:"):
            if nullable:
                with src.block("if n < -1:"):
                    src("raise _Malformed")
                src(f"{target} = None")
            else:
                src("raise _Malformed")
        with src.block("else:"):
            src(f"{target} = data[pos:pos + n]" + (".decode()" if string else ""))
            src("pos += n")

    def load_n(self) -> None:
        """``n`` = the byte at ``pos`` (already there after a fixed run that read it)."""
        if self.loaded:
            self.loaded = False
        else:
            self.src("n = data[pos]")

    def uvarint_n(self, string_limit: bool) -> None:
        """``n`` = the unsigned varint at ``pos``; one- and two-byte values inline."""
        src = self.src
        self.load_n()
        with src.block("if n < 0x80:"):
            src("pos += 1")
        with src.block("elif data[pos + 1] < 0x80:"):
            src("n = (n & 0x7F) | (data[pos + 1] << 7)")
            src("pos += 2")
        with src.block("else:"):
            src("n, pos = _uvarint(data, pos)")
            if string_limit:  # Kafka's strings are at most 32767 bytes
                with src.block("if n > 0x8000:"):
                    src("raise _Malformed")

    def array_count(self, f: FieldInfo, end: str) -> None:
        """``n`` = the element count, -1 for null (refused where the field is not nullable)."""
        src = self.src
        if self.flexible:
            self.uvarint_n(string_limit=False)
            src("n -= 1")
        else:
            src(f"n = {self.unpacker('i')}(data, pos)[0]")
            src("pos += 4")
        with src.block("if n < 0:" if not f.is_nullable(self.version) else "if n < -1:"):
            src("raise _Malformed")
        with src.block(f"if n > {end} - pos:"):
            src("raise _Malformed")

    def array(self, f: FieldInfo, node: Node | None, end: str, level: _Level | None) -> None:
        src = self.src
        element = f.element or ""
        if element in _FIXED and self.leaf(f, node, level) is None:
            self.skip_fixed_array(f, _FIXED[element][1])
            return
        self.array_count(f, end)
        if element == "struct":
            chain = node.array[1] if node is not None and node.array and node.array[0] == f.attr else None
            if chain is None or level is None:
                self.skip_structs(f, end)
                return
            inner = _Level(innermost=not _walks_array(chain))
            start = None if inner.innermost else self.fresh("s")
            with src.block("for _ in range(n):"):
                if start is not None:
                    src(f"{start} = {self.rows}")
                self.struct(f.struct, chain, end, inner)
                self.row_end(inner, start)
            return
        column = self.leaf(f, node, level)
        if element in _FIXED:
            code, size = _FIXED[element]
            with src.block("if n < 0:"):
                src(f"v{column} = None")
            with src.block("else:"):
                src(f"v{column} = _fixed_items({code!r}, data, pos, n)")
                src(f"pos += n * {size}")
            return
        # strings, bytes or records: one by one
        if column is None:
            with src.block("for _ in range(n):"):
                self.skip_length_prefixed(element, self.compact(f), nullable=False)
            return
        items = self.fresh("items")
        src(f"{items} = None if n < 0 else []")
        with src.block("for _ in range(n):"):
            self.read_length_prefixed(element, self.compact(f), False, "x")  # a null element is malformed
            src(f"{items}.append(x)")
        src(f"v{column} = {items}")

    def skip_fixed_array(self, f: FieldInfo, width: int) -> None:
        """Step over an unwanted array of fixed-width values: one length read, no loop."""
        src = self.src
        nullable = f.is_nullable(self.version)
        if self.flexible:
            self.load_n()
            with src.block("if 0 < n < 0x80:"):
                src(f"pos += {width} * n - {width - 1}")  # the length byte and n - 1 values
            with src.block("else:"):
                src(f"pos = _skip_compact_array(data, pos, {width}, {nullable})")
            return
        src(f"n = {self.unpacker('i')}(data, pos)[0]")
        with src.block("if n >= 0:"):
            src(f"pos += 4 + {width} * n")
        with src.block("else:"):
            src(f"pos = _classic_null(n, pos + 4, {nullable})")

    def skip_structs(self, f: FieldInfo, end: str) -> None:
        width = _fixed_width(f.struct, self.version, self.flexible)
        if width is not None:
            self.src(f"if n > 0: pos += n * {width}")
            return
        with self.src.block("for _ in range(n):"):
            self.struct(f.struct, None, end, None)

    def plain_struct(self, f: FieldInfo, node: Node | None, end: str, level: _Level | None) -> None:
        child = node.structs.get(f.attr) if node is not None else None
        src = self.src
        if f.is_nullable(self.version):
            src("pos += 1")
            with src.block("if data[pos - 1] < 0x80:"):
                self.struct(f.struct, child, end, level if child is not None else None)
            if child is not None and level is not None and _has_leaves(child):
                with src.block("else:"):
                    for g in f.struct._FIELDS:
                        if child.wants(g.attr):
                            self.absent(g, child, level, default=False)
            return
        self.struct(f.struct, child, end, level if child is not None else None)

    # -- tag sections ----------------------------------------------------------------------

    def tags(self, cls: Any, tagged: list[FieldInfo], node: Node | None, end: str, level: _Level | None) -> None:
        src = self.src
        wanted = [f for f in tagged if node is not None and level is not None and node.wants(f.attr)]
        if not wanted:
            with src.block("if data[pos]:"):
                src(f"pos = _skip_tags(data, pos, {end})")
            with src.block("else:"):
                src("pos += 1")
            return
        assert node is not None and level is not None
        for f in wanted:  # what an absent tag means
            self.absent(f, node, level, default=True)
        tags = self.fresh("tags")
        stop = self.fresh("stop")
        src(f"{tags}, pos = _uvarint(data, pos)")
        with src.block(f"if {tags} > {end} - pos:"):
            src("raise _Malformed")
        with src.block(f"for _ in range({tags}):"):
            src("tag, pos = _uvarint(data, pos)")
            src("size, pos = _uvarint(data, pos)")
            src(f"{stop} = pos + size")
            with src.block(f"if {stop} > {end}:"):
                src("raise _Malformed")
            for i, f in enumerate(wanted):
                with src.block(f"{'if' if i == 0 else 'elif'} tag == {f.tag}:"):
                    self.value(f, node, stop, level)
                    with src.block(f"if pos != {stop}:"):
                        src("raise _Malformed")
            src(f"pos = {stop}")


def _columns(node: Node) -> list[int]:
    out = list(node.leaves.values())
    for child in node.structs.values():
        out += _columns(child)
    if node.array is not None:
        out += _columns(node.array[1])
    return sorted(out)


def _innermost(node: Node) -> Node:
    """The node of the innermost array walked (the message's own node when none is)."""
    for child in node.structs.values():
        if _walks_array(child):
            return _innermost(child)
    return _innermost(node.array[1]) if node.array is not None else node


def _walks_array(node: Node) -> bool:
    return node.array is not None or any(_walks_array(child) for child in node.structs.values())


def _has_leaves(node: Node) -> bool:
    return bool(node.leaves) or any(_has_leaves(child) for child in node.structs.values())


def _fixed_width(cls: Any, version: int, flexible: bool) -> int | None:
    """The byte width of every instance of ``cls`` at ``version``, or None when it varies."""
    if flexible:
        return None  # a tag section ends every struct
    width = 0
    for f in cls._FIELDS:
        if not f.present(version):
            continue
        if f.kind in _FIXED:
            width += _FIXED[f.kind][1]
        elif f.kind == "struct" and not f.is_nullable(version):
            inner = _fixed_width(f.struct, version, flexible)
            if inner is None:
                return None
            width += inner
        else:
            return None
    return width
