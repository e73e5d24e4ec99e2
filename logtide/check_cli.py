"""``logtide check`` and ``logtide migrate``: verify a data directory; convert one of an older format."""

from __future__ import annotations

import argparse
import sys


def add_check(subparsers: "argparse._SubParsersAction", parent: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """Register ``logtide check``."""
    p = subparsers.add_parser(
        "check", parents=[parent],
        description="Reads the whole data directory (read-only: a running server may hold it) and reports "
                    "each damaged record by keyspace, table and key, each problem SQLite's integrity check "
                    "finds, and acknowledged commits the database lost. Exit status 0 when nothing is "
                    "damaged, 1 when something is, 2 when the directory cannot be read as a logtide database.")
    p.add_argument("--accept-lost-commits", action="store_true",
                   help="after reporting, accept that acknowledged commits were lost and let the directory "
                        "open again with what remains (needs the writer lock: stop the server first)")
    p.set_defaults(run=run_check)
    return p


def _failed(command: str, e: Exception) -> int:
    print(f"logtide {command}: error: {e}", file=sys.stderr)
    return 2


def run_check(ns: argparse.Namespace) -> int:
    from .errors import CqlError
    from .progress import progress
    from .storage.check import accept_lost_commits, check

    try:
        with progress("checking", unit="records") as shown:  # on a terminal only
            report = check(ns.data_dir, shown)
    except CqlError as e:
        return _failed("check", e)
    for finding in report.findings:
        print(f"damaged: {finding}")
    print(f"checked {report.records} records of {report.tables} tables in {ns.data_dir}: "
          + (f"{len(report.findings)} problems" if report.damaged else "no damage found"))
    if ns.accept_lost_commits:
        try:
            accept_lost_commits(ns.data_dir)
        except CqlError as e:
            return _failed("check", e)
        print("lost commits accepted: the directory opens with the commits it holds", file=sys.stderr)
    return 1 if report.damaged else 0


def add_migrate(subparsers: "argparse._SubParsersAction", parent: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """Register ``logtide migrate``."""
    p = subparsers.add_parser(
        "migrate", parents=[parent],
        description="Rewrites every record of --data-dir in the current storage format (3) in one transaction "
                    "(opening a directory for writing does the same): records of logtide 0.1 are read "
                    "without running any code they might hold, and the changefeed records and consumer offsets "
                    "of formats 0-2 are sealed with checksums (a progress bar on a terminal). A record that is "
                    "not plain data stops the migration with nothing changed; so does an interruption.")
    p.set_defaults(run=run_migrate)
    return p


def run_migrate(ns: argparse.Namespace) -> int:
    from .errors import CqlError
    from .storage.sqlite import Store

    try:
        Store.open(ns.data_dir, create=False).close()
    except CqlError as e:
        return _failed("migrate", e)
    print(f"{ns.data_dir}: records in the current storage format")
    return 0
