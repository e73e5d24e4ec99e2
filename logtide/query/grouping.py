"""Aggregation and ``GROUP BY`` (CQL since Cassandra 3.10, ScyllaDB's rules and messages).

``GROUP BY`` names a prefix of the primary key in its order (columns restricted by ``=`` in the
WHERE clause may be left out) that holds the whole partition key: rows with the same values of
those columns, consecutive in the scan's order, form a group.  Each group gives one result row:
aggregates (:mod:`logtide.query.selection`) over the group's rows, every other selector from the
group's first row.  ``LIMIT`` and ``PER PARTITION LIMIT`` count groups, and so do pages: a page
ends after a whole group, and the next one resumes after that group's last row.  A static-only
partition (no clustering rows) is a group of its own.

Without ``GROUP BY``, an aggregating selection gives one row for all the rows the query selects,
also when there are none (``count(*)`` is 0, ``min(v)`` null); with ``GROUP BY`` no row means no
group.

One idea split for size with ``select.py``, ``selection.py``, ``projection.py``, ``read.py``, ``cell_meta.py``
and ``select_result.py``: the SELECT pipeline (its aggregates and GROUP BY here).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Iterable, Sequence

from ..cql import ast
from ..errors import InvalidRequest
from ..schema.model import Table
from .selection import Selected, group_state

if TYPE_CHECKING:
    from .select import CqlRow, PagingState


class PartitionCounter:
    """Rows (or groups) taken per partition, for PER PARTITION LIMIT and paging states: ``admit`` says
    whether one more of partition ``(token, pk)`` is taken (and counts it); ``count`` is how many of the
    current partition were."""

    __slots__ = ("limit", "partition", "count")

    def __init__(self, limit: int | None, resume: "PagingState | None") -> None:
        self.limit = limit
        self.partition = (resume.token, resume.pk) if resume is not None else None
        self.count = resume.partition_count if resume is not None else 0

    def enter(self, token: int, pk: bytes) -> None:
        """Rows of partition ``(token, pk)`` come next."""
        if (token, pk) != self.partition:
            self.partition = (token, pk)
            self.count = 0

    def admit(self, token: int, pk: bytes) -> bool:
        self.enter(token, pk)
        if self.limit is not None and self.count >= self.limit:
            return False
        self.count += 1
        return True


def group_by_width(stmt: ast.Select, table: Table) -> int | None:
    """How many clustering columns a ``GROUP BY`` groups on (None without ``GROUP BY``), after checking
    that it names a primary key prefix in order (ScyllaDB's ``prepare_group_by``)."""
    if not stmt.group_by:
        return None
    keys = list(table.partition_key) + list(table.clustering_key)
    eq_restricted = {r.lhs.name for r in stmt.where if r.op == "=" and isinstance(r.lhs, ast.ColumnRef)}
    expected = 0
    for name in stmt.group_by:
        col = table.column(name)
        if col is None:
            raise InvalidRequest(f"Group by unknown column {name}")
        if not col.is_primary_key:
            raise InvalidRequest(f"Group by non-primary-key column {name}")
        while expected < len(keys) and keys[expected].name != col.name and keys[expected].name in eq_restricted:
            expected += 1
        if expected >= len(keys) or keys[expected].name != col.name:
            raise InvalidRequest(f"Group by column {name} is out of order")
        expected += 1
    if expected < len(table.partition_key):
        raise InvalidRequest("GROUP BY must include the entire partition key")
    return max(0, expected - len(table.partition_key))


def check_grouping(stmt: ast.Select, width: int | None, aggregating: bool, per_partition_limit: int | None) -> None:
    """What GROUP BY and aggregates refuse in combination with DISTINCT and PER PARTITION LIMIT."""
    if stmt.distinct and width:
        raise InvalidRequest("Grouping on clustering columns is not allowed for SELECT DISTINCT queries")
    if aggregating and width is None and per_partition_limit is not None:
        raise InvalidRequest("PER PARTITION LIMIT is not allowed with aggregate queries.")


def group_key(width: int | None) -> Callable[["CqlRow"], Any]:
    """The key of a row's group: its partition and the first ``width`` clustering values (a static-only
    row, without clustering, is a group of its own); one group for all rows without GROUP BY."""
    if width is None:
        return lambda r: None
    if width == 0:
        return lambda r: (r.token, r.pk)
    return lambda r: (r.token, r.pk, None if r.row is None else r.row.clustering[:width])


def aggregate(selected: Sequence[Selected], rows: Iterable["CqlRow"], width: int | None,
              keep: Callable[["CqlRow"], bool], limit: int | None, per_partition_limit: int | None,
              page_size: int | None, resume: "PagingState | None",
              position: Callable[["CqlRow", int, int, int], "PagingState"]) -> tuple[list[list[Any]], "PagingState | None"]:
    """The result rows of an aggregating or grouping selection over ``rows`` (those ``keep`` accepts), and
    where the next page starts (``position(last row of the last group, groups returned, groups of its
    partition returned, rows consumed)``, None after the last page)."""
    key_of = group_key(width)
    out: list[list[Any]] = []
    returned = first = resume.returned if resume is not None else 0
    groups = PartitionCounter(per_partition_limit, resume)
    consumed = resume.offset if resume is not None and resume.offset >= 0 else 0
    current: Any = object()
    states: list | None = None  # the open group's states; None when no group is open or it is skipped
    last: "CqlRow | None" = None
    next_state = None
    for r in rows:
        consumed += 1
        if not keep(r):
            continue
        k = key_of(r)
        if k == current:
            if states is not None:
                for st in states:
                    st.add(r)
                last = r
            continue
        if states is not None:  # r starts a new group: the open one is complete
            out.append([st.result() for st in states])
            returned += 1
            states = None
            if limit is not None and returned >= limit:
                break
            if page_size is not None and returned - first >= page_size:
                next_state = position(last, returned, groups.count, consumed - 1)
                break
        current = k
        if not groups.admit(r.token, r.pk):
            continue
        states = [group_state(s) for s in selected]
        for st in states:
            st.add(r)
        last = r
    else:
        if states is not None:
            out.append([st.result() for st in states])
            if page_size is not None and returned + 1 - first >= page_size and last is not None:
                # a full page says where the next starts, as a page of rows does (even when none follows)
                next_state = position(last, returned + 1, groups.count, consumed)
        elif width is None and not out:  # no row at all: one row of empty aggregates
            out.append([group_state(s).result() for s in selected])
    return out, next_state

