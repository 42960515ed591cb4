#!/usr/bin/env python
"""What would two generator changes gain? Rewrites generated modules in memory, then times them.

The numbers behind "Where the time goes" in docs/performance.md. Each benchmark message's
generated module (from Kafka 3.9's specs) is rewritten as the proposed generator change would
emit it, loaded under another name, checked to encode the same bytes and decode to an object
that re-encodes to them, and timed against the module as generated:

``arrays``
    Arrays of fixed-size elements (int8/int32/int64) unpack and pack through module-level tables
    indexed by the count (``_UA_i[n]``, ``_PA_i[n]``) for fewer than 64 elements, with the empty
    array as a constant, instead of a call to ``fixed_array(code, n)`` / ``fixed_array_pack``.
``varint2``
    Two-byte varints (128 to 16,383: record batches, longer strings and arrays) are decoded and
    encoded inline, instead of through ``read_uvarint`` / ``uvarint``.

The rewrites are regular expressions over today's generated code. A rewrite that matches
nothing (the generator has changed) is reported, not silently skipped.

    python benchmarks/what_if.py [--quick]
"""

from __future__ import annotations

import argparse
import random
import re
import sys
import types
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

import bench_codec  # noqa: E402

DECODE_ARRAY = re.compile(
    r"(?P<i> +)if n > end - pos:\n(?P=i)    raise _Malformed\n"
    r"(?P=i)(?P<target>[\w.]+) = list\(_fixed_array\('(?P<code>\w)', n\)\(data, pos\)\)\n"
)
ENCODE_ARRAY = re.compile(
    r"(?P<i> +)out\.append\(_UV1\[n \+ 1\] if n < 127 else _to_uvarint\(n \+ 1\)\)\n"
    r"(?P=i)out\.append\(_fixed_array_pack\('(?P<code>\w)', n\)\(\*(?P<array>\w+)\)\)\n"
)
DECODE_VARINT = re.compile(
    r"(?P<i> +)if n < 0x80:\n(?P=i)    pos \+= 1\n(?P=i)else:\n(?P=i)    n, pos = _uvarint\(data, pos\)\n"
)
ENCODE_LENGTH = re.compile(r"_UV1\[n \+ 1\] if n < 127 else (?P<slow>_to_uvarint|_string_length)\(n \+ 1\)")


def decode_array(m: re.Match[str]) -> str:
    i, target, code = m["i"], m["target"], m["code"]
    return (
        f"{i}if n == 0:\n{i}    {target} = []\n"
        f"{i}elif n < 64:\n{i}    {target} = [*_UA_{code}[n](data, pos)]\n"
        f"{i}else:\n{i}    if n > end - pos:\n{i}        raise _Malformed\n"
        f"{i}    {target} = list(_fixed_array('{code}', n)(data, pos))\n"
    )


def encode_array(m: re.Match[str]) -> str:
    i, code, array = m["i"], m["code"], m["array"]
    return (
        f"{i}if n == 0:\n{i}    out.append(b'\\x01')\n"
        f"{i}elif n < 64:\n{i}    out.append(_UV1[n + 1])\n{i}    out.append(_PA_{code}[n](*{array}))\n"
        f"{i}else:\n{i}    out.append(_to_uvarint(n + 1))\n"
        f"{i}    out.append(_fixed_array_pack('{code}', n)(*{array}))\n"
    )


def decode_varint(m: re.Match[str]) -> str:
    i = m["i"]
    return (
        f"{i}if n < 0x80:\n{i}    pos += 1\n"
        f"{i}elif data[pos + 1] < 0x80:\n{i}    n = (n & 0x7F) | (data[pos + 1] << 7)\n{i}    pos += 2\n"
        f"{i}else:\n{i}    n, pos = _uvarint(data, pos)\n"
    )


def encode_length(m: re.Match[str]) -> str:
    return (
        f"_UV1[n + 1] if n < 127 else _P_BB(((n + 1) & 0x7F) | 0x80, (n + 1) >> 7) if n < 16383 else {m['slow']}(n + 1)"
    )


