"""Error names come from the table of Kafka's codes' names, which a run imports only when it
meets a non-zero code, and which is written from the enum of codes (a run never builds the enum:
a tenth of the cost)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from kafka_epochs import Protocol
from kafka_epochs.capture.synth import RecordedConnection, write_capture
from kafka_epochs.epochs import error_names
from kafka_epochs.epochs.errors import Errors, names_source
from kafka_epochs.rendering import _error_name

T0 = 1_700_000_000_000_000_000
SCRIPT = (
    "import sys, io, contextlib\n"
    "from kafka_epochs.cli import main\n"
    "out = io.StringIO()\n"
    "with contextlib.redirect_stdout(out):\n"
    "    main(['decode', sys.argv[1], '--quiet'])\n"
    "print('kafka_epochs.epochs.error_names' in sys.modules, 'kafka_epochs.epochs.errors' in sys.modules)\n"
    "print(out.getvalue(), end='')\n"
)


def _capture(path: Path, error_code: int) -> Path:
    p = Protocol.apache()
    request, response = p.message("MetadataRequest"), p.message("MetadataResponse")
    topic = p.message("MetadataResponse").MetadataResponseTopic(name="t", error_code=error_code)
    chunks = [
        (T0, "client", p.encode_request(request(), 12, correlation_id=1, client_id="c")),
        (T0 + 1000, "broker", p.encode_response(response(topics=[topic]), 12, correlation_id=1)),
    ]
    write_capture(path, [RecordedConnection(("10.0.0.1", 50000), ("10.0.0.2", 9092), chunks)])
    return path


def _run(capture: Path) -> tuple[bool, list[dict[str, object]]]:
    done = subprocess.run([sys.executable, "-c", SCRIPT, str(capture)], capture_output=True, text=True, check=True)
    loaded, *lines = done.stdout.splitlines()
    names, enum = loaded.split()
    assert enum == "False"  # (the enum is never built to name an error)
    return names == "True", [json.loads(line) for line in lines]


def test_a_clean_capture_never_loads_the_table_of_errors(tmp_path: Path) -> None:
    loaded, lines = _run(_capture(tmp_path / "clean.pcap", 0))
    assert not loaded
    assert [line["errors"] for line in lines] == [[]]


def test_an_error_is_named_from_the_table(tmp_path: Path) -> None:
    code = Errors.UNKNOWN_TOPIC_OR_PARTITION.value
    loaded, lines = _run(_capture(tmp_path / "error.pcap", code))
    assert loaded
    assert lines[0]["errors"] == [{"path": "topics[0].error_code", "code": code, "name": "UNKNOWN_TOPIC_OR_PARTITION"}]


def test_the_table_of_names_is_what_the_enum_writes() -> None:
    written = Path(error_names.__file__)
    assert written.read_text() == names_source(), (
        f"{written} is not what the enum writes; write it again with: python -c "
        '"from kafka_epochs.epochs.errors import names_source as s; import sys; sys.stdout.write(s())" '
        f"> {written}"
    )


def test_every_int16_code_is_named_as_the_enum_names_it() -> None:
    for code in range(-(1 << 15), 1 << 15):
        known = code in Errors._value2member_map_ and Errors(code).is_known
        if known or code % 997 == 0 or -5 <= code <= 140:  # (each unknown one costs the enum a member)
            assert _error_name(code) == Errors.for_code(code).name
