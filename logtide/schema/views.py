"""Materialized views in the catalog: what a view is, its DDL with ScyllaDB's rules and messages, and its
``system_schema.views`` rows.

A view is a table of its keyspace (``Keyspace.tables``) whose ``Table.view`` is a :class:`ViewInfo` naming
its base table: reads treat it as any table, writes to it are refused, and the engine keeps its rows from the
base table's writes (``engine/views.py``).  The statements follow ScyllaDB's ``create_view_statement``,
``alter_view_statement`` and ``drop_view_statement`` (and ``migration_manager``'s drop rules); the catalog
(``catalog.py``) checks the keyspace and hands them here; DESCRIBE (``describe.py``) and ``system_schema``
(``system_schema.py``) call the functions at the end with their own helpers.
"""

from __future__ import annotations

import re
import uuid
from dataclasses import dataclass, replace
from functools import cached_property
from typing import Any, Callable, Iterator, Mapping

from logtide.cql import ast
from logtide.cql.view_ast import AlterView, CreateView, DropView
from logtide.errors import AlreadyExists, ConfigurationException, InvalidRequest
from logtide.result import SchemaChange
from logtide.schema import properties
from logtide.schema.model import CLUSTERING, PARTITION_KEY, REGULAR, STATIC, Column, Keyspace, Table

NAME_LENGTH = 192
NAME_RE = re.compile(r"\w+", re.ASCII)
_COMPARISONS = ("=", "!=", "<", "<=", ">", ">=", "IN")


@dataclass(frozen=True)
class ViewInfo:
    """What makes a table a materialized view (``system_schema.views``): its base table (name and id), whether
    it selects every base column (``SELECT *``: columns added to the base later join it) and its WHERE clause
    as ScyllaDB stores it (``v IS NOT null AND p IS NOT null``)."""

    base_table: str
    base_id: uuid.UUID
    include_all_columns: bool
    where_clause: str

    def to_doc(self) -> dict[str, Any]:
        return {"base_table": self.base_table, "base_id": str(self.base_id),
                "include_all_columns": self.include_all_columns, "where_clause": self.where_clause}

    @classmethod
    def from_doc(cls, d: Mapping[str, Any]) -> "ViewInfo":
        return cls(d["base_table"], uuid.UUID(d["base_id"]), bool(d["include_all_columns"]), d["where_clause"])

    @cached_property
    def relations(self) -> tuple[ast.Relation, ...]:
        """The WHERE clause parsed back into relations."""
        if not self.where_clause:
            return ()
        from logtide.cql.parser import parse
        return parse(f"SELECT * FROM t WHERE {self.where_clause}").statement.where


Comparison = tuple[tuple[str, ...], str, tuple[tuple[bytes, ...], ...], tuple[Callable[[bytes], bytes], ...]]


@dataclass(frozen=True)
class ViewFilter:
    """A view's WHERE clause over a base row's values, as ScyllaDB evaluates it (``db/view/view.cc``:
    ``partition_key_matches``, ``clustering_prefix_matches``, ``matches_view_filter``): every named column non-null
    (``IS NOT NULL``, and every column of the view's key), each comparison true, and the partition's token within
    the ``token()`` restrictions.  A comparison names one column, or several for a multi-column relation (their
    values compared as a tuple, column by column in each type's order, as a SELECT compares them); its operands
    are tuples of serialized values."""

    not_null: tuple[str, ...]
    comparisons: tuple[Comparison, ...]
    token_lo: tuple[int, bool] | None = None  # (bound, inclusive)
    token_hi: tuple[int, bool] | None = None

    @property
    def needs_token(self) -> bool:
        """Whether :meth:`accepts` needs the partition's token (the clause restricts ``token(...)``)."""
        return self.token_lo is not None or self.token_hi is not None

    def accepts(self, values: Mapping[str, bytes | None], token: int | None = None) -> bool:
        """Whether a base row with these serialized values (None for null), in a partition of this token (when
        :attr:`needs_token`), has a row in the view."""
        for name in self.not_null:
            if values.get(name) is None:
                return False
        for names, op, operands, orders in self.comparisons:
            row = tuple(values.get(n) for n in names)
            if None in row:
                return False
            key = tuple(order(v) for order, v in zip(orders, row))  # type: ignore[arg-type]
            if op == "IN":
                if not any(key == tuple(order(v) for order, v in zip(orders, o)) for o in operands):
                    return False
                continue
            other = tuple(order(v) for order, v in zip(orders, operands[0]))
            if not ((op == "=" and key == other) or (op == "!=" and key != other) or (op == "<" and key < other)
                    or (op == "<=" and key <= other) or (op == ">" and key > other) or (op == ">=" and key >= other)):
                return False
        if self.token_lo is not None and token is not None:
            bound, inclusive = self.token_lo
            if token < bound or (token == bound and not inclusive):
                return False
        if self.token_hi is not None and token is not None:
            bound, inclusive = self.token_hi
            if token > bound or (token == bound and not inclusive):
                return False
        return True


