"""`kafka-epochs decode` as a user drives it: filters, several inputs, standard input, bad batches,
help and version, spec directories (issue "Nothing silently wrong", items 4-6, 9-14, 16)."""

from __future__ import annotations

import io
import json
import os
import select
import shutil
import subprocess
import sys
import time
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import pytest
from test_decode_command import T0, conversation

from kafka_epochs import Protocol
from kafka_epochs.capture.synth import RecordedConnection, write_capture
from kafka_epochs.cli import build_parser, main
from kafka_epochs.cli.options import protocol_for
from kafka_epochs.errors import DecodeError
from kafka_epochs.protocol import ProtocolChain
from kafka_epochs.records import Compression, Record, decode_records, encode_batch

from conftest import REFERENCE_DIR

CLIENTS_SAMPLE = Path("kafka_epochs/samples/clients.pcap")
SAMPLE = Path("kafka_epochs/samples/sample.pcap")
APACHE = Protocol.apache()


def run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        try:
            code = main(list(argv))
        except SystemExit as e:  # argparse refusals
            code = int(e.code or 0)
    return code, out.getvalue(), err.getvalue()


def rows_of(out: str) -> list[dict[str, object]]:
    return [json.loads(line) for line in out.splitlines()]


# -- item 4: one bad record batch ----------------------------------------------------------------


def five_batches(bad: int | None) -> bytes:
    batches = [
        bytearray(encode_batch([Record(key=b"k%d" % i, value=b"v" * i)], base_offset=i, compression=Compression.NONE))
        for i in range(5)
    ]
    if bad is not None:
        batches[bad][-1] ^= 0xFF  # the last value byte: the CRC no longer matches
    return b"".join(batches)


def test_keep_going_keeps_every_good_batch_in_its_place() -> None:
    data = five_batches(bad=4)
    with pytest.raises(DecodeError, match="CRC"):
        decode_records(data)  # the default still refuses the whole set
    decoded = decode_records(data, keep_going=True)
    assert [e.base_offset for e in decoded.entries] == [0, 1, 2, 3]
    (bad,) = decoded.bad
    assert (bad.index, bad.length) == (4, len(data) - sum(e.batch_length + 12 for e in decoded.entries))
    assert bad.offset == len(data) - bad.length and "batches[4]" in str(bad.error)

    middle = decode_records(five_batches(bad=1), keep_going=True)
    assert [e.base_offset for e in middle.entries] == [0, 2, 3, 4] and [b.index for b in middle.bad] == [1]


def test_a_size_that_cannot_be_trusted_ends_the_walk() -> None:
    good = five_batches(bad=None)
    last = len(encode_batch([Record(key=b"k4", value=b"v" * 4)], base_offset=4, compression=Compression.NONE))
    cut = decode_records(good[:-5], keep_going=True)  # a Fetch cut at its size: a tail, not an error
    assert (len(cut.entries), cut.truncated_tail, cut.bad) == (4, last - 5, [])
    garbage = good + b"\x00" * 8 + b"\x00\x00\x00\x01" + b"\x00" * 10  # size 1: below any entry
    decoded = decode_records(garbage, keep_going=True)
    assert len(decoded.entries) == 5 and decoded.bad[0].offset == len(good)
    assert decoded.bad[0].length == 22 and "smallest entry" in str(decoded.bad[0].error)


def produce_with(records: bytes) -> bytes:
    produce = APACHE.message("ProduceRequest")
    body = produce(
        acks=0,
        timeout_ms=100,
        topic_data=[
            produce.TopicProduceData(
                name="orders", partition_data=[produce.PartitionProduceData(index=0, records=records)]
            )
        ],
    )
    return APACHE.encode_request(body, 9, correlation_id=7, client_id="loader")


def test_decode_records_marks_the_bad_batch_and_counts_it(tmp_path: Path) -> None:
    path = tmp_path / "bad-batch.pcap"
    write_capture(
        path,
        [
            RecordedConnection(
                ("10.0.0.1", 5000), ("10.0.0.2", 9092), [(T0, "client", produce_with(five_batches(bad=4)))]
            )
        ],
    )
    code, out, err = run("decode", str(path), "--records")
    (row,) = rows_of(out)
    batches = row["request"]["topic_data"][0]["partition_data"][0]["records"]["batches"]  # type: ignore[index]
    assert [b.get("base_offset") for b in batches] == [0, 1, 2, 3, None]
    assert "CRC" in batches[4]["error"] and batches[4]["base64"]
    assert row["record_errors"] == 1
    assert code == 1 and "1 record batches did not decode" in err
    assert run("decode", str(path))[0] == 0  # without --records nothing was decoded that could fail


