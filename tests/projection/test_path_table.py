"""The generated table of field paths answers what resolving against every message answers.

``Protocol.has_field_path`` (``decode --fields``' up-front check) reads ``_paths.py`` and loads
no message; the reference loads every message and asks ``projection.has_path`` of each. They
must agree on every real path of every message, written every way a user may write it (spec
names, attributes, with and without ``[]``), and on paths that are wrong in each way there is
(a name that no struct has there, ``[]`` on what is no array, a path ending at a struct, a path
that goes on past a value).
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest

from kafka_epochs import Protocol
from kafka_epochs.projection.paths import has_path

PROTOCOLS = {"apache": Protocol.apache(), "bundled": Protocol.bundled(), "kip": Protocol.kip()}


def real_paths(cls: Any, prefix: tuple[tuple[Any, bool], ...] = ()) -> list[tuple[tuple[Any, bool], ...]]:
    """Every path to a value of ``cls``: a tuple of (field, walks into it)."""
    out = []
    for f in cls._FIELDS:
        if f.kind == "struct" or (f.kind == "array" and f.element == "struct"):
            out += real_paths(f.struct, (*prefix, (f, True)))
            out.append((*prefix, (f, False)))  # ends at a struct: refused
        else:
            out.append((*prefix, (f, False)))
    return out


def spellings(path: tuple[tuple[Any, bool], ...], rng: random.Random) -> list[str]:
    """The path written a few ways, right and wrong."""
    written = []
    for _ in range(2):
        segments = []
        for f, _into in path:
            name = rng.choice([f.attr, f.name])
            if f.kind == "array" and rng.random() < 0.6:
                name += "[]"
            elif rng.random() < 0.05:
                name += "[]"  # on what is no array: refused
            segments.append(name)
        written.append(".".join(segments))
    good = ".".join(f.attr for f, _ in path)
    written += [good + ".extra", good.replace("_", "", 1) or "x", " " + good + " ", good + "."]
    return written


@pytest.mark.parametrize("name", sorted(PROTOCOLS))
def test_the_table_answers_as_every_message_does(name: str) -> None:
    protocol = PROTOCOLS[name]
    messages = [protocol.message(n) for n in protocol.names()]
    rng = random.Random(name)
    asked = accepted = 0
    for cls in messages:
        for path in real_paths(cls):
            for text in spellings(path, rng):
                expected = any(has_path(m, text) for m in messages)
                assert protocol.has_field_path(text) == expected, text
                asked += 1
                accepted += expected
    assert asked > 1000 and 0.2 * asked < accepted < 0.9 * asked


def test_a_package_without_the_table_still_answers(tmp_path: Path) -> None:
    """A package generated before the table existed: every message is loaded, as before."""
    protocol = Protocol.from_specs(Path(__file__).resolve().parents[2] / "messages", tmp_path)
    assert protocol._field_paths() is not None
    tables = protocol._table
    protocol._table = lambda part: None if part == "_paths" else tables(part)
    assert protocol.has_field_path("topic_states[].partition_states[].leader_epoch")
    assert not protocol.has_field_path("topic_states[].partition_states[].no_such_field")
