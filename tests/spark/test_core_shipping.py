"""What the job ships to a cluster's executors: this kafka_epochs and construct, importable from one zip."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path
from types import SimpleNamespace

import kafka_epochs
from kafka_epochs.spark.shipping import is_local, package_zip, ship_package


def test_the_zip_holds_both_packages_and_no_sample_captures(tmp_path: Path) -> None:
    archive = package_zip(tmp_path)
    names = set(zipfile.ZipFile(archive).namelist())
    assert "kafka_epochs/__init__.py" in names and "kafka_epochs/apache/_index.py" in names
    assert "construct/__init__.py" in names
    assert not any(n.endswith((".pcap", ".pyc")) or "__pycache__" in n for n in names)
    assert package_zip(tmp_path) == archive  # built once per content


def test_a_python_without_the_package_imports_it_from_the_zip(tmp_path: Path) -> None:
    archive = package_zip(tmp_path)
    code = (
        "import sys; sys.path.insert(0, sys.argv[1]); import kafka_epochs.spark.shipping as s, construct; "
        "from kafka_epochs import Protocol; Protocol.apache().message('MetadataResponse'); "
        "print(s.__file__, construct.__file__)"
    )
    # -I -S: no site-packages at all, so both packages can only come from the zip
    done = subprocess.run(
        [sys.executable, "-I", "-S", "-c", code, str(archive)],
        check=False,
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.count(str(archive)) == 2


def test_local_masters_ship_nothing() -> None:
    for master in ("local", "local[2]", "local[*]"):
        assert is_local(master)
        session = SimpleNamespace(sparkContext=SimpleNamespace(master=master))
        assert ship_package(session) is None
    assert not is_local("spark://127.0.0.1:7077") and not is_local("yarn") and not is_local("local-cluster[2,1,1024]")


def test_each_application_is_given_the_zip_once(tmp_path: Path) -> None:
    added: list[str] = []
    context = SimpleNamespace(master="spark://h:7077", applicationId="app-1", addPyFile=added.append)
    session = SimpleNamespace(sparkContext=context)
    assert ship_package(session) is not None and ship_package(session) is None
    context.applicationId = "app-2"
    assert ship_package(session) is not None
    assert len(added) == 2 and all(Path(p).name.startswith("kafka-epochs-") for p in added)
    assert Path(kafka_epochs.__file__).is_file()
