"""``decode``'s inputs: named and found as pathlib named and found them (without pathlib), and
named pipes read live."""

from __future__ import annotations

import contextlib
import io
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path, PurePosixPath
from typing import Any

import pytest

from kafka_epochs.capture.files.finding import CAPTURE_SUFFIXES
from kafka_epochs.cli import main
from kafka_epochs.cli.decode import capture_inputs, path_text
from kafka_epochs.samples import SAMPLE_CAPTURE

SCRIPT_DIR = Path(sys.executable).parent

ODD_TEXTS = [
    "",
    ".",
    "./",
    "..",
    "/",
    "//",
    "///",
    "//x/y",
    "///x//y/",
    "a/./b/.",
    "a/../b.pcap",
    "./captures/",
    "captures//day 1/",
    "-",
    "./-",
    "[x].pcap",
    "é/ü.pcapng",
    ".hidden/.x.pcap",
    "a/.../b",
]


@pytest.mark.parametrize("text", ODD_TEXTS)
def test_an_inputs_name_is_what_pathlib_makes_of_it(text: str) -> None:
    assert path_text(text) == str(PurePosixPath(text))


def _by_pathlib(given: str) -> list[str]:
    """The expansion the command made with pathlib before (the reference)."""
    path = Path(given)
    if path.is_dir():
        return [str(p) for p in sorted(p for p in path.rglob("*") if p.is_file() and p.name.endswith(CAPTURE_SUFFIXES))]
    return [str(path)]


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "caps"
    for name in (
        "a.pcap",
        "b.pcapng.gz",
        "notes.txt",
        "x.pcap.txt",
        "day 1/c.cap",
        "day 1/deeper/d.pcap",
        "day-1/e.pcap",
        "day.1/f.pcap",
        "[odd]/g.pcapng",
        "é/h.pcap",
        ".hidden/i.pcap",
        "-dash/j.pcap",
    ):
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_bytes(b"")
    (root / "dir.pcap").mkdir()  # a directory with a capture's name is not a capture
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "k.pcap").write_bytes(b"")
    (root / "linked-dir").symlink_to(elsewhere, target_is_directory=True)  # not followed
    (root / "linked.pcap").symlink_to(elsewhere / "k.pcap")  # followed
    (root / "broken.pcap").symlink_to(tmp_path / "gone.pcap")  # not a file
    return root


@pytest.mark.parametrize("spelling", ["{root}", "{root}/", "{root}//", "{parent}/./caps", "caps", "./caps/", "."])
def test_a_directory_expands_as_pathlib_expanded_it(tree: Path, spelling: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tree if spelling == "." else tree.parent)
    given = spelling.format(root=tree, parent=tree.parent)
    expected = _by_pathlib(given)
    assert len(expected) == 11  # (ten files and the link to one; not the broken link, nor under the linked directory)
    assert capture_inputs([given]) == expected
    assert capture_inputs([Path(given)]) == expected  # (a caller's Path objects too)


