"""Spec model -> ``construct`` definitions: the reference and debugging view of the wire format.

Where :mod:`kafka_epochs.codegen.python_backend` emits fast straight-line code, this backend says
what the bytes are, one declarative definition per message version, built from construct's
integers and the Kafka types in :mod:`kafka_epochs.wire.construct_types`. It is slow and is
meant for reading, for debugging a capture field by field, and as the second opinion in the
differential tests against the fast classes.

Both outputs come from one description of the layout, so they cannot drift apart:

* :func:`construct_for` gives the live ``Construct`` of one version (built once, then cached);
* :func:`construct_source` gives the text of an importable module defining ``V0``, ``V1``, ...
  (and one named definition per struct layout, shared by the versions that agree on it).

Values are plain nested mappings keyed by the generated classes' snake_case attribute names:
only the fields the version has, tagged ones included (their default when absent on the wire),
and in flexible versions ``_unknown_tags`` (``{tag: raw bytes}`` or ``None``) in every struct.
:func:`to_native` and :func:`from_native` convert between those and the generated objects.
"""

from __future__ import annotations

import math
import re
import uuid
import weakref
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import construct  # type: ignore[import-untyped]

from kafka_epochs.codegen.naming import attribute_name
from kafka_epochs.spec.model import FieldSpec, FieldType, Kind, MessageSpec, StructDefault, StructSpec
from kafka_epochs.wire import construct_types
from kafka_epochs.wire.construct_types import UNKNOWN_TAGS

__all__ = ["construct_for", "construct_source", "from_native", "to_native"]

#: construct's own integer, float and flag types for the fixed-width kinds.
_FIXED = {
    Kind.BOOL: "Flag",
    Kind.INT8: "Int8sb",
    Kind.INT16: "Int16sb",
    Kind.UINT16: "Int16ub",
    Kind.INT32: "Int32sb",
    Kind.UINT32: "Int32ub",
    Kind.INT64: "Int64sb",
    Kind.FLOAT64: "Float64b",
    Kind.UUID: "Uuid",
}
#: (compact, nullable) -> the construct_types name, for strings, bytes (records share bytes) and arrays.
_STRINGS = {
    (False, False): "String16",
    (False, True): "NullableString16",
    (True, False): "CompactString",
    (True, True): "CompactNullableString",
}
_BYTES = {
    (False, False): "Bytes32",
    (False, True): "NullableBytes32",
    (True, False): "CompactBytes",
    (True, True): "CompactNullableBytes",
}
_ARRAYS = {
    (False, False): "Array32",
    (False, True): "NullableArray32",
    (True, False): "CompactArray",
    (True, True): "CompactNullableArray",
}
#: Calls laid out one argument per line in the source view.
_MULTILINE = frozenset({"KafkaStruct", "TagSection"})
#: Other calls longer than this (with their indentation) are split one argument per line too.
_LINE_BUDGET = 100


# -- the layout description -------------------------------------------------------------------


@dataclass(frozen=True)
class _Sym:
    """A name from ``construct`` or ``construct_types`` (``Int32sb``, ``CompactArray``, ...)."""

    name: str


@dataclass(frozen=True)
class _Local:
    """A struct layout defined earlier in the same module."""

    name: str


@dataclass(frozen=True)
class _Lit:
    """A Python value: a tag number, a default, a tuple of tags."""

    value: Any


@dataclass(frozen=True)
class _Named:
    """``"name" / sub``: a struct member."""

    name: str
    sub: _Expr


@dataclass(frozen=True)
class _Call:
    func: _Sym
    args: tuple[_Expr, ...] = ()
    kwargs: tuple[tuple[str, _Expr], ...] = ()


_Expr = _Sym | _Local | _Lit | _Named | _Call


def _symbol_module(name: str) -> str:
    return "kafka_epochs.wire.construct_types" if name in construct_types.__all__ else "construct"


def _resolve_symbol(name: str) -> Any:
    if name in construct_types.__all__:
        return getattr(construct_types, name)
    return getattr(construct, name)


def _literal(value: Any) -> str:
    """Source text that evaluates to ``value`` (given ``UUID`` from construct_types)."""
    if isinstance(value, uuid.UUID):
        return f"UUID({str(value)!r})"
    if isinstance(value, float) and not math.isfinite(value):
        return f"float({str(value)!r})"
    if isinstance(value, Mapping):
        return "{" + ", ".join(f"{k!r}: {_literal(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ", ".join(_literal(v) for v in value) + "]"
    if isinstance(value, tuple):
        inner = ", ".join(_literal(v) for v in value)
        return f"({inner},)" if len(value) == 1 else f"({inner})"
    return repr(value)


