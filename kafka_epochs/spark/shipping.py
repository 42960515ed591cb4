"""The job brings kafka_epochs to the executors itself: a cluster's nodes may never have seen it.

Spark pickles the decoders' functions by reference to their modules, so each executor's Python
must import the same ``kafka_epochs`` as the driver. In local mode it is the driver's own
interpreter; on any other master :func:`ship_package` zips this ``kafka_epochs`` with the pure-Python
packages it imports (``construct``) and hands the zip to ``SparkContext.addPyFile``, which puts
it first on every executor's ``sys.path`` (so the executors run the driver's version even where
another is installed). Built once per content and reused.

What a zip cannot carry is compiled code: PySpark's own needs (``pyarrow``, ``pandas``,
``numpy``) and the record codecs' (``crc32c``, ``cramjam``, ``xxhash``) must be installed on the
nodes or come with a packed environment (``spark.archives``); docs/spark.md says how.
"""

from __future__ import annotations

import hashlib
import importlib
import os
import tempfile
import threading
import zipfile
from pathlib import Path
from typing import Any

#: The packages the zip carries: this one, and the pure-Python ones it imports.
SHIPPED = ("kafka_epochs", "construct")
#: Bulky files executors never read (the sample captures).
_LEFT_OUT_SUFFIXES = (".pcap", ".pcapng", ".gz", ".pyc")

_lock = threading.Lock()
_shipped: set[str] = set()  # application ids already given the zip


def is_local(master: str) -> bool:
    """Whether executors run in the driver's own process tree (``local``, ``local[N]``, ``local[*]``)."""
    return master == "local" or master.startswith("local[")


def ship_package(spark: Any) -> Path | None:
    """Give ``spark``'s executors this kafka_epochs (once per application); None in local mode."""
    context = spark.sparkContext
    if is_local(context.master):
        return None
    with _lock:
        if context.applicationId in _shipped:
            return None
        archive = package_zip()
        context.addPyFile(str(archive))
        _shipped.add(context.applicationId)
        return archive


def ship_beside_the_driver() -> Path:
    """Put the zip on ``PYTHONPATH`` for the Python processes Spark starts beside the driver.

    Call before the session's JVM starts (it inherits this process's environment). The capture
    stream's planner (``readStream.format("kafka-capture")``) runs there, in the executors'
    Python (``spark.pyspark.python``), and unlike the batch source's planner it is not given the
    files ``addPyFile`` shipped (PySpark 4.x): with this it imports the driver's kafka_epochs
    where that Python has none. Only processes launched from the JVM see it; this interpreter's
    own ``sys.path`` was fixed when it started.
    """
    archive = package_zip()
    paths = [str(archive), *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))]
    os.environ["PYTHONPATH"] = os.pathsep.join(dict.fromkeys(paths))
    return archive


def package_zip(folder: str | os.PathLike[str] | None = None) -> Path:
    """A zip of :data:`SHIPPED` as they are installed here, named by a digest of their files."""
    files = [(package, path) for package in SHIPPED for path in _package_files(package)]
    digest = hashlib.sha256()
    for package, path in files:
        stat = path.stat()
        digest.update(f"{package}:{path}:{stat.st_size}:{stat.st_mtime_ns}\n".encode())
    target = Path(folder or tempfile.gettempdir()) / f"kafka-epochs-{digest.hexdigest()[:16]}.zip"
    if target.is_file():
        return target
    partial = target.with_suffix(f".{os.getpid()}.part")
    with zipfile.ZipFile(partial, "w", zipfile.ZIP_DEFLATED) as archive:
        for package, path in files:
            root = _package_root(package)
            archive.write(path, str(Path(package) / path.relative_to(root)))
    partial.replace(target)  # whole or not at all, even with two drivers building at once
    return target


def _package_root(package: str) -> Path:
    module = importlib.import_module(package)
    return Path(module.__file__ or "").resolve().parent


def _package_files(package: str) -> list[Path]:
    root = _package_root(package)
    found = []
    for path in sorted(root.rglob("*")):
        if path.is_file() and "__pycache__" not in path.parts and not path.name.endswith(_LEFT_OUT_SUFFIXES):
            found.append(path)
    return found
