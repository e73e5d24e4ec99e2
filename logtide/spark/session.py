"""The Spark session of the ``logtide pipeline`` jobs (and the tests), and the Python its workers run.

docs/spark.md, "Before Spark starts" and "The workers' Python":

* :func:`spark_session` starts a local (or any) Spark with the jobs' settings: no UI, no console progress,
  UTC, workers forked from :mod:`logtide.spark.daemon`, and Spark's own logging at error level through
  ``log4j2.properties``, which must reach the driver JVM's command line (``spark.driver.extraJavaOptions``
  given to spark-submit: a SparkConf set after the JVM started is too late for log4j).  The one line the
  JVM prints itself, ``WARNING: Using incubator modules: jdk.incubator.vector`` (Spark's launcher always adds
  that module), is filtered out of its standard error, which is otherwise passed on untouched.
* :func:`worker_python` is the Python that runs logtide's sources in the workers: PySpark starts workers with
  ``$PYSPARK_PYTHON``, else ``python3`` from PATH, which is not the driver's Python when a virtualenv is used
  without being activated, and fails there with "No module named 'logtide'".
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path
from typing import IO, Any, Mapping

LOG4J = Path(__file__).with_name("log4j2.properties")
JVM_NOISE = (b"WARNING: Using incubator modules:",)  # what the JVM itself prints at every start


class WorkerPythonError(RuntimeError):
    """The Python that Spark's local workers would run cannot import logtide; the message says what to do."""


def log4j_option() -> str:
    """The driver JVM option that applies ``log4j2.properties`` (a file URI: a path with spaces is escaped)."""
    return f"-Dlog4j2.configurationFile={LOG4J.as_uri()}"


def job_conf(master: str, app: str, conf: Mapping[str, str] | None = None) -> dict[str, str]:
    """The settings of a pipeline job's session; ``conf`` adds or overrides settings (an extra
    ``spark.driver.extraJavaOptions`` is kept, after the log4j option)."""
    settings = {
        "spark.master": master, "spark.app.name": app,
        "spark.ui.enabled": "false", "spark.sql.shuffle.partitions": "2",
        "spark.ui.showConsoleProgress": "false",
        "spark.python.authenticate.socketTimeout": "300s",  # workers start slowly on a loaded host
        "spark.python.daemon.module": "logtide.spark.daemon",  # workers fork with logtide imported
        "spark.sql.session.timeZone": "UTC",
        "spark.driver.extraJavaOptions": log4j_option(),
    }
    for key, value in (conf or {}).items():
        if key == "spark.driver.extraJavaOptions":
            value = f"{log4j_option()} {value}"
        settings[key] = value
    return settings


def spark_session(master: str, app: str = "logtide pipeline replicate", conf: Mapping[str, str] | None = None) -> Any:
    """A SparkSession for a pipeline job (and the tests' shared session), see the module docstring; an active
    session of this process is returned as it is, with ``conf`` applied where Spark allows it."""
    from pyspark import SparkConf, SparkContext
    from pyspark.sql import SparkSession

    settings = job_conf(master, app, conf)
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    if SparkContext._gateway is None:  # no JVM yet in this process: start it with its standard error filtered
        spark_conf = SparkConf()
        for key, value in settings.items():
            spark_conf.set(key, value)
        SparkContext._ensure_initialized(gateway=_quiet_gateway(spark_conf))
    builder = SparkSession.builder
    for key, value in settings.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def _quiet_gateway(conf: Any) -> Any:
    """PySpark's JVM gateway, launched as PySpark launches it, its standard error passed on without
    :data:`JVM_NOISE` (by a daemon thread, for the life of the process)."""
    from pyspark.java_gateway import launch_gateway

    gateway = launch_gateway(conf, popen_kwargs={"stderr": subprocess.PIPE})
    threading.Thread(target=_pass_on, args=(gateway.proc.stderr,), name="spark-jvm-stderr", daemon=True).start()
    return gateway


def _pass_on(pipe: IO[bytes]) -> None:
    """Copy the JVM's standard error to this process's, line by line, leaving out :data:`JVM_NOISE`."""
    for line in iter(pipe.readline, b""):
        if line.startswith(JVM_NOISE):
            continue
        try:
            os.write(2, line)
        except OSError:
            pass


def worker_python(sc: Any) -> str:
    """The Python for logtide's sources in the workers of ``sc`` (docs/spark.md "The workers' Python"): the one
    the user chose (``$PYSPARK_PYTHON``, else ``spark.pyspark.python``), else, on a local master, this
    process's own interpreter (which imports logtide, since it runs this), else PySpark's default.  A chosen
    Python that cannot import logtide on a local master raises :class:`WorkerPythonError`."""
    chosen = os.environ.get("PYSPARK_PYTHON") or sc.getConf().get("spark.pyspark.python")
    local = str(sc.master).startswith("local")
    if not chosen:
        return sys.executable if local else sc.pythonExec
    if local and os.path.abspath(chosen) != os.path.abspath(sys.executable):
        where = "PYSPARK_PYTHON" if os.environ.get("PYSPARK_PYTHON") else "spark.pyspark.python"
        try:
            done = subprocess.run([chosen, "-c", "import logtide"], capture_output=True, text=True, timeout=120)
            why = None if done.returncode == 0 else (done.stderr.strip().splitlines() or ["exit status"])[-1]
        except OSError as e:
            why = e.strerror or str(e)
        except subprocess.TimeoutExpired:
            why = None  # slow, not broken: let Spark try
        if why is not None:
            raise WorkerPythonError(
                f"Spark's Python workers run {chosen} ({where}), which cannot import logtide ({why}): set "
                f"{where} to {sys.executable} (this Python, which has logtide) before the session starts, or "
                f"install logtide[spark] for {chosen}")
    return chosen
