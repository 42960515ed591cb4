"""A local SparkSession set up so that the decoders run: same interpreter, loopback only, no UI.

Spark's Python workers are separate processes; unless told otherwise they start whatever
``python3`` is on the PATH, which may lack kafka_epochs (or pyarrow) entirely. The driver also
binds to the host's first interface by default, which is neither needed nor wanted here.
"""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

LOOPBACK = "127.0.0.1"

#: Defaults for a local session; the caller's ``**conf`` wins over each of them.
_DEFAULTS: dict[str, str] = {
    "spark.driver.host": LOOPBACK,
    "spark.driver.bindAddress": LOOPBACK,
    # the UI is a web server on a port: off unless asked, so tests never listen on it
    "spark.ui.enabled": "false",
    # toPandas/createDataFrame from pandas go through Arrow, like our UDFs
    "spark.sql.execution.arrow.pyspark.enabled": "true",
    # the default (200) shuffle partitions is sized for clusters; a laptop pays for each one
    "spark.sql.shuffle.partitions": "4",
    # progress bars interleave with notebook and test output
    "spark.ui.showConsoleProgress": "false",
    # timestamps render the same wherever the tests run
    "spark.sql.session.timeZone": "UTC",
    # Parquet's standard microsecond timestamps, which pyarrow and Spark read alike (Spark's
    # default, INT96, reads as nanoseconds in pyarrow)
    "spark.sql.parquet.outputTimestampType": "TIMESTAMP_MICROS",
}


def local_session(master: str = "local[2]", app_name: str = "kafka-epochs", **conf: Any) -> SparkSession:
    """Get (or create) a local SparkSession whose workers run this interpreter, bound to loopback.

    ``conf`` adds or overrides Spark settings; dotted keys go in as ``**{"spark.x.y": value}``.
    An already running session is returned as is (Spark keeps one per driver), with ``conf``
    applied to what can still change at run time; this helper's own defaults are not (a
    notebook's session keeps its time zone and shuffle partitions).
    """
    if not (master == "local" or master.startswith("local[")):
        # this helper pins everything to loopback, which only makes sense for local mode
        raise ValueError(f"local_session runs Spark in local mode only, not master={master!r}")
    configure_environment()
    from pyspark import SparkContext
    from pyspark.sql import SparkSession

    running = SparkContext._active_spark_context is not None
    builder = SparkSession.builder.master(master).appName(app_name)
    for key, value in (conf if running else {**_DEFAULTS, **conf}).items():
        builder = builder.config(key, _conf_value(value))
    return builder.getOrCreate()


def configure_environment() -> None:
    """Environment that Spark reads when it launches the JVM and its Python workers.

    Set before the JVM starts: once a session is running, changing these does nothing.
    """
    # the workers must import the same kafka_epochs, pyarrow and pandas as the driver
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    # keeps Spark's own address lookup (and its "resolves to a loopback address" warning) away
    # from the host's other interfaces
    os.environ["SPARK_LOCAL_IP"] = LOOPBACK


def _conf_value(value: Any) -> str:
    # Spark settings are strings; Python's True would become "True", which Spark rejects
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)