REWRITES: dict[str, list[tuple[re.Pattern[str], Callable[[re.Match[str]], str]]]] = {
    "arrays": [(DECODE_ARRAY, decode_array), (ENCODE_ARRAY, encode_array)],
    "varint2": [(DECODE_VARINT, decode_varint), (ENCODE_LENGTH, encode_length)],
}

TABLES = (
    "\n".join(
        [
            "import struct as _what_if_struct",
            *(f"_UA_{c} = tuple(_what_if_struct.Struct(f'>{{k}}{c}').unpack_from for k in range(64))" for c in "biq"),
            *(f"_PA_{c} = tuple(_what_if_struct.Struct(f'>{{k}}{c}').pack for k in range(64))" for c in "biq"),
            "_P_BB = _what_if_struct.Struct('>BB').pack",
        ]
    )
    + "\n"
)


class RewrittenProtocol:
    """Just enough of a Protocol for the benchmark's message builders, over rewritten modules."""

    def __init__(self, proto: Any, rewrites: tuple[str, ...]) -> None:
        self.proto = proto
        self.rewrites = rewrites
        self.classes: dict[str, Any] = {}
        self.matches: dict[str, int] = {}

    def message(self, name: str) -> Any:
        if name not in self.classes:
            self.classes[name] = self._rewrite(name) if self.rewrites else self.proto.message(name)
        return self.classes[name]

    def _rewrite(self, name: str) -> Any:
        original = sys.modules[self.proto.message(name).__module__]
        source = Path(original.__file__ or "").read_text(encoding="utf-8")
        for rewrite in self.rewrites:
            for pattern, replace in REWRITES[rewrite]:
                source, count = pattern.subn(replace, source)
                self.matches[f"{rewrite}: {pattern.pattern[:40]}..."] = (
                    self.matches.get(f"{rewrite}: {pattern.pattern[:40]}...", 0) + count
                )
        module_name = f"_what_if_{'_'.join(self.rewrites)}_{name}"
        module = types.ModuleType(module_name)
        module.__file__ = original.__file__
        sys.modules[module_name] = module
        exec(compile(source + TABLES, module_name, "exec"), module.__dict__)
        return getattr(module, name)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--specs", type=Path, default=bench_codec.DEFAULT_SPECS)
    parser.add_argument("--seed", type=int, default=2024)
    args = parser.parse_args(argv)
    from kafka_epochs import Protocol

    proto = Protocol.from_specs(args.specs)
    configs = {"generated": (), "arrays": ("arrays",), "varint2": ("varint2",), "both": ("arrays", "varint2")}
    protos = {label: RewrittenProtocol(proto, rewrites) for label, rewrites in configs.items()}
    fns: dict[str, Callable[[], Any]] = {}
    for case in bench_codec.CASES:
        expected = case.build(proto, random.Random(f"{args.seed}:{case.name}")).encode(case.version)
        for label, rewritten in protos.items():
            message = case.build(rewritten, random.Random(f"{args.seed}:{case.name}"))
            cls, version = type(message), case.version
            data = message.encode(version)
            if data != expected or cls.decode(data, version).encode(version) != data:
                raise AssertionError(f"the {label} rewrite changes {case.name} v{version}")
            fns[f"{case.name} decode {label}"] = lambda c=cls, d=data, v=version: c.decode(d, v)
            fns[f"{case.name} encode {label}"] = lambda m=message, v=version: m.encode(v)
    for rewritten in protos.values():
        for pattern, count in rewritten.matches.items():
            if count == 0:
                print(f"warning: no match for {pattern} (has the generator changed?)")

    settings = bench_codec.QUICK if args.quick else bench_codec.Settings(rounds=7, min_time=0.05)
    best = bench_codec.time_all(fns, settings)
    print(f"{'message':<22}{'op':<8}" + "".join(f"{label:>20}" for label in configs))
    for case in bench_codec.CASES:
        for op in ("decode", "encode"):
            base = best[f"{case.name} {op} generated"]
            cells = []
            for label in configs:
                t = best[f"{case.name} {op} {label}"]
                change = "" if label == "generated" else f" {100 * (t - base) / base:+4.0f}%"
                cells.append(f"{t * 1e6:9.1f} us{change}")
            print(f"{case.name:<22}{op:<8}" + "".join(f"{c:>20}" for c in cells))
    return 0


if __name__ == "__main__":
    sys.exit(main())
