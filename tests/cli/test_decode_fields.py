"""``decode --fields`` and ``--headers-only``: the same exchanges as a full decode, fewer values.

Every value printed through a projection is checked against the full decode of the same
capture (the bundled real-client capture and the epoch sample), walked by hand here.
"""

from __future__ import annotations

import io
import json
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path
from typing import Any

import pytest

from kafka_epochs.cli import main

SAMPLES = Path(__file__).resolve().parents[2] / "kafka_epochs" / "samples"
CAPTURES = [str(SAMPLES / "clients.pcap"), str(SAMPLES / "sample.pcap")]
METADATA_PATHS = ["topics[].name", "topics[].partitions[].partition_index", "topics[].partitions[].leader_epoch"]


def run(*argv: str) -> tuple[int, list[dict[str, Any]], str]:
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        try:
            code = main(list(argv))
        except SystemExit as e:
            code = int(e.code or 0)
    return code, [json.loads(line) for line in out.getvalue().splitlines()], err.getvalue()


def by_hand(body: dict[str, Any]) -> dict[str, list[Any]]:
    """The columns of METADATA_PATHS from a full MetadataResponse body."""
    rows = [(t["name"], p["partition_index"], p.get("leader_epoch")) for t in body["topics"] for p in t["partitions"]]
    return {path: [row[i] for row in rows] for i, path in enumerate(METADATA_PATHS)}


HEAD_KEYS = ("kind", "time", "client", "broker", "correlation_id", "api", "api_key", "api_version", "request_header")


@pytest.mark.parametrize("capture", CAPTURES)
def test_fields_print_the_values_a_full_decode_holds(capture: str) -> None:
    code, full, _ = run("decode", capture, "--quiet")
    fields_code, projected, _ = run("decode", capture, "--quiet", "--fields", ",".join(METADATA_PATHS))
    assert fields_code == code
    assert len(projected) == len(full)
    checked = 0
    for whole, some in zip(full, projected, strict=True):
        assert {k: whole.get(k) for k in HEAD_KEYS} == {k: some.get(k) for k in HEAD_KEYS}
        if whole.get("api") == "Metadata" and "response" in whole:
            assert some["response"] == by_hand(whole["response"])
            checked += 1
        elif "response" in some:  # other messages print the asked paths they have, if any
            assert set(some["response"]) <= set(METADATA_PATHS)
    assert checked >= 2


@pytest.mark.parametrize("capture", CAPTURES)
def test_headers_only_gives_the_same_exchanges_without_bodies(capture: str) -> None:
    code, full, err_full = run("decode", capture)
    headers_code, headers, err_headers = run("decode", capture, "--headers-only")
    assert headers_code == code
    assert [{k: r.get(k) for k in HEAD_KEYS} for r in full] == [{k: r.get(k) for k in HEAD_KEYS} for r in headers]
    assert not any("request" in r or "response" in r or "errors" in r for r in headers)
    # the summary counts the same exchanges and problems
    assert err_full.splitlines()[-1] == err_headers.splitlines()[-1]
    assert run("decode", capture, "--headers-only")[1] == run("decode", capture, "--fields", "")[1]


def test_error_codes_are_reported_only_when_asked_for() -> None:
    _, rows, _ = run("decode", CAPTURES[0], "--quiet", "--fields", "topics[].name")
    assert not any("errors" in r for r in rows if r.get("api") == "Metadata")
    _, rows, _ = run("decode", CAPTURES[0], "--quiet", "--fields", "topics[].name,topics[].error_code")
    assert all(r["errors"] == [] for r in rows if r.get("api") == "Metadata" and "response" in r)


@pytest.mark.parametrize(
    ("path", "meant"),
    [
        ("errorCode", "error_code"),  # the spec's camel case
        ("ERROR_CODE", "error_code"),
        ("topics[0].name", "topics[].name"),  # an index: every element is a row
        ("Topics.Partitions.LeaderEpok", "topics[].partitions[].leader_epoch"),  # a typo
        ("topics[].nmae", "topics[].name"),
        ("no_such_field_anywhere", None),
        ("brokers[].nothing_like_it", None),
    ],
)
def test_a_path_no_message_has_is_refused_with_the_one_likely_meant(path: str, meant: str | None) -> None:
    code, out, err = run("decode", CAPTURES[1], "--fields", path)
    assert code == 2 and out == [] and "no message of the auto protocol has the field path" in err
    hint = f"(did you mean {meant!r}?)"
    assert (hint in err) if meant is not None else ("did you mean" not in err)
    if meant is not None:  # and what it suggests is taken
        assert run("decode", CAPTURES[1], "--fields", meant)[0] == 0


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--fields", "topics[].nmae"], "no message of the"),
        (["--fields", "topics[].name", "--topic", "x"], "--topic needs whole bodies"),
        (["--fields", "topics[].name", "--records"], "--records needs whole bodies"),
        (["--headers-only", "--errors-only"], "--errors-only needs every error code"),
        (["--headers-only", "--fields", "topics[].name"], "give it or --fields, not both"),
        (["--fields", "topics[].name", "--format", "table"], "a table row has no room"),
    ],
)
def test_what_cannot_work_is_refused_in_one_line(argv: list[str], message: str) -> None:
    code, rows, err = run("decode", CAPTURES[0], *argv)
    assert code == 2 and not rows
    assert message in err and len(err.strip().splitlines()) == 1


def test_a_headers_only_table_says_the_bodies_were_not_read() -> None:
    out = io.StringIO()
    with redirect_stdout(out), redirect_stderr(io.StringIO()):
        main(["decode", CAPTURES[0], "--headers-only", "--format", "table", "--quiet"])
    lines = out.getvalue().splitlines()[1:]
    # the full decode's table has two COORDINATOR_NOT_AVAILABLE answers here: never shown as plain "ok"
    assert len(lines) == 58 and all(line.endswith("ok (body not read)") for line in lines), lines[:3]
