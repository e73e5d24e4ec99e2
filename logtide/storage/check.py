"""``logtide check``: verify every stored record and SQLite's own structure, as ``nodetool scrub --validate``.

Read-only (a running server may hold the directory): one snapshot is read
through.  Reported, one finding each:

* every record whose checksum, format or body does not verify, named by
  keyspace, table and key (``damage.describe_record``);
* a partition record stored under a token its key does not hash to, and a
  row with no partition record (both invisible to reads);
* a group of log rows in a table meta ``group_tables`` does not list;
* every changefeed record, offset floor, consumer, committed offset and
  initial scan state or mark whose checksum does not verify, named by
  changefeed, partition and offset, and a record missing between two stored
  ones (``feed_records`` and the state tables, storage format 3);
* each problem ``PRAGMA integrity_check`` finds in the B-trees themselves;
* acknowledged commits the database lost (``opening.lost_commits``).
"""

from __future__ import annotations

import contextlib
import json
import sqlite3
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator

from ..errors import DataDirectoryError
from .damage import describe_record
from .envelope import RecordDamaged
from .feed_records import committed_value, consumer_value, floor_value, record_value, scan_value, verify_mark
from .index_entries import verify_entry
from .keys import partition_token
from .opening import db_commit_seq, lost_commits, read_commits_file
from .records import decode_meta, decode_partition, decode_row, group_rows, is_group


@dataclass(frozen=True)
class Finding:
    """One problem: where (in CQL terms where possible) and what."""

    where: str
    problem: str

    def __str__(self) -> str:
        return f"{self.where}: {self.problem}"


@dataclass
class CheckReport:
    """What ``check`` verified and found."""

    records: int = 0
    tables: int = 0
    findings: list[Finding] = field(default_factory=list)

    @property
    def damaged(self) -> bool:
        return bool(self.findings)


class _UnknownTable:
    """Stands in for a table the catalog does not name (its records are still verified)."""

    def __init__(self, tid: int) -> None:
        self.store_id = tid
        self.keyspace = "<unknown>"
        self.name = f"table id {tid}"
        self.partition_key = ()
        self.cdc_base = None


def _tables(catalog_json: bytes | None) -> dict[int, Any]:
    if not catalog_json:
        return {}
    from ..schema.catalog import Catalog

    cat = Catalog.from_json(catalog_json.decode())
    return {t.store_id: t for ks in cat.keyspaces.values() for t in ks.tables.values()}


class _IndexOf:
    """A secondary index's entries, named after the index (``storage.index_entries``)."""

    def __init__(self, table: Any, index: Any) -> None:
        self.store_id = index.store_id
        self.keyspace = table.keyspace
        self.name = f"{table.name} (secondary index {index.name})"
        self.partition_key = ()
        self.cdc_base = None


def _indexes(catalog_json: bytes | None) -> dict[int, Any]:
    if not catalog_json:
        return {}
    from ..schema.catalog import Catalog

    cat = Catalog.from_json(catalog_json.decode())
    return {ix.store_id: _IndexOf(t, ix) for ks in cat.keyspaces.values() for t in ks.tables.values()
            for ix in t.indexes}


@contextlib.contextmanager
def _sqlite_findings(report: CheckReport, doing: str) -> Iterator[None]:
    """A damaged file that stops SQLite in one phase is a finding; the next phase still runs."""
    try:
        yield
    except sqlite3.DatabaseError as e:
        report.findings.append(Finding("SQLite", f"{e} while {doing}"))


# a writer explodes groups only in the tables meta ``group_tables`` lists (docs/durability.md)
_UNLISTED_GROUP = ("group of log rows in a table that meta 'group_tables' does not list "
                   "(a write at an older key would overlap it)")


def _check_group(report: CheckReport, t: Any, tid: int, pk: bytes, key: bytes, data: bytes,
                 after: bytes | None) -> int:
    """Verify a group entry (kind ``G``) stored under ``key``, ``after`` the key of the partition's previous
    entry: its own envelope, each row's record against the row's own key, the rows' keys strictly increasing,
    the last one the entry's key, the first after the previous entry.  Returns the rows it holds."""
    try:
        inner = group_rows(data, tid, pk, key)
    except RecordDamaged as e:
        report.findings.append(Finding(describe_record(t, pk, key), f"group of log rows: {e.reason}"))
        return 1
    last = after
    for ck, row in inner:
        try:
            decode_row(row, tid, pk, ck)
        except RecordDamaged as e:
            report.findings.append(Finding(describe_record(t, pk, ck), e.reason))
        if last is not None and ck <= last:
            report.findings.append(Finding(describe_record(t, pk, ck),
                                           "row of a group out of order or overlapping the previous entry"))
        last = ck
    if not inner or inner[-1][0] != key:
        report.findings.append(Finding(describe_record(t, pk, key),
                                       "group of log rows whose last row is not its key"))
    return max(len(inner), 1)