def view_filter(view: Table, base: Table) -> ViewFilter:
    """The :class:`ViewFilter` of ``view`` over rows of ``base``."""
    from logtide.schema import types as T

    not_null = [c.name for c in view.primary_key]
    comparisons: list[Comparison] = []
    lo: tuple[int, bool] | None = None
    hi: tuple[int, bool] | None = None
    for rel in view.view.relations:
        terms = rel.rhs.items if isinstance(rel.rhs, ast.InValues) else (rel.rhs,)
        if isinstance(rel.lhs, ast.TokenOf):
            value = int(T.term_to_value(rel.rhs, T.BIGINT, "partition key token"))
            if rel.op in ("=", ">", ">="):
                lo = _tighter(lo, (value, rel.op != ">"), 1)
            if rel.op in ("=", "<", "<="):
                hi = _tighter(hi, (value, rel.op != "<"), -1)
            continue
        names = rel.lhs.columns if isinstance(rel.lhs, ast.ColumnTuple) else (rel.lhs.name,)
        columns = [base.column(n) for n in names]
        if any(c is None for c in columns):
            continue  # a column dropped since: ScyllaDB refuses to drop a column a view uses
        if rel.op == "IS NOT":
            not_null.extend(c.name for c in columns)
            continue
        if isinstance(rel.lhs, ast.ColumnTuple):
            ttype = T.TupleType(tuple(c.type for c in columns))
            tuples = [T.term_to_value(t, ttype, "(" + ",".join(names) + ")") for t in terms]
            operands = tuple(tuple(c.type.serialize(x) for c, x in zip(columns, tup)) for tup in tuples)
        else:
            column = columns[0]
            values = (column.type.serialize(T.term_to_value(t, column.type, column.name)) for t in terms)
            operands = tuple((v,) for v in values if v is not None)
        comparisons.append((tuple(c.name for c in columns), rel.op, operands,
                            tuple(c.type.comparable for c in columns)))
    return ViewFilter(tuple(dict.fromkeys(not_null)), tuple(comparisons), lo, hi)


def _tighter(old: tuple[int, bool] | None, new: tuple[int, bool], sign: int) -> tuple[int, bool]:
    """The tighter of two token bounds (``sign`` 1: lower bounds, -1: upper bounds)."""
    if old is None or (new[0] - old[0]) * sign > 0 or (new[0] == old[0] and not new[1]):
        return new
    return old


def ire(message: str) -> InvalidRequest:
    return InvalidRequest(message)


# --------------------------------------------------------------------------
# Catalog lookups
# --------------------------------------------------------------------------


def catalog_views(catalog: Any) -> Iterator[Table]:
    """Every materialized view of ``catalog``, keyspace by keyspace (``Catalog.all_keyspaces``' order), by name:
    the one walk of the catalog for views (``system_schema.views``, the view-build tables, ``views_by_base``)."""
    for ks in catalog.all_keyspaces():
        for name in sorted(ks.tables):
            table = ks.tables[name]
            if table.view is not None:
                yield table


def views_by_base(catalog: Any) -> dict[int, tuple[tuple[Table, ViewFilter], ...]]:
    """``Catalog.views_by_base``: every base table's views with their filters, by the base's store id."""
    out: dict[int, list[tuple[Table, ViewFilter]]] = {}
    for view in catalog_views(catalog):
        base = catalog.keyspaces[view.keyspace].tables.get(view.view.base_table)
        if base is not None:
            out.setdefault(base.store_id, []).append((view, view_filter(view, base)))
    return {k: tuple(v) for k, v in out.items()}


