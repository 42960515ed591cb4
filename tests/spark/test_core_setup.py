"""Set-up: the session helper's settings, and kafka_epochs without pyspark installed."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from typing import Any

import pytest

#: Run first in a child interpreter: makes ``import pyspark`` fail as if it were not installed.
HIDE_PYSPARK = textwrap.dedent("""
    import sys

    class HidePyspark:
        def find_spec(self, name, path=None, target=None):
            if name == "pyspark" or name.startswith("pyspark."):
                raise ModuleNotFoundError(f"No module named {name!r} (hidden by the test)", name=name)
            return None

    sys.meta_path.insert(0, HidePyspark())
""")


def run_without_pyspark(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", HIDE_PYSPARK + textwrap.dedent(code)],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )


def test_kafka_epochs_imports_without_pyspark() -> None:
    result = run_without_pyspark("""
        import kafka_epochs, kafka_epochs.traffic, kafka_epochs.framing, kafka_epochs.cli
        try:
            import pyspark
        except ModuleNotFoundError:
            print("hidden")
        assert not any(m == "pyspark" or m.startswith("pyspark.") for m in sys.modules)
    """)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "hidden"


def test_decode_batch_needs_no_spark() -> None:
    pytest.importorskip("pyarrow")
    result = run_without_pyspark("""
        import pyarrow as pa
        from kafka_epochs import Protocol
        from kafka_epochs.spark import decode_batch, decode_typed_batch, arrow_type_for
        p = Protocol.bundled()
        frame = p.encode_request(p.message("ApiVersionsRequest")(client_software_name="x"), 3, 1, "c")
        print(decode_batch(pa.array([frame])).column("api_name")[0])
        print(decode_typed_batch(pa.array([frame]), "ApiVersionsRequest").column("body")[0]["client_software_name"])
        try:
            from kafka_epochs.spark import decode_frames
        except ModuleNotFoundError as e:
            print("adapters need pyspark:", e.name)
    """)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split("\n")[:3] == ["ApiVersions", "x", "adapters need pyspark: pyspark"]


def test_local_session_refuses_anything_but_local_mode() -> None:
    pytest.importorskip("pyspark")
    from kafka_epochs.spark.session import local_session

    with pytest.raises(ValueError, match="local mode only"):
        local_session("spark://10.0.0.1:7077")


def test_the_session_is_loopback_only_with_workers_on_this_interpreter(spark: Any) -> None:
    conf = spark.sparkContext.getConf()
    assert conf.get("spark.driver.host") == "127.0.0.1"
    assert conf.get("spark.driver.bindAddress") == "127.0.0.1"
    assert conf.get("spark.ui.enabled") == "false"
    assert spark.conf.get("spark.sql.execution.arrow.pyspark.enabled") == "true"
    assert spark.conf.get("spark.sql.shuffle.partitions") == "2"  # the fixture's override wins
    assert os.environ["SPARK_LOCAL_IP"] == "127.0.0.1"
    assert os.environ["PYSPARK_PYTHON"] == sys.executable
    # and the workers really do run this interpreter (so they import this kafka_epochs)
    executables = spark.sparkContext.parallelize(range(4), 2).map(lambda _: __import__("sys").executable).collect()
    assert set(executables) == {sys.executable}


def test_a_running_session_keeps_its_settings_but_takes_the_callers(spark: Any) -> None:
    """local_session on a session already running (a notebook's) applies what the caller asks
    for, not the helper's own defaults (they would change the session's shuffle partitions)."""
    from kafka_epochs.spark.session import local_session

    assert local_session() is spark
    assert spark.conf.get("spark.sql.shuffle.partitions") == "2"  # the default (4) is not applied
    try:
        assert local_session(**{"spark.sql.shuffle.partitions": "3"}) is spark
        assert spark.conf.get("spark.sql.shuffle.partitions") == "3"
    finally:
        spark.conf.set("spark.sql.shuffle.partitions", "2")


def test_versions_the_spark_extra_asks_for(spark: Any) -> None:
    import pandas
    import pyspark

    assert int(pyspark.__version__.split(".")[0]) >= 4
    if pyspark.__version__ >= "4.3":
        assert int(pandas.__version__.split(".")[0]) < 3  # PySpark 4.3 warns on pandas 3


def test_the_package_exports_resolve_lazily() -> None:
    pytest.importorskip("pyspark")
    import kafka_epochs.spark as package

    for name in package.__all__:
        assert callable(getattr(package, name)) or name == "DECODED_SCHEMA"
    with pytest.raises(AttributeError):
        package.no_such_thing  # noqa: B018