# -- item 5: --api --------------------------------------------------------------------------------


@pytest.mark.parametrize("spelling", ["Produce", "produce", "PRODUCE", "ProduceRequest", "0"])
def test_api_names_in_any_case_and_api_keys(spelling: str) -> None:
    code, out, err = run("decode", str(CLIENTS_SAMPLE), "--api", spelling)
    rows = rows_of(out)
    assert rows and {r["api"] for r in rows} == {"Produce"} and code == 0
    assert f"printed {len(rows)} of 58 exchanges" in err


def test_an_unknown_api_is_refused_with_the_known_ones() -> None:
    code, out, err = run("decode", str(CLIENTS_SAMPLE), "--api", "Prodcue")
    assert code == 2 and out == ""
    assert "no such api (did you mean Produce?)" in err and "Metadata" in err and len(err.splitlines()) == 1
    code, _, err = run("decode", str(CLIENTS_SAMPLE), "--api", "999")
    assert code == 2 and "no api has key 999" in err


def test_the_exit_status_describes_what_was_printed(tmp_path: Path) -> None:
    path = tmp_path / "messy.pcap"
    write_capture(path, [conversation(clean=False)])  # an unmatched response and an unanswered Metadata
    assert run("decode", str(path))[0] == 1
    code, _out, err = run("decode", str(path), "--api", "Produce")
    assert code == 0 and "printed 2 of 6 exchanges (--api Produce), 0 of them with problems" in err


# -- item 6: spec directories ---------------------------------------------------------------------


def test_a_directory_without_specs_is_refused(tmp_path: Path) -> None:
    code, out, err = run("decode", str(SAMPLE), "--specs", str(tmp_path))
    assert code == 2 and out == "" and "holds no Kafka message specs" in err
    code, _, err = run("decode", str(SAMPLE), "--protocol", str(tmp_path / "missing"))
    assert code == 2 and "neither a profile" in err
    with pytest.raises(ValueError, match="no Kafka message specs"):
        Protocol.from_specs(tmp_path)


