"""``logtide pipeline replicate`` and ``logtide pipeline lakehouse``: the Spark jobs on a local Spark (or any master),
from the command line.

One idea split for size with ``lakehouse_cli.py``: the ``logtide pipeline`` command line.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from typing import Any, Callable, Mapping

from ..errors import CommandFailure


def add_pipeline(subparsers: "argparse._SubParsersAction", parent: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """Register ``logtide pipeline`` and its ``replicate`` and ``lakehouse`` jobs."""
    p = subparsers.add_parser("pipeline", parents=[parent],
                              description="Data pipelines on Apache Spark (pip install 'logtide[spark]').")
    jobs = p.add_subparsers(dest="job", metavar="JOB", required=True)
    r = jobs.add_parser(
        "replicate", help="copy a table, then follow its CDC log, into another table (cell for cell)",
        description="Snapshot the source table, then stream its CDC log into the target table through CQL "
                    "writes that keep every cell's write timestamp and TTL. The target table is created with "
                    "the source's schema when missing. Checkpointed in --checkpoint: run it again to resume. "
                    "Works against logtide serve and ScyllaDB/Cassandra clusters alike.")
    r.add_argument("--source", required=True, metavar="URL", help="cql://[USER:PASSWORD@]HOST[,HOST...]:PORT/KS.TABLE")
    r.add_argument("--target", required=True, metavar="URL", help="cql://[USER:PASSWORD@]HOST[,HOST...]:PORT/KS.TABLE")
    r.add_argument("--checkpoint", required=True, metavar="DIR", help="directory for the job's progress")
    r.add_argument("--until-caught-up", action="store_true",
                   help="stop once the target has every change older than the confidence window")
    r.add_argument("--confidence-window", default="30s", metavar="DURATION",
                   help="read only changes older than this (default 30s; see docs/spark.md)")
    r.add_argument("--splits", type=int, default=16, metavar="N", help="token ranges of the snapshot (default 16)")
    r.add_argument("--max-rows-per-trigger", type=int, metavar="N",
                   help="at most N CDC log rows per micro-batch (default: all available)")
    r.add_argument("--master", default=os.environ.get("SPARK_MASTER", "local[2]"),
                   help="Spark master (default $SPARK_MASTER, else local[2])")
    r.set_defaults(run=run_replicate)
    from .lakehouse_cli import add_lakehouse

    add_lakehouse(jobs)
    return p


def spark_session(master: str, app: str = "logtide pipeline replicate", conf: Mapping[str, str] | None = None) -> Any:
    """A SparkSession for a pipeline job (and the tests' shared session): quiet logs, no UI, no progress bars,
    UTC, Python workers forked with logtide imported; ``conf`` adds or overrides settings."""
    from pyspark.sql import SparkSession

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    log4j = os.path.join(os.path.dirname(__file__), "log4j2.properties")
    # the driver JVM starts before any SparkConf applies: its logging is set on spark-submit's command line
    if " " not in log4j:
        os.environ.setdefault("PYSPARK_SUBMIT_ARGS",
                              f"--driver-java-options -Dlog4j2.configurationFile=file:{log4j} pyspark-shell")
    builder = (SparkSession.builder.master(master).appName(app)
               .config("spark.ui.enabled", "false").config("spark.sql.shuffle.partitions", "2")
               .config("spark.ui.showConsoleProgress", "false")
               .config("spark.python.authenticate.socketTimeout", "300s")  # workers start slowly on a loaded host
               .config("spark.python.daemon.module", "logtide.spark.daemon")  # workers fork with logtide imported
               .config("spark.sql.session.timeZone", "UTC"))
    for key, value in (conf or {}).items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark


Say = Callable[[str], None]


def require_module(module: str, extra: str) -> None:
    """CommandFailure naming the extra to install when ``module`` is missing (before any Spark starts)."""
    import importlib.util

    if importlib.util.find_spec(module) is None:
        raise CommandFailure(f"{module} is not installed: pip install 'logtide[{extra}]'")


def run_job(job: str, master: str, start: Callable[[Any, Say], Any], status: Callable[[Any], str | None],
            done: str) -> int:
    """Run a pipeline job to its end: ``start(spark, say)`` returns its StreamingQuery (raising OptionError for
    bad input); ``status(query)`` is its progress line, shown only on a terminal; ``done`` is printed when the
    query ends well. A failure raises CommandFailure: one line (``logtide pipeline: error: ...``), status 2."""
    require_module("pyspark", "spark")
    from ..progress import progress
    from .options import OptionError

    name = f"logtide pipeline {job}"
    spark = spark_session(master, name)
    try:
        with progress(name, counter=False) as bar:  # a status line on a terminal (logtide.progress), else nothing
            query = start(spark, bar.describe)
            ended = False
            while not ended:  # the status after every wait, the last one after the query's end
                ended = bool(query.awaitTermination(2)) or not query.isActive
                line = status(query)
                if line is not None:
                    bar.describe(line)
            failure = query.exception()
        if failure is not None:
            raise RuntimeError(error_line(failure))
    except KeyboardInterrupt:
        return 130
    except (OptionError, ConnectionError, RuntimeError) as e:
        raise CommandFailure(str(e)) from None
    except Exception as e:  # a Spark failure: one line, never a traceback
        raise CommandFailure(error_line(e)) from None
    finally:
        spark.stop()
    print(done)
    return 0


def error_line(e: Any) -> str:
    """One line for a Spark failure: the Python error a data source or foreachBatch raised when Spark's message
    carries its traceback (the message alone for our own OptionError/ConnectionError), else the first line."""
    text = str(e).strip()
    lines = text.splitlines()
    if "Traceback (most recent call last)" in text:
        start = next(i for i, line in enumerate(lines) if "Traceback (most recent call last)" in line)
        end = next((i for i, line in enumerate(lines) if line.startswith("JVM stacktrace")), len(lines))
        for line in reversed(lines[start:end]):
            m = re.match(r"^\s*(?:[\w.]+\.)?(\w+(?:Error|Exception)): (.+)$", line)
            if m:
                ours = m.group(1) in ("OptionError", "ConnectionError", "ConnectionRefused")
                return m.group(2) if ours else f"{m.group(1)}: {m.group(2)}"
    return lines[0] if lines else type(e).__name__


def run_replicate(ns: argparse.Namespace) -> int:
    from .options import OptionError
    from .replicate import lag_seconds, parse_url, replicate

    try:
        source, target = parse_url(ns.source, "source"), parse_url(ns.target, "target")
    except OptionError as e:
        raise CommandFailure(str(e)) from None

    def start(spark: Any, say: Say) -> Any:
        return replicate(spark, source, target, ns.checkpoint, until_caught_up=ns.until_caught_up,
                         confidence_window=ns.confidence_window, splits=ns.splits,
                         max_rows_per_trigger=ns.max_rows_per_trigger, progress=say)

    def status(query: Any) -> str | None:
        lag = lag_seconds(query)
        return None if lag is None else f"cdc: lag {lag:.1f}s"

    return run_job("replicate", ns.master, start, status,
                   f"replicated {ns.source} into {ns.target}" + (" (caught up)" if ns.until_caught_up else ""))
