"""Run-time generated code is compiled once per machine, and the cache is never needed.

A fresh cache compiles and keeps the code; the next lookup reads it back without compiling; a
cache that cannot be written (a read-only install's home, a full disk), a damaged entry or a
cache turned off all still give working renderers and projections. Each case also runs
``kafka-epochs decode`` as a new process, as a user's first and later runs would.
"""

from __future__ import annotations

import builtins
import marshal
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from kafka_epochs import Protocol
from kafka_epochs.wire import code_cache, json_text
from kafka_epochs.wire.code_cache import compile_cached

SAMPLE = Path(__file__).resolve().parents[2] / "kafka_epochs" / "samples" / "clients.pcap"
SOURCE = "def f(x):\n    return x * 2\n"


def count_compiles(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    seen: list[str] = []
    real = builtins.compile

    def counting(source: Any, filename: str, *args: Any, **kwargs: Any) -> Any:
        seen.append(filename)
        return real(source, filename, *args, **kwargs)

    monkeypatch.setattr(code_cache, "compile", counting, raising=False)
    return seen


def run(code: Any) -> Any:
    namespace: dict[str, Any] = {}
    exec(code, namespace)
    return namespace["f"]


def test_a_fresh_cache_compiles_once_then_reads(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KAFKA_EPOCHS_CACHE", str(tmp_path))
    compiles = count_compiles(monkeypatch)
    assert run(compile_cached(SOURCE, "<f>"))(4) == 8
    assert run(compile_cached(SOURCE, "<f>"))(5) == 10
    assert compiles == ["<f>"]
    assert len(list((tmp_path / "code").rglob("*"))) == 3  # tag dir, digest prefix dir, the entry
    compile_cached(SOURCE, "<g>")  # another label is another entry: tracebacks name the right code
    assert compiles == ["<f>", "<g>"]


def test_an_unwritable_cache_compiles_every_time(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    monkeypatch.setenv("KAFKA_EPOCHS_CACHE", str(blocker / "cache"))  # mkdir fails, even as root
    compiles = count_compiles(monkeypatch)
    assert run(compile_cached(SOURCE, "<f>"))(3) == 6
    assert run(compile_cached(SOURCE, "<f>"))(3) == 6
    assert compiles == ["<f>", "<f>"]


def test_a_damaged_entry_is_compiled_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KAFKA_EPOCHS_CACHE", str(tmp_path))
    compile_cached(SOURCE, "<f>")
    (entry,) = [p for p in (tmp_path / "code").rglob("*") if p.is_file()]
    for damage in (b"", b"\xff\x00garbage", entry.read_bytes()[:10], b"N"):  # b"N": marshal's None
        entry.write_bytes(damage)
        assert run(compile_cached(SOURCE, "<f>"))(1) == 2
    monkeypatch.setenv("KAFKA_EPOCHS_CODE_CACHE", "0")
    compiles = count_compiles(monkeypatch)
    compile_cached(SOURCE, "<f>")
    assert compiles == ["<f>"]


def test_an_entry_for_other_code_is_not_used(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An entry's name only says where to look: one holding another key (two keys with one name,
    or a file put there by hand) is compiled over, never run."""
    monkeypatch.setenv("KAFKA_EPOCHS_CACHE", str(tmp_path))
    compile_cached(SOURCE, "<f>")
    (entry,) = [p for p in (tmp_path / "code").rglob("*") if p.is_file()]
    other = "def f(x):\n    return -x\n"
    entry.write_bytes(marshal.dumps((b"another key", compile(other, "<f>", "exec"))))
    compiles = count_compiles(monkeypatch)
    assert run(compile_cached(SOURCE, "<f>"))(4) == 8
    assert compiles == ["<f>"]
    assert run(compile_cached(SOURCE, "<f>"))(4) == 8 and compiles == ["<f>"]  # and kept again


def test_renderers_come_from_the_cache_in_a_later_process(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KAFKA_EPOCHS_CACHE", str(tmp_path))
    compiles = count_compiles(monkeypatch)
    metadata = Protocol.apache().message("MetadataResponse")
    json_text._CACHE.clear()  # as a new process would start
    first = json_text.json_renderer(metadata, 12, ascii=False)(metadata())
    json_text._CACHE.clear()
    again = json_text.json_renderer(metadata, 12, ascii=False)(metadata())
    assert first == again and len(compiles) == 1


def decode(env: dict[str, str]) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "kafka_epochs.cli", "decode", str(SAMPLE)],
        env={**os.environ, **env},
        check=False,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_the_command_gives_the_same_lines_fresh_cached_and_unwritable(tmp_path: Path) -> None:
    fresh = decode({"KAFKA_EPOCHS_CACHE": str(tmp_path / "c")})
    entries = [p for p in (tmp_path / "c" / "code").rglob("*") if p.is_file()]
    assert len(entries) > 20  # every renderer the capture needed was kept
    assert decode({"KAFKA_EPOCHS_CACHE": str(tmp_path / "c")}) == fresh
    (tmp_path / "file").write_text("")
    assert decode({"KAFKA_EPOCHS_CACHE": str(tmp_path / "file" / "c")}) == fresh
    assert decode({"KAFKA_EPOCHS_CODE_CACHE": "0"}) == fresh
    assert fresh.count("\n") == 58