def _feed_names(tables: dict[int, Any]) -> dict[int, str]:
    return {f.feed_id: f"{t.keyspace}/{t.name}/{f.name}" for t in tables.values()
            for f in getattr(t, "changefeeds", ())}


def _name(name: Any) -> str:
    return repr(name.decode("utf-8", "replace")) if isinstance(name, bytes) else repr(name)


# what each state table of the changefeeds holds, where it is named, and how it is verified
_FEED_STATE: tuple[tuple[str, str, Callable[[Callable[[Any], str], tuple], str], Callable[[tuple], Any]], ...] = (
    ("feed_floors", "feed_id, part, CAST(data AS BLOB)",
     lambda feed, r: f"{feed(r[0])}, partition {r[1]}, offset floor", lambda r: floor_value(*r)),
    ("feed_consumers", "feed_id, CAST(name AS BLOB), CAST(data AS BLOB)",
     lambda feed, r: f"{feed(r[0])}, consumer {_name(r[1])}", lambda r: consumer_value(*r)),
    ("feed_offsets", "feed_id, CAST(name AS BLOB), part, CAST(data AS BLOB)",
     lambda feed, r: f"{feed(r[0])}, consumer {_name(r[1])}, partition {r[2]}, committed offset",
     lambda r: committed_value(*r)),
    ("feed_scans", "feed_id, CAST(data AS BLOB)", lambda feed, r: f"{feed(r[0])}, initial scan state",
     lambda r: json.loads(scan_value(*r))),
    ("feed_scan_marks", "feed_id, token, CAST(pk AS BLOB), CAST(ck AS BLOB), CAST(data AS BLOB)",
     lambda feed, r: f"{feed(r[0])}, initial scan mark (token {r[1]})", lambda r: verify_mark(*r)),
)


def _check_feeds(report: CheckReport, conn: sqlite3.Connection, tables: dict[int, Any],
                 advance: Callable[..., None]) -> None:
    """Verify every changefeed record (its checksum over all its columns, and no offset missing between two
    stored ones of a partition) and every row of the changefeeds' state tables."""
    names = _feed_names(tables)
    feed = lambda fid: f"changefeed {names[fid]}" if fid in names else f"changefeed id {fid}"  # noqa: E731
    with _sqlite_findings(report, "reading changefeed records"):
        prev = None  # (feed_id, part, offset) of the previous record
        for fid, part, off, wt, key, data in conn.execute(
                "SELECT feed_id, part, offset, write_time_ms, CAST(key AS BLOB), CAST(value AS BLOB) "
                "FROM feed_records"):
            report.records += 1
            advance()
            where = f"{feed(fid)}, partition {part}, offset {off}"
            try:
                record_value(fid, part, off, wt, key, data)
            except RecordDamaged as e:
                report.findings.append(Finding(where, f"changefeed record: {e.reason}"))
            if prev is not None and prev[:2] == (fid, part) and type(off) is int and off != prev[2] + 1:
                gap = f"offset {prev[2] + 1}" if off == prev[2] + 2 else f"offsets {prev[2] + 1} to {off - 1}"
                report.findings.append(Finding(f"{feed(fid)}, partition {part}, {gap}",
                                               "changefeed records missing between two stored ones (a damaged "
                                               "key, or deleted outside logtide)"))
            prev = (fid, part, off) if type(off) is int else None
    for table, columns, where, verify in _FEED_STATE:
        with _sqlite_findings(report, f"reading {table}"):
            for row in conn.execute(f"SELECT {columns} FROM {table}"):
                report.records += 1
                advance()
                try:
                    verify(row)
                except RecordDamaged as e:
                    report.findings.append(Finding(where(feed, row), e.reason))
                except ValueError as e:  # JSON of a scan state that verified (written by a faulty logtide)
                    report.findings.append(Finding(where(feed, row), f"malformed initial scan state ({e})"))