def _uses_uuid(value: Any) -> bool:
    if isinstance(value, uuid.UUID):
        return True
    if isinstance(value, Mapping):
        return any(_uses_uuid(v) for v in value.values())
    if isinstance(value, (list, tuple)):
        return any(_uses_uuid(v) for v in value)
    return False


def _render(expr: _Expr, indent: str, symbols: set[str]) -> str:
    """Source text of ``expr``; ``symbols`` collects the imported names it uses."""
    if isinstance(expr, _Sym):
        symbols.add(expr.name)
        return expr.name
    if isinstance(expr, _Local):
        return expr.name
    if isinstance(expr, _Lit):
        if _uses_uuid(expr.value):
            symbols.add("UUID")
        return _literal(expr.value)
    if isinstance(expr, _Named):
        return f'"{expr.name}" / {_render(expr.sub, indent, symbols)}'
    symbols.add(expr.func.name)
    parts = [_render(a, indent, symbols) for a in expr.args]
    parts += [f"{k}={_render(v, indent, symbols)}" for k, v in expr.kwargs]
    flat = f"{expr.func.name}({', '.join(parts)})"
    if not (expr.args and (expr.func.name in _MULTILINE or len(indent) + len(flat) > _LINE_BUDGET)):
        return flat
    inner = indent + "    "
    parts = [_render(a, inner, symbols) for a in expr.args]
    parts += [f"{k}={_render(v, inner, symbols)}" for k, v in expr.kwargs]
    return f"{expr.func.name}(\n" + "".join(f"{inner}{p},\n" for p in parts) + f"{indent})"


def _import_order(name: str) -> tuple[int, list[tuple[str, int]]]:
    """isort's order: constants, then classes, then the rest; digits compared as numbers."""
    group = 0 if name.isupper() else 1 if name[0].isupper() else 2
    runs = re.findall(r"(\D*)(\d*)", name.lower())
    return group, [(text, int(digits) if digits else -1) for text, digits in runs]