def test_several_spec_sets_name_the_closest_miss(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KAFKA_EPOCHS_CACHE", str(tmp_path / "cache"))
    heartbeat = tmp_path / "heartbeat"
    heartbeat.mkdir()
    for name in ("ConsumerGroupHeartbeatRequest", "ConsumerGroupHeartbeatResponse", "RequestHeader", "ResponseHeader"):
        shutil.copy(REFERENCE_DIR / f"{name}.json", heartbeat)  # Kafka 3.9: version 0 only
    chain = protocol_for(["messages", str(heartbeat)])
    assert isinstance(chain, ProtocolChain)
    request = chain.message("ConsumerGroupHeartbeatRequest")(group_id="g", member_id="m", member_epoch=0)
    frame = bytearray(chain.encode_request(request, 0, correlation_id=1, client_id="c"))
    frame[6:8] = (1).to_bytes(2, "big")  # claim version 1
    with pytest.raises(DecodeError) as info:
        chain.decode_request(bytes(frame))
    assert "ConsumerGroupHeartbeatRequest v1" in str(info.value) and "0-0" in str(info.value)
    assert "unknown api key" not in str(info.value)


def test_first_generation_is_announced_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KAFKA_EPOCHS_CACHE", str(tmp_path / "cache"))
    specs = tmp_path / "specs"
    specs.mkdir()
    shutil.copy(REFERENCE_DIR / "FindCoordinatorRequest.json", specs)
    shutil.copy(REFERENCE_DIR / "FindCoordinatorResponse.json", specs)
    err = io.StringIO()
    with redirect_stderr(err):
        protocol_for([str(specs)])
    assert "generating decoders" in err.getvalue() and str(tmp_path / "cache") in err.getvalue()
    err = io.StringIO()
    with redirect_stderr(err):
        protocol_for([str(specs)])
    assert err.getvalue() == ""


# -- items 9 and 10: directories and standard input ------------------------------------------------


def test_a_directory_reads_every_capture_in_it(tmp_path: Path) -> None:
    (tmp_path / "caps" / "more").mkdir(parents=True)
    shutil.copy(SAMPLE, tmp_path / "caps" / "a.pcap")
    shutil.copy(CLIENTS_SAMPLE, tmp_path / "caps" / "more" / "b.pcap")
    (tmp_path / "caps" / "notes.txt").write_text("not a capture")
    code, out, err = run("decode", str(tmp_path / "caps"))
    rows = rows_of(out)
    _, alone, _ = run("decode", str(CLIENTS_SAMPLE))
    from_b = [r for r in rows if str(r["capture"]).endswith("b.pcap")]
    assert [{k: v for k, v in r.items() if k != "capture"} for r in from_b] == rows_of(alone)
    assert {str(r["capture"]).rsplit("/", 1)[1] for r in rows} == {"a.pcap", "b.pcap"}
    assert "2 captures:" in err
    empty = tmp_path / "empty"
    empty.mkdir()
    code, out, err = run("decode", str(empty))
    assert code == 2 and "no capture files in it" in err


def test_a_file_among_several_that_is_no_capture_is_said_and_the_others_are_read(tmp_path: Path) -> None:
    """A directory's half-written (empty) or stray file must not cost the captures after it."""
    caps = tmp_path / "caps"
    caps.mkdir()
    shutil.copy(SAMPLE, caps / "a.pcap")
    (caps / "b.pcap").write_bytes(b"")  # tcpdump's next file, not written yet
    (caps / "c.pcapng").write_text("notes, saved under the wrong name\n")
    shutil.copy(CLIENTS_SAMPLE, caps / "d.pcap")
    for mode in ((), ("--fields", "error_code"), ("--format", "table")):
        code, out, err = run("decode", str(caps), *mode)
        _, alone, _ = run("decode", str(CLIENTS_SAMPLE), *mode)
        assert code == 2
        said = [line for line in err.splitlines() if "is not a readable pcap or pcapng file" in line]
        named = [line.removeprefix("kafka-epochs: ").split(" is not a readable")[0] for line in said]
        assert named == [str(caps / "b.pcap"), str(caps / "c.pcapng")], err
        assert "2 inputs skipped" in err and "2 captures:" in err
        if mode == ("--format", "table"):
            assert len(out.splitlines()) > len(alone.splitlines())  # both captures' rows
            continue
        rows = rows_of(out)
        from_d = [{k: v for k, v in r.items() if k != "capture"} for r in rows if r["capture"].endswith("d.pcap")]
        assert from_d == rows_of(alone) and any(r["capture"].endswith("a.pcap") for r in rows)
    # one input alone that is not a capture is refused, as before
    code, out, err = run("decode", str(caps / "c.pcapng"))
    assert code == 2 and out == "" and "is not a readable pcap or pcapng file" in err


def cli(*args: str) -> list[str]:
    return [sys.executable, "-m", "kafka_epochs.cli", *args]


def test_no_capture_and_nothing_on_stdin_is_a_usage_error() -> None:
    """A script whose capture variable came out empty must fail, not decode the bundled sample."""
    code, out, err = run("decode")  # pytest's stdin has no descriptor
    assert code == 2 and out == "" and "no capture given" in err
    for stdin in (subprocess.DEVNULL, None):  # /dev/null; the terminal or whatever the suite has
        if stdin is None and not os.isatty(0):
            continue
        done = subprocess.run(cli("decode"), stdin=stdin, capture_output=True, text=True, timeout=60, check=False)
        assert done.returncode == 2 and done.stdout == "" and "no capture given" in done.stderr


def test_no_capture_reads_a_pipe_or_a_file_on_stdin(tmp_path: Path) -> None:
    _, expected, _ = run("decode", str(CLIENTS_SAMPLE), "--quiet")
    piped = subprocess.run(
        cli("decode", "--quiet"), input=CLIENTS_SAMPLE.read_bytes(), capture_output=True, timeout=60, check=False
    )
    assert piped.returncode == 0 and piped.stdout.decode() == expected
    with CLIENTS_SAMPLE.open("rb") as file:
        redirected = subprocess.run(cli("decode", "--quiet"), stdin=file, capture_output=True, timeout=60, check=False)
    assert redirected.returncode == 0 and redirected.stdout.decode() == expected


def test_standard_input_gives_what_the_file_gives() -> None:
    from_file = subprocess.run(cli("decode", str(CLIENTS_SAMPLE), "--quiet"), capture_output=True, check=True)
    piped = subprocess.run(
        cli("decode", "-", "--quiet"), input=CLIENTS_SAMPLE.read_bytes(), capture_output=True, check=True
    )
    assert piped.stdout == from_file.stdout and piped.stdout.count(b"\n") == 58


def test_standard_input_is_decoded_as_it_arrives(tmp_path: Path) -> None:
    """The first exchange is printed while the capture is still being written (tcpdump -w -)."""
    path = tmp_path / "c.pcap"
    write_capture(path, [conversation(clean=True)])
    data = path.read_bytes()
    first_pair_ends = len(data) * 2 // 5  # past the ApiVersions answer, well before the end
    process = subprocess.Popen(cli("decode", "-", "--quiet"), stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert process.stdin is not None and process.stdout is not None
    try:
        process.stdin.write(data[:first_pair_ends])
        process.stdin.flush()
        ready, _, _ = select.select([process.stdout], [], [], 30)
        assert ready, "nothing printed while the input stayed open"
        first = json.loads(process.stdout.readline())
        assert first["api"] == "ApiVersions" and process.poll() is None  # still running, still reading
        process.stdin.write(data[first_pair_ends:])
        process.stdin.close()
        rest = process.stdout.read().splitlines()
        assert len(rest) == 3 and process.wait(30) == 0
    finally:
        process.kill()


# -- item 11: filters ------------------------------------------------------------------------------


def test_filters_by_topic_client_broker_and_correlation_id() -> None:
    _, everything, _ = run("decode", str(SAMPLE))
    rows = rows_of(everything)
    produce = next(r for r in rows if r["api"] == "Produce")
    topic = produce["request"]["topic_data"][0]["name"]  # type: ignore[index]
    _, out, err = run("decode", str(SAMPLE), "--topic", str(topic))
    by_topic = rows_of(out)
    assert by_topic and all(str(topic) in json.dumps(r) for r in by_topic)
    assert len(by_topic) < len(rows) and f"printed {len(by_topic)} of {len(rows)}" in err

    client = str(produce["client"])
    _, out, _ = run("decode", str(SAMPLE), "--client", client)
    assert rows_of(out) == [r for r in rows if r["client"] == client]
    address = client.rsplit(":", 1)[0]
    _, out, _ = run("decode", str(SAMPLE), "--client", address)
    assert rows_of(out) == [r for r in rows if str(r["client"]).rsplit(":", 1)[0] == address]
    client_id = produce["request_header"]["client_id"]  # type: ignore[index]
    _, out, _ = run("decode", str(SAMPLE), "--client", str(client_id))
    assert rows_of(out) == [r for r in rows if (r.get("request_header") or {}).get("client_id") == client_id]

    broker = str(produce["broker"])
    _, out, _ = run("decode", str(SAMPLE), "--broker", broker, "--correlation-id", str(produce["correlation_id"]))
    wanted = produce["correlation_id"]
    assert rows_of(out) == [r for r in rows if r["broker"] == broker and r["correlation_id"] == wanted]


def test_errors_only() -> None:
    _, everything, _ = run("decode", str(SAMPLE))
    expected = [
        r
        for r in rows_of(everything)
        if r.get("errors") or r.get("problem") or r.get("request_error") or r.get("response_error")
    ]
    code, out, _ = run("decode", str(SAMPLE), "--errors-only")
    assert expected and rows_of(out) == expected
    assert any(e["name"] == "FENCED_LEADER_EPOCH" for r in expected for e in r.get("errors", []))  # type: ignore[union-attr]
    assert code == 0  # error codes are answers, not decoding problems


# -- items 12 and 13: table, help, version, generate ----------------------------------------------


def test_table_has_no_none_and_refuses_records(tmp_path: Path) -> None:
    path = tmp_path / "messy.pcap"
    write_capture(path, [conversation(clean=False)])
    _, out, _ = run("decode", str(path), "--format", "table")
    assert "None" not in out and len(out.splitlines()) == 7
    code, out, err = run("decode", str(path), "--format", "table", "--records")
    assert code == 2 and out == "" and "--records applies to --format jsonl" in err


def test_version_help_and_every_option_explained() -> None:
    from importlib.metadata import version

    code, out, _ = run("--version")
    assert code == 0 and out.strip() == f"kafka-epochs {version('kafka-epochs')}"
    _, top, _ = run("--help")
    assert "``" not in top and "examples:" in top and "kafka-epochs decode -" in top
    parser = build_parser()
    commands = next(a for a in parser._actions if a.dest == "command")
    for name, sub in commands.choices.items():  # type: ignore[union-attr]
        for action in sub._actions:
            assert action.help, f"{name} {action.option_strings or action.dest} has no help"


def test_generate_refuses_to_write_into_an_installed_package(tmp_path: Path) -> None:
    site = tmp_path / "lib" / "site-packages" / "kafka_epochs" / "messages"
    code, _, err = run("generate", "--specs", "messages", "--out", str(site))
    assert code == 2 and "installed package" in err and not site.exists()
    code, _, err = run("generate", "--specs", "messages")
    assert code == 2 and "both --specs and --out" in err
    _, text, _ = run("generate", "--help")
    assert "regenerate the bundled packages" in " ".join(text.split())


# -- item 14: progress ------------------------------------------------------------------------------


def test_progress_shows_bytes_of_a_known_total(monkeypatch: pytest.MonkeyPatch) -> None:
    err = io.StringIO()
    monkeypatch.setattr(err, "isatty", lambda: True, raising=False)
    monkeypatch.setattr(sys, "stderr", err)
    with redirect_stdout(io.StringIO()):
        assert main(["decode", str(CLIENTS_SAMPLE)]) == 0
    size = CLIENTS_SAMPLE.stat().st_size
    shown = err.getvalue()
    assert "decoding:" in shown and f"/{size / 1024:.1f}k" in shown and "B/s" in shown  # a total, a rate


# -- item 16: a committed generated package --------------------------------------------------------


def test_a_generated_package_loads_as_a_protocol(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert run("generate", "--specs", "messages", "--out", str(tmp_path / "mypkg"))[0] == 0
    monkeypatch.syspath_prepend(str(tmp_path))
    protocol = Protocol.from_package("mypkg")
    stop = protocol.message("StopReplicaRequest")
    frame = protocol.encode_request(
        stop(controller_id=1, controller_epoch=2, broker_epoch=3), 3, correlation_id=9, client_id="controller"
    )
    decoded = protocol.decode_request(frame)
    assert decoded.body.controller_epoch == 2 and decoded.profile == "mypkg"
    assert type(decoded.body).__module__.startswith("mypkg.")
    (tmp_path / "plain").mkdir()
    (tmp_path / "plain" / "__init__.py").write_text("")
    with pytest.raises(ValueError, match="not a package generated"):
        Protocol.from_package("plain")
    with pytest.raises(ModuleNotFoundError):
        Protocol.from_package("no_such_package_here")


def test_stdin_then_time_budget() -> None:
    """Guards the stream test above against hanging: the whole decode of a small pipe is quick."""
    started = time.monotonic()
    subprocess.run(cli("decode", "-", "--quiet"), input=b"", capture_output=True, check=False, timeout=60)
    assert time.monotonic() - started < 60
    assert os.path.exists(CLIENTS_SAMPLE)


def test_a_misread_with_bytes_left_over_is_a_problem_not_a_clean_row() -> None:
    """The sample's KIP-359 Produce v12 read with Apache's layout leaves 107 bytes: the row keeps
    what was read and its warning, and is counted and exited on as a problem."""
    code, out, err = run("decode", str(SAMPLE), "--protocol", "apache")
    rows = rows_of(out)
    doubtful = [r for r in rows if "request_error" in r]
    assert len(doubtful) == 1 and code == 1
    (row,) = doubtful
    assert (row["api"], row["api_version"]) == ("Produce", 12)
    assert row["request_error"].startswith("107 bytes left after the body, which no known client sends")
    assert row["request_warnings"] == ["107 trailing bytes after the body, ignored"]
    assert "request" in row  # what was read is still shown
    assert "1 with problems" in err
    # the same frames read with the KIP layout (the default chooses it) are clean
    code, out, err = run("decode", str(SAMPLE))
    assert code == 0 and "0 with problems" in err
