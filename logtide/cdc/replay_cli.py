"""``logtide replay``: rebuild a table from its CDC log into another table or data directory."""

from __future__ import annotations

import argparse
import sys
from dataclasses import replace
from typing import Any

from ..errors import CqlError
from ..schema.describe import describe_table, describe_type, create_keyspace_statement


def add_replay(subparsers: "argparse._SubParsersAction", parent: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """Register ``logtide replay``."""
    p = subparsers.add_parser(
        "replay", parents=[parent],
        help="rebuild a table from its CDC log (delta rows) into another table or data directory",
        description="Reads the CDC log of KEYSPACE.TABLE in --data-dir and replays its delta rows, with their "
                    "timestamps and TTLs, into --to (default: the same name) in --target-data-dir (default: "
                    "the same directory; then --to must name another table). The target table is created "
                    "with the source's schema (without CDC) when missing. With --verify, the copy is compared "
                    "with the source cell by cell and every difference is reported (exit status 1 if any).")
    p.add_argument("table", metavar="KEYSPACE.TABLE", help="the CDC-enabled source table")
    p.add_argument("--to", metavar="KEYSPACE.TABLE", help="target table (default: same name)")
    p.add_argument("--target-data-dir", metavar="DIR", help="target data directory (default: --data-dir)")
    p.add_argument("--verify", action="store_true", help="compare the rebuilt table with the source")
    p.set_defaults(run=run_replay)
    return p


def _split(name: str) -> tuple[str, str]:
    if "." not in name:
        raise SystemExit(f"logtide replay: expected KEYSPACE.TABLE, got {name!r}")
    ks, _, t = name.partition(".")
    return ks, t


def ensure_target(source_db: Any, keyspace: str, table: str, target_db: Any, tks: str, tname: str) -> None:
    """Create the target keyspace, the user types it needs and the table (source schema, CDC off) if missing."""
    session = target_db.session()
    cat = source_db.catalog
    if target_db.catalog.find_keyspace(tks) is None:
        ks = cat.keyspace(keyspace)
        session.execute(create_keyspace_statement(replace(ks, name=tks)))
    if target_db.catalog.find_table(tks, tname) is not None:
        return
    for udt in cat.keyspace(keyspace).types.values():
        if target_db.catalog.find_keyspace(tks).types.get(udt.name) is None:
            session.execute(describe_type(replace(udt, keyspace=tks)))
    base = cat.table(keyspace, table)
    session.execute(describe_table(replace(base, keyspace=tks, name=tname, cdc=None, changefeeds=())))


def run_replay(ns: argparse.Namespace) -> int:
    import logtide
    from .replay import replay
    ks, table = _split(ns.table)
    tks, tname = _split(ns.to) if ns.to else (ks, table)
    same_dir = ns.target_data_dir is None or ns.target_data_dir == ns.data_dir
    if same_dir and (tks, tname) == (ks, table):
        print("logtide replay: the target is the source table; give --to or --target-data-dir", file=sys.stderr)
        return 2
    try:
        source = logtide.open(ns.data_dir)  # the stored topology: replay does not change it
    except CqlError as e:
        print(f"logtide replay: {e}", file=sys.stderr)
        return 2
    try:
        target = source if same_dir else logtide.open(ns.target_data_dir)
        try:
            ensure_target(source, ks, table, target, tks, tname)
            report = replay(source, ks, table, target, tks, tname, verify=ns.verify)
        finally:
            if target is not source:
                target.close()
    except CqlError as e:
        print(f"logtide replay: {e}", file=sys.stderr)
        return 1
    finally:
        source.close()
    print(f"replayed {report.log_rows} log rows in {report.groups} groups from {ks}.{table} into {tks}.{tname}")
    if ns.verify:
        for d in report.differences:
            print(d)
        print(f"verify: {len(report.differences)} differences")
        return 1 if report.differences else 0
    return 0