@pytest.mark.parametrize("spelling", ["{root}", "{root}/", "caps", "./caps/"])
def test_audit_and_spark_decode_read_the_files_decode_reads(
    tree: Path, spelling: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # (they took only a directory's own files, and so audited part of a tree of captures)
    from kafka_epochs.frame_rows import expand_paths

    monkeypatch.chdir(tree.parent)
    given = spelling.format(root=tree)
    decoded = capture_inputs([given])
    assert expand_paths([given]) == [os.path.realpath(p) for p in decoded]
    assert any("/deeper/" in p for p in expand_paths([given]))
    elsewhere = str(tree.parent / "elsewhere" / "k.pcap")  # (the link to a file: one file, named once)
    assert expand_paths([given, elsewhere]) == [os.path.realpath(p) for p in decoded]
    # a glob's directories too, as the shell's expansion of it would be read (they were dropped)
    days = capture_inputs([str(tree / "day 1"), str(tree / "day-1"), str(tree / "day.1")])
    assert len(days) == 4
    assert expand_paths([f"{tree}/day*"]) == [os.path.realpath(p) for p in days]
    one_deep = [os.path.realpath(tree / name) for name in ("day-1/e.pcap", "day.1/f.pcap")]
    assert expand_paths([f"{tree}/day*/*.pcap"]) == one_deep


@pytest.mark.parametrize("command", ["decode", "audit", "spark-decode"])
def test_a_directory_that_cannot_be_listed_is_said_not_skipped(
    tree: Path, command: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from kafka_epochs.capture.files import finding

    scandir = os.scandir

    def forbidden(path: str) -> Any:  # (the tests run as root, whom permissions do not stop)
        if str(path).endswith("/deeper"):
            raise PermissionError(13, "Permission denied", path)
        return scandir(path)

    monkeypatch.setattr(finding.os, "scandir", forbidden)
    argv = [command, str(tree)] + (["--out", str(tree.parent / "out")] if command == "spark-decode" else [])
    assert main(argv) == 2
    assert capsys.readouterr().err.strip() == (
        f"kafka-epochs: cannot list {tree}/day 1/deeper, so its captures cannot be read (permission denied)"
    )


def test_files_and_standard_input_are_named_as_before(tree: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tree)
    given = ["./a.pcap", "day 1//c.cap", str(tree / "é" / "h.pcap"), "-", "./-dash/j.pcap"]
    assert capture_inputs(given) == [x for g in given for x in _by_pathlib(g)]
    with pytest.raises(ValueError, match="standard input"):
        capture_inputs(["-", "./-"])
    with pytest.raises(ValueError, match=r"cannot read missing\.pcap: no such file"):
        capture_inputs(["./missing.pcap"])
    os.mkdir("empty")
    with pytest.raises(ValueError, match="empty is a directory with no capture files"):
        capture_inputs(["empty/"])


def _fed_pipe(tmp_path: Path, data: bytes) -> tuple[str, threading.Thread]:
    """A named pipe, and a thread that writes ``data`` into it once a reader opens it."""
    pipe = str(tmp_path / "live.pcap")
    os.mkfifo(pipe)

    def feed() -> None:
        with open(pipe, "wb") as out:
            out.write(data)

    writer = threading.Thread(target=feed, daemon=True)
    writer.start()
    return pipe, writer


def test_a_pipe_is_read_live_as_standard_input_is(tmp_path: Path) -> None:
    """A shell's ``<(zcat capture.pcap.gz)`` is a pipe at /dev/fd/N: it was refused as "no such
    file or directory", though it exists and reads as standard input does."""
    pipe, writer = _fed_pipe(tmp_path, SAMPLE_CAPTURE.read_bytes())
    assert capture_inputs([pipe]) == [pipe]
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        code = main(["decode", pipe, "--fields", "error_code"])
    writer.join(5)
    whole = io.StringIO()
    with contextlib.redirect_stdout(whole), contextlib.redirect_stderr(io.StringIO()):
        main(["decode", str(SAMPLE_CAPTURE), "--fields", "error_code"])
    assert code == 0 and out.getvalue() == whole.getvalue() and out.getvalue().count("\n") > 30


def test_what_is_no_file_directory_or_pipe_is_refused_by_name(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"cannot read /dev/null: it is not a file, a directory or a pipe"):
        capture_inputs(["/dev/null"])
    pipe = str(tmp_path / "twice")
    os.mkfifo(pipe)
    with pytest.raises(ValueError, match="is a pipe, which can be read only once"):
        capture_inputs([pipe, pipe])


def test_ctrl_c_stops_a_live_decode_with_what_it_decoded(tmp_path: Path) -> None:
    """``tcpdump -w - | kafka-epochs decode -`` is stopped by Ctrl-C: the lines printed so far
    stand, the summary is printed and says it was stopped, and the exit status is the decode's
    (it was a traceback of KeyboardInterrupt, and no summary)."""
    pipe = tmp_path / "live.pcap"
    os.mkfifo(pipe)
    decode = subprocess.Popen(
        [str(SCRIPT_DIR / "kafka-epochs"), "decode", str(pipe)], stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    assert decode.stdout is not None
    with open(pipe, "wb") as feed:  # (opened once the decode opens it to read; held open: live)
        feed.write(SAMPLE_CAPTURE.read_bytes())
        feed.flush()
        lines = [decode.stdout.readline() for _ in range(37)]  # each printed as its answer came
        decode.send_signal(signal.SIGINT)  # while it waits for more
        rest, errors = decode.communicate(timeout=60)
    assert decode.returncode == 0, errors
    assert b"Traceback" not in errors and b"stopped by Ctrl-C" in errors
    assert b"37 exchanges: 37 pairs" in errors and rest == b""
    assert all(line.startswith(b'{"kind": "pair"') for line in lines)


def test_lines_cut_short_by_ctrl_c_are_not_written_twice(monkeypatch: pytest.MonkeyPatch) -> None:
    """Ctrl-C while lines are being written (a reader slower than the decode): the lines held are
    given up before the write, so the flush after the interrupt writes nothing again."""
    from kafka_epochs.cli.decode_output import Printer

    written: list[str] = []

    class Interrupted(io.StringIO):
        def write(self, text: str) -> int:
            written.append(text)
            if len(written) == 1:
                raise KeyboardInterrupt
            return len(text)

    monkeypatch.setattr(sys, "stdout", Interrupted())
    printer = Printer.__new__(Printer)  # (only its lines and liveness matter to flush)
    printer.lines, printer.live = ["one", "two"], False
    with pytest.raises(KeyboardInterrupt):
        printer.flush()
    printer.flush()
    assert written == ["one\ntwo\n"]