def views_of(ks: Keyspace, table: str) -> list[Table]:
    """The materialized views of base table ``table`` in ``ks``, by name."""
    return [t for _, t in sorted(ks.tables.items()) if t.view is not None and t.view.base_table == table]


# --------------------------------------------------------------------------
# CREATE MATERIALIZED VIEW
# --------------------------------------------------------------------------

Outcome = tuple[Mapping[str, Keyspace], SchemaChange | None, int]


def _selected(stmt: CreateView, base: Table) -> list[Column] | None:
    """The base columns the SELECT clause names (None for ``*``), with ScyllaDB's checks."""
    if stmt.selectors is None:
        return None
    out = []
    for sel in stmt.selectors:
        if sel.alias is not None:
            raise ire("Cannot use alias when defining a materialized view")
        if not isinstance(sel.expr, ast.ColumnRef):
            raise ire("Cannot use general expressions when defining a materialized view")
        column = base.column(sel.expr.name)
        if column is None:
            raise ire(f"Unknown column name detected in CREATE MATERIALIZED VIEW statement: {sel.expr.name}")
        if column not in out:
            out.append(column)
    return out


def _where_columns(stmt: CreateView, base: Table) -> tuple[set[str], dict[str, str]]:
    """The base columns the WHERE clause says ``IS NOT NULL`` and those it otherwise restricts (name -> op; a
    multi-column relation restricts each of its columns, a ``token()`` relation each partition key column, as
    ScyllaDB's ``statement_restrictions::is_restricted`` counts them), refusing the relations a view's filter
    cannot hold.  Multi-column and ``token()`` relations are checked as the SELECT of the view checks them
    (``engine.views.check_where``)."""
    from logtide.schema import types as T

    not_null: set[str] = set()
    restricted: dict[str, str] = {}
    for rel in stmt.where:
        if isinstance(rel.lhs, (ast.ColumnTuple, ast.TokenOf)):
            for name in rel.lhs.columns:
                restricted.setdefault(name, rel.op)
            continue
        if not isinstance(rel.lhs, ast.ColumnRef):
            raise ire("Only restrictions of columns (=, !=, <, <=, >, >=, IN, IS NOT NULL), multi-column relations "
                      "and token() are supported in the WHERE clause of a materialized view by logtide")
        name = rel.lhs.name
        column = base.column(name)
        if column is None:
            raise ire(f"Undefined column name {name} in table {base.keyspace}.{base.name}")
        if rel.op == "IS NOT":
            not_null.add(name)
            continue
        if rel.op not in _COMPARISONS:
            raise ire(f"Only restrictions of columns (=, !=, <, <=, >, >=, IN, IS NOT NULL), multi-column relations "
                      f"and token() are supported in the WHERE clause of a materialized view by logtide (got {rel.op} "
                      f"on {name})")
        if isinstance(rel.rhs, ast.BindMarker):
            raise ire("Cannot use query parameters in CREATE MATERIALIZED VIEW statements")
        terms = rel.rhs.items if isinstance(rel.rhs, ast.InValues) else (rel.rhs,)
        for t in terms:
            if isinstance(t, ast.BindMarker):
                raise ire("Cannot use query parameters in CREATE MATERIALIZED VIEW statements")
            T.term_to_value(t, column.type, name)  # a value of the column's type, else its error
        restricted.setdefault(name, rel.op)
    return not_null, restricted


