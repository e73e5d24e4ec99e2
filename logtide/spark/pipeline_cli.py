"""``logtide pipeline replicate`` and ``logtide pipeline lakehouse``: the Spark jobs on a local Spark (or any master),
from the command line.

One idea split for size with ``lakehouse_cli.py``: the ``logtide pipeline`` command line.
"""

from __future__ import annotations

import argparse
import os
import re
from typing import Any, Callable

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
    add_credentials_option(r)
    r.add_argument("--target-credentials", metavar="FILE",
                   help="the target's credentials file, when its login is not the source's (default: as --credentials)")
    r.add_argument("--master", default=os.environ.get("SPARK_MASTER", "local[2]"),
                   help="Spark master (default $SPARK_MASTER, else local[2])")
    r.set_defaults(run=run_replicate)
    from .lakehouse_cli import add_lakehouse

    add_lakehouse(jobs)
    return p


def add_credentials_option(p: argparse.ArgumentParser) -> None:
    """``--credentials FILE``: cqlsh's option (docs/spark.md "Logins")."""
    p.add_argument("--credentials", metavar="FILE",
                   help="cqlsh credentials file ([PlainTextAuthProvider] username=, password=; mode 600) for a URL "
                        "without USER or PASSWORD (default $LOGTIDE_CREDENTIALS, else ~/.cassandra/credentials); "
                        "LOGTIDE_CQL_USERNAME/_PASSWORD and LOGTIDE_KAFKA_USERNAME/_PASSWORD win over it, a URL's "
                        "login over both; a missing password is asked for on a terminal")


def job_login(job: str, option: str, username: str | None, password: str | None, kind: str,
              file: str | None) -> tuple[str | None, str | None]:
    """The login of a job's URL (``kind`` ``cql`` or ``kafka``): the command line's ``username``/``password`` (a
    password there draws a warning on standard error), else the environment, the credentials file ``file`` and
    the terminal's prompt (:mod:`.credentials`)."""
    import sys

    from .credentials import Login, resolve_login, terminal_prompt, url_password_warning

    if password is not None:
        print(url_password_warning(f"logtide pipeline {job}", option, kind), file=sys.stderr)
    given = Login(username, password, "the URL" if username else "", "the URL" if password is not None else "")
    try:
        login = resolve_login(given, kind, option, os.environ, file, terminal_prompt())
    except EOFError:
        raise CommandFailure(f"{option}: no password given at the prompt") from None
    return login.username, login.password


Say = Callable[[str], None]
STARTING = "starting Spark ({master}): JVM and Python workers, 10-60 s"


def require_module(module: str, extra: str) -> None:
    """CommandFailure naming the extra to install when ``module`` is missing (before any Spark starts)."""
    import importlib.util

    if importlib.util.find_spec(module) is None:
        raise CommandFailure(f"{module} is not installed: pip install 'logtide[{extra}]'")


def run_job(job: str, master: str, check: Callable[[], None], start: Callable[[Any, Say], Any],
            status: Callable[[Any], str | None], done: str | Callable[[], str]) -> int:
    """Run a pipeline job to its end.  ``check()`` runs first, before Spark starts (docs/spark.md "Before Spark
    starts"), raising OptionError for bad input and ConnectionError for a server it cannot reach.  Then Spark
    starts (a status line says so on a terminal), ``start(spark, say)`` returns the job's StreamingQuery and
    ``status(query)`` is its progress line, shown only on a terminal; ``done`` is printed when the query ends
    well.  A failure raises CommandFailure: one line (``logtide pipeline JOB: error: ...``, README "Errors"),
    status 2, never a traceback."""
    require_module("pyspark", "spark")
    from ..progress import progress
    from .options import OptionError

    try:
        check()
    except (OptionError, ConnectionError) as e:
        raise CommandFailure(str(e)) from None
    except KeyboardInterrupt:
        return 130
    with progress(f"logtide pipeline {job}", counter=False) as bar:  # a status line on a terminal, else nothing
        bar.describe(STARTING.format(master=master))
        code = _run(f"logtide pipeline {job}", master, start, status, bar.describe)
    if code == 0:
        print(done() if callable(done) else done)
    return code


def _run(name: str, master: str, start: Callable[[Any, Say], Any], status: Callable[[Any], str | None],
         say: Say) -> int:
    """Start Spark and the job's query, and follow it to its end: 0, or 130 when interrupted; a failure raises
    CommandFailure with its one line."""
    from .options import OptionError
    from .session import spark_session

    try:
        spark = spark_session(master, name)
    except KeyboardInterrupt:
        return 130
    except Exception as e:  # noqa: BLE001 - no Java, a bad master: one line
        raise CommandFailure(f"cannot start Spark: {error_line(e)}") from None
    try:
        query = start(spark, say)
        ended = False
        while not ended:  # the status after every wait, the last one after the query's end
            ended = bool(query.awaitTermination(2)) or not query.isActive
            line = status(query)
            if line is not None:
                say(line)
        failure = query.exception()
        if failure is not None:
            raise CommandFailure(error_line(failure))
        return 0
    except KeyboardInterrupt:
        return 130
    except CommandFailure:
        raise
    except (OptionError, ConnectionError, RuntimeError) as e:
        raise CommandFailure(str(e)) from None
    except Exception as e:  # noqa: BLE001 - a Spark failure: one line, never a traceback
        raise CommandFailure(error_line(e)) from None
    finally:
        spark.stop()


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
                ours = m.group(1) in ("OptionError", "ConnectionError", "ConnectionRefused", "DataLossError")
                return m.group(2) if ours else f"{m.group(1)}: {m.group(2)}"
    return lines[0] if lines else type(e).__name__


def run_replicate(ns: argparse.Namespace) -> int:
    from .options import OptionError
    from .replicate import parse_url, url_login

    try:
        parse_url(ns.source, "source"), parse_url(ns.target, "target")  # a malformed URL before any prompt
        source = parse_url(ns.source, "source", job_login("replicate", "--source", *url_login(ns.source), "cql",
                                                          ns.credentials))
        target = parse_url(ns.target, "target", job_login("replicate", "--target", *url_login(ns.target), "cql",
                                                          ns.target_credentials or ns.credentials))
    except OptionError as e:
        raise CommandFailure(str(e)) from None
    except KeyboardInterrupt:
        return 130

    def check() -> None:
        from .preflight import check_replicate

        check_replicate(source, target, ns.checkpoint)

    def start(spark: Any, say: Say) -> Any:
        from .replicate import replicate

        return replicate(spark, source, target, ns.checkpoint, until_caught_up=ns.until_caught_up,
                         confidence_window=ns.confidence_window, splits=ns.splits,
                         max_rows_per_trigger=ns.max_rows_per_trigger, progress=say)

    def status(query: Any) -> str | None:
        from .replicate import status_line

        return status_line(query.lastProgress, ns.confidence_window)

    caught_up = (f" (caught up; changes younger than the confidence window, {ns.confidence_window}, are copied by "
                 f"the next run)")
    return run_job("replicate", ns.master, check, start, status,
                   f"replicated {ns.source} into {ns.target}" + (caught_up if ns.until_caught_up else ""))
