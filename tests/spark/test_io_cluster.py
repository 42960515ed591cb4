"""A real Spark standalone cluster (a master and two workers on 127.0.0.1, from PySpark's own
launchers) whose executors run a Python that does not have kafka_epochs, as on a cluster that
never saw it: the job must ship the package itself, and give the rows local mode gives.

The drivers run in subprocesses (one SparkContext per process, and the suite's own local session
is already running here). One cluster serves the module; it is stopped at the end.
"""

from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import sys
import sysconfig
import threading
import time
import venv
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pyspark")
pytest.importorskip("pyarrow")

import pyarrow.parquet as pq
from epoch_story import write_damaged, write_sample

from kafka_epochs.spark.standalone import StandaloneCluster

from .test_io_cli import run

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = ROOT / "kafka_epochs" / "samples"
KAFKA_EPOCHS = str(Path(sys.executable).parent / "kafka-epochs")


def bare_python(folder: Path) -> str:
    """A Python with this environment's packages (pyarrow, construct, ...) but not kafka_epochs.

    A venv whose site-packages names this one's with a plain path line: the path is searched,
    but the ``.pth`` files in it (where an editable install of kafka_epochs lives) are not run.
    """
    venv.create(folder, with_pip=False)
    python = folder / "bin" / "python"
    site = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    Path(site, "driver-packages.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    return str(python)


@pytest.fixture(scope="module")
def bare(tmp_path_factory: pytest.TempPathFactory) -> str:
    folder = tmp_path_factory.mktemp("bare-python")
    python = bare_python(folder)
    probe = subprocess.run(  # run elsewhere than the checkout, whose folder would be on sys.path
        [python, "-c", "import pyarrow, construct; import kafka_epochs"], check=False, capture_output=True, cwd=folder
    )
    if probe.returncode == 0:  # a non-editable install sits in site-packages itself
        pytest.fail("kafka_epochs is importable without shipping: this test needs an editable install (pip install -e)")
    assert b"No module named 'kafka_epochs'" in probe.stderr
    return python


@pytest.fixture(scope="module")
def cluster(bare: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[StandaloneCluster]:
    with StandaloneCluster(workers=2, cores=1, memory="1g", root=tmp_path_factory.mktemp("cluster")) as running:
        yield running


@pytest.fixture(scope="module")
def captures(tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    """Several files: the epoch story, a damaged capture, and real clients' traffic."""
    root = tmp_path_factory.mktemp("cluster-captures")
    paths = [write_sample(root / "story.pcap"), write_damaged(root / "damaged.pcap")]
    return [str(p) for p in paths] + [str(SAMPLES / "sample.pcap"), str(SAMPLES / "clients.pcap")]


def cluster_conf(python: str) -> list[str]:
    conf = {
        "spark.pyspark.python": python,
        "spark.driver.host": "127.0.0.1",
        "spark.driver.bindAddress": "127.0.0.1",
        "spark.executor.memory": "512m",
        "spark.sql.shuffle.partitions": "2",
    }
    return [arg for key, value in conf.items() for arg in ("--conf", f"{key}={value}")]


def rows_of(path: Path) -> list[dict[str, Any]]:
    rows = pq.read_table(path).to_pylist()
    return sorted(rows, key=lambda r: json.dumps(r, sort_keys=True, default=str))


def test_spark_decode_on_the_cluster_gives_local_mode_s_rows(
    spark: Any, cluster: StandaloneCluster, bare: str, captures: list[str], tmp_path: Path
) -> None:
    on_cluster = tmp_path / "cluster"
    done = subprocess.run(
        [
            KAFKA_EPOCHS,
            "spark-decode",
            *captures,
            "--out",
            str(on_cluster),
            "--master",
            cluster.url,
            *cluster_conf(bare),
        ],
        check=False,
        capture_output=True,
        text=True,
        timeout=600,
        cwd=tmp_path,  # the driver's working directory is not the checkout
    )
    assert done.returncode == 0, done.stderr[-4000:]
    assert "frames decoded in" in done.stderr
    local = tmp_path / "local"
    assert run("spark-decode", *captures, "--out", str(local), "--master", "local[2]", "--quiet")[0] == 0
    cluster_rows, local_rows = rows_of(on_cluster), rows_of(local)
    assert len(cluster_rows) > 150 and cluster_rows == local_rows
    # the work went to the workers: each one's directory holds an application's executor
    assert all(any(cluster.worker_dir(n).iterdir()) for n in range(cluster.workers))


def run_driver(script: str, args: list[str], python: str, folder: Path) -> Any:
    """Run ``script`` as a driver process (executors on ``python``) and return what it printed
    after ``RESULT``, as JSON."""
    done = subprocess.run(
        [sys.executable, "-c", script, *args],
        check=False,
        capture_output=True,
        text=True,
        timeout=600,
        cwd=folder,  # the driver's working directory is not the checkout
        env=dict(os.environ, PYSPARK_PYTHON=python),
    )
    lines = [line for line in done.stdout.splitlines() if line.startswith("RESULT ")]
    assert done.returncode == 0 and lines, done.stderr[-4000:]
    return json.loads(lines[0].removeprefix("RESULT "))


#: A driver's session on the cluster at ``url`` (the scripts below start with it).
CLUSTER_SESSION = """
from pyspark.sql import SparkSession
spark = (SparkSession.builder.master(url).config("spark.driver.host", "127.0.0.1")
         .config("spark.driver.bindAddress", "127.0.0.1").config("spark.executor.memory", "512m")
         .config("spark.sql.shuffle.partitions", "2").getOrCreate())
"""

#: The Python API on the cluster, in one driver process for both tests below (each driver and its
#: executors start JVMs: ~20 s): decodes and audits the captures, and reads one capture in byte
#: ranges (the split job's closures, counts and shuffle run on the executors); prints one JSON line.
DRIVER_SCRIPT = (
    """
import json, sys
from kafka_epochs.spark import audit, decode_frames, register
from kafka_epochs.spark.split import read_split

url, captures, busy = sys.argv[1], json.loads(sys.argv[2]), sys.argv[3]
"""
    + CLUSTER_SESSION
    + """register(spark)  # ships the package: the executors' Python has none
frames = spark.read.format("kafka-capture").load(captures)
decoded = decode_frames(frames, keep=["capture", "seq"]).select("capture", "seq", "api_name", "body_json", "error")
result = audit(frames)
where = spark.sparkContext.parallelize(range(4), 2).map(lambda _: __import__("kafka_epochs").__file__).collect()
ranges = read_split(spark, busy, range_bytes=40_000).collect()
out = {
    "decoded": sorted(map(list, decoded.collect())),
    "stale": sorted(list(r) for r in result.stale_requests.select("capture", "seq", "partition", "error").collect()),
    "stops": result.stop_replica_fenced.count(),
    "executors_import_from": sorted(set(where)),
    "ranges": sorted([r.seq, r.packet, r.client, r.direction, r.frame.hex() if r.frame else None, r.capture_error]
                     for r in ranges),
}
print("RESULT " + json.dumps(out))
spark.stop()
"""
)


@pytest.fixture(scope="module")
def busy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A capture of several 40,000-byte ranges."""
    from split_captures import busy_capture

    path = tmp_path_factory.mktemp("busy") / "busy.pcap"
    path.write_bytes(busy_capture(connections=5, requests=30))
    assert path.stat().st_size > 5 * 40_000
    return path


@pytest.fixture(scope="module")
def driven(
    cluster: StandaloneCluster, bare: str, captures: list[str], busy: Path, tmp_path_factory: pytest.TempPathFactory
) -> Any:
    """What :data:`DRIVER_SCRIPT` printed, run once on the cluster."""
    folder = tmp_path_factory.mktemp("driver")
    return run_driver(DRIVER_SCRIPT, [cluster.url, json.dumps(captures), str(busy)], bare, folder)


def test_the_python_api_on_the_cluster_ships_the_package_and_agrees_with_local_mode(
    spark: Any, driven: Any, captures: list[str]
) -> None:
    got = driven
    # the executors imported kafka_epochs from the zip the driver shipped, not from an install
    assert got["executors_import_from"] and all(".zip" in path for path in got["executors_import_from"])

    from kafka_epochs.spark import audit, decode_frames, register

    register(spark)
    frames = spark.read.format("kafka-capture").load(captures)
    local = decode_frames(frames, keep=["capture", "seq"]).select("capture", "seq", "api_name", "body_json", "error")
    assert got["decoded"] == sorted(map(list, local.collect()))
    result = audit(frames)
    stale = sorted(list(r) for r in result.stale_requests.select("capture", "seq", "partition", "error").collect())
    assert got["stale"] == stale and len(stale) >= 4
    assert got["stops"] == result.stop_replica_fenced.count() >= 2


def test_a_capture_read_in_ranges_on_the_cluster_gives_the_whole_read_s_rows(driven: Any, busy: Path) -> None:
    from kafka_epochs.frame_rows import capture_frames

    whole = [
        [r.seq, r.packet, r.client, r.direction, r.frame.hex() if r.frame else None, r.capture_error]
        for r in capture_frames(str(busy))
    ]
    assert driven["ranges"] == sorted(whole) and len(whole) == 300


def follow_until_printed(command: list[str], expected: list[str], folder: Path, timeout: float = 300) -> list[str]:
    """Run a follow until it has printed every line of ``expected`` (or ``timeout`` seconds have
    gone by), then stop it as Ctrl-C does; its exit status must be 0. Every line it printed."""
    log = folder / "follow.stderr"
    with log.open("w") as stderr:
        follow = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=stderr, text=True, cwd=folder)
        printed: queue.Queue[str | None] = queue.Queue()

        def read() -> None:
            for line in follow.stdout:  # type: ignore[union-attr]
                printed.put(line.rstrip("\n"))
            printed.put(None)

        threading.Thread(target=read, daemon=True).start()
        lines: list[str] = []
        waiting, deadline = set(expected), time.monotonic() + timeout
        ended = False
        while waiting and not ended and time.monotonic() < deadline:
            try:
                line = printed.get(timeout=1)
            except queue.Empty:
                continue
            if line is None:
                ended = True
            else:
                lines.append(line)
                waiting.discard(line)
        follow.send_signal(signal.SIGINT)
        try:
            code = follow.wait(timeout=120)
        finally:
            follow.kill()
        while not ended:  # what it printed while stopping
            line = printed.get(timeout=30)
            if line is None:
                break
            lines.append(line)
    assert code == 0, log.read_text()[-4000:] + "\n".join(lines)
    return lines


def test_the_follow_on_the_cluster_prints_what_local_mode_prints(
    cluster: StandaloneCluster, bare: str, tmp_path: Path
) -> None:
    """``audit --follow`` on the cluster: the capture stream's planner runs beside the driver in
    the executors' Python (which has no kafka_epochs), the warm-up and the batches on executors.
    It is stopped (as Ctrl-C stops it) once it has printed what local mode prints."""
    incoming = tmp_path / "in"
    incoming.mkdir()
    write_sample(incoming / "story.pcap")
    pace = ["--trigger-seconds", "1", "--settle-seconds", "0"]
    code, local, _ = run("audit", str(incoming), "--follow", "--state", str(tmp_path / "local"), "--once", *pace)
    assert code == 0 and "FENCED_LEADER_EPOCH (KIP-359)" in local
    follow = [KAFKA_EPOCHS, "audit", str(incoming), "--follow", "--state", str(tmp_path / "state"), *pace]
    printed = follow_until_printed(
        [*follow, "--master", cluster.url, *cluster_conf(bare)], local.splitlines(), tmp_path
    )
    assert "warm-up failed" not in "\n".join(printed)
    assert sorted(printed) == sorted(local.splitlines())
