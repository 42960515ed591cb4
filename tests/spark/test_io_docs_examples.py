"""The README's and docs/spark.md's Spark examples, run verbatim on real-client captures.

The README's example once decoded every frame of a capture as a request (responses included):
the capture source's pairing columns are now found by ``decode_frames`` and ``decode_api``
themselves, and these tests hold the examples, as printed, to that.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = [ROOT / "kafka_epochs" / "samples" / "sample.pcap", ROOT / "kafka_epochs" / "samples" / "clients.pcap"]


def python_blocks(path: Path) -> list[str]:
    return re.findall(r"```python\n(.*?)```", path.read_text(), re.S)


@pytest.fixture
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A directory like the examples assume: ``captures/`` of real-client captures."""
    (tmp_path / "captures").mkdir()
    for sample in SAMPLES:
        shutil.copy(sample, tmp_path / "captures" / sample.name)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def run_block(block: str, namespace: dict[str, Any]) -> dict[str, Any]:
    exec(compile(block, "example", "exec"), namespace)
    return namespace


#: Runs in a fresh Python, in the examples' directory: Spark resolves ``load("captures/")``
#: against the directory its JVM started in, so a session started elsewhere would not do.
SCRIPT = """
import json, re, sys
from pathlib import Path

def blocks(path):
    return re.findall(r"```python\\n(.*?)```", Path(path).read_text(), re.S)

readme = {}
exec([b for b in blocks(sys.argv[1]) if "kafka_epochs.spark" in b][0], readme)
frames, decoded = readme["frames"], readme["decoded"]
from kafka_epochs import Protocol
protocol = Protocol.apache()
expected, got = {}, {}
for f in frames.select("direction", "request_api_key", "sasl_mechanism").collect():
    if f["sasl_mechanism"] is None:
        name = protocol.message_for(f["request_api_key"], "request").__name__.removesuffix("Request")
        expected[f"{f['direction']} {name}"] = expected.get(f"{f['direction']} {name}", 0) + 1
rows = decoded.collect()
for r in rows:
    if r["api_name"] != "SaslTokens":
        got[f"{r['direction']} {r['api_name']}"] = got.get(f"{r['direction']} {r['api_name']}", 0) + 1
stop = readme["stop"].collect()
out = {"frames": frames.count(), "rows": len(rows), "errors": [r["error"] for r in rows if r["error"]],
       "expected": expected, "got": got, "stop": len(stop),
       "stop_clean": all(r["error"] is None and r["body"]["topic_states"] for r in stop),
       "timeline": readme["result"].timeline.count(),
       "report": 'id="summary"' in Path("audit.html").read_text()}

spark = readme["spark"]
source = spark.read.format("kafka-capture").load("captures/")
source.select("frame", "direction", source.request_api_key.alias("key"),
              source.request_api_version.alias("version")).write.parquet("frames.parquet")
doc = {}
for block in blocks(sys.argv[2]):
    exec(block, doc)
answers = doc["produce_answers"].collect()
out.update(doc_blocks=len(blocks(sys.argv[2])), answers=doc["answers"].count(),
           answer_errors=doc["answers"].where("error IS NOT NULL").count(),
           produce_answers=len(answers), produce_errors=sum(r["error"] is not None for r in answers),
           capture_responses=doc["decoded"].where("direction = 'response' AND error IS NULL").count(),
           parquet_responses=doc["decoded"].where("direction = 'response' AND error IS NULL").count())
print("RESULT " + json.dumps(out))
"""


@pytest.fixture(scope="module")
def examples(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Both documents' examples, run once in a fresh process in a directory laid out for them."""
    import json
    import subprocess
    import sys

    pytest.importorskip("pyspark")
    work = tmp_path_factory.mktemp("examples")
    (work / "captures").mkdir()
    for sample in SAMPLES:
        shutil.copy(sample, work / "captures" / sample.name)
    shutil.copy(SAMPLES[0], work / "broker-1.pcapng")  # the reader knows a capture by its bytes
    shutil.copy(SAMPLES[0], work / "broker-1.pcap")
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(ROOT / "README.md"), str(ROOT / "docs" / "spark.md")],
        cwd=work,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    result = [line for line in done.stdout.splitlines() if line.startswith("RESULT ")]
    assert done.returncode == 0 and result, done.stderr[-3000:]
    return dict(json.loads(result[0].removeprefix("RESULT ")))


def test_the_readme_example_decodes_requests_and_responses_as_they_are(examples: dict[str, Any]) -> None:
    assert examples["rows"] == examples["frames"] > 100
    assert examples["errors"] == []
    # every decoded row has the direction the capture gave its frame, and its request's api
    assert examples["got"] == examples["expected"]
    assert any(key.startswith("response ") for key in examples["got"])
    assert examples["stop"] > 0 and examples["stop_clean"] and examples["timeline"] > 0
    assert examples["report"]  # the README's result.report("audit.html") wrote the page


def test_the_spark_doc_examples_run_as_written(examples: dict[str, Any]) -> None:
    assert examples["doc_blocks"] >= 4
    assert examples["answers"] > 0 and examples["answer_errors"] == 0
    assert examples["produce_answers"] > 0 and examples["produce_errors"] == 0
    assert examples["capture_responses"] > 0


def test_a_table_without_directions_never_passes_a_response_off_as_a_clean_request(spark: Any, workdir: Path) -> None:
    from kafka_epochs.spark import decode_frames, register
    from kafka_epochs.spark.bodies import ASSUMED_REQUEST

    register(spark)
    captured = spark.read.format("kafka-capture").load(str(workdir / "captures")).where("frame IS NOT NULL")
    bare = decode_frames(captured.select("capture", "seq", "frame"))  # no pairing columns at all
    truth = {(r["capture"], r["seq"]): r["direction"] for r in captured.select("capture", "seq", "direction").collect()}
    rows = bare.collect()
    assert rows and all(ASSUMED_REQUEST in r["warnings"] for r in rows)
    responses = [r for r in rows if truth[(r["capture"], r["seq"])] == "response"]
    assert responses
    # a response either fails as "not a request", or (rarely: short bodies can read exactly as a
    # request) comes with the warning above; none is a clean, unqualified request
    clean = [r for r in responses if r["error"] is None]
    assert len(clean) <= len(responses) // 10, [(r["api_name"], r["api_version"]) for r in clean]
    assert any("does not read as a request" in (r["error"] or "") for r in responses)