def _view_key(stmt: CreateView, base: Table, filtered: set[str]) -> tuple[list[Column], list[Column], Column | None]:
    """The view's partition and clustering key columns (base columns), and the one non-key base column among
    them, with ``validate_primary_key``'s checks."""
    seen: set[str] = set()
    non_pk: Column | None = None
    keys: tuple[list[Column], list[Column]] = ([], [])
    base_pk = {c.name for c in base.primary_key}
    for target, names in zip(keys, (stmt.partition_key, stmt.clustering_key)):
        for name in names:
            column = base.column(name)
            if column is None:
                raise ire(f"Unknown column name detected in CREATE MATERIALIZED VIEW statement: {name}")
            if name in seen:
                raise ire(f"Duplicate entry found in PRIMARY KEY: {name}")
            seen.add(name)
            target.append(column)
            if column.type.is_multicell:
                raise ire(f"Cannot use MultiCell column '{name}' in PRIMARY KEY of materialized view")
            if column.type.references_duration():
                raise ire(f"Cannot use Duration column '{name}' in PRIMARY KEY of materialized view")
            if column.is_static:
                raise ire(f"Cannot use Static column '{name}' in PRIMARY KEY of materialized view")
            if name not in base_pk:
                if non_pk is not None:
                    raise ire(f"Cannot include more than one non-primary key column '{name}' in materialized view "
                              "primary key")
                non_pk = column
            lone_pk = column.kind == PARTITION_KEY and len(base.partition_key) == 1
            if not lone_pk and name not in filtered:
                raise ire(f"Primary key column '{name}' is required to be filtered by 'IS NOT NULL'")
    return keys[0], keys[1], non_pk


def _clustering_orders(stmt: CreateView) -> dict[str, str]:
    """ScyllaDB's CLUSTERING ORDER BY of a view: a subset of the view's clustering columns (the rest ascending)."""
    orders = {c: "asc" for c in stmt.clustering_key}
    for item in stmt.clustering_order:
        if item.column not in orders:
            raise ire(f"CLUSTERING ORDER BY lists {item.column} which is not a clustering column in the view")
        orders[item.column] = "desc" if item.descending else "asc"
    return orders


def view_options(given: tuple[tuple[str, Any], ...], previous: Mapping[str, Any] | None) -> dict[str, Any]:
    """A view's table options after ``WITH`` (``view_prop_defs``): no CDC, no default TTL, no COMPACT STORAGE;
    ``synchronous_updates`` (ScyllaDB's) is accepted as a boolean (every view of logtide is synchronous)."""
    plain = [(n, v) for n, v in given if n != "synchronous_updates"]
    sync = [v for n, v in given if n == "synchronous_updates"]
    options, cdc = properties.table_params(plain, previous, None)
    if cdc is not None:
        raise ire("Cannot enable CDC for a materialized view")
    if int(options.get("default_time_to_live", 0) or 0) > 0:
        raise ire("Cannot set or alter default_time_to_live for a materialized view. Data in a materialized view "
                  "always expire at the same time than the corresponding data in the parent table.")
    if previous is not None and int(options.get("gc_grace_seconds", 1)) == 0:
        raise ire("Cannot alter gc_grace_seconds of a materialized view to 0, since this value is used to TTL "
                  "undelivered updates. Setting gc_grace_seconds too low might cause undelivered updates to expire "
                  "before being replayed.")
    if sync:
        text = str(sync[-1]).lower()
        if text not in ("true", "false"):
            raise ConfigurationException(f"Invalid value for synchronous_updates: {sync[-1]!r} (true or false)")
        options["synchronous_updates"] = text
    return options


def relation_text(rel: ast.Relation) -> str:
    """One relation of a view's WHERE clause as ScyllaDB renders it from its expression tree (``{:user}``): names
    quoted where they must be, ``(a, b)`` and ``token(p)`` on the left, ``IS NOT null``, ``IN (x, y)``; literals
    as written, a string's quotes doubled so that the text parses back (ScyllaDB writes them undoubled)."""
    from logtide.schema.types import maybe_quote
    from logtide.schema.types_literal import term_text

    lhs = rel.lhs
    if isinstance(lhs, ast.ColumnRef):
        left = maybe_quote(lhs.name)
    elif isinstance(lhs, ast.TokenOf):
        left = "token(" + ", ".join(maybe_quote(n) for n in lhs.columns) + ")"
    else:
        left = "(" + ", ".join(maybe_quote(n) for n in lhs.columns) + ")"
    if rel.op == "IS NOT":
        return f"{left} IS NOT null"
    if isinstance(rel.rhs, ast.InValues):
        return f"{left} {rel.op} (" + ", ".join(term_text(t, cql=True) for t in rel.rhs.items) + ")"
    return f"{left} {rel.op} {term_text(rel.rhs, cql=True)}"


