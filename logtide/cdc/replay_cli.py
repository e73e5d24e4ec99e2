"""``logtide replay``: rebuild a table from its CDC log into another table or data directory."""

from __future__ import annotations

import argparse
import sys
from dataclasses import replace
from typing import Any

from ..errors import CommandFailure, InvalidRequest, StorageLocked
from ..schema.describe import describe_table, describe_type, create_keyspace_statement


def add_replay(subparsers: "argparse._SubParsersAction", parent: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """Register ``logtide replay``."""
    p = subparsers.add_parser(
        "replay", parents=[parent],
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
        raise CommandFailure(f"expected KEYSPACE.TABLE, got {name!r}")
    ks, _, t = name.partition(".")
    return ks, t


def ensure_target(source_db: Any, keyspace: str, table: str, target_db: Any, tks: str, tname: str) -> None:
    """Create the target keyspace, the user types it needs and the table (source schema, CDC off) if missing."""
    session = target_db.session()
    cat = source_db.catalog
    if target_db.catalog.find_keyspace(tks) is None:
        ks = cat.keyspace(keyspace)
        session.execute(create_keyspace_statement(replace(ks, name=tks)))
    existing = target_db.catalog.find_table(tks, tname)
    if existing is not None:
        check_same_schema(source_db.catalog.table(keyspace, table), existing)
        return
    for udt in cat.keyspace(keyspace).types.values():
        if target_db.catalog.find_keyspace(tks).types.get(udt.name) is None:
            session.execute(describe_type(replace(udt, keyspace=tks)))
    base = cat.table(keyspace, table)
    session.execute(describe_table(replace(base, keyspace=tks, name=tname, cdc=None, changefeeds=())))


def check_same_schema(source: Any, target: Any) -> None:
    """InvalidRequest unless ``target`` has the source's primary key and every source column, of the same types."""
    where = f"target table {target.keyspace}.{target.name}"

    def key(t: Any) -> list[tuple[str, str]]:
        return [(c.name, str(c.type)) for c in t.primary_key]

    if key(source) != key(target):
        raise InvalidRequest(f"{where} exists with another primary key than {source.keyspace}.{source.name}: "
                             f"({', '.join(f'{n} {ty}' for n, ty in key(target))}) instead of "
                             f"({', '.join(f'{n} {ty}' for n, ty in key(source))})")
    theirs = {c.name: c for c in target.columns}
    for column in source.columns:
        other = theirs.get(column.name)
        if other is None:
            raise InvalidRequest(f"{where} exists without column {column.name} of {source.keyspace}.{source.name}")
        if str(other.type) != str(column.type):
            raise InvalidRequest(f"{where} exists with column {column.name} of type {other.type}, "
                                 f"not {column.type} as in {source.keyspace}.{source.name}")


def run_replay(ns: argparse.Namespace) -> int:
    """``logtide replay``; failures propagate to ``logtide.cli.main`` (one line, exit status 2)."""
    import logtide
    from ..progress import progress
    from ..server.runtime_file import in_use_advice
    from .replay import cdc_log_of, replay
    ks, table = _split(ns.table)
    tks, tname = _split(ns.to) if ns.to else (ks, table)
    same_dir = ns.target_data_dir is None or ns.target_data_dir == ns.data_dir
    if same_dir and (tks, tname) == (ks, table):
        raise CommandFailure("the target is the source table; give --to or --target-data-dir")
    try:
        # the stored topology: replay does not change it; a source apart from the target is only read, through
        # read-only snapshots, so a running server may hold it, and a mistyped directory is not created
        source = logtide.open(ns.data_dir, create=False) if same_dir else logtide.open(ns.data_dir, readonly=True)
    except StorageLocked as e:
        advice = in_use_advice(ns.data_dir, "replay into another data directory with --target-data-dir DIR (the "
                                            "source is then only read, beside the server)")
        raise CommandFailure(f"{e}: {advice}") from None
    try:
        cdc_log_of(source, ks, table)  # before the target is created
        target = source if same_dir else logtide.open(ns.target_data_dir)
        try:
            ensure_target(source, ks, table, target, tks, tname)
            with progress(f"replaying {ks}.{table}", unit="log rows") as bar:
                report = replay(source, ks, table, target, tks, tname, verify=ns.verify, on_log_rows=bar.advance)
        finally:
            if target is not source:
                target.close()
    finally:
        source.close()
    print(f"replayed {report.log_rows} log rows in {report.groups} groups from {ks}.{table} into {tks}.{tname}")
    if ns.verify:
        for d in report.differences:
            print(d)
        n = len(report.differences)
        print(f"verify: {n} difference{'' if n == 1 else 's'} between {ks}.{table} and {tks}.{tname}")
        return 1 if report.differences else 0
    return 0