class _Layout:
    """Every version's layout of one spec, as named definitions in dependency order."""

    def __init__(self, spec: MessageSpec) -> None:
        self.spec = spec
        self.definitions: dict[str, _Expr] = {}  # name -> layout, children first
        self.versions: dict[int, str] = {}  # version -> the definition ``V<version>`` aliases or is
        self._named: dict[tuple[str, str], str] = {}  # (struct name, rendered layout) -> definition
        self._built: dict[str, Any] = {}
        for v in spec.versions:
            self.versions[v] = self._define(spec.struct, v, top=True)

    # -- describing ----------------------------------------------------------------------------

    def _define(self, struct: StructSpec, version: int, top: bool = False) -> str:
        """The name of the definition of ``struct`` at ``version``, adding it if it is new."""
        expr = self._struct(struct, version)
        text = _render(expr, "", set())
        key = ("" if top else struct.name, text)
        existing = self._named.get(key)
        if existing is not None:
            return existing
        name = f"V{version}" if top else f"{struct.name}_v{version}"
        while name in self.definitions:  # two distinct structs of one name: keep both
            name += "_"
        self._named[key] = name
        self.definitions[name] = expr
        return name

    def _struct(self, struct: StructSpec, v: int) -> _Call:
        flexible = self.spec.is_flexible(v)
        members: tuple[_Expr, ...] = tuple(
            _Named(attribute_name(f.name), self._field(f, v))
            for f in struct.fields
            if f.present_in(v) and not f.tagged_in(v)
        )
        if not flexible:
            return _Call(_Sym("KafkaStruct"), members)
        known = sorted((f for f in struct.fields if f.present_in(v) and f.tagged_in(v)), key=_tag_of)
        invalid = sorted(_tag_of(f) for f in struct.fields if f.tag is not None and f not in known)
        entries = tuple(
            _Call(
                _Sym("TaggedField"),
                (_Lit(f.tag), _Named(attribute_name(f.name), self._field(f, v))),
                (("default", _Lit(_native_default(f, v, flexible))),),
            )
            for f in known
        )
        section = _Call(_Sym("TagSection"), entries, (("invalid", _Lit(tuple(invalid))),) if invalid else ())
        return _Call(_Sym("KafkaStruct"), members, (("tags", section),))

    def _field(self, f: FieldSpec, v: int) -> _Expr:
        nullable = f.nullable_in(v)
        if f.type.kind is Kind.ARRAY:
            assert f.type.element is not None
            element = self._value(f, f.type.element, v, nullable=False)
            return _Call(_Sym(_ARRAYS[self.spec.is_flexible(v), nullable]), (element,))
        return self._value(f, f.type, v, nullable)

    def _value(self, f: FieldSpec, ftype: FieldType, v: int, nullable: bool) -> _Expr:
        kind = ftype.kind
        if kind is Kind.STRUCT:
            assert f.struct is not None
            ref = _Local(self._define(f.struct, v))
            return _Call(_Sym("NullableStruct"), (ref,)) if nullable else ref
        if kind in _FIXED:
            return _Sym(_FIXED[kind])
        compact = f.compact_in(v, self.spec.flexible_versions)
        if kind is Kind.STRING:
            return _Sym(_STRINGS[compact, nullable])
        if kind in (Kind.BYTES, Kind.RECORDS):
            return _Sym(_BYTES[compact, nullable])
        raise AssertionError(f"no construct for {ftype}")  # pragma: no cover - arrays never nest

    # -- the two outputs -----------------------------------------------------------------------

    def build(self, name: str) -> Any:
        """The live construct of one definition (its children built first, each once)."""
        built = self._built.get(name)
        if built is None:
            built = self._instantiate(self.definitions[name])
            self._built[name] = built
        return built

    def _instantiate(self, expr: _Expr) -> Any:
        if isinstance(expr, _Sym):
            return _resolve_symbol(expr.name)
        if isinstance(expr, _Local):
            return self.build(expr.name)
        if isinstance(expr, _Lit):
            return expr.value
        if isinstance(expr, _Named):
            return expr.name / self._instantiate(expr.sub)
        func = _resolve_symbol(expr.func.name)
        args = [self._instantiate(a) for a in expr.args]
        kwargs = {k: self._instantiate(e) for k, e in expr.kwargs}
        return func(*args, **kwargs)

    def source(self) -> str:
        spec = self.spec
        symbols: set[str] = set()
        body: list[str] = []
        for name, expr in self.definitions.items():
            body.append(f"{name} = {_render(expr, '', symbols)}")
        aliases = [f"V{v} = {name}" for v, name in self.versions.items() if name != f"V{v}"]
        from_construct = sorted((s for s in symbols if _symbol_module(s) == "construct"), key=_import_order)
        from_types = sorted((s for s in symbols if _symbol_module(s) != "construct"), key=_import_order)
        lines = [
            f"# Generated by kafka-epochs' construct backend from {spec.source or spec.name}.",
            "# A reading and debugging view of the layout: regenerate it rather than edit it.",
            f'"""{spec.name}: the wire layout of versions {spec.valid_versions}, one construct per version."""',
            "",
        ]
        if from_construct:
            lines.append(f"from construct import {', '.join(from_construct)}")
            lines.append("")
        lines.append("from kafka_epochs.wire.construct_types import (")
        lines.extend(f"    {s}," for s in from_types)
        lines.append(")")
        for definition in body:
            lines.extend(["", definition])
        if aliases:
            lines.extend(["", *aliases])
        lines.extend(["", "BY_VERSION = {"])
        lines.extend(f"    {v}: V{v}," for v in self.versions)
        lines.extend(["}", ""])
        return "\n".join(lines)


def _tag_of(f: FieldSpec) -> int:
    assert f.tag is not None
    return f.tag


def _native_default(f: FieldSpec, v: int, flexible: bool) -> Any:
    """A field's default as a native value at version ``v``."""
    if f.default is StructDefault.EMPTY_ARRAY:
        return []
    if f.default is StructDefault.EMPTY_STRUCT:
        assert f.struct is not None
        out: dict[str, Any] = {attribute_name(g.name): _native_default(g, v, flexible) for g in f.struct.fields_in(v)}
        if flexible:
            out[UNKNOWN_TAGS] = None
        return out
    return f.default


# -- public entry points ----------------------------------------------------------------------

_LAYOUTS: weakref.WeakKeyDictionary[MessageSpec, _Layout] = weakref.WeakKeyDictionary()


