"""Spec model -> one Python module of fast encoder/decoder classes per message spec.

The emitted code is straight-line CPython: each run of fixed-width fields is one precompiled
``struct`` call, one-byte varints and empty tag sections are inlined, nested structs and arrays
are unrolled into the caller (no call per element), and only the versions a field really has get
code. Versions with one wire layout (:func:`kafka_epochs.spec.layout.wire_layout`) share one
reader and one writer: nothing version-specific is baked into them (a writer's "field not in
this version" error gets its version from ``Message.write``). Validation that costs time on
every message (UTF-8, exact bounds) is left to a final position check plus the checked reader in
:mod:`kafka_epochs.wire.checked`, which explains any failure with offset and field path.

Emitted code names the runtime helpers it calls through :meth:`_ModuleWriter.rt`, which records
each one, so a module imports exactly what it uses.
"""

from __future__ import annotations

import math
import textwrap
import uuid
from dataclasses import dataclass, field

from kafka_epochs.codegen.naming import attribute_name
from kafka_epochs.codegen.python_decode import Decode
from kafka_epochs.codegen.python_encode import Encode
from kafka_epochs.codegen.python_formats import fmt_name
from kafka_epochs.codegen.source import Source
from kafka_epochs.spec.layout import WireLayout, wire_layout
from kafka_epochs.spec.loader import SpecError
from kafka_epochs.spec.model import (
    FieldSpec,
    Kind,
    MessageSpec,
    StructDefault,
    StructSpec,
)
from kafka_epochs.spec.versions import MAX_VERSION, Versions

GENERATOR_VERSION = 3
#: alias -> the import that defines it, for every name generated code may use besides its own;
#: :meth:`_ModuleWriter.rt` records the aliases a module uses and only those are imported.
_RUNTIME_IMPORTS: dict[str, str] = {
    "_struct": "import struct as _struct",
    "_Any": "from typing import Any as _Any",
    "_TypeAlias": "from typing import TypeAlias as _TypeAlias",
    "_UUID": "from uuid import UUID as _UUID",
    **{
        alias: f"from kafka_epochs.wire.{module} import {name} as {alias}"
        for module, name, alias in [
            ("message", "Message", "_Message"),
            ("message", "NO_VERSIONS", "_NO_VERSIONS"),
            ("message", "Struct", "_Struct"),
            ("primitives", "Malformed", "_Malformed"),
            ("primitives", "UVARINT1", "_UV1"),
            ("primitives", "fixed_array", "_fixed_array"),
            ("primitives", "fixed_array_pack", "_fixed_array_pack"),
            ("primitives", "fixed_array_packers", "_fixed_array_packers"),
            ("primitives", "fixed_array_unpackers", "_fixed_array_unpackers"),
            ("primitives", "SMALL_ARRAY", "_SMALL"),
            ("primitives", "read_unknown_tags", "_read_unknown_tags"),
            ("primitives", "read_uvarint", "_uvarint"),
            ("primitives", "uuid_from_bytes", "_uuid"),
            ("primitives", "uvarint", "_to_uvarint"),
            ("primitives", "write_tags", "_write_tags"),
            ("schema", "EMPTY_ARRAY", "_EMPTY_ARRAY"),
            ("schema", "EMPTY_STRUCT", "_EMPTY_STRUCT"),
            ("schema", "FieldInfo", "_F"),
            ("schema", "MAX_VERSION", "_MAX_VERSION"),
            ("schema", "Shape", "_Shape"),
            ("support", "missing_field", "_missing"),
            ("support", "string_length", "_string_length"),
        ]
    },
}
#: The stdlib imports first, then the runtime's, in this order.
_IMPORT_ORDER = list(_RUNTIME_IMPORTS)
_PY_TYPES = {
    Kind.BOOL: "bool",
    Kind.INT8: "int",
    Kind.INT16: "int",
    Kind.UINT16: "int",
    Kind.INT32: "int",
    Kind.UINT32: "int",
    Kind.INT64: "int",
    Kind.FLOAT64: "float",
    Kind.STRING: "str",
    Kind.BYTES: "bytes",
    Kind.RECORDS: "bytes",
    Kind.UUID: "_UUID",
}


