"""Migrating a data directory of logtide 0.1 (pickled records) to the checksummed format, in one transaction.

logtide 0.1 stored rows and partitions as pickles of plain tuples, dicts,
bytes, strings and ints.  They are read here with an unpickler that resolves
no global name at all, so a pickle that would import or call anything (the
only way a pickle runs code) fails to load and the migration stops, naming
the record, with nothing changed (``docs/durability.md``, "Migration").

One idea split for size with ``opening.py`` and ``migrate_feeds.py``: opening a data directory, which migrates
a 0.1 one (here).
"""

from __future__ import annotations

import io
import pickle
import sqlite3
from pathlib import Path

from ..errors import DataDirectoryError
from ..mutation.cells import Cell, ComplexColumn, Deletion, Liveness, PartitionData, RangeTombstone, RowData
from .opening import APPLICATION_ID, FORMAT_KEY, SEQ_SCHEMA, UNSEALED_FEEDS_FORMAT
from .records import encode_meta, encode_partition, encode_row


class _PlainData(pickle.Unpickler):
    """Unpickles builtin containers and scalars only: every global lookup is refused."""

    def find_class(self, module: str, name: str):  # noqa: D401 - pickle's hook
        raise pickle.UnpicklingError(f"refers to {module}.{name}")


def plain_unpickle(data: bytes):
    """The plain data of a 0.1 pickle; UnpicklingError when it names any class or function."""
    return _PlainData(io.BytesIO(data)).load()


def _d(t) -> Deletion | None:
    return None if t is None else Deletion(*t)


def _row_from(t) -> RowData:
    if len(t) == 3:  # a uniform (CDC log) row
        clustering, (ts, ttl, ldt), values = t
        return RowData(tuple(clustering), Liveness(ts, ttl, ldt), None,
                       {n: Cell(ts, v, ttl, ldt) for n, v in values.items()}, {})
    clustering, marker, deletion, cells, complex_ = t
    return RowData(tuple(clustering), None if marker is None else Liveness(*marker), _d(deletion),
                   {n: Cell(*c) for n, c in cells.items()},
                   {n: ComplexColumn(_d(d), {k: Cell(*c) for k, c in cs.items()}) for n, (d, cs) in complex_.items()})


def _partition_from(t) -> PartitionData:
    key, deletion, rts, static = t
    return PartitionData(tuple(key), _d(deletion), [RangeTombstone(lo, hi, Deletion(*d)) for lo, hi, d in rts],
                         None if static is None else _row_from(static))


def migrate_v0(conn: sqlite3.Connection, p: Path) -> None:
    """Rewrite every record of a 0.1 database in the current format, in one transaction."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        for tid, token, pk, data in conn.execute("SELECT tid, token, pk, data FROM partitions").fetchall():
            try:
                new = encode_partition(_partition_from(plain_unpickle(data)), tid, pk)
            except Exception as e:  # noqa: BLE001 - any failure names the record
                raise _refused(p, f"partition record of table id {tid}, partition key 0x{pk.hex()}", e) from None
            conn.execute("UPDATE partitions SET data = ? WHERE tid = ? AND token = ? AND pk = ?", (new, tid, token, pk))
        for tid, token, pk, ck, data in conn.execute("SELECT tid, token, pk, ck, data FROM rows").fetchall():
            try:
                new = encode_row(_row_from(plain_unpickle(data)), tid, pk, ck)
            except Exception as e:  # noqa: BLE001
                raise _refused(p, f"row of table id {tid}, partition key 0x{pk.hex()}, clustering key 0x{ck.hex()}",
                               e) from None
            conn.execute("UPDATE rows SET data = ? WHERE tid = ? AND token = ? AND pk = ? AND ck = ?",
                         (new, tid, token, pk, ck))
        for key, value in conn.execute("SELECT key, value FROM meta").fetchall():
            conn.execute("UPDATE meta SET value = ? WHERE key = ?", (encode_meta(key, bytes(value)), key))
        # format 2: its changefeed tables, which 0.1 had too, are sealed next in a transaction of their own
        conn.execute("INSERT INTO meta (key, value) VALUES (?, ?)",
                     (FORMAT_KEY, encode_meta(FORMAT_KEY, str(UNSEALED_FEEDS_FORMAT).encode())))
        for statement in SEQ_SCHEMA.split(";")[:2]:
            conn.execute(statement)
        conn.execute(f"PRAGMA application_id={APPLICATION_ID}")
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise


def _refused(p: Path, what: str, e: Exception) -> DataDirectoryError:
    return DataDirectoryError(f"cannot migrate data directory {p} from the format of logtide 0.1: its {what} "
                              f"is not plain data ({e}); nothing was changed")