def where_clause(relations: tuple[ast.Relation, ...]) -> str:
    """A view's WHERE clause as ScyllaDB stores it (``relations_to_where_clause``): its relations rendered
    (:func:`relation_text`), joined by `` AND ``."""
    return " AND ".join(relation_text(rel) for rel in relations)


def order_columns(columns: list[Column]) -> tuple[Column, ...]:
    """Partition key, clustering key (by position), then static and regular columns, each sorted by name."""
    rank = {PARTITION_KEY: 0, CLUSTERING: 1, STATIC: 2, REGULAR: 3}
    return tuple(sorted(columns, key=lambda c: (rank[c.kind], c.position if c.is_primary_key else 0, c.name)))


def create_view(cat: Any, ks_name: str, stmt: CreateView) -> Outcome:
    """``CREATE MATERIALIZED VIEW`` in keyspace ``ks_name`` (the catalog checked it may be changed): ScyllaDB's
    ``create_view_statement::prepare_view`` checks in its order."""
    base_ks = stmt.base.keyspace if stmt.base.keyspace is not None else ks_name
    if base_ks != ks_name:
        raise ire(f"Cannot create a materialized view on a table in a separate keyspace ('{base_ks}' != '{ks_name}')")
    name = stmt.name.name
    if not NAME_RE.fullmatch(name):
        raise ire(f'"{name}" is not a valid materialized view name (must contain alphanumeric character only: '
                  '[0-9A-Za-z] or the underscore)')
    if len(name) > NAME_LENGTH:
        raise ire(f'materialized view names shouldn\'t be more than {NAME_LENGTH} characters long (got "{name}")')
    ks = cat._existing_keyspace(ks_name)
    base = ks.tables.get(stmt.base.name)
    if base is None:
        raise ire(f"unconfigured table {stmt.base.name}")
    if name in ks.tables:
        if stmt.if_not_exists:
            return cat.keyspaces, None, cat.next_store_id
        raise AlreadyExists(f'Cannot add already existing table "{name}" to keyspace "{ks_name}"',
                            keyspace=ks_name, table=name)
    options = view_options(stmt.options, None)
    if base.is_counter_table:
        raise ire("Materialized views are not supported on counter tables")
    if base.view is not None:
        raise ire("Materialized views cannot be created against other materialized views")
    if base.cdc_base is not None:
        raise ire("Materialized views cannot be created on CDC Log tables")
    if base.gc_grace_seconds == 0:
        raise ire(f"Cannot create materialized view '{name}' for base table '{base.name}' with gc_grace_seconds of 0, "
                  "since this value is used to TTL undelivered updates. Setting gc_grace_seconds too low might cause "
                  "undelivered updates to expire before being replayed.")
    selected = _selected(stmt, base)
    not_null, restricted = _where_columns(stmt, base)
    partition, clustering, non_pk = _view_key(stmt, base, not_null | set(restricted))
    key_names = {c.name for c in partition + clustering}
    for column in base.columns:
        included = selected is None or column in selected
        if included and column.is_static:
            raise ire(f"Unable to include static column '{column.name}' which would be included by Materialized View "
                      "SELECT * statement")
    missing = [c.name for c in base.primary_key if c.name not in key_names]
    if missing:
        raise ire(f"Cannot create Materialized View {name} without primary key columns from base {base.name} "
                  f"({', '.join(missing)})")
    if not partition:
        raise ire("Must select at least a column for a Materialized View")
    orders = _clustering_orders(stmt)
    base_pk = {c.name for c in base.primary_key}
    non_pk_restricted = [n for n in restricted if n not in base_pk]
    if non_pk_restricted and not (len(non_pk_restricted) == 1 and non_pk is not None
                                  and non_pk_restricted[0] == non_pk.name):
        raise ire(f"Non-primary key columns cannot be restricted in the SELECT statement used for materialized view "
                  f"{name} creation (got restrictions on: {', '.join(non_pk_restricted)})")
    stray = [n for n in not_null if n not in key_names]
    if stray:
        raise ire("The IS NOT NULL restriction is allowed only columns which are part of the view's primary key, "
                  f"found columns: {', '.join(stray)}. The flag strict_is_not_null_in_views can be used to turn this "
                  "error into a warning, or to silence it. (true - error, warn - warning, false - silent)")
    table_id = properties.table_id_option(stmt.options)
    try:
        vid = uuid.UUID(table_id) if table_id is not None else uuid.uuid1()
    except ValueError:
        raise ConfigurationException("Invalid table id") from None
    taken = next((t for k in cat.keyspaces.values() for t in k.tables.values() if t.id == vid), None)
    if taken is not None:
        raise ire(f"Table with ID {vid} already exists: {taken.keyspace}.{taken.name}")
    columns = [Column(c.name, c.type, PARTITION_KEY, i) for i, c in enumerate(partition)]
    columns += [Column(c.name, c.type, CLUSTERING, i, orders[c.name]) for i, c in enumerate(clustering)]
    columns += [Column(c.name, c.type, REGULAR) for c in base.columns
                if c.name not in key_names and not c.is_static and (selected is None or c in selected)]
    info = ViewInfo(base.name, base.id, selected is None, where_clause(stmt.where))
    view = Table(ks_name, name, vid, cat.next_store_id, order_columns(columns), options, None, view=info)
    new_ks = replace(ks, tables={**ks.tables, name: view})
    return ({**cat.keyspaces, ks_name: new_ks}, SchemaChange("CREATED", "TABLE", ks_name, name),
            cat.next_store_id + 1)


