"""The workers' Python (docs/spark.md "The workers' Python"): with a virtualenv's Python and the virtualenv not
activated, PySpark would start its workers with ``python3`` from PATH, which has no logtide; ``register(spark)``
gives logtide's sources this Python on a local master, and refuses a chosen Python that cannot import logtide
with what to set."""

from __future__ import annotations

import os
import stat
import subprocess
import sys

import logtide

from .conftest import KEYSPACE_DDL

# a plain PySpark session, as a user makes one (not the pipeline jobs' session, which sets PYSPARK_PYTHON)
SCRIPT = """
import os, sys
from pyspark.sql import SparkSession
import logtide.spark
from logtide.spark.session import WorkerPythonError

spark = (SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false")
         .config("spark.ui.showConsoleProgress", "false").getOrCreate())
spark.sparkContext.setLogLevel("ERROR")
logtide.spark.register(spark)
print("rows", spark.read.format("logtide").option("path", sys.argv[1]).option("table", "ks.t").load().count())
os.environ["PYSPARK_PYTHON"] = sys.argv[2]
try:
    logtide.spark.register(spark)
    print("registered")
except WorkerPythonError as e:
    print("refused:", e)
spark.stop()
"""


def test_the_sources_run_the_drivers_python_when_the_virtualenv_is_not_activated(tmp_path):
    data = tmp_path / "data"
    with logtide.open(data, synchronous="OFF") as d:
        s = d.session()
        s.execute(KEYSPACE_DDL.format("ks"))
        s.execute("CREATE TABLE ks.t (k int PRIMARY KEY, v int)")
        for k in range(3):
            s.execute(f"INSERT INTO ks.t (k, v) VALUES ({k}, {k})")
    # a Python without logtide: this interpreter without site-packages (so without the editable install)
    bare = tmp_path / "python-without-logtide"
    bare.write_text(f'#!/bin/sh\nexec "{sys.executable}" -I -S "$@"\n')
    bare.chmod(bare.stat().st_mode | stat.S_IXUSR)
    venv_bin = os.path.dirname(os.path.abspath(sys.executable))
    path = os.pathsep.join(p for p in os.environ.get("PATH", "").split(os.pathsep)
                           if p and os.path.abspath(p) != venv_bin)
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON", "VIRTUAL_ENV", "PYSPARK_SUBMIT_ARGS",
                        "SPARK_CONF_DIR")}
    env["PATH"] = path
    done = subprocess.run([sys.executable, "-c", SCRIPT, str(data), str(bare)], capture_output=True, text=True,
                          env=env, timeout=900, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "rows 3" in done.stdout, done.stderr[-3000:]
    assert (f"refused: Spark's Python workers run {bare} (PYSPARK_PYTHON), which cannot import logtide "
            f"(ModuleNotFoundError: No module named 'logtide'): set PYSPARK_PYTHON to {sys.executable}") in done.stdout
