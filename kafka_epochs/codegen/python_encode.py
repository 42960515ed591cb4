"""The Python backend's writers: one version's wire layout emitted as straight-line encoding code.

:class:`Encode` writes the body of a generated ``_write_vN`` function: fixed runs packed by one
``struct`` call, lengths and nulls inline, arrays and nested structs unrolled, tagged fields last.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kafka_epochs.codegen.python_formats import fixed_runs
from kafka_epochs.codegen.source import Source
from kafka_epochs.spec.model import FIXED_FORMATS, FieldSpec, Kind, StructSpec

if TYPE_CHECKING:
    from kafka_epochs.codegen.python_backend import _ModuleWriter

__all__ = ["Encode"]


class Encode:
    def __init__(self, gen: _ModuleWriter, version: int, src: Source) -> None:
        self.gen = gen
        self.v = version
        self.src = src
        self.flexible = gen.flexible(version)

    def struct(self, struct: StructSpec, var: str, depth: int, out: str) -> None:
        src, v, gen = self.src, self.v, self.gen
        regular: list[FieldSpec] = []
        for f in struct.fields:
            if not f.present_in(v):
                if not f.ignorable:
                    with src.block(f"if {gen.nondefault(f, f'{var}.{gen.slot(f)}')}:"):
                        src(f"raise {gen.rt('_missing')}({struct.name!r}, {gen.attr(f)!r})")
            elif not f.tagged_in(v):
                regular.append(f)
        for run in fixed_runs(regular):
            if run[0].type.is_fixed:
                self.fixed_run(run, var, out)
            else:
                self.value(run[0], f"{var}.{gen.attr(run[0])}", depth, out)
        if self.flexible:
            self.tags(struct, var, depth, out)

    def fixed_run(self, run: list[FieldSpec], var: str, out: str) -> None:
        fmt = "".join(FIXED_FORMATS[f.type.kind] for f in run)
        name = self.gen.fixed(fmt)
        args = []
        for f in run:
            expr = f"{var}.{self.gen.attr(f)}"
            args.append(f"{expr}.bytes" if f.type.kind is Kind.UUID else expr)
        self.src(f"{out}.append(_P_{name}({', '.join(args)}))")

    def length(self, compact: bool, wide: bool, string: bool, out: str) -> None:
        """Write the length or count held in ``n``."""
        rt = self.gen.rt
        if compact:
            slow = f"{rt('_string_length')}(n + 1)" if string else f"{rt('_to_uvarint')}(n + 1)"
            two = f"_P_{self.gen.fixed('BB')}(((n + 1) & 0x7F) | 0x80, (n + 1) >> 7)"
            # n + 1 below 128 is one varint byte (a table lookup), below 16384 two
            self.src(f"{out}.append({rt('_UV1')}[n + 1] if n < 127 else {two} if n < 16383 else {slow})")
        else:
            self.src(f"{out}.append(_P_{self.gen.fixed('i' if wide else 'h')}(n))")

    def null(self, compact: bool, wide: bool, out: str) -> None:
        marker = "b'\\x00'" if compact else ("b'\\xff\\xff\\xff\\xff'" if wide else "b'\\xff\\xff'")
        self.src(f"{out}.append({marker})")

    def value(self, f: FieldSpec, expr: str, depth: int, out: str) -> None:
        src, v = self.src, self.v
        kind = f.type.kind
        nullable = f.nullable_in(v)
        if f.type.is_fixed:
            self.fixed_run([f], expr.rpartition(".")[0], out)
            return
        if kind in (Kind.STRING, Kind.BYTES, Kind.RECORDS):
            compact = f.compact_in(v, self.gen.spec.flexible_versions)
            wide = kind is not Kind.STRING
            src(f"s = {expr}.encode()" if kind is Kind.STRING and not nullable else f"s = {expr}")
            if nullable:
                with src.block("if s is None:"):
                    self.null(compact, wide, out)
            with src.else_block(nullable):
                if kind is Kind.STRING and nullable:
                    src("s = s.encode()")
                src("n = len(s)")
                self.length(compact, wide, kind is Kind.STRING, out)
                src(f"{out}.append(s)")
        elif kind is Kind.ARRAY:
            items = f"a{depth + 1}"
            src(f"{items} = {expr}")
            if nullable:
                with src.block(f"if {items} is None:"):
                    self.null(self.flexible, True, out)
            with src.else_block(nullable):
                src(f"n = len({items})")
                self.length(self.flexible, True, False, out)
                self.array_items(f, items, depth + 1, out)
        elif kind is Kind.STRUCT:
            assert f.struct is not None
            inner = f"o{depth + 1}"
            src(f"{inner} = {expr}")
            if nullable:
                with src.block(f"if {inner} is None:"):
                    src(f"{out}.append(b'\\xff')")
            with src.else_block(nullable):
                if nullable:
                    src(f"{out}.append(b'\\x01')")
                self.struct(f.struct, inner, depth + 1, out)

    def array_items(self, f: FieldSpec, items: str, depth: int, out: str) -> None:
        src = self.src
        element = f.type.element
        assert element is not None
        if element.is_fixed and element.kind is not Kind.UUID:
            code = FIXED_FORMATS[element.kind]
            table = self.gen.array_table(code, "pack")
            src(
                f"{out}.append({table}[n](*{items}) if n < {self.gen.rt('_SMALL')} "
                f"else {self.gen.rt('_fixed_array_pack')}({code!r}, n)(*{items}))"
            )
            return
        item = f"o{depth}"
        with src.block(f"for {item} in {items}:"):
            if element.kind is Kind.STRUCT:
                assert f.struct is not None
                self.struct(f.struct, item, depth, out)
            elif element.kind is Kind.UUID:
                src(f"{out}.append({item}.bytes)")
            else:
                compact = f.compact_in(self.v, self.gen.spec.flexible_versions)
                wide = element.kind is not Kind.STRING
                if element.kind is Kind.STRING:
                    src(f"s = {item}.encode()")
                else:
                    src(f"s = {item}")
                src("n = len(s)")
                self.length(compact, wide, element.kind is Kind.STRING, out)
                src(f"{out}.append(s)")

    def tags(self, struct: StructSpec, var: str, depth: int, out: str) -> None:
        src, v, gen = self.src, self.v, self.gen
        tagged = sorted((f for f in struct.fields if f.present_in(v) and f.tagged_in(v)), key=lambda f: f.tag or 0)
        if not tagged:
            with src.block(f"if {var}._unknown_tags:"):
                src(f"{gen.rt('_write_tags')}({out}, list({var}._unknown_tags.items()))")
            with src.block("else:"):
                src(f"{out}.append(b'\\x00')")
            return
        tags = f"t{depth}"
        sub = f"b{depth}"
        src(f"{tags} = []")
        for f in tagged:
            expr = f"{var}.{gen.slot(f)}"
            with src.block(f"if {gen.nondefault(f, expr)}:"):
                src(f"{sub} = []")
                self.value(f, expr, depth, sub)
                src(f"{tags}.append(({f.tag}, b''.join({sub})))")
        with src.block(f"if {var}._unknown_tags:"):
            src(f"{tags}.extend({var}._unknown_tags.items())")
        with src.block(f"if {tags}:"):
            src(f"{gen.rt('_write_tags')}({out}, {tags})")
        with src.block("else:"):
            src(f"{out}.append(b'\\x00')")
