"""A Spark standalone cluster on this machine, from the installed PySpark's own launchers.

For trying a job on a real cluster without one: a master and ``workers`` workers on 127.0.0.1,
started with PySpark's ``bin/spark-class`` (nothing is downloaded), each worker with its own
working directory, all stopped on exit::

    with StandaloneCluster(workers=2) as cluster:
        spark = SparkSession.builder.master(cluster.url).config(...).getOrCreate()

``worker_python`` is the interpreter the workers' environment names (``PYSPARK_PYTHON``); a
driver chooses its executors' Python itself (``spark.pyspark.python``), which is how the tests
run executors on a Python that does not have kafka_epochs, as on a cluster that never saw it.
"""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path
from types import TracebackType

LOOPBACK = "127.0.0.1"


class ClusterError(RuntimeError):
    """The cluster did not start; the message ends with the log that says why."""


def spark_home() -> Path:
    """The installed PySpark's directory, which holds ``bin/spark-class`` and the jars."""
    import pyspark

    return Path(pyspark.__file__).resolve().parent


def free_port() -> int:
    with socket.socket() as s:
        s.bind((LOOPBACK, 0))
        port: int = s.getsockname()[1]
        return port


class StandaloneCluster:
    """A master and workers on loopback, started by :meth:`start` (or ``with``), stopped by :meth:`stop`."""

    def __init__(
        self,
        workers: int = 2,
        *,
        cores: int = 1,
        memory: str = "1g",
        root: str | os.PathLike[str] | None = None,
        worker_python: str | None = None,
        timeout: float = 120.0,
    ) -> None:
        self.workers = workers
        self.cores = cores
        self.memory = memory
        self.root = Path(root) if root is not None else Path(tempfile.mkdtemp(prefix="kafka-epochs-cluster-"))
        self.worker_python = worker_python
        self.timeout = timeout
        self.port = 0
        self._processes: list[subprocess.Popen[bytes]] = []
        self._logs: list[Path] = []

    @property
    def url(self) -> str:
        return f"spark://{LOOPBACK}:{self.port}"

    def worker_dir(self, number: int) -> Path:
        return self.root / f"worker-{number}"

    def start(self) -> str:
        """Start the master, then the workers; returns the master URL once every worker has registered."""
        home = spark_home()
        launcher = home / "bin" / "spark-class"
        if not launcher.is_file():
            raise ClusterError(f"{launcher} is missing: this PySpark has no launchers")
        env = dict(os.environ)
        env.update(SPARK_HOME=str(home), SPARK_LOCAL_IP=LOOPBACK, SPARK_NO_DAEMONIZE="1")
        if self.worker_python is not None:
            env["PYSPARK_PYTHON"] = self.worker_python
        self.port = free_port()
        master = self._launch(
            "master",
            [str(launcher), "org.apache.spark.deploy.master.Master", *self._address(self.port)],
            env,
        )
        self._wait(master, re.compile(r"I have been elected leader|Starting Spark master"), "the master")
        for number in range(self.workers):
            folder = self.worker_dir(number)
            folder.mkdir(parents=True, exist_ok=True)
            log = self._launch(
                f"worker-{number}",
                [
                    str(launcher),
                    "org.apache.spark.deploy.worker.Worker",
                    self.url,
                    *self._address(None),
                    *("--cores", str(self.cores), "--memory", self.memory, "--work-dir", str(folder)),
                ],
                env,
                cwd=folder,
            )
            self._wait(log, re.compile(r"Successfully registered with master"), f"worker {number}")
        return self.url

    def stop(self) -> None:
        """Stop every process (workers first) and wait for them."""
        for process in reversed(self._processes):
            if process.poll() is None:
                process.terminate()
        for process in reversed(self._processes):
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        self._processes.clear()

    def remove(self) -> None:
        """Stop, and delete the cluster's directory (logs and the workers' directories)."""
        self.stop()
        shutil.rmtree(self.root, ignore_errors=True)

    def __enter__(self) -> StandaloneCluster:
        try:
            self.start()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        self.stop()

    @staticmethod
    def _address(port: int | None) -> list[str]:
        """Loopback only, the port given (or any), and the web UI on a free port."""
        listen = ["--host", LOOPBACK, "--webui-port", str(free_port())]
        return listen if port is None else [*listen, "--port", str(port)]

    def _launch(self, name: str, command: list[str], env: dict[str, str], cwd: Path | None = None) -> Path:
        log = self.root / f"{name}.log"
        log.parent.mkdir(parents=True, exist_ok=True)
        with open(log, "wb") as out:
            process = subprocess.Popen(
                command, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env, cwd=cwd or self.root
            )
        self._processes.append(process)
        self._logs.append(log)
        return log

    def _wait(self, log: Path, ready: re.Pattern[str], what: str) -> None:
        process = self._processes[-1]
        deadline = time.monotonic() + self.timeout
        while time.monotonic() < deadline:
            text = log.read_text(errors="replace")
            if ready.search(text):
                return
            if process.poll() is not None:
                raise ClusterError(f"{what} exited with {process.returncode}:\n{text[-3000:]}")
            time.sleep(0.2)
        raise ClusterError(f"{what} did not start in {self.timeout:.0f} s:\n{log.read_text(errors='replace')[-3000:]}")
