"""Generated JSON renderers: a decoded message as the text ``json.dumps(obj.to_dict(version))`` gives.

``to_dict`` builds a dict per struct and a list per array, which ``json.dumps`` then walks
again; most of the time of rendering a body goes there. :func:`json_renderer` instead generates,
per (message class, version, output style), one function per struct class that formats the
fields straight from the object's attributes into one f-string: integers as they print, strings
through ``json``'s own C escaper, bytes as base64, uuids as Kafka's base64url text, nested
structs and arrays through their own functions. The text is the same, character for character,
as ``json.dumps(obj.to_dict(version), separators=..., ensure_ascii=...)`` (a test compares them
over every message and version).

Renderers are for decoded objects: a field holds a value of its spec type (an ``int32`` field
holding a ``bool`` would print ``True``, not ``true``).
"""

from __future__ import annotations

import _thread  # (threading's locks without importing threading at every start)
import json
import math
from binascii import b2a_base64  # (base64's primitives: base64 itself costs every start a millisecond)
from collections.abc import Callable
from itertools import count
from typing import Any

from kafka_epochs.wire.code_cache import compile_cached
from kafka_epochs.wire.uuids import uuid_text

__all__ = ["json_renderer"]

Renderer = Callable[[Any], str]

_INTEGERS = frozenset({"int8", "int16", "uint16", "int32", "uint32", "int64"})
_CACHE: dict[tuple[type, int, bool, bool], Renderer] = {}
_LOCK = _thread.allocate_lock()


def json_renderer(cls: type, version: int, *, compact: bool = False, ascii: bool = True) -> Renderer:
    """A function rendering a ``cls`` object decoded at ``version`` as JSON text.

    ``compact``: ``separators=(",", ":")`` (else ``json.dumps``' default ``", "`` and ``": "``);
    ``ascii``: ``ensure_ascii`` (escape every non-ASCII character).
    """
    key = (cls, version, compact, ascii)
    found = _CACHE.get(key)
    if found is None:
        with _LOCK:
            found = _CACHE.get(key)
            if found is None:
                found = _CACHE[key] = _Generator(version, compact, ascii).renderer(cls)
    return found


def _float(value: float) -> str:
    """A float as ``json.dumps`` writes it (NaN and the infinities included)."""
    if math.isfinite(value):
        return float.__repr__(value)
    if math.isnan(value):
        return "NaN"
    return "Infinity" if value > 0 else "-Infinity"


def _base64(value: bytes) -> str:
    return '"' + b2a_base64(value, newline=False).decode() + '"'  # the base64 alphabet needs no escaping


def _uuid(value: Any) -> str:
    """A uuid's JSON text; a capture repeats a few (topic ids, the zero uuid), so each is kept."""
    text = _UUID_TEXTS.get(value)
    if text is None:
        if len(_UUID_TEXTS) >= _UUID_TEXTS_LIMIT:
            _UUID_TEXTS.clear()  # a flood of distinct ids must not grow this without end
        text = _UUID_TEXTS[value] = '"' + uuid_text(value) + '"'  # base64url: nothing to escape either
    return text


_UUID_TEXTS: dict[Any, str] = {}
_UUID_TEXTS_LIMIT = 1 << 14