def _layout(spec: MessageSpec) -> _Layout:
    layout = _LAYOUTS.get(spec)
    if layout is None:
        layout = _Layout(spec)
        _LAYOUTS[spec] = layout
    return layout


def construct_for(spec: MessageSpec, version: int) -> Any:
    """The ``construct.Construct`` of the body of ``spec`` at ``version`` (built once per spec)."""
    if version not in spec.valid_versions:
        raise ValueError(f"{spec.name} has no version {version} (valid: {spec.valid_versions})")
    layout = _layout(spec)
    return layout.build(layout.versions[version])


def construct_source(spec: MessageSpec) -> str:
    """Source of a module defining ``V<n>`` for every version of ``spec``, and ``BY_VERSION``.

    It imports only ``construct`` and :mod:`kafka_epochs.wire.construct_types`; struct layouts get
    names like ``Topic_v3`` and are shared by the versions where they do not change.
    """
    return _layout(spec).source()


def to_native(obj: Any, version: int) -> dict[str, Any]:
    """A generated message as the nested dicts its construct builds from, at ``version``.

    Only the fields present in ``version`` are kept; in flexible versions every struct has
    ``_unknown_tags``. Values are shared with ``obj``, not copied (lists are new lists).
    """
    cls = type(obj)
    valid = getattr(cls, "VALID_VERSIONS", None)
    if valid is None:
        raise TypeError(f"to_native needs a generated message, not {cls.__name__}")
    if version not in valid:
        raise ValueError(f"{cls.__name__} has no version {version}")
    return _struct_to_native(obj, version, version in cls.FLEXIBLE_VERSIONS)


def _struct_to_native(obj: Any, v: int, flexible: bool) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for f in obj._FIELDS:
        if f.present(v):
            out[f.attr] = _value_to_native(getattr(obj, f.attr), f.kind, f.element, v, flexible)
    if flexible:
        unknown = getattr(obj, UNKNOWN_TAGS, None)
        out[UNKNOWN_TAGS] = dict(unknown) if unknown else None
    return out


def _value_to_native(value: Any, kind: str, element: str | None, v: int, flexible: bool) -> Any:
    if value is None:
        return None
    if kind == "array":
        return [_value_to_native(item, element or "", None, v, flexible) for item in value]
    if kind == "struct":
        return _struct_to_native(value, v, flexible)
    return value


def from_native(cls: Any, version: int, data: Mapping[str, Any]) -> Any:
    """The generated ``cls`` object for a native mapping (such as a parsed ``Container``).

    ``data`` must hold exactly the fields present in ``version`` (plus ``_unknown_tags``);
    the fields the version lacks keep their defaults.
    """
    valid = getattr(cls, "VALID_VERSIONS", None)
    if valid is None:
        raise TypeError(f"from_native needs a generated message class, not {cls!r}")
    if version not in valid:
        raise ValueError(f"{cls.__name__} has no version {version}")
    return _struct_from_native(cls, data, version, version in cls.FLEXIBLE_VERSIONS, cls.__name__)


def _struct_from_native(cls: Any, data: Any, v: int, flexible: bool, path: str) -> Any:
    if not isinstance(data, Mapping):
        raise TypeError(f"{path}: expected a mapping for {cls.__name__}, got {type(data).__name__}")
    present = [f for f in cls._FIELDS if f.present(v)]
    expected = {f.attr for f in present}
    given = set(data) - {UNKNOWN_TAGS}
    if given != expected:
        missing, extra = sorted(expected - given), sorted(given - expected)
        raise ValueError(f"{path}: fields do not match version {v} (missing {missing}, unexpected {extra})")
    obj = cls()
    for f in present:
        value = _value_from_native(data[f.attr], f, f.kind, v, flexible, f"{path}.{f.attr}")
        setattr(obj, f.attr, value)
    unknown = data.get(UNKNOWN_TAGS)
    if unknown:
        if not flexible:
            raise ValueError(f"{path}: version {v} is not flexible, so it carries no tagged fields")
        obj._unknown_tags = {int(tag): bytes(raw) for tag, raw in unknown.items()}
    return obj


def _value_from_native(value: Any, f: Any, kind: str, v: int, flexible: bool, path: str) -> Any:
    if value is None:
        return None
    if kind == "array":
        return [
            _value_from_native(item, f, f.element or "", v, flexible, f"{path}[{i}]") for i, item in enumerate(value)
        ]
    if kind == "struct":
        return _struct_from_native(f.struct, value, v, flexible, path)
    return value