def check(path: str | Path, progress: Any = None) -> CheckReport:
    """Verify the data directory at ``path``; raises ``DataDirectoryError`` when it cannot be opened at all.

    ``progress`` (a ``logtide.progress.Progress``) is advanced once per record read."""
    advance = progress.advance if progress is not None else (lambda n=1: None)
    from .sqlite import CATALOG_KEY, GROUP_TABLES_KEY, Store, Txn, group_table_ids

    report = CheckReport()
    store = Store.open(path, readonly=True, verify_commits=False)
    conn = store.connect(store.path, readonly=True, synchronous=store.synchronous)
    acked = read_commits_file(store.path)  # before the snapshot: a running server records commits after making them
    try:
        conn.execute("BEGIN")
        txn = Txn(conn, False)
        with _sqlite_findings(report, "checking the B-trees"):
            for (msg,) in conn.execute("PRAGMA integrity_check"):
                if msg != "ok":
                    report.findings.append(Finding("SQLite", msg))
        catalog = None
        group_tables: set[int] = set()
        with _sqlite_findings(report, "reading meta values"):
            for key, data in txn.scan("meta"):
                report.records += 1
                advance()
                try:
                    value = decode_meta(key, data)
                except RecordDamaged as e:
                    report.findings.append(Finding(f"meta value {key!r}", e.reason))
                    continue
                if key == CATALOG_KEY:
                    catalog = value
                elif key == GROUP_TABLES_KEY:
                    group_tables = group_table_ids(value)
        tables = _tables(catalog)
        report.tables = len(tables)
        indexes = _indexes(catalog)
        table = lambda tid: tables.get(tid) or indexes.get(tid) or _UnknownTable(tid)  # noqa: E731
        partitions = set()
        complete = False  # every partition key read: a row without one is an orphan
        with _sqlite_findings(report, "reading partition records"):
            for tid, token, pk, data in txn.scan("partitions"):
                report.records += 1
                advance()
                t = table(tid)
                partitions.add((tid, token, pk))
                try:
                    decode_partition(data, tid, pk)
                except RecordDamaged as e:
                    report.findings.append(Finding(describe_record(t, pk, None), e.reason))
                    continue
                if tid in tables and partition_token(t, pk) != token:
                    report.findings.append(Finding(describe_record(t, pk, None),
                                                   f"stored under token {token}, not its key's token"))
            complete = True
        with _sqlite_findings(report, "reading rows"):
            prev = None  # (tid, token, pk, ck) of the previous entry
            for tid, token, pk, ck, data in txn.scan("rows"):
                t = table(tid)
                after = prev[3] if prev is not None and prev[:3] == (tid, token, pk) else None
                prev = (tid, token, pk, ck)
                advance()
                if tid in indexes:  # a secondary index entry: an empty record, no partition record
                    report.records += 1
                    try:
                        verify_entry(data, tid, pk, ck)
                    except RecordDamaged as e:
                        report.findings.append(Finding(describe_record(t, pk, ck), e.reason))
                    continue
                if is_group(data):
                    report.records += _check_group(report, t, tid, pk, ck, data, after)
                    if tid not in group_tables:
                        report.findings.append(Finding(describe_record(t, pk, ck), _UNLISTED_GROUP))
                else:
                    report.records += 1
                    try:
                        decode_row(data, tid, pk, ck)
                    except RecordDamaged as e:
                        report.findings.append(Finding(describe_record(t, pk, ck), e.reason))
                        continue
                if complete and (tid, token, pk) not in partitions:
                    report.findings.append(Finding(describe_record(t, pk, ck),
                                                   "row without a partition record (invisible to reads)"))
        _check_feeds(report, conn, tables, advance)
        with _sqlite_findings(report, "reading the commit sequence"):
            try:
                why = lost_commits(store.path, db_commit_seq(conn), acked)
            except DataDirectoryError as e:
                why = e.message
            if why:
                report.findings.append(Finding("commit sequence", why))
    finally:
        conn.close()
        store.close()
    return report


def accept_lost_commits(path: str | Path) -> None:
    """Record the database's own commit sequence as the acknowledged one (the loss is accepted)."""
    from .sqlite import Store

    Store.open(path, create=False, verify_commits=False).close()