class _Generator:
    def __init__(self, version: int, compact: bool, ascii: bool) -> None:
        self.version = version
        self.ascii = ascii
        self.item = "," if compact else ", "
        self.colon = ":" if compact else ": "
        escape = json.encoder.encode_basestring_ascii if ascii else json.encoder.encode_basestring
        self.globals: dict[str, Any] = {
            "_str": escape,
            "_float": _float,
            "_b64": _base64,
            "_uuid": _uuid,
            "_tags": self.unknown_tags(escape),
        }
        self.names: dict[type, str] = {}
        self.lines: list[str] = []
        self._ids = count()

    def renderer(self, cls: type) -> Renderer:
        top = self.function(cls)
        exec(compile_cached("\n".join(self.lines) + "\n", f"<JSON renderer of {cls.__name__}>"), self.globals)
        renderer: Renderer = self.globals[top]
        return renderer

    def function(self, cls: Any) -> str:
        """The name of ``cls``'s function, generating it (and those of its structs) if new."""
        name = self.names.get(cls)
        if name is not None:
            return name
        name = self.names[cls] = f"_render{next(self._ids)}"
        v = self.version
        fields = [f for f in cls._FIELDS if f.present(v)]
        parts = []
        for f in fields:
            default = self.lazy_default(f)
            if default is not None:  # not read since decoding: the default's text, no default made
                text = f"({default!r} if o.{f.slot} is None else {self.function(f.struct)}(o.{f.slot}))"
            else:
                text = self.value(f.kind, f.element, f.struct, "o." + f.attr, f.is_nullable(v))
            parts.append(f"{json.dumps(f.attr)}{self.colon}{{{text}}}")
        body = self.item.join(parts)
        if "_unknown_tags" in getattr(cls, "__slots__", ()):
            body += f"{{_tags(o._unknown_tags, {bool(parts)}) if o._unknown_tags else ''}}"
        # A triple-quoted f-string: its fields' expressions may hold single-quoted literals.
        self.lines += [f"def {name}(o):", f"    return f'''{{{{{body}}}}}'''", ""]
        return name

    def lazy_default(self, f: Any) -> str | None:
        """The JSON text of a lazy field's default, where an f-string field can hold it."""
        if not f.lazy:
            return None
        text = json.dumps(f.struct().to_dict(self.version), separators=(self.item, self.colon), ensure_ascii=self.ascii)
        return None if "\\" in repr(text) else text

    def value(self, kind: str, element: str | None, struct: Any, expr: str, nullable: bool) -> str:
        """An expression giving the JSON text of ``expr``, a value of ``kind`` (None only where
        ``nullable``: decoded objects hold None nowhere else)."""
        if kind in _INTEGERS:
            return expr
        if kind == "bool":
            text = f"('true' if {expr} else 'false')"
        elif kind == "float64":
            text = f"_float({expr})"
        elif kind == "string":
            text = f"_str({expr})"
        elif kind in ("bytes", "records"):
            text = f"_b64({expr})"
        elif kind == "uuid":
            text = f"_uuid({expr})"
        elif kind == "struct":
            text = f"{self.function(struct)}({expr})"
        elif kind == "array" and element in _INTEGERS:
            # a list of ints prints as JSON with ", " between items (and no other space)
            text = f"str({expr})" if self.item == ", " else f"str({expr}).replace(' ', '')"
        elif kind == "array":
            text = f"'[' + {self.item!r}.join({self.items(element or '', struct, expr)}) + ']'"
        else:  # pragma: no cover - the generator emits no other kind
            raise ValueError(f"unknown kind {kind}")
        return f"('null' if {expr} is None else {text})" if nullable else text

    def items(self, element: str, struct: Any, expr: str) -> str:
        """An iterable of the JSON texts of the elements of the array ``expr``."""
        one = {"string": "_str", "bytes": "_b64", "records": "_b64", "uuid": "_uuid", "float64": "_float"}
        if element in _INTEGERS:
            return f"map(str, {expr})"  # an int's str is its JSON
        if element in one:
            return f"map({one[element]}, {expr})"
        if element == "struct":
            return f"map({self.function(struct)}, {expr})"
        return f"[{self.value(element, None, struct, 'x', nullable=False)} for x in {expr}]"

    def unknown_tags(self, escape: Callable[[str], str]) -> Callable[[dict[int, bytes], bool], str]:
        item, colon = self.item, self.colon

        def render(tags: dict[int, bytes], after_fields: bool) -> str:
            inner = item.join(f"{escape(str(t))}{colon}{_base64(v)}" for t, v in sorted(tags.items()))
            return f'{item if after_fields else ""}"_unknown_tags"{colon}{{{inner}}}'

        return render