# --------------------------------------------------------------------------
# ALTER / DROP MATERIALIZED VIEW
# --------------------------------------------------------------------------


def _existing_view(cat: Any, name: ast.QualifiedName, ks_name: str) -> tuple[Keyspace, Table | None]:
    ks = cat.keyspaces.get(ks_name)
    if ks is None:
        raise ire(f"Keyspace '{ks_name}' doesn't exist")
    return ks, ks.tables.get(name.name)


def alter_view(cat: Any, ks_name: str, stmt: AlterView) -> Outcome:
    """``ALTER MATERIALIZED VIEW v WITH ...`` (``alter_view_statement``)."""
    ks, view = _existing_view(cat, stmt.name, ks_name)
    if view is None:
        raise ConfigurationException(f"Cannot update non existing materialized view '{stmt.name.name}' in keyspace "
                                     f"'{ks.name}'.")
    if view.view is None:
        raise ire("Cannot use ALTER MATERIALIZED VIEW on Table. (Did you mean ALTER TABLE)?")
    if not stmt.options:
        raise ire("ALTER MATERIALIZED VIEW WITH invoked, but no parameters found")
    if any(n == "id" for n, _ in stmt.options):
        raise ConfigurationException("Cannot alter table id.")
    options = view_options(stmt.options, view.options)
    new_ks = replace(ks, tables={**ks.tables, view.name: replace(view, options=options)})
    return ({**cat.keyspaces, ks.name: new_ks}, SchemaChange("UPDATED", "TABLE", ks.name, view.name),
            cat.next_store_id)


def drop_view(cat: Any, ks_name: str, stmt: DropView) -> Outcome:
    """``DROP MATERIALIZED VIEW [IF EXISTS] v`` (its rows go with it)."""
    ks, view = _existing_view(cat, stmt.name, ks_name)
    if view is None or view.view is None:
        if stmt.if_exists and view is None:
            return cat.keyspaces, None, cat.next_store_id
        if view is None:
            raise ConfigurationException(f"Cannot drop non existing materialized view '{stmt.name.name}' in keyspace "
                                         f"'{ks.name}'.")
        raise ire("Cannot use DROP MATERIALIZED VIEW on Table. (Did you mean DROP TABLE)?")
    new_ks = replace(ks, tables={n: t for n, t in ks.tables.items() if n != view.name})
    return ({**cat.keyspaces, ks.name: new_ks}, SchemaChange("DROPPED", "TABLE", ks.name, view.name),
            cat.next_store_id)


# --------------------------------------------------------------------------
# What base-table DDL must respect
# --------------------------------------------------------------------------


