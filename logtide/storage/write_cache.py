"""The writer's cache of records it read or wrote, kept across transactions (issue 13).

A write reads the partition and row records it touches before changing them
(preimages, merges, CDC log partitions).  One process writes a data directory
(``docs/durability.md``, "The single writer"), and every change of ``rows``
and ``partitions`` goes through the writer's ``Txn``, so what the writer last
read or wrote under a key is what the database holds there: the cache answers
those reads without a SQLite statement, and decoded records (immutable once
decoded: callers never modify them) without decoding again.

It is write-through (every change still goes to SQLite in the same
transaction) and forgets everything whenever a transaction or savepoint is
rolled back or a commit fails, when a table's data is dropped, and when it
grows past its bound.  ``mutation.apply`` drops the decoded form of a record it
replaces or removes (those bytes are never looked up again), so ``decoded``
holds live records only.  Snapshots of readers never use it.
"""

from __future__ import annotations

# entries kept before the cache starts over: a few MB for typical records
MAX_RECORDS = 50_000


class WriteCache:
    """Records by storage key (``None``: known absent) and decoded records by their bytes."""

    __slots__ = ("partitions", "rows", "decoded", "tails", "grouped", "write_groups")

    def __init__(self) -> None:
        self.partitions: dict[tuple[int, int, bytes], bytes | None] = {}
        # logical rows (a group's rows one by one, never a group's bytes)
        self.rows: dict[tuple[int, int, bytes, bytes], bytes | None] = {}
        self.decoded: dict[bytes, object] = {}
        # the key of the last entry of partitions (tid, token, pk) of tables that may hold groups
        self.tails: dict[tuple[int, int, bytes], bytes] = {}
        # ids of the tables that may hold groups (None: not read yet); forgotten with the rest, as a rollback
        # also takes back the meta ``group_tables`` of a table's first group (read again from meta when needed)
        self.grouped: set[int] | None = None
        # whether new log rows are written as groups (off: single records only, as storage format 1)
        self.write_groups = True

    def clear(self) -> None:
        """Forget everything (a rollback, a failed commit, dropped data)."""
        self.partitions.clear()
        self.rows.clear()
        self.decoded.clear()
        self.tails.clear()
        self.grouped = None

    def trim(self) -> None:
        """Start over when the cache holds more than its bound (called between transactions)."""
        if len(self.rows) + len(self.partitions) + len(self.tails) > MAX_RECORDS or len(self.decoded) > MAX_RECORDS:
            self.clear()