def _import_statements(src: Source, imports: list[str]) -> None:
    """``imports`` (each ``import m as a`` or ``from m import n as a``), with one statement per
    module: a statement costs a call into the import system even for a module already loaded
    (several thousand instructions), and a run imports dozens of generated modules."""
    names: dict[str, list[str]] = {}
    for line in imports:
        if not line.startswith("from "):
            src(line)
            continue
        module, name = line.removeprefix("from ").split(" import ")
        names.setdefault(module, []).append(name)
    for module, listed in names.items():
        if len(listed) == 1:
            src(f"from {module} import {listed[0]}")
            continue
        src(f"from {module} import (")
        for name in sorted(listed, key=_isort_key):
            src(f"    {name},")
        src(")")


def _isort_key(imported: str) -> tuple[int, str]:
    """The order ruff's isort keeps names of one import in: constants, then classes, then the rest."""
    name = imported.split(" as ", maxsplit=1)[0]
    kind = 0 if name.isupper() else 1 if name[:1].isupper() else 2
    return kind, name


def generate_module(spec: MessageSpec) -> str:
    """The source of the module for one spec."""
    _check_names(spec)
    return _ModuleWriter(spec).render()


def _check_names(spec: MessageSpec) -> None:
    """Spec names that are distinct in JSON but would collide as Python names."""
    for struct in spec.structs():
        seen: dict[str, str] = {}
        for f in struct.fields:
            attr = attribute_name(f.name)
            if attr in seen:
                raise SpecError(
                    spec.source,
                    f"{struct.name}.{f.name}",
                    f"fields {seen[attr]} and {f.name} would both be the attribute {attr!r}",
                )
            seen[attr] = f.name


@dataclass
class _Function:
    prefix: str
    body: list[str]
    name: str = ""