def check_drop_table(ks: Keyspace, table: Table) -> None:
    """DROP TABLE: not of a view, not of a base that still has views (``migration_manager``'s messages)."""
    if table.view is not None:
        raise ire("Cannot use DROP TABLE on Materialized View. (Did you mean DROP MATERIALIZED VIEW)?")
    views = views_of(ks, table.name)
    if views:
        raise ire(f"Cannot drop table when materialized views still depend on it "
                  f"({ks.name}.{{{', '.join(v.name for v in views)}}})")


def check_alter_table(table: Table) -> None:
    """ALTER TABLE of a view is refused (``alter_table_statement``)."""
    if table.view is not None:
        raise ire("Cannot use ALTER TABLE on Materialized View. (Did you mean ALTER MATERIALIZED VIEW)?")


def check_drop_column(ks: Keyspace, table: Table, column: str) -> None:
    """A base column a view needs cannot be dropped: one it selects, has in its key or its WHERE clause, and,
    when the view's key has no regular base column, any regular column (ScyllaDB keeps the view row alive
    through such "virtual columns")."""
    base_pk = {c.name for c in table.primary_key}
    regular = table.column(column) is not None and table.column(column).kind == REGULAR
    for view in views_of(ks, table.name):
        virtual = regular and all(c.name in base_pk for c in view.primary_key)
        if virtual or view.column(column) is not None or any(
                isinstance(r.lhs, ast.ColumnRef) and r.lhs.name == column for r in view.view.relations):
            raise ire(f"Cannot drop column {column} from base table {ks.name}.{table.name}: materialized view "
                      f"{view.name} needs this column")


def follow_base(ks: Keyspace, old: Table, new: Table) -> Keyspace:
    """The views of a base table after an ALTER TABLE: a column added joins every ``SELECT *`` view; a renamed
    key column is renamed in each view (and in its WHERE clause)."""
    views = views_of(ks, old.name)
    if not views:
        return ks
    tables = dict(ks.tables)
    renamed = {o.name: n.name for o, n in zip(old.primary_key, new.primary_key) if o.name != n.name}
    added = [c for c in new.columns if old.column(c.name) is None and not c.is_static and c.name not in renamed.values()]
    for view in views:
        columns = list(view.columns)
        if view.view.include_all_columns:
            columns += [Column(c.name, c.type, REGULAR) for c in added if view.column(c.name) is None]
        info = view.view
        if renamed:
            columns = [replace(c, name=renamed.get(c.name, c.name)) for c in columns]
            info = replace(info, where_clause=_renamed_where(info, renamed))
        tables[view.name] = replace(view, columns=order_columns(columns), view=info)
    return replace(ks, tables=tables)


def _renamed_where(info: ViewInfo, renamed: Mapping[str, str]) -> str:
    """The WHERE clause with base columns renamed (ScyllaDB's ``rename_columns_in_where_clause``): parsed into its
    relations, each name replaced in them, rendered again."""
    def rename(name: str) -> str:
        return renamed.get(name, name)

    out = []
    for rel in info.relations:
        lhs = rel.lhs
        if isinstance(lhs, ast.ColumnRef):
            lhs = ast.ColumnRef(rename(lhs.name))
        elif isinstance(lhs, (ast.ColumnTuple, ast.TokenOf)):
            lhs = replace(lhs, columns=tuple(rename(n) for n in lhs.columns))
        out.append(replace(rel, lhs=lhs))
    return where_clause(tuple(out))


HANDLERS: dict[type, Callable[[Any, str, Any], Outcome]] = {
    CreateView: create_view,
    AlterView: alter_view,
    DropView: drop_view,
}


# --------------------------------------------------------------------------
# DESCRIBE and system_schema.views
# --------------------------------------------------------------------------


