"""kafka_epochs.values: the value classes that replaced dataclasses on the command's path behave
as the dataclasses did (held against dataclasses themselves), and the path imports no dataclasses."""

from __future__ import annotations

import copy
import dataclasses
import inspect
import pickle
import subprocess
import sys
from pathlib import Path

import pytest

from kafka_epochs.capture.alignment.rules import FrameRule
from kafka_epochs.capture.events import Discarded, Gap, PacketError, Resync, StreamData, StreamEnd, StreamStart
from kafka_epochs.capture.files.packets import BadRecord, Packet
from kafka_epochs.capture.stats import CaptureStats
from kafka_epochs.cli.decode_filters import ExchangeFilter
from kafka_epochs.cli.decode_output import Printed
from kafka_epochs.exchanges import DecodeSummary, Exchange
from kafka_epochs.framing import RequestEvent, ResponseEvent
from kafka_epochs.pairing import FrameHead, SaslToken, StreamLost
from kafka_epochs.projection.paths import Node
from kafka_epochs.protocol_refs import Entry
from kafka_epochs.values import FrozenValue, Value, fields_of, replace

VALUE_CLASSES = [
    StreamStart,
    StreamData,
    Gap,
    Discarded,
    Resync,
    StreamEnd,
    PacketError,
    Packet,
    BadRecord,
    FrameRule,
    CaptureStats,
    ExchangeFilter,
    Printed,
    FrameHead,
    SaslToken,
    StreamLost,
    RequestEvent,
    ResponseEvent,
    Exchange,
    DecodeSummary,
    Entry,
    Node,
]


def _sample(cls: type[Value], seed: int) -> list[object]:
    """Distinct, hashable values for each field (the classes do not check types)."""
    return [f"{name}-{seed}" for name in cls._fields]


def _twin(cls: type[Value]) -> type:
    """The dataclass the class stands for: same name, same fields in the same order."""
    frozen = issubclass(cls, FrozenValue)
    return dataclasses.make_dataclass(cls.__name__, list(cls._fields), frozen=frozen, slots=True)


@pytest.mark.parametrize("cls", VALUE_CLASSES, ids=lambda c: c.__name__)
def test_a_value_is_what_its_dataclass_was(cls: type[Value]) -> None:
    twin = _twin(cls)
    values = _sample(cls, 1)
    value, other = cls(*values), twin(*values)
    assert cls._fields == tuple(f.name for f in dataclasses.fields(twin))
    # __init__ takes the fields in their order (what pickling and match rely on), by keyword too
    assert list(inspect.signature(cls).parameters) == list(cls._fields)
    assert cls(**dict(zip(cls._fields, values, strict=True))) == value
    assert repr(value) == repr(other).replace(twin.__qualname__, cls.__qualname__, 1)
    assert cls.__match_args__ == twin.__match_args__
    assert fields_of(value) == dataclasses.asdict(other)
    assert value == cls(*values) and value != cls(*_sample(cls, 2))
    assert value != other and value != tuple(values)  # another class's value is never equal
    assert pickle.loads(pickle.dumps(value)) == value and copy.copy(value) == value
    changed = replace(value, **{cls._fields[-1]: "changed"})
    assert fields_of(changed) == dataclasses.asdict(dataclasses.replace(other, **{cls._fields[-1]: "changed"}))
    assert type(changed) is cls and value == cls(*values)  # the original is left as it was
    with pytest.raises(TypeError):
        replace(value, not_a_field=1)
    if issubclass(cls, FrozenValue):
        assert hash(value) == hash(cls(*values))
        with pytest.raises(AttributeError):
            value.__setattr__(cls._fields[0], 0)
        with pytest.raises(AttributeError):
            value.__delattr__(cls._fields[0])
    else:
        with pytest.raises(TypeError):
            hash(value)
        setattr(value, cls._fields[0], "changed")
        assert getattr(value, cls._fields[0]) == "changed" and value != cls(*values)


@pytest.mark.parametrize("cls", VALUE_CLASSES, ids=lambda c: c.__name__)
def test_a_value_takes_no_attribute_it_does_not_declare(cls: type[Value]) -> None:
    with pytest.raises(AttributeError):
        cls(*_sample(cls, 1)).not_a_field = 1  # type: ignore[attr-defined]


def test_defaults_are_fresh_for_each_value() -> None:
    first, second = CaptureStats(), CaptureStats()
    first.ignored["x"] += 1
    first.detected_ports.add(9092)
    assert not second.ignored and not second.detected_ports
    assert (
        RequestEvent(b"", 0, None, None, None, None).warnings
        is not RequestEvent(b"", 0, None, None, None, None).warnings
    )


def test_match_takes_the_fields_by_position() -> None:
    match StreamLost("client", 12, "too large"):
        case StreamLost(_, offset, reason):
            assert (offset, reason) == (12, "too large")
        case _:
            pytest.fail("no match")


def test_the_decode_command_imports_no_dataclasses(tmp_path: Path) -> None:
    """The point of these classes: ``dataclasses`` (and ``inspect``, which it imports) cost the
    command a fifth of its start; a dataclass on the decode path brings them back."""
    from kafka_epochs.samples import CLIENTS_CAPTURE

    capture = str(CLIENTS_CAPTURE)
    script = (
        "import sys, io, contextlib\n"
        "from kafka_epochs.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        f"    for way in ([], ['--headers-only'], ['--fields', 'error_code']):\n"
        f"        main(['decode', {capture!r}, '--quiet', *way])\n"
        "print(sorted(m for m in ('dataclasses', 'inspect') if m in sys.modules))\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True, cwd=tmp_path)
    assert done.stdout.strip() == "[]", done.stderr
