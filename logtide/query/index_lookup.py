"""SELECT through a secondary index (docs/views-and-indexes.md, "Secondary indexes").

``choose`` finds, among a WHERE clause's restrictions (``restrictions.analyse``'s filters), one an index of the
table serves (``v = x`` for a column's index or a frozen collection's ``full()``, ``CONTAINS KEY`` for ``keys()``,
``CONTAINS`` for ``values()`` or a set's ``keys()``, ``m[k] = v`` for ``entries()``), and says whether the query
still needs ``ALLOW FILTERING`` by ScyllaDB's rules (``statement_restrictions::need_filtering``).  The
``IndexedSource`` then hands the SELECT pipeline only the partitions and rows the index names, in the order a
scan of the table has (token, partition key, clustering key: the order ScyllaDB returns a global index's rows
in), so paging, limits and aggregates work unchanged.  Every restriction, the indexed one included, is still
checked on the base row: an entry whose row no longer matches (its value expired by TTL) is dropped there.

One idea split for size with ``select.py``, ``read.py`` and the others ``select.py`` names: the SELECT pipeline.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from typing import Any, Callable, Collection, Iterator, Sequence

from ..cql import ast
from ..schema import types as T
from ..schema.indexes import ENTRIES, FULL, KEYS, REGULAR_VALUES, VALUES, SecondaryIndex
from ..schema.model import CLUSTERING, PARTITION_KEY, Table, check_key_length
from ..storage.damage import corrupt
from ..storage.envelope import RecordDamaged
from ..storage.index_entries import (entry_value, global_base, global_from, local_base_ck, local_range,
                                     verify_entry)
from ..storage.keys import partition_token, prefix_end, serialize_partition_key, token_of
from .read import LiveRow, stored_partition
from .restrictions import Filter, KeyRestrictions, restricted_columns, token_bounds


@dataclass(frozen=True)
class IndexPlan:
    """The index a SELECT reads through, the value it looks up (None: no row can match), and whether the
    query needs ALLOW FILTERING all the same; ``scan`` False when the partition key is given and a global
    index needs no lookup (the partitions are read directly, the restriction checked on their rows)."""

    index: SecondaryIndex
    value: bytes | None
    needs_filtering: bool
    scan: bool = True


def choose(table: Table, kr: KeyRestrictions, where: Sequence[ast.Relation],
           unbuilt: Collection[int] = ()) -> IndexPlan | None:
    """The index plan of a SELECT on ``table``, or None when no index serves its restrictions; an index still
    being built (store id in ``unbuilt``) serves none (a query needing it needs ALLOW FILTERING meanwhile, as
    ScyllaDB's test_unbuilt_index_not_used expects)."""
    indexes = [ix for ix in table.indexes if ix.store_id not in unbuilt] if unbuilt else table.indexes
    if not indexes:
        return None
    single_partition = kr.partition_keys is not None
    found: tuple[SecondaryIndex, Filter, bytes | None] | None = None
    restrictions = [*kr.filters, *_clustering_equalities(table, kr)]
    # ScyllaDB's choice: a local index if the partition is given and one serves a restriction, else the index
    # of the first restriction (in the WHERE clause's order) that a global index serves
    for local in ((True, False) if single_partition else (False,)):
        for f in restrictions:
            ix = next((ix for ix in indexes if ix.local == local and index_value(table, ix, f)[0]), None)
            if ix is not None:
                found = (ix, f, index_value(table, ix, f)[1])
                break
        if found is not None:
            break
    if found is None:
        return None
    ix, f, value = found
    if value is not None and not ix.local:
        check_key_length([value])  # the value is the index's partition key (ScyllaDB: its view's)
    return IndexPlan(ix, value, _needs_filtering(table, kr, where, f), ix.local or not single_partition)


def _clustering_equalities(table: Table, kr: KeyRestrictions) -> list[Filter]:
    """``c = x`` on clustering columns that the clustering prefix took (so not among the filters): an index on
    ``c`` serves them when the partition key is not given."""
    if kr.partition_keys is not None or len(kr.clustering_prefixes) != 1:
        return []
    prefix = kr.clustering_prefixes[0]
    return [Filter(c, "=", (prefix[c.position],)) for c in table.clustering_key[:len(prefix)]]


def index_value(table: Table, ix: SecondaryIndex, f: Filter) -> tuple[bool, bytes | None]:
    """Whether ``ix`` serves restriction ``f``, and the value it looks up (None: no row can match)."""
    if f.column.name != ix.column:
        return False, None
    value = f.values[0] if f.values else None
    t = f.column.type
    if ix.kind in (REGULAR_VALUES, FULL):
        if f.op == "=" or (f.op == "IN" and f.column.kind in (PARTITION_KEY, CLUSTERING) and len(f.values) == 1):
            return True, value
        return False, None
    if ix.kind == KEYS:
        return f.op == ("CONTAINS KEY" if isinstance(t, T.MapType) else "CONTAINS"), value
    if ix.kind == VALUES:
        return f.op == "CONTAINS", value
    if ix.kind == ENTRIES and f.op == "ELEMENT" and isinstance(t, T.MapType):
        if value is None or f.key is None:
            return True, None
        return True, entry_value(t.key.serialize(f.key), value)
    return False, None


def _needs_filtering(table: Table, kr: KeyRestrictions, where: Sequence[ast.Relation], f: Filter) -> bool:
    """ScyllaDB's ``need_filtering`` for a query served by an index on ``f``'s column."""
    nck = len(restricted_columns(where, CLUSTERING, table))
    npart = len(restricted_columns(where, PARTITION_KEY, table))
    regular = {g.column.name for g in kr.filters if g.column.kind not in (PARTITION_KEY, CLUSTERING)}
    if kr.token_lo is not None or kr.token_hi is not None:
        return nck + len(regular) > 1
    if 0 < npart < len(table.partition_key):
        return not (npart == 1 and f.column.kind == PARTITION_KEY and nck == 0 and not regular)
    if any(g.column.kind == PARTITION_KEY and g.op not in ("=", "IN") for g in kr.filters):
        return True
    on_regular = [g for g in kr.filters if g.column.kind not in (PARTITION_KEY, CLUSTERING)]
    if len(regular) > 1 or (regular and f.column.name not in regular) or len(on_regular) > 1:
        return True  # the index serves one restriction: a second one (even on its column) is filtering
    if regular:
        if npart == 0 and nck == 0:
            return False
        return (kr.partition_keys is None or kr.clustering_gap_error is not None
                or any(g.column.kind == CLUSTERING for g in kr.filters))
    if f.column.kind == CLUSTERING:
        return nck > 1
    return True


BaseCks = Callable[[bytes | None, bytes | None, bool], Iterator[bytes]]


class IndexedPartition:
    """One base partition as the index names it: every row (``cks`` None) or only the rows whose clustering
    keys ``cks(lo, hi, reverse)`` gives: those within ``[lo, hi)``, in clustering order or its reverse, read from
    the index as they are asked for."""

    def __init__(self, view: Any, cks: BaseCks | None) -> None:
        self.view = view
        self.token = view.token
        self.pk = view.pk
        self.cks = cks

    @property
    def key(self) -> tuple[bytes, ...]:
        return self.view.key

    def static_row(self) -> LiveRow | None:
        return self.view.static_row()

    def rows(self, lo: bytes | None, hi: bytes | None, reverse: bool = False,
             values: bool = False) -> Iterator[LiveRow]:
        if self.cks is None:
            yield from self.view.rows(lo, hi, reverse, values)
            return
        for ck in self.cks(lo, hi, reverse):
            yield from self.view.rows(ck, ck + b"\x00", reverse, values)  # clustering keys are prefix-free


def _within(lo: bytes, hi: bytes | None, head: bytes, ck_lo: bytes | None,
            ck_hi: bytes | None) -> tuple[bytes, bytes | None]:
    """The entry range ``[lo, hi)`` narrowed to the entries ``head + ck`` of the base clustering keys ``ck`` in
    ``[ck_lo, ck_hi)`` (entries of one base partition share ``head``; a common prefix keeps the keys' order)."""
    if ck_lo is not None:
        lo = max(lo, head + ck_lo)
    if ck_hi is not None:
        hi = head + ck_hi if hi is None else min(hi, head + ck_hi)
    return lo, hi


ENTRY_BATCH = 256  # index entries read per storage statement


class IndexedSource:
    """The partitions of a SELECT served by an index, from a stored source's snapshot (``select.StoredSource``).

    Entries are read in batches of ``ENTRY_BATCH``, each from where the last ended, and the partitions they name
    handed on as they come: a page reads the entries of its rows (and one batch more at most), and a resumed page
    (``resume``: the paging state's last row, (token, pk, ck)) seeks to that row's entry instead of reading the
    value's entries from the start.  A reversed read (``ORDER BY`` against the clustering order) reads the
    entries backwards the same way, from the end of its range or from the resumed row's entry down."""

    def __init__(self, source: Any, plan: IndexPlan, order: Any,
                 resume: tuple[int, bytes, bytes | None] | None = None) -> None:
        self.source = source
        self.plan = plan
        self.order = order  # select.partition_order of the query: the order of its partition keys
        self.resume = resume
        self.reverse = False  # set by the SELECT: rows in reverse clustering order
        self.txn = source.txn
        self.now = source.now

    def partitions(self, table: Table, kr: KeyRestrictions) -> Iterator[Any]:
        plan = self.plan
        if not plan.scan:
            yield from self.source.partitions(table, kr)
            return
        if plan.value is None or kr.empty:
            return
        if plan.index.local:
            yield from self._local(table, kr)
        else:
            yield from self._global(table, kr)

    def _entries(self, table: Table, token: int, pk: bytes, lo: bytes = b"", hi: bytes | None = None,
                 batch: int = ENTRY_BATCH, reverse: bool = False) -> Iterator[bytes]:
        """The entry keys (``ck``) of one index partition in ``[lo, hi)``, ``batch`` at a time, each batch read
        from where the last ended: from ``lo`` up, or (``reverse``) from ``hi`` down."""
        tid = self.plan.index.store_id
        while True:
            got = self.txn.rows_page(tid, token, pk, lo, hi, batch, reverse)
            for ck, data in got:
                try:
                    verify_entry(data, tid, pk, ck)
                except RecordDamaged as e:
                    raise corrupt(_IndexName(table, self.plan.index), pk, ck, e.reason) from None
                yield ck
            if len(got) < batch:
                return
            if reverse:
                hi = got[-1][0]  # the next batch ends before the last key read
            else:
                lo = got[-1][0] + b"\x00"  # the smallest key after the last one read

    def _resumed_ck(self, token: int, pk: bytes) -> tuple[bool, bytes | None]:
        """Whether the page before ended in base partition (token, pk), and at which row (None: its static row,
        the partition is done)."""
        if self.resume is None or self.resume[:2] != (token, pk):
            return False, None
        return True, self.resume[2]

    def _global(self, table: Table, kr: KeyRestrictions) -> Iterator[Any]:
        """One base partition after the other: its first entry found by a seek, its entries read lazily (the
        rows a page takes), then a seek past them."""
        value = self.plan.value
        vt = token_of(value)
        lo, lo_inc, hi, hi_inc = token_bounds(kr)
        static = (c := table.column(self.plan.index.column)) is not None and c.is_static
        pos = b"" if lo is None else global_from(lo)
        if self.resume is not None:  # the page before ended in this partition: none before it is read again
            token, pk, ck = self.resume  # (a static column's one entry per partition is at its start)
            at_row = not self.reverse and not static and ck is not None
            pos = max(pos, global_from(token, pk, ck if at_row else b""))  # type: ignore[arg-type]
        while True:
            first = next(self._entries(table, vt, value, pos, None, batch=1), None)
            if first is None:
                return
            token, pk, _ = global_base(first)
            head = global_from(token, pk)
            end = prefix_end(head) or head + b"\xff" * 16  # past every entry of this base partition
            if hi is not None and (token > hi or (token == hi and not hi_inc)):
                return  # entries are in base token order: none after this one is in the range
            if not (lo is not None and token == lo and not lo_inc):
                cks = None
                if not static:
                    stop = end
                    resumed, ck = self._resumed_ck(token, pk)
                    if resumed and self.reverse:  # backwards from the row the page before ended at
                        stop = head + ck if ck is not None else head
                    cks = partial(self._base_cks, table, vt, value, head, pos, stop)
                view = stored_partition(table, self.txn, self.now, token, pk)
                if view is not None:
                    yield IndexedPartition(view, cks)
            pos = end

    def _base_cks(self, table: Table, vt: int, value: bytes, head: bytes, lo: bytes, hi: bytes,
                  ck_lo: bytes | None, ck_hi: bytes | None, reverse: bool) -> Iterator[bytes]:
        lo, hi = _within(lo, hi, head, ck_lo, ck_hi)  # type: ignore[assignment]
        for entry in self._entries(table, vt, value, lo, hi, reverse=reverse):
            yield global_base(entry)[2]

    def _local(self, table: Table, kr: KeyRestrictions) -> Iterator[Any]:
        value = self.plan.value
        lo, hi = local_range(value)
        order = self.order
        keys = sorted({(partition_token(table, pk), pk)
                       for pk in (serialize_partition_key(k) for k in kr.partition_keys or ())},
                      key=lambda tp: order(*tp))
        for token, pk in keys:
            start, stop = lo, hi
            resumed, ck = self._resumed_ck(token, pk)
            if resumed:  # the page before ended at this row: the entries on its side of it are done
                if ck is None:
                    continue
                if self.reverse:
                    stop = lo + ck
                else:
                    start = lo + ck
            if next(self._entries(table, token, pk, start, stop, batch=1), None) is None:
                continue
            view = stored_partition(table, self.txn, self.now, token, pk)
            if view is not None:
                yield IndexedPartition(view, partial(self._local_cks, table, token, pk, start, stop))

    def _local_cks(self, table: Table, token: int, pk: bytes, lo: bytes, hi: bytes | None,
                   ck_lo: bytes | None, ck_hi: bytes | None, reverse: bool) -> Iterator[bytes]:
        value = self.plan.value
        head = local_range(value)[0]  # type: ignore[arg-type]
        lo, hi = _within(lo, hi, head, ck_lo, ck_hi)
        for ck in self._entries(table, token, pk, lo, hi, reverse=reverse):
            yield local_base_ck(value, ck)  # type: ignore[arg-type]


class _IndexName:
    """Names a damaged entry after its index (``storage.damage.describe_record``)."""

    def __init__(self, table: Table, index: SecondaryIndex) -> None:
        self.keyspace = table.keyspace
        self.name = f"{table.name} (secondary index {index.name})"
        self.partition_key = ()
        self.cdc_base = None