def describe_view(view: Table, table_properties: Callable[[Table], list[str]], with_internals: bool = False) -> str:
    """``CREATE MATERIALIZED VIEW ks.v AS\\n    SELECT ...\\n    FROM ks.t\\n    WHERE ...\\n    PRIMARY KEY (...)\\n
    WITH ...;`` as ScyllaDB's ``schema::describe`` prints a view (``table_properties``: DESCRIBE's WITH items)."""
    from logtide.schema.types import maybe_quote as q

    info = view.view
    select = "*" if info.include_all_columns else ", ".join(q(c.name) for c in view.columns)
    pk = [q(c.name) for c in view.partition_key]
    head = f"({', '.join(pk)})" if len(pk) > 1 else pk[0]
    key = "PRIMARY KEY (" + ", ".join([head] + [q(c.name) for c in view.clustering_key]) + ")"
    items = table_properties(view)
    if view.clustering_key:
        order = ", ".join(f"{q(c.name)} {'DESC' if c.reversed else 'ASC'}" for c in view.clustering_key)
        items.insert(0, f"CLUSTERING ORDER BY ({order})")
    if "synchronous_updates" in view.options:
        items.append(f"synchronous_updates = {view.options['synchronous_updates']}")
    ident = f"ID = {view.id}\nAND " if with_internals else ""
    return (f"CREATE MATERIALIZED VIEW {q(view.keyspace)}.{q(view.name)} AS\n    SELECT {select}\n"
            f"    FROM {q(view.keyspace)}.{q(info.base_table)}\n    WHERE {info.where_clause}\n    {key}\n"
            f"    WITH {ident}" + "\n    AND ".join(items) + ";\n")


def view_descriptions(ks: Keyspace, table: Table, table_properties: Callable[[Table], list[str]],
                      with_internals: bool = False) -> list[tuple[str, str, str]]:
    """(type, name, statement) of each view of ``table``, by name: what DESCRIBE TABLE adds after the table."""
    return [("view", v.name, describe_view(v, table_properties, with_internals)) for v in views_of(ks, table.name)]


def views_rows(catalog: Any, table_row: Callable[[Table], dict[str, Any]],
               index_views: Callable[[Keyspace], list[Table]]) -> list[dict[str, Any]]:
    """``system_schema.views``: one row per view, and per secondary index the view ScyllaDB backs it with
    (``index_views``: ``indexes.index_views``), by name in each keyspace; its options as ``system_schema.tables``
    has them (``table_row``), with its base table's name and id, ``include_all_columns`` and ``where_clause``."""
    rows = []
    for ks in catalog.all_keyspaces():
        views = [t for t in ks.tables.values() if t.view is not None] + index_views(ks)
        rows.extend(_view_row(view, table_row) for view in sorted(views, key=lambda v: v.name))
    return rows


def _view_row(view: Table, table_row: Callable[[Table], dict[str, Any]]) -> dict[str, Any]:
    assert view.view is not None
    row = table_row(view)
    del row["table_name"], row["flags"]
    row.update(view_name=view.name, base_table_id=view.view.base_id, base_table_name=view.view.base_table,
               include_all_columns=view.view.include_all_columns, where_clause=view.view.where_clause)
    return row


def view_build_rows(catalog: Any, host_id: uuid.UUID, building: Mapping[int, str | None],
                    table: str) -> list[dict[str, Any]]:
    """The rows of ScyllaDB's view-build tables (``building``: view or index store id -> last base token built,
    of the builds in progress): ``system.built_views`` (``table`` "built": the views built), ``system.
    views_builds_in_progress`` ("progress": the others, with ``last_token``) and ``system_distributed.
    view_build_status`` ("status": every view, ``STARTED`` or ``SUCCESS`` on this node).  A secondary index
    is there as the view ScyllaDB backs it with, ``<index>_index``."""
    rows = []
    for ks in catalog.all_keyspaces():
        views = {name: t.store_id for name, t in ks.tables.items() if t.view is not None}
        views.update((f"{ix.name}_index", ix.store_id) for t in ks.tables.values() for ix in t.indexes)
        for name in sorted(views):
            sid = views[name]
            row: dict[str, Any] = {"keyspace_name": ks.name, "view_name": name}
            in_progress = sid in building
            if table == "status":
                row.update(host_id=host_id, status="STARTED" if in_progress else "SUCCESS")
            elif table == "progress":
                if not in_progress:
                    continue
                row.update(generation_number=0, last_token=building[sid])
            elif in_progress:
                continue
            rows.append(row)
    return rows