@dataclass
class _ModuleWriter:
    spec: MessageSpec
    formats: set[str] = field(default_factory=set)
    array_tables: set[tuple[str, str]] = field(default_factory=set)
    uuid_constants: dict[int, str] = field(default_factory=dict)
    functions: list[_Function] = field(default_factory=list)
    used: set[str] = field(default_factory=set)  # the runtime aliases the module's code calls
    #: (function kind, layout) -> the function already emitted for it
    _by_layout: dict[tuple[str, object], str] = field(default_factory=dict)

    # -- helpers --------------------------------------------------------------------------------

    def rt(self, alias: str) -> str:
        """A runtime helper's alias, recorded so that the module imports it."""
        if alias not in _RUNTIME_IMPORTS:
            raise KeyError(f"{alias} is not a runtime name generated code may use")
        self.used.add(alias)
        return alias

    def attr(self, f: FieldSpec) -> str:
        return attribute_name(f.name)

    def lazy(self, f: FieldSpec) -> bool:
        """Whether ``f`` is a struct that many decoded objects lack: tagged in some version, or
        absent from some. Such a field's slot holds None until its default is first read (the
        public attribute is a property), so a message without it costs no object per element
        on decode and no equality test on encode."""
        if f.type.kind is not Kind.STRUCT or f.default is not StructDefault.EMPTY_STRUCT:
            return False
        if not f.nullable_versions.empty:
            return False  # None is a value of the field there, not "not read"
        valid = self.spec.valid_versions
        return any(f.tagged_in(v) or not f.present_in(v) for v in range(valid.low, valid.high + 1))

    def slot(self, f: FieldSpec) -> str:
        """Where the object keeps ``f``: the attribute, or for a lazy field its private slot."""
        name = attribute_name(f.name)
        return f"_{name}" if self.lazy(f) else name

    def fixed(self, fmt: str) -> str:
        self.formats.add(fmt)
        self.rt("_struct")
        return fmt_name(fmt)

    def array_table(self, code: str, op: str) -> str:
        """The module constant holding ``op`` ("unpack"/"pack") functions for n = 0.._SMALL-1 items."""
        self.array_tables.add((code, op))
        self.rt("_fixed_array_unpackers" if op == "unpack" else "_fixed_array_packers")
        self.rt("_SMALL")
        return f"_{'UA' if op == 'unpack' else 'PA'}_{fmt_name(code)}"

    def flexible(self, version: int) -> bool:
        return self.spec.is_flexible(version)

    def has_tag_slot(self) -> bool:
        return not self.spec.flexible_versions.empty

    def shared(self, kind: str, layout: object) -> str | None:
        """The function already emitted for ``kind`` ("read", "write", "tags of <struct>") at
        this wire layout, if any: versions that lay the bytes out alike share it."""
        return self._by_layout.get((kind, layout))

    def add_function(self, kind: str, layout: object, prefix: str, body: list[str], name: str) -> str:
        self.functions.append(_Function(prefix, body, name))
        self._by_layout[kind, layout] = name
        return name

    def default_expr(self, f: FieldSpec) -> str:
        d = f.default
        if d is StructDefault.EMPTY_ARRAY:
            return "[]"
        if d is StructDefault.EMPTY_STRUCT:
            assert f.struct is not None
            return f"{f.struct.name}()"
        if isinstance(d, uuid.UUID):
            return self.uuid_const(d)
        if isinstance(d, float) and not math.isfinite(d):
            return f"float({str(d)!r})"
        return repr(d)

    def uuid_const(self, u: uuid.UUID) -> str:
        name = self.uuid_constants.get(u.int)
        self.rt("_UUID")
        if name is None:
            name = "_ZERO_UUID" if u.int == 0 else f"_UUID_{len(self.uuid_constants)}"
            self.uuid_constants[u.int] = name
        return name

    def nondefault(self, f: FieldSpec, expr: str) -> str:
        """A condition that holds when ``expr`` differs from the field's default (Kafka's rule).

        For a lazy field ``expr`` is its slot: None there is the default, never read.
        """
        d = f.default
        kind = f.type.kind
        if self.lazy(f):
            assert f.struct is not None
            return f"{expr} is not None and ({self.struct_nondefault(f.struct, expr)})"
        if d is None:
            return f"{expr} is not None"
        if d is StructDefault.EMPTY_ARRAY or kind in (Kind.BYTES, Kind.RECORDS):
            if f.nullable_versions.empty:
                return f"len({expr}) != 0"
            return f"{expr} is None or len({expr}) != 0"
        if kind is Kind.BOOL:
            return f"not {expr}" if d else f"{expr}"
        return f"{expr} != {self.default_expr(f)}"

    def struct_nondefault(self, struct: StructSpec, expr: str) -> str:
        """A condition that holds when the struct ``expr`` differs from a default one: its fields
        tested one by one where they are all plain values (the reading of a default made on
        first read is then as cheap as an untouched one), else the generic equality."""
        if any(f.type.kind is Kind.STRUCT or f.default is StructDefault.EMPTY_STRUCT for f in struct.fields):
            return f"{expr} != {struct.name}()"
        tests = [f"({self.nondefault(f, f'{expr}.{self.attr(f)}')})" for f in struct.fields]
        if self.has_tag_slot():
            tests.append(f"{expr}._unknown_tags")
        return " or ".join(tests) or "False"

    def versions_tuple(self, v: Versions) -> str:
        """A version range as the field table writes it: ``(low, high)``, the open end by name."""
        if v.empty:
            return "(1, 0)"
        high = self.rt("_MAX_VERSION") if v.high == MAX_VERSION else str(v.high)
        return f"({v.low}, {high})"

    def version_range(self, v: Versions, valid: Versions) -> str:
        """A class-level ``range`` of versions, cut at the last valid one."""
        if v.empty or v.low > valid.high:
            return self.rt("_NO_VERSIONS")
        return f"range({v.low}, {min(v.high, valid.high) + 1})"

    # -- module ---------------------------------------------------------------------------------

    def render(self) -> str:
        spec = self.spec
        structs = list(spec.structs())
        decoders: dict[int, str] = {}
        encoders: dict[int, str] = {}
        for v in spec.versions:
            layout = wire_layout(spec, v)
            decoders[v] = self.shared("read", layout) or self.decoder(v, layout)
            encoders[v] = self.shared("write", layout) or self.encoder(v, layout)
        for struct in structs:  # register uuid default constants before the module header is laid out
            for f in struct.fields:
                self.default_expr(f)
        # The body first, so that the header imports exactly the helpers the body used.
        body = Source()
        for struct in reversed(structs):
            body()
            body()
            self.class_source(body, struct, is_message=struct is spec.struct)
        for fn in self.functions:
            body()
            body()
            body(fn.prefix.format(name=fn.name))
            with body.indented():
                for line in fn.body:
                    body(line)
        body()
        body()
        for struct in structs:
            self.fields_table(body, struct)
        msg = spec.name
        body(f"{msg}._DECODERS = {{{', '.join(f'{v}: {n}' for v, n in decoders.items())}}}")
        body(f"{msg}._ENCODERS = {{{', '.join(f'{v}: {n}' for v, n in encoders.items())}}}")
        body()
        body(f"__all__ = [{', '.join(repr(s.name) for s in sorted(structs, key=lambda s: s.name))}]")
        return self.header() + body.text()

    def header(self) -> str:
        spec = self.spec
        src = Source()
        src(f"# Generated by kafka-epochs (generator v{GENERATOR_VERSION}) from {spec.source}. Do not edit:")
        src("# change the spec or the generator and regenerate.")
        src(f'"""{spec.name}: generated encoder and decoder for versions {spec.valid_versions}."""')
        src()
        src("from __future__ import annotations")
        src()
        imports = [_RUNTIME_IMPORTS[alias] for alias in _IMPORT_ORDER if alias in self.used]
        stdlib = [line for line in imports if not line.startswith("from kafka_epochs.")]
        _import_statements(src, stdlib)
        if stdlib:
            src()
        _import_statements(src, imports[len(stdlib) :])
        src()
        src("_new = object.__new__")
        for fmt in sorted(self.formats):
            name = fmt_name(fmt)
            src(f"_S_{name} = _struct.Struct('>{fmt}')")
            src(f"_U_{name} = _S_{name}.unpack_from")
            src(f"_P_{name} = _S_{name}.pack")
        for value, name in sorted(self.uuid_constants.items(), key=lambda kv: kv[1]):
            src(f"{name} = _UUID(int={value:#x})")
        for code, op in sorted(self.array_tables):
            maker = "_fixed_array_unpackers" if op == "unpack" else "_fixed_array_packers"
            src(f"{self.array_table(code, op)} = {maker}({code!r})")
        return src.text()

    def class_source(self, src: Source, struct: StructSpec, is_message: bool) -> None:
        spec = self.spec
        base = self.rt("_Message" if is_message else "_Struct")
        with src.block(f"class {struct.name}({base}):"):
            src('"""' + self.class_doc(struct, is_message).replace("\\", "\\\\") + '"""')
            src()
            slots = [self.slot(f) for f in struct.fields]
            if self.has_tag_slot():
                slots.append("_unknown_tags")
            src(f"__slots__ = ({''.join(repr(s) + ', ' for s in slots)})")
            if is_message:
                valid = spec.valid_versions
                src(f"API_KEY = {spec.api_key!r}")
                src(f"MESSAGE_TYPE = {spec.type.value!r}")
                src(f"VALID_VERSIONS = range({valid.low}, {valid.high + 1})")
                src(f"FLEXIBLE_VERSIONS = {self.version_range(spec.flexible_versions, valid)}")
                src(f"DEPRECATED_VERSIONS = {self.version_range(spec.deprecated_versions, valid)}")
                src(f"LATEST_VERSION_UNSTABLE = {spec.latest_version_unstable}")
                # nested structs hang off the message, like Kafka's inner classes (defined above)
                for nested in list(spec.structs())[1:]:
                    src(f"{nested.name}: {self.rt('_TypeAlias')} = {nested.name}")
            src()
            # class-level annotations: editors and type checkers see every field without __init__
            for f in struct.fields:
                if not self.lazy(f):  # a lazy field's property carries its type
                    src(f"{self.attr(f)}: {self.type_hint(f)}")
            if self.has_tag_slot():
                src("_unknown_tags: dict[int, bytes] | None")
            src()
            params = []
            assigns = []
            for f in struct.fields:
                a = self.attr(f)
                hint = self.type_hint(f)
                d = f.default
                if self.lazy(f):
                    params.append(f"{a}: {hint} | None = None")
                    assigns.append(f"self.{self.slot(f)} = {a}")
                elif d is StructDefault.EMPTY_ARRAY or d is StructDefault.EMPTY_STRUCT:
                    fresh = "[]" if d is StructDefault.EMPTY_ARRAY else f"{f.struct.name}()"  # type: ignore[union-attr]
                    if f.nullable_versions.empty:
                        params.append(f"{a}: {hint} | None = None")
                        assigns.append(f"self.{a} = {fresh} if {a} is None else {a}")
                    else:
                        # null is a value here, so "not given" needs its own marker
                        empty = self.rt("_EMPTY_ARRAY")
                        params.append(f"{a}: {self.rt('_Any')} = {empty}")
                        assigns.append(f"self.{a} = {fresh} if {a} is {empty} else {a}")
                else:
                    params.append(f"{a}: {hint} = {self.default_expr(f)}")
                    assigns.append(f"self.{a} = {a}")
            if self.has_tag_slot():
                assigns.append("self._unknown_tags = None")
            if params:
                src("def __init__(")
                src("    self,")
                src("    *,")
                for p in params:
                    src(f"    {p},")
                src(") -> None:")
            else:
                src("def __init__(self) -> None:")
            with src.indented():
                for line in assigns or ["pass"]:
                    src(line)
            for f in struct.fields:
                if self.lazy(f):
                    self.lazy_property(src, f)

    def lazy_property(self, src: Source, f: FieldSpec) -> None:
        """The public attribute of a lazy field: its default is made on first read and kept."""
        a, slot, hint = self.attr(f), self.slot(f), self.type_hint(f)
        src()
        src("@property")
        with src.block(f"def {a}(self) -> {hint}:"):
            src(f"v = self.{slot}")
            with src.block("if v is None:"):
                src(f"v = self.{slot} = {self.default_expr(f)}")
            src("return v")
        src()
        src(f"@{a}.setter")
        with src.block(f"def {a}(self, value: {hint}) -> None:"):
            src(f"self.{slot} = value")

    def type_hint(self, f: FieldSpec) -> str:
        t = f.type
        if t.kind is Kind.ARRAY:
            assert t.element is not None
            inner = t.element.struct_name if t.element.kind is Kind.STRUCT else self.py_type(t.element.kind)
            hint = f"list[{inner}]"
        elif t.kind is Kind.STRUCT:
            hint = str(t.struct_name)
        else:
            hint = self.py_type(t.kind)
        if not f.nullable_versions.empty or f.default is None:
            hint += " | None"
        return hint

    def py_type(self, kind: Kind) -> str:
        name = _PY_TYPES[kind]
        return self.rt(name) if name in _RUNTIME_IMPORTS else name

    def class_doc(self, struct: StructSpec, is_message: bool) -> str:
        spec = self.spec
        if is_message:
            head = f"{spec.name}: {spec.type.value}"
            if spec.api_key is not None:
                head += f" of api key {spec.api_key}"
            head += f", versions {spec.valid_versions}"
            if not spec.flexible_versions.empty:
                head += f" (flexible from {spec.flexible_versions.low})"
            head += "."
        else:
            head = f"{struct.name}: {'common struct' if struct.is_common else 'struct'}, versions {struct.versions}."
        lines = [head, "", "Attributes:"]
        for f in struct.fields:
            notes = [f"{f.type}", f"v{f.versions}"]
            if not f.nullable_versions.empty:
                notes.append(f"nullable v{f.nullable_versions}")
            if f.tag is not None:
                notes.append(f"tag {f.tag} in v{f.tagged_versions}")
            if f.ignorable:
                notes.append("ignorable")
            text = f"{self.attr(f)} ({', '.join(notes)}): {f.about}".rstrip()
            lines.extend(
                textwrap.wrap(text, 96, initial_indent="    ", subsequent_indent="        ") or ["    " + text]
            )
        if is_message and spec.history:
            lines += ["", "Version history (the spec's own account):"]
            lines += [f"    {line}" if line else "" for line in spec.history.splitlines()]
        indented = [lines[0]] + [f"    {line}" if line else "" for line in lines[1:]]
        return "\n".join(indented).replace('"""', "'''") + "\n    "

    def fields_table(self, src: Source, struct: StructSpec) -> None:
        flex = self.spec.flexible_versions
        rows = []
        for f in struct.fields:
            t = f.type
            kind = "array" if t.kind is Kind.ARRAY else t.kind.value
            args = [repr(self.attr(f)), repr(f.name), repr(kind), self.versions_tuple(f.versions)]
            if t.kind is Kind.ARRAY:
                assert t.element is not None
                args.append(f"element={t.element.kind.value!r}")
            if f.struct is not None:
                args.append(f"struct={f.struct.name}")
            if not f.nullable_versions.empty:
                args.append(f"nullable={self.versions_tuple(f.nullable_versions)}")
            if f.tag is not None:
                args.append(f"tagged={self.versions_tuple(f.tagged_versions)}, tag={f.tag}")
            if f.flexible_versions is not None and f.flexible_versions != flex:
                args.append(f"compact={self.versions_tuple(f.flexible_versions)}")
            d = f.default
            if d is StructDefault.EMPTY_ARRAY:
                args.append(f"default={self.rt('_EMPTY_ARRAY')}")
            elif d is StructDefault.EMPTY_STRUCT:
                args.append(f"default={self.rt('_EMPTY_STRUCT')}")
            elif d is not None:
                args.append(f"default={self.default_expr(f)}")
            if f.ignorable:
                args.append("ignorable=True")
            if self.lazy(f):
                args.append("lazy=True")
            rows.append(f"    {self.rt('_F')}({', '.join(args)}),")
        src(f"{struct.name}._FIELDS = (")
        for row in rows:
            src(row)
        src(")")

    # -- decoding -------------------------------------------------------------------------------

    def decoder(self, version: int, layout: WireLayout) -> str:
        body = Source()
        Decode(self, version, body).struct(self.spec.struct, "o", 0, "end")
        body("return o, pos")
        return self.add_function("read", layout, "def {name}(data, pos, end):", body.lines, f"_read_v{version}")

    def encoder(self, version: int, layout: WireLayout) -> str:
        body = Source()
        Encode(self, version, body).struct(self.spec.struct, "o", 0, "out")
        if not body.lines:
            body("pass")  # every field of this version is absent or ignorable: nothing to write
        return self.add_function("write", layout, "def {name}(o, out):", body.lines, f"_write_v{version}")
