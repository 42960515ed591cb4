"""The Python backend's readers: one version's wire layout emitted as straight-line decoding code.

:class:`Decode` writes the body of a generated ``_read_vN`` function into a
:class:`~kafka_epochs.codegen.source.Source`: fixed runs as one ``struct`` call, lengths and
nullability checked inline, arrays and nested structs unrolled, tagged sections read last. Its
:class:`~kafka_epochs.codegen.python_backend._ModuleWriter` decides names, slots and what a
module imports.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from kafka_epochs.codegen.python_formats import COMPACT_STRING_LIMIT, FIXED_SIZES, fixed_runs, split_fmt
from kafka_epochs.codegen.source import Source
from kafka_epochs.spec.layout import struct_layout
from kafka_epochs.spec.model import FIXED_FORMATS, FieldSpec, Kind, StructSpec

if TYPE_CHECKING:
    from kafka_epochs.codegen.python_backend import _ModuleWriter

__all__ = ["Decode"]


class Decode:
    def __init__(self, gen: _ModuleWriter, version: int, src: Source) -> None:
        self.gen = gen
        self.v = version
        self.src = src
        self.flexible = gen.flexible(version)

    def struct(self, struct: StructSpec, var: str, depth: int, end: str) -> None:
        src, v, gen = self.src, self.v, self.gen
        src(f"{var} = _new({struct.name})")
        if gen.has_tag_slot():
            src(f"{var}._unknown_tags = None")
        regular = []
        for f in struct.fields:
            if f.present_in(v) and not f.tagged_in(v):
                regular.append(f)
            elif gen.lazy(f):
                src(f"{var}.{gen.slot(f)} = None")
            else:
                src(f"{var}.{gen.attr(f)} = {gen.default_expr(f)}")
        runs = fixed_runs(regular)
        # In a flexible version the tag count usually follows a run of fixed-width fields: read
        # it in the same struct call, and only step back to it when the section is not empty.
        merge_tags = self.flexible and bool(runs) and runs[-1][0].type.is_fixed
        preloaded = False
        i = 0
        while i < len(runs):
            run = runs[i]
            if self.skippable_array(runs, i):
                preloaded = self.over_empty_array(runs, i, var, depth, end, merge_tags)
                i += 3
                continue
            if run[0].type.is_fixed:
                # Likewise the first byte of a compact length that follows the run.
                following = runs[i + 1][0] if i + 1 < len(runs) else None
                preloaded = following is not None and self.compact_length(following)
                self.fixed_run(run, var, with_tag_count=merge_tags and i == len(runs) - 1, with_length=preloaded)
            else:
                self.value(run[0], f"{var}.{gen.slot(run[0])}", depth, end, preloaded=preloaded)
                preloaded = False
            i += 1
        if not self.flexible:
            return
        if merge_tags:
            with src.block("if t:"):  # the tag count is already in t: step back to read the section
                src("pos -= 1")
                self.tag_section(struct, var, end)
        else:
            with src.block("if data[pos] == 0:"):
                src("pos += 1")
            with src.block("else:"):
                self.tag_section(struct, var, end)

    def skippable_array(self, runs: list[list[FieldSpec]], i: int) -> bool:
        """Whether ``runs[i]`` is a fixed run followed by a nullable array of structs and another
        fixed run: such an array is optional, mostly null or empty (FetchResponse's aborted
        transactions), so the two runs can be read in one ``struct`` call (see
        :meth:`over_empty_array`). Other arrays there (a Metadata topic's partitions) are
        rarely empty: betting on them would only lengthen each read."""
        if i + 2 >= len(runs):
            return False
        first, middle, second = runs[i], runs[i + 1], runs[i + 2]
        array = middle[0]
        return (
            first[0].type.is_fixed
            and second[0].type.is_fixed
            and array.type.kind is Kind.ARRAY
            and array.nullable_in(self.v)
            and array.type.element is not None
            and array.type.element.kind is Kind.STRUCT
            and not any(f.type.kind is Kind.UUID for f in second)
        )

    def over_empty_array(
        self, runs: list[list[FieldSpec]], i: int, var: str, depth: int, end: str, merge_tags: bool
    ) -> bool:
        """Read ``runs[i]``, the array after it and the run after that, betting on a null or
        empty array: one ``struct`` call reads the first run, the array's count and the second
        run; when the count says null or empty, the second run's values are the ones read, else
        the array and the second run are read as usual. Returns whether the first byte of what
        follows is preloaded in ``n`` (as :meth:`fixed_run` leaves it)."""
        src, gen = self.src, self.gen
        first, array, second = runs[i], runs[i + 1][0], runs[i + 2]
        last = i + 2 == len(runs) - 1
        following = runs[i + 3][0] if not last else None
        preloaded = following is not None and self.compact_length(following)
        extra = "t" if merge_tags and last else "n" if preloaded else None
        # null, empty: a compact count is the length plus one (0: null); a classic one is -1 for null
        count, bet, value = (
            ("B", "n < 2", "[] if n else None") if self.flexible else ("i", "-2 < n < 1", "None if n else []")
        )
        fmt1 = "".join(FIXED_FORMATS[f.type.kind] for f in first)
        fmt2 = "".join(FIXED_FORMATS[f.type.kind] for f in second) + ("B" if extra else "")
        size1 = sum(FIXED_SIZES[c] for c in split_fmt(fmt1))
        size2 = sum(FIXED_SIZES[c] for c in split_fmt(fmt2))
        held = [f"x{k}" for k in range(len(second))] + (["x_"] if extra else [])
        targets = [f"{var}.{gen.attr(f)}" for f in first]
        src(f"{', '.join([*targets, 'n', *held])} = _U_{gen.fixed(fmt1 + count + fmt2)}(data, pos)")
        for f, target in zip(first, targets, strict=True):
            if f.type.kind is Kind.UUID:
                src(f"{target} = {gen.rt('_uuid')}({target})")
        with src.block(f"if {bet}:"):  # null or empty: the second run was read with the first
            src(f"{var}.{gen.slot(array)} = {value}")
            for f, value in zip(second, held, strict=False):
                src(f"{var}.{gen.attr(f)} = {value}")
            if extra:
                src(f"{extra} = x_")
            src(f"pos += {size1 + FIXED_SIZES[count] + size2}")
        with src.block("else:"):
            if self.flexible:  # the count's first byte stays in n, as a preloaded length
                src(f"pos += {size1 + 1}")
            else:  # the classic count is read again with the array
                src(f"pos += {size1}")
            self.value(array, f"{var}.{gen.slot(array)}", depth, end, preloaded=self.flexible)
            self.fixed_run(second, var, with_tag_count=extra == "t", with_length=extra == "n")
        return preloaded

    def tag_section(self, struct: StructSpec, var: str, end: str) -> None:
        """Read a non-empty tagged-field section into ``var``."""
        if any(f.tag is not None for f in struct.fields):
            self.src(f"pos = {self.tag_function(struct)}({var}, data, pos, {end})")
        else:
            self.src(f"{var}._unknown_tags, pos = {self.gen.rt('_read_unknown_tags')}(data, pos, {end})")

    def compact_length(self, f: FieldSpec) -> bool:
        """Whether ``f`` starts with a compact (varint) length in this version."""
        if f.type.kind in (Kind.STRING, Kind.BYTES, Kind.RECORDS):
            return f.compact_in(self.v, self.gen.spec.flexible_versions)
        return f.type.kind is Kind.ARRAY and self.flexible

    def fixed_run(
        self, run: list[FieldSpec], var: str, with_tag_count: bool = False, with_length: bool = False
    ) -> None:
        src, gen = self.src, self.gen
        extra = ["t"] if with_tag_count else ["n"] if with_length else []
        fmt = "".join(FIXED_FORMATS[f.type.kind] for f in run) + "B" * len(extra)
        name = gen.fixed(fmt)
        targets = [f"{var}.{gen.attr(f)}" for f in run] + extra
        lhs = ", ".join(targets) + ("," if len(targets) == 1 else "")
        src(f"{lhs} = _U_{name}(data, pos)")
        src(f"pos += {sum(FIXED_SIZES[c] for c in split_fmt(fmt))}")
        for f, target in zip(run, targets, strict=False):
            if f.type.kind is Kind.UUID:
                src(f"{target} = {gen.rt('_uuid')}({target})")

    def length(self, compact: bool, wide: bool, string: bool, preloaded: bool = False) -> None:
        """Leave a length or count in ``n`` (``-1`` for null) and advance ``pos``.

        ``preloaded``: the first varint byte is already in ``n`` and ``pos`` is past it.
        """
        src, rt = self.src, self.gen.rt
        if compact and preloaded:
            with src.block("if n >= 0x80:"):
                with src.block("if data[pos] < 0x80:"):
                    src("n = (n & 0x7F) | (data[pos] << 7)")
                    src("pos += 1")
                with src.block("else:"):
                    src(f"n, pos = {rt('_uvarint')}(data, pos - 1)")
                    if string:
                        with src.block(f"if n > {COMPACT_STRING_LIMIT}:"):
                            src(f"raise {rt('_Malformed')}")
            src("n -= 1")
        elif compact:
            src("n = data[pos]")
            with src.block("if n < 0x80:"):
                src("pos += 1")
            # Two-byte lengths (128..16383: every ~1 KiB record batch) stay inline too.
            with src.block("elif data[pos + 1] < 0x80:"):
                src("n = (n & 0x7F) | (data[pos + 1] << 7)")
                src("pos += 2")
            with src.block("else:"):
                src(f"n, pos = {rt('_uvarint')}(data, pos)")
                if string:
                    with src.block(f"if n > {COMPACT_STRING_LIMIT}:"):
                        src(f"raise {rt('_Malformed')}")
            src("n -= 1")
        else:
            src(f"n = _U_{self.gen.fixed('i' if wide else 'h')}(data, pos)[0]")
            src(f"pos += {4 if wide else 2}")

    @contextmanager
    def non_null(self, nullable: bool, compact: bool, target: str) -> Iterator[None]:
        """Check the length in ``n``: negative is null where the version allows it (``target``
        becomes None), an error otherwise. What the ``with`` body emits reads a present value."""
        src, rt = self.src, self.gen.rt
        if not nullable:
            with src.block("if n < 0:"):
                src(f"raise {rt('_Malformed')}")
            yield
            return
        with src.block("if n < 0:"):
            if not compact:  # the classic form's null is exactly -1
                with src.block("if n != -1:"):
                    src(f"raise {rt('_Malformed')}")
            src(f"{target} = None")
        with src.block("else:"):
            yield

    def value(self, f: FieldSpec, target: str, depth: int, end: str, preloaded: bool = False) -> None:
        src, v = self.src, self.v
        kind = f.type.kind
        nullable = f.nullable_in(v)
        if f.type.is_fixed:
            # Fixed-width fields only reach here one at a time, as tagged fields: ``target`` is
            # then always ``<object>.<attribute>``.
            self.fixed_run([f], target.rpartition(".")[0])
            return
        if kind in (Kind.STRING, Kind.BYTES, Kind.RECORDS):
            compact = f.compact_in(v, self.gen.spec.flexible_versions)
            self.length(compact, wide=kind is not Kind.STRING, string=kind is Kind.STRING, preloaded=preloaded)
            with self.non_null(nullable, compact, target):
                self.take(kind, target)
        elif kind is Kind.ARRAY:
            self.length(self.flexible, wide=True, string=False, preloaded=preloaded)
            with self.non_null(nullable, self.flexible, target):
                self.array_items(f, target, depth + 1, end)
        elif kind is Kind.STRUCT:
            assert f.struct is not None
            inner = f"o{depth + 1}"
            if nullable:  # a nullable struct starts with a marker byte: -1 for null, 1 for present
                with src.block("if data[pos] >= 0x80:"):
                    src("pos += 1")
                    src(f"{target} = None")
            with src.else_block(nullable):
                if nullable:
                    src("pos += 1")
                self.struct(f.struct, inner, depth + 1, end)
                src(f"{target} = {inner}")
        else:  # pragma: no cover - every kind is handled
            raise AssertionError(kind)

    def take(self, kind: Kind, target: str) -> None:
        if kind is Kind.STRING:
            self.src(f"{target} = data[pos:pos + n].decode()")
        else:
            self.src(f"{target} = data[pos:pos + n]")
        self.src("pos += n")

    def array_items(self, f: FieldSpec, target: str, depth: int, end: str) -> None:
        src, rt = self.src, self.gen.rt
        element = f.type.element
        assert element is not None
        with src.block(f"if n > {end} - pos:"):  # every element takes at least a byte
            src(f"raise {rt('_Malformed')}")
        if element.is_fixed and element.kind is not Kind.UUID:
            code = FIXED_FORMATS[element.kind]
            table = self.gen.array_table(code, "unpack")
            src(
                f"{target} = [*{table}[n](data, pos)] if n < {rt('_SMALL')} "
                f"else list({rt('_fixed_array')}({code!r}, n)(data, pos))"
            )
            src(f"pos += {FIXED_SIZES[code]} * n")
            return
        items = f"l{depth}"
        src(f"{items} = []")
        # most arrays on the wire are empty (no aborted transactions, no replicas offline...):
        # they skip the loop's set-up, a tenth of a FetchResponse partition's reading
        with src.block("if n:"), src.block("for _ in range(n):"):
            if element.kind is Kind.STRUCT:
                assert f.struct is not None
                self.struct(f.struct, f"o{depth}", depth, end)
                src(f"{items}.append(o{depth})")
            elif element.kind is Kind.UUID:
                src(f"{items}.append({rt('_uuid')}(data[pos:pos + 16]))")
                src("pos += 16")
            else:
                compact = f.compact_in(self.v, self.gen.spec.flexible_versions)
                self.length(compact, wide=element.kind is not Kind.STRING, string=element.kind is Kind.STRING)
                with self.non_null(False, compact, ""):
                    self.take(element.kind, f"v{depth}")
                src(f"{items}.append(v{depth})")
        src(f"{target} = {items}")

    def tag_function(self, struct: StructSpec) -> str:
        v, gen = self.v, self.gen
        layout = struct_layout(struct, v, gen.spec.flexible_versions)
        kind = f"tags of {struct.name}"
        existing = gen.shared(kind, layout)
        if existing is not None:
            return existing
        body = Source()
        sub = Decode(gen, v, body)
        uvarint, malformed = gen.rt("_uvarint"), gen.rt("_Malformed")
        body(f"count, pos = {uvarint}(data, pos)")
        with body.block("if count > end - pos:"):
            body(f"raise {malformed}")
        body("unknown = None")
        known = [f for f in struct.fields if f.tag is not None and f.present_in(v) and f.tagged_in(v)]
        invalid = sorted(f.tag for f in struct.fields if f.tag is not None and f not in known)
        with body.block("for _ in range(count):"):
            body(f"tag, pos = {uvarint}(data, pos)")
            body(f"size, pos = {uvarint}(data, pos)")
            body("stop = pos + size")
            with body.block("if stop > end:"):
                body(f"raise {malformed}")
            keyword = "if"
            for f in sorted(known, key=lambda f: f.tag or 0):
                with body.block(f"{keyword} tag == {f.tag}:"):
                    sub.value(f, f"o.{gen.slot(f)}", 0, "stop")
                    with body.block("if pos != stop:"):
                        body(f"raise {malformed}")
                keyword = "elif"
            if invalid:  # tags the spec gives fields of other versions: never unknown here
                with body.block(f"{keyword} tag in {tuple(invalid)!r}:"):
                    body(f"raise {malformed}")
                keyword = "elif"
            with body.block("else:" if keyword == "elif" else "if True:"):
                with body.block("if unknown is None:"):
                    body("unknown = {}")
                body("unknown[tag] = data[pos:stop]")
            body("pos = stop")
        body("o._unknown_tags = unknown")
        body("return pos")
        return gen.add_function(
            kind, layout, "def {name}(o, data, pos, end):", body.lines, f"_read_tags_{struct.name}_v{v}"
        )
