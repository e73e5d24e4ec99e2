"""The schema catalog: an immutable snapshot of every keyspace, table and user type.

``Catalog.apply`` executes one DDL statement (``logtide.cql.ast``) and returns
the new catalog with the ``SchemaChange`` to announce, validating the
statement with Cassandra 4's rules and messages (where the two differ and the
project asked for it, ScyllaDB's).  The system keyspaces (``system``,
``system_schema``) are not stored here: ``logtide.schema.system_schema``
defines them and the lookups below fall back to them.  Materialized views' statements and the rules base tables
follow because of them are in ``views.py``.
"""

from __future__ import annotations

import json
import re
import uuid
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Any, Callable, Iterable, Mapping

from logtide.cql import ast
from logtide.errors import AlreadyExists, ConfigurationException, InvalidRequest, Unauthorized
from logtide.result import SchemaChange
from logtide.schema import properties, row_ttl, types, views
from logtide.schema.model import (
    CLUSTERING,
    PARTITION_KEY,
    REGULAR,
    STATIC,
    Column,
    Keyspace,
    Table,
    UserTypeDef,
)

NO_KEYSPACE = "No keyspace has been specified. USE a keyspace, or explicitly specify keyspace.tablename"
NAME_RE = re.compile(r"\w+", re.ASCII)
NAME_LENGTH = 192  # ScyllaDB's schema::NAME_LENGTH, for keyspace and table names
NON_UDT_TYPE_NAMES = frozenset(
    {
        "ascii", "bigint", "blob", "boolean", "counter", "date", "decimal", "double", "duration",
        "float", "inet", "int", "smallint", "text", "time", "timestamp", "timeuuid", "tinyint",
        "uuid", "varchar", "varint", "list", "set", "map", "frozen", "tuple", "empty",
    }
)

Lookup = Callable[[str, str], Any]


def ire(message: str) -> InvalidRequest:
    """Shorthand for Cassandra's ``ire(...)``."""
    return InvalidRequest(message)


# --------------------------------------------------------------------------
# Type helpers
# --------------------------------------------------------------------------


def is_user_type(t: Any) -> bool:
    return isinstance(t, types.UserType)


def references_udt(t: Any, keyspace: str, name: str) -> bool:
    """Whether type ``t`` uses user type ``keyspace.name`` anywhere."""
    return bool(t.references_udt(keyspace, name))


def references_duration(t: Any) -> bool:
    return bool(t.references_duration())


def is_non_frozen_udt_expr(expr: ast.TypeExpr) -> bool:
    """Whether a type as written names a user type without ``frozen<>`` (a vector is frozen by itself)."""
    return expr.name not in NON_UDT_TYPE_NAMES and expr.dimension is None


def user_type_object(udt: UserTypeDef, frozen: bool = False) -> Any:
    """The ``types.UserType`` of a user type definition."""
    return types.UserType(udt.keyspace, udt.name, tuple(udt.field_names), tuple(udt.field_types), frozen)


def build_user_types(keyspace: str, specs: Mapping[str, tuple[tuple[str, ...], tuple[str, ...]]]) -> dict[str, UserTypeDef]:
    """User types of one keyspace from (field names, field type strings), resolving their references to each other."""
    built: dict[str, UserTypeDef] = {}

    def lookup(ks: str, name: str) -> Any:
        if ks != keyspace or name not in specs:
            return None
        return user_type_object(build(name))

    def build(name: str) -> UserTypeDef:
        if name not in built:
            names, type_strings = specs[name]
            field_types = tuple(types.parse_type_string(s, keyspace, lookup) for s in type_strings)
            built[name] = UserTypeDef(keyspace, name, tuple(names), field_types)
        return built[name]

    return {name: build(name) for name in specs}


def keyspace_lookup(keyspace: Keyspace) -> Lookup:
    """A ``lookup_udt`` function over the user types of one keyspace."""

    def lookup(ks: str, name: str) -> Any:
        udt = keyspace.types.get(name) if ks == keyspace.name else None
        return user_type_object(udt) if udt is not None else None

    return lookup


def rebuild_keyspace_types(keyspace: Keyspace) -> Keyspace:
    """Re-resolve every user type and table column type of a keyspace after a user type changed."""
    specs = {n: (u.field_names, tuple(t.cql() for t in u.field_types)) for n, u in keyspace.types.items()}
    udts = build_user_types(keyspace.name, specs)
    rebuilt = replace(keyspace, types=udts)
    lookup = keyspace_lookup(rebuilt)
    tables = {
        name: replace(
            t,
            columns=tuple(replace(c, type=types.parse_type_string(c.type.cql(), keyspace.name, lookup)) for c in t.columns),
        )
        for name, t in keyspace.tables.items()
    }
    return replace(rebuilt, tables=tables)


def order_columns(columns: Iterable[Column]) -> tuple[Column, ...]:
    """Partition key, clustering key (by position), then static and regular columns, each sorted by name."""
    cols = list(columns)
    rank = {PARTITION_KEY: 0, CLUSTERING: 1, STATIC: 2, REGULAR: 3}
    return tuple(sorted(cols, key=lambda c: (rank[c.kind], c.position if c.is_primary_key else 0, c.name)))


# --------------------------------------------------------------------------
# The catalog
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class Catalog:
    """All user keyspaces, the schema version, and the next storage id for a new table."""

    keyspaces: Mapping[str, Keyspace] = field(default_factory=dict)
    version: uuid.UUID = field(default_factory=uuid.uuid4)
    next_store_id: int = 1

    @classmethod
    def empty(cls) -> "Catalog":
        """A catalog with no user keyspace."""
        return cls()

    # ---- lookups ---------------------------------------------------------

    def find_keyspace(self, name: str) -> Keyspace | None:
        """A user, system or virtual keyspace, or None."""
        if name in self.keyspaces:
            return self.keyspaces[name]
        from logtide.schema.system_schema import system_keyspaces, virtual_keyspaces

        return system_keyspaces().get(name) or virtual_keyspaces().get(name)

    def keyspace(self, name: str) -> Keyspace:
        """A keyspace; InvalidRequest ``Keyspace 'x' does not exist`` when missing."""
        ks = self.find_keyspace(name)
        if ks is None:
            raise ire(f"Keyspace '{name}' does not exist")
        return ks

    def all_keyspaces(self) -> list[Keyspace]:
        """System and user keyspaces sorted by name."""
        from logtide.schema.system_schema import system_keyspaces

        merged = {**system_keyspaces(), **self.keyspaces}
        return [merged[n] for n in sorted(merged)]

    def find_table(self, keyspace: str, name: str) -> Table | None:
        ks = self.find_keyspace(keyspace)
        return ks.tables.get(name) if ks is not None else None

    def table(self, keyspace: str, name: str) -> Table:
        """A table; InvalidRequest ``unconfigured table x`` when missing (after checking the keyspace)."""
        ks = self.keyspace(keyspace)
        if name not in ks.tables:
            raise ire(f"unconfigured table {name}")
        return ks.tables[name]

    def user_type(self, keyspace: str, name: str) -> UserTypeDef:
        """A user type definition; InvalidRequest ``Unknown type ks.ut`` when missing."""
        ks = self.find_keyspace(keyspace)
        udt = ks.types.get(name) if ks is not None else None
        if udt is None:
            raise ire(f"Unknown type {keyspace}.{name}")
        return udt

    def lookup_udt(self, keyspace: str, name: str) -> Any:
        """The (non-frozen) ``types.UserType`` named ``keyspace.name``, or None."""
        ks = self.find_keyspace(keyspace)
        udt = ks.types.get(name) if ks is not None else None
        return user_type_object(udt) if udt is not None else None

    @cached_property
    def views_by_base(self) -> dict[int, tuple[tuple[Table, "views.ViewFilter"], ...]]:
        """Each base table's materialized views with their filters, by the base's store id (empty without views:
        the write path checks this first)."""
        return views.views_by_base(self)

    # ---- applying statements --------------------------------------------

    def apply(self, stmt: Any, current_keyspace: str | None, now_micros: int) -> tuple["Catalog", SchemaChange | None]:
        """Execute a DDL statement: the new catalog and its schema change (None when nothing changed)."""
        handler = _HANDLERS.get(type(stmt))
        if handler is None:
            raise TypeError(f"not a DDL statement: {type(stmt).__name__}")
        keyspaces, change, next_id = handler(self, stmt, current_keyspace, now_micros)
        if change is None or keyspaces == self.keyspaces:
            return self, None
        return Catalog(keyspaces, uuid.uuid4(), next_id), change

    def _with_keyspace(self, ks: Keyspace) -> dict[str, Keyspace]:
        return {**self.keyspaces, ks.name: ks}

    def _existing_keyspace(self, name: str) -> Keyspace:
        if name not in self.keyspaces:
            raise ire(f"Keyspace '{name}' doesn't exist")
        return self.keyspaces[name]

    def _resolve(self, expr: ast.TypeExpr, keyspace: Keyspace) -> Any:
        """Resolve a written type in ``keyspace`` (types of other keyspaces are refused by ``resolve_type``)."""
        return types.resolve_type(expr, keyspace.name, keyspace_lookup(keyspace))

    # ---- JSON ------------------------------------------------------------

    def to_json(self) -> str:
        """The catalog as JSON text (types as type strings)."""
        doc = {
            "format": 1,
            "version": str(self.version),
            "next_store_id": self.next_store_id,
            "keyspaces": [_keyspace_to_doc(ks) for ks in self.keyspaces.values()],
        }
        return json.dumps(doc, separators=(",", ":"))  # compact: the C encoder (indent would be pure Python)

    @classmethod
    def from_json(cls, text: str) -> "Catalog":
        """The inverse of ``to_json``."""
        doc = json.loads(text)
        keyspaces = {d["name"]: _keyspace_from_doc(d) for d in doc["keyspaces"]}
        return cls(keyspaces, uuid.UUID(doc["version"]), int(doc["next_store_id"]))


# --------------------------------------------------------------------------
# Statement handlers: (catalog, stmt, current keyspace, now) -> (keyspaces, change, next store id)
# --------------------------------------------------------------------------

Outcome = tuple[Mapping[str, Keyspace], SchemaChange | None, int]


def keyspace_of(name: str | None, current: str | None) -> str:
    """The keyspace a statement applies to."""
    ks = name if name is not None else current
    if ks is None:
        raise ire(NO_KEYSPACE)
    return ks


def check_modifiable(keyspace: str) -> None:
    """System keyspaces cannot be changed by DDL.  ``system`` and ``system_schema`` refuse it as ScyllaDB's access
    check does (``client_state::check_access_rules``: Unauthorized, ``system keyspace is not user-modifiable.``);
    logtide's other system keyspaces (ScyllaDB keeps real tables there) with an InvalidRequest."""
    from logtide.schema.system_schema import SCYLLA_SYSTEM_KEYSPACES, is_system_keyspace

    if keyspace.lower() in SCYLLA_SYSTEM_KEYSPACES:
        raise Unauthorized(f"{keyspace} keyspace is not user-modifiable.")
    if is_system_keyspace(keyspace):
        raise ire(f"System keyspace '{keyspace}' is not user-modifiable")


def _unchanged(cat: Catalog) -> Outcome:
    return cat.keyspaces, None, cat.next_store_id


def _create_keyspace(cat: Catalog, stmt: ast.CreateKeyspace, current: str | None, now: int) -> Outcome:
    check_modifiable(stmt.name)
    replication, durable = properties.keyspace_params(stmt.name, stmt.options)
    if stmt.name in cat.keyspaces:
        if stmt.if_not_exists:
            return _unchanged(cat)
        raise AlreadyExists(f'Cannot add existing keyspace "{stmt.name}"', keyspace=stmt.name)
    if replication["class"] == properties.LOCAL_STRATEGY:
        raise ire("Unable to use given strategy class: LocalStrategy is reserved for internal use.")
    if not NAME_RE.fullmatch(stmt.name):
        raise ire(f'"{stmt.name}" is not a valid keyspace name')
    if len(stmt.name) > NAME_LENGTH:
        raise ire(f'Keyspace names shouldn\'t be more than {NAME_LENGTH} characters long (got "{stmt.name}")')
    ks = Keyspace(stmt.name, replication, durable)
    return cat._with_keyspace(ks), SchemaChange("CREATED", "KEYSPACE", stmt.name), cat.next_store_id


def _alter_keyspace(cat: Catalog, stmt: ast.AlterKeyspace, current: str | None, now: int) -> Outcome:
    check_modifiable(stmt.name)
    ks = cat._existing_keyspace(stmt.name)
    replication, durable = properties.keyspace_params(stmt.name, stmt.options, (ks.replication, ks.durable_writes))
    if replication["class"] == properties.LOCAL_STRATEGY:
        raise ire("Unable to use given strategy class: LocalStrategy is reserved for internal use.")
    new = replace(ks, replication=replication, durable_writes=durable)
    return cat._with_keyspace(new), SchemaChange("UPDATED", "KEYSPACE", stmt.name), cat.next_store_id


def _drop_keyspace(cat: Catalog, stmt: ast.DropKeyspace, current: str | None, now: int) -> Outcome:
    check_modifiable(stmt.name)
    if stmt.name not in cat.keyspaces:
        if stmt.if_exists:
            return _unchanged(cat)
        raise ConfigurationException(f"Cannot drop non existing keyspace '{stmt.name}'.")  # ScyllaDB's
    keyspaces = {n: k for n, k in cat.keyspaces.items() if n != stmt.name}
    return keyspaces, SchemaChange("DROPPED", "KEYSPACE", stmt.name), cat.next_store_id


def written_name(name: ast.QualifiedName) -> str:
    """A table name as written in the statement (Cassandra's QualifiedName.toString)."""
    return f"{name.keyspace}.{name.name}" if name.keyspace is not None else name.name


def _create_table(cat: Catalog, stmt: ast.CreateTable, current: str | None, now: int) -> Outcome:
    ks_name = keyspace_of(stmt.table.keyspace, current)
    check_modifiable(ks_name)
    table_name = stmt.table.name
    if not stmt.partition_key:
        raise ire(f"No PRIMARY KEY specifed for table '{written_name(stmt.table)}' (exactly one required)")
    seen: set[str] = set()
    for cd in stmt.columns:
        if cd.name in seen:
            raise ire(f"Duplicate column '{cd.name}' declaration for table '{written_name(stmt.table)}'")
        seen.add(cd.name)
    ks = cat._existing_keyspace(ks_name)
    if table_name in ks.tables:
        if stmt.if_not_exists:
            return _unchanged(cat)
        raise AlreadyExists(
            f'Cannot add already existing table "{table_name}" to keyspace "{ks_name}"', keyspace=ks_name, table=table_name
        )
    if stmt.compact_storage:
        raise ire("Compact tables are not allowed in Cassandra starting with 4.0 version.")
    _indexes().check_table_name(ks, table_name)
    options, cdc = properties.table_params(stmt.options, None, None)
    columns = _table_columns(cat, ks, stmt, options)
    _check_table_name(table_name)
    table_id = properties.table_id_option(stmt.options)
    try:
        tid = uuid.UUID(table_id) if table_id is not None else uuid.uuid1()
    except ValueError:
        raise ConfigurationException("Invalid table id") from None
    table = Table(ks_name, table_name, tid, cat.next_store_id, columns, options, cdc,
                  ttl_column=row_ttl.created_ttl_column(stmt, {c.name: c.type for c in columns}))
    new_ks = replace(ks, tables={**ks.tables, table_name: table})
    return cat._with_keyspace(new_ks), SchemaChange("CREATED", "TABLE", ks_name, table_name), cat.next_store_id + 1


def _check_table_name(name: str) -> None:
    """ScyllaDB's ``create_table_statement`` name checks."""
    if not NAME_RE.fullmatch(name):
        raise ire(f'"{name}" is not a valid table name (must be alphanumeric character only: [0-9A-Za-z]+)')
    if len(name) > NAME_LENGTH:
        raise ire(f'Table names shouldn\'t be more than {NAME_LENGTH} characters long (got "{name}")')


def _check_nested_non_frozen(t: Any, suffix: str = "") -> None:
    """Non-frozen UDTs may not hold non-frozen collections."""
    if is_user_type(t) and t.is_multicell and any(f.is_multicell for f in t.field_types):
        raise ire("Non-frozen UDTs with nested non-frozen collections are not supported" + suffix)


def _check_key_column(name: str, t: Any, statics: set[str]) -> None:
    """The checks Cassandra makes on each PRIMARY KEY column."""
    if t.is_multicell:
        if t.is_collection:
            raise ire(f"Invalid non-frozen collection type for PRIMARY KEY component {name}")
        raise ire(f"Invalid non-frozen user-defined type for PRIMARY KEY component {name}")
    if t.is_counter:
        raise ire(f"counter type is not supported for PRIMARY KEY column '{name}'")
    if references_duration(t):
        raise ire(f"duration type is not supported for PRIMARY KEY column '{name}'")
    if name in statics:
        raise ire(f"Static column '{name}' cannot be part of the PRIMARY KEY")


def _clustering_orders(stmt: ast.CreateTable) -> dict[str, str]:
    """Validate CLUSTERING ORDER BY and return column -> 'asc'/'desc' for every clustering column."""
    given: dict[str, bool] = {}
    for item in stmt.clustering_order:
        if item.column in given:
            raise ire(
                f"Duplicate column '{item.column}' in CLUSTERING ORDER BY clause for table '{written_name(stmt.table)}'"
            )
        given[item.column] = item.descending
    ck = list(stmt.clustering_key)
    if len(given) > len(ck):
        raise ire("Only clustering columns can be defined in CLUSTERING ORDER directive")
    for n, column in enumerate(given):
        expected = ck[n]
        if column != expected:
            if expected in given:
                raise ire(
                    "The order of columns in the CLUSTERING ORDER directive must match that of the "
                    f"clustering columns ({expected} must appear before {column})"
                )
            raise ire(f"Missing CLUSTERING ORDER for column {expected}")
    return {c: "desc" if given.get(c, False) else "asc" for c in ck}


def _table_columns(cat: Catalog, ks: Keyspace, stmt: ast.CreateTable, options: Mapping[str, Any]) -> tuple[Column, ...]:
    """Resolve and validate the columns of CREATE TABLE (CreateTableStatement.builder)."""
    resolved = {cd.name: cat._resolve(cd.type, ks) for cd in stmt.columns}
    statics = {cd.name for cd in stmt.columns if cd.static}
    for t in resolved.values():
        _check_nested_non_frozen(t)
    key_columns: set[str] = set()
    for name in (*stmt.partition_key, *stmt.clustering_key):
        if name not in resolved:
            raise ire(f"Unknown column '{name}' referenced in PRIMARY KEY for table '{stmt.table.name}'")
        if name in key_columns:
            raise ire(f"Duplicate column '{name}' in PRIMARY KEY clause for table '{stmt.table.name}'")
        key_columns.add(name)
        _check_key_column(name, resolved[name], statics)
    orders = _clustering_orders(stmt)
    if not stmt.clustering_key and statics:
        raise ire("Static columns are only useful (and thus allowed) if the table has at least one clustering column")
    others = {n: t for n, t in resolved.items() if n not in key_columns}
    if any(t.is_counter for t in resolved.values()):
        if any(not t.is_counter for t in others.values()):
            raise ire("Cannot mix counter and non counter columns in the same table")
        if options.get("default_time_to_live", 0) > 0:
            raise ire("Cannot set default_time_to_live on a table with counters")
    columns = [Column(n, resolved[n], PARTITION_KEY, i) for i, n in enumerate(stmt.partition_key)]
    columns += [Column(n, resolved[n], CLUSTERING, i, orders[n]) for i, n in enumerate(stmt.clustering_key)]
    columns += [Column(n, t, STATIC if n in statics else REGULAR) for n, t in others.items()]
    return order_columns(columns)


def _altered_table(cat: Catalog, name: ast.QualifiedName, current: str | None) -> tuple[Keyspace, Table]:
    """The keyspace and table an ALTER TABLE names."""
    ks_name = keyspace_of(name.keyspace, current)
    check_modifiable(ks_name)
    ks = cat.keyspaces.get(ks_name)
    table = ks.tables.get(name.name) if ks is not None else None
    if ks is None or table is None:
        raise ire(f"Table '{ks_name}.{name.name}' doesn't exist")
    views.check_alter_table(table)
    return ks, table


def _table_updated(cat: Catalog, ks: Keyspace, table: Table) -> Outcome:
    new_ks = views.follow_base(replace(ks, tables={**ks.tables, table.name: table}), ks.tables[table.name], table)
    return cat._with_keyspace(new_ks), SchemaChange("UPDATED", "TABLE", ks.name, table.name), cat.next_store_id


def _check_readd(table: Table, name: str, t: Any) -> None:
    """Cassandra's checks when a previously dropped column is added again."""
    dropped = table.dropped_columns.get(name)
    if dropped is None:
        return
    old_type = dropped[0]
    new_type = t.cql()
    compatible = old_type == new_type or (old_type == "ascii" and new_type == "text")
    if not compatible:
        raise ire(
            f"Cannot re-add previously dropped column '{name}' of type {new_type}, incompatible with previous type {old_type}"
        )
    if table.is_counter_table:
        raise ire(f"Cannot re-add previously dropped counter column {name}")


def _resolve_added(cat: Catalog, cd: ast.ColumnDef, ks: Any) -> Any:
    """The type of an added column.  ``ADD changefeed f`` is a column named changefeed of type f (the word is not
    reserved); when f is no type, the user most likely meant YDB's ``ADD CHANGEFEED f WITH (...)``: say so."""
    try:
        return cat._resolve(cd.type, ks)
    except InvalidRequest as e:
        if cd.name != "changefeed":
            raise
        raise ire(f"{e} (to add a changefeed, give its settings: ADD CHANGEFEED name WITH (MODE = 'UPDATES', "
                  f"FORMAT = 'JSON'))") from None


def _alter_table_add(cat: Catalog, stmt: ast.AlterTableAdd, current: str | None, now: int) -> Outcome:
    ks, table = _altered_table(cat, stmt.table, current)
    columns = list(table.columns)
    counter_table = table.is_counter_table
    for cd in stmt.columns:
        t = _resolve_added(cat, cd, ks)
        if any(c.name == cd.name for c in columns):
            if stmt.if_not_exists:
                continue
            raise ire(f"Column with name '{cd.name}' already exists")
        if cd.static and not table.clustering_key:
            raise ire("Static columns are only useful (and thus allowed) if the table has at least one clustering column")
        _check_nested_non_frozen(t, f" for column {cd.name}")
        _check_readd(table, cd.name, t)
        if counter_table and not t.is_counter:
            raise ConfigurationException(f'Cannot have a non counter column ("{cd.name}") in a counter table')
        if not counter_table and t.is_counter:
            raise ConfigurationException(f'Cannot have a counter column ("{cd.name}") in a non counter table')
        columns.append(Column(cd.name, t, STATIC if cd.static else REGULAR))
    return _table_updated(cat, ks, replace(table, columns=order_columns(columns)))


def _alter_table_drop(cat: Catalog, stmt: ast.AlterTableDrop, current: str | None, now: int) -> Outcome:
    ks, table = _altered_table(cat, stmt.table, current)
    columns = list(table.columns)
    dropped = dict(table.dropped_columns)
    for name in stmt.columns:
        column = next((c for c in columns if c.name == name), None)
        if column is None:
            if stmt.if_exists:
                continue
            raise ire(f"Column {name} was not found in table '{ks.name}.{table.name}'")
        if column.is_primary_key:
            raise ire(f"Cannot drop PRIMARY KEY column {name}")
        if is_user_type(column.type) and column.type.is_multicell:
            raise ire(f"Cannot drop non-frozen column {name} of user type {column.type.cql()}")
        views.check_drop_column(ks, table, name)
        _indexes().check_drop_column(table, name)
        columns.remove(column)
        dropped[name] = (column.type.cql(), int(stmt.timestamp.text) if stmt.timestamp is not None else now)
    return _table_updated(cat, ks, row_ttl.after_drop(replace(table, columns=tuple(columns), dropped_columns=dropped),
                                                     stmt.columns))


def _alter_table_rename(cat: Catalog, stmt: ast.AlterTableRename, current: str | None, now: int) -> Outcome:
    ks, table = _altered_table(cat, stmt.table, current)
    columns = list(table.columns)
    qualified = f"{ks.name}.{table.name}"
    for old, new in stmt.renames:
        index = next((i for i, c in enumerate(columns) if c.name == old), None)
        if index is None:
            raise ire(f"Column {old} was not found in table {qualified}")
        if not columns[index].is_primary_key:
            raise ire(f"Cannot rename non PRIMARY KEY column {old}")
        _indexes().check_rename_column(table, old)
        if any(c.name == new for c in columns):
            raise ire(
                f"Cannot rename column {old} to {new} in table '{qualified}'; another column with that name already exists"
            )
        columns[index] = replace(columns[index], name=new)
    return _table_updated(cat, ks, replace(table, columns=tuple(columns)))


def _alter_table_with(cat: Catalog, stmt: ast.AlterTableWith, current: str | None, now: int) -> Outcome:
    if [name for name, _ in stmt.options] == [MEMTABLE_FLUSH_PERIOD]:
        system = _system_table(stmt.table, current)
        if system is not None:  # ScyllaDB's one exception (its issue #21223): checked, then nothing to apply
            properties.table_params(stmt.options, system.options, system.cdc)
            return _unchanged(cat)
    ks, table = _altered_table(cat, stmt.table, current)
    options, cdc = properties.table_params(stmt.options, table.options, table.cdc)
    if table.is_counter_table and options.get("default_time_to_live", 0) > 0:
        raise ire("Cannot set default_time_to_live on a table with counters")
    return _table_updated(cat, ks, replace(table, options=options, cdc=cdc))


MEMTABLE_FLUSH_PERIOD = "memtable_flush_period_in_ms"


def _system_table(name: ast.QualifiedName, current: str | None) -> Table | None:
    """The table of ``system`` or ``system_schema`` an ALTER TABLE names (None for any other keyspace).

    ScyllaDB lets ``ALTER TABLE`` change ``memtable_flush_period_in_ms`` alone on its system tables
    (``alter_table_statement::check_access``).  logtide has no memtable to flush, so the value is checked as on any
    table and changes nothing (docs/server.md "System tables")."""
    from logtide.schema.system_schema import SCYLLA_SYSTEM_KEYSPACES, system_keyspaces

    ks_name = keyspace_of(name.keyspace, current)
    if ks_name not in SCYLLA_SYSTEM_KEYSPACES:
        return None
    table = system_keyspaces()[ks_name].tables.get(name.name)
    if table is None:
        raise ire(f"Table '{ks_name}.{name.name}' doesn't exist")
    return table


def _alter_table_ttl(cat: Catalog, stmt: ast.AlterTableTtl, current: str | None, now: int) -> Outcome:
    ks, table = _altered_table(cat, stmt.table, current)
    return _table_updated(cat, ks, row_ttl.altered_ttl_column(table, stmt.column))


def _alter_table_alter_type(cat: Catalog, stmt: ast.AlterTableAlterType, current: str | None, now: int) -> Outcome:
    _altered_table(cat, stmt.table, current)
    raise ire("Altering column types is no longer supported")


def _drop_table(cat: Catalog, stmt: ast.DropTable, current: str | None, now: int) -> Outcome:
    ks_name = keyspace_of(stmt.table.keyspace, current)
    check_modifiable(ks_name)
    ks = cat.keyspaces.get(ks_name)
    if ks is None or stmt.table.name not in ks.tables:
        if stmt.if_exists:
            return _unchanged(cat)
        raise ire(f"Table '{ks_name}.{stmt.table.name}' doesn't exist")
    views.check_drop_table(ks, ks.tables[stmt.table.name])
    new_ks = replace(ks, tables={n: t for n, t in ks.tables.items() if n != stmt.table.name})
    return cat._with_keyspace(new_ks), SchemaChange("DROPPED", "TABLE", ks_name, stmt.table.name), cat.next_store_id


# ---- user types -------------------------------------------------------------


def _create_type(cat: Catalog, stmt: ast.CreateType, current: str | None, now: int) -> Outcome:
    ks_name = keyspace_of(stmt.name.keyspace, current)
    check_modifiable(ks_name)
    ks = cat._existing_keyspace(ks_name)
    type_name = stmt.name.name
    if type_name in ks.types:
        if stmt.if_not_exists:
            return _unchanged(cat)
        raise ire(f"A user type with name '{type_name}' already exists")
    names = [f for f, _ in stmt.fields]
    for n in names:
        if names.count(n) > 1:
            raise ire(f"Duplicate field name '{n}' in type '{type_name}'")
    for _, expr in stmt.fields:
        if expr.name == "counter":
            raise ire("A user type cannot contain counters")
        if is_non_frozen_udt_expr(expr):
            raise ire("A user type cannot contain non-frozen UDTs")
    field_types = tuple(cat._resolve(expr, ks) for _, expr in stmt.fields)
    udt = UserTypeDef(ks_name, type_name, tuple(names), field_types)
    new_ks = replace(ks, types={**ks.types, type_name: udt})
    return cat._with_keyspace(new_ks), SchemaChange("CREATED", "TYPE", ks_name, type_name), cat.next_store_id


def _altered_type(cat: Catalog, name: ast.QualifiedName, current: str | None) -> tuple[Keyspace, UserTypeDef]:
    ks_name = keyspace_of(name.keyspace, current)
    check_modifiable(ks_name)
    ks = cat.keyspaces.get(ks_name)
    udt = ks.types.get(name.name) if ks is not None else None
    if ks is None or udt is None:
        raise ire(f"Type {ks_name}.{name.name} doesn't exist")
    return ks, udt


def _type_updated(cat: Catalog, ks: Keyspace, udt: UserTypeDef) -> Outcome:
    new_ks = rebuild_keyspace_types(replace(ks, types={**ks.types, udt.name: udt}))
    return cat._with_keyspace(new_ks), SchemaChange("UPDATED", "TYPE", ks.name, udt.name), cat.next_store_id


def _alter_type_add(cat: Catalog, stmt: ast.AlterTypeAdd, current: str | None, now: int) -> Outcome:
    ks, udt = _altered_type(cat, stmt.name, current)
    cql_name = f"{ks.name}.{udt.name}"
    if stmt.field in udt.field_names:
        raise ire(f"Cannot add field {stmt.field} to type {cql_name}: a field with name {stmt.field} already exists")
    t = cat._resolve(stmt.type, ks)
    if references_udt(t, ks.name, udt.name):
        raise ire(
            f"Cannot add new field {stmt.field} of type {t.cql()} to user type {cql_name} as it would create a circular reference"
        )
    in_partition_key = [
        f"{ks.name}.{tbl.name}"
        for tbl in ks.tables.values()
        if any(references_udt(c.type, ks.name, udt.name) for c in tbl.partition_key)
    ]
    if in_partition_key:
        raise ire(
            f"Cannot add new field {stmt.field} of type {t.cql()} to user type {cql_name} as the type is being used "
            f"in partition key by the following tables: {', '.join(in_partition_key)}"
        )
    new = replace(udt, field_names=udt.field_names + (stmt.field,), field_types=udt.field_types + (t,))
    return _type_updated(cat, ks, new)


def _alter_type_rename(cat: Catalog, stmt: ast.AlterTypeRename, current: str | None, now: int) -> Outcome:
    ks, udt = _altered_type(cat, stmt.name, current)
    names = list(udt.field_names)
    for old, new in stmt.renames:
        if old not in udt.field_names:
            raise ire(f"Unkown field {old} in user type {ks.name}.{udt.name}")
        names[udt.field_names.index(old)] = new
    for n in names:
        if names.count(n) > 1:
            raise ire(f"Duplicate field name {n} in type {ks.name}")
    return _type_updated(cat, ks, replace(udt, field_names=tuple(names)))


def _drop_type(cat: Catalog, stmt: ast.DropType, current: str | None, now: int) -> Outcome:
    ks_name = keyspace_of(stmt.name.keyspace, current)
    check_modifiable(ks_name)
    ks = cat.keyspaces.get(ks_name)
    name = stmt.name.name
    if ks is None or name not in ks.types:
        if stmt.if_exists:
            return _unchanged(cat)
        raise ire(f"Type '{ks_name}.{name}' doesn't exist")
    for other in ks.types.values():
        if other.name != name and any(references_udt(t, ks_name, name) for t in other.field_types):
            raise ire(f"Cannot drop user type {ks_name}.{name} as it is still used by user type {other.name}")
    for tbl in ks.tables.values():
        if any(references_udt(c.type, ks_name, name) for c in tbl.columns):
            raise ire(f"Cannot drop user type {ks_name}.{name} as it is still used by table {ks_name}.{tbl.name}")
    for fn in (*ks.functions.values(), *ks.aggregates.values()):
        used = (*fn.arg_types, getattr(fn, "return_type", None) or fn.state_type)
        if any(references_udt(t, ks_name, name) for t in used):
            raise ire(f"Cannot drop user type {ks_name}.{name} as it is still used by function {ks_name}.{fn.name}")
    new_ks = replace(ks, types={n: u for n, u in ks.types.items() if n != name})
    return cat._with_keyspace(new_ks), SchemaChange("DROPPED", "TYPE", ks_name, name), cat.next_store_id


# ---- user-defined functions and aggregates ----------------------------------------------------------

UDF_LANGUAGES = ("lua", "wasm")  # the languages ScyllaDB's CREATE FUNCTION knows


def _function_type(cat: Catalog, expr: ast.TypeExpr, ks: Keyspace) -> None:
    """An argument, return or state type of a function (ScyllaDB's ``function_statement::prepare_type``): a user
    type is written without ``frozen`` (a function always takes and gives it frozen)."""
    resolved = cat._resolve(expr, ks)
    if expr.name == "frozen" and len(expr.params) == 1 and isinstance(resolved, types.UserType):
        raise ire("User defined argument and return types should not be frozen")


def _create_function(cat: Catalog, stmt: ast.CreateFunction, current: str | None, now: int) -> Outcome:
    """ScyllaDB's ``create_function_statement``: the types (argument, language, return), then an existing function
    of the same signature (``The function ... already exists`` unless OR REPLACE or IF NOT EXISTS; only a
    user-defined one may be replaced), then the body, compiled (``could not compile: ...``).  WASM is refused:
    logtide runs Lua only (the ``udf`` extra)."""
    from . import lua_udf, udf

    ks = cat._existing_keyspace(keyspace_of(stmt.name.keyspace, current))
    check_modifiable(ks.name)
    arg_types = []
    for _, expr in stmt.arguments:
        _function_type(cat, expr, ks)
        arg_types.append(_function_value_type(cat._resolve(expr, ks)))
    if stmt.language not in UDF_LANGUAGES:
        raise ire(f"Language '{stmt.language}' is not supported")
    _function_type(cat, stmt.returns, ks)
    returns = _function_value_type(cat._resolve(stmt.returns, ks))
    names = [n for n, _ in stmt.arguments]
    if len(set(names)) != len(names):
        raise ire(f"Duplicate argument names for given function {stmt.name.name} with argument names {names}")
    sig = udf.signature(stmt.name.name, arg_types)
    old = ks.functions.get(sig)
    if old is not None and not stmt.or_replace:
        if stmt.if_not_exists:
            return _unchanged(cat)
        raise ire(f"The function '{ks.name}.{sig}' already exists")
    if sig in ks.aggregates:
        raise ire(f"Cannot replace '{ks.name}.{sig}' which is not a user defined function")
    if stmt.language == "wasm":
        raise ire("Language 'wasm' is not supported by logtide: use LANGUAGE lua")
    if old is not None and old.return_type != returns and any(
            a.state_function == sig or a.final_function == sig or a.reduce_function == sig
            for a in ks.aggregates.values()):
        raise ire(f"Cannot replace function {ks.name}.{sig}: it is used by an aggregate and its return type changes")
    lua_udf.compile_check(names, stmt.body)
    fn = udf.UserFunction(ks.name, stmt.name.name, tuple(names), tuple(arg_types), returns,
                          stmt.called_on_null_input, stmt.language, stmt.body)
    new_ks = replace(ks, functions={**ks.functions, sig: fn})
    change = SchemaChange("UPDATED" if old is not None else "CREATED", "FUNCTION", ks.name, stmt.name.name,
                          tuple(udf.type_name(t) for t in arg_types))
    return cat._with_keyspace(new_ks), change, cat.next_store_id


def _function_value_type(t: Any) -> Any:
    """A function takes and gives user types frozen (ScyllaDB's ``prepare_type``)."""
    return t.freeze() if isinstance(t, types.UserType) else t


def _create_aggregate(cat: Catalog, stmt: ast.CreateAggregate, current: str | None, now: int) -> Outcome:
    """ScyllaDB's ``create_aggregate_statement``: the state function ``SFUNC(stype, args...)`` must exist and return
    the state type, ``REDUCEFUNC(stype, stype)`` and ``FINALFUNC(stype)`` must exist, INITCOND is a value of the
    state type."""
    from . import udf
    from .types_literal import term_text

    ks = cat._existing_keyspace(keyspace_of(stmt.name.keyspace, current))
    check_modifiable(ks.name)
    for expr in (*stmt.argument_types, stmt.state_type):
        _function_type(cat, expr, ks)
    arg_types = [_function_value_type(cat._resolve(e, ks)) for e in stmt.argument_types]
    stype = _function_value_type(cat._resolve(stmt.state_type, ks))
    sig = udf.signature(stmt.name.name, arg_types)
    old = ks.aggregates.get(sig)
    if old is not None and not stmt.or_replace:
        if stmt.if_not_exists:
            return _unchanged(cat)
        raise ire(f"The function '{ks.name}.{sig}' already exists")
    if sig in ks.functions:
        raise ire(f"Cannot replace '{ks.name}.{sig}' which is not a user defined aggregate")
    sfunc = udf.signature(stmt.state_function, [stype, *arg_types])
    if sfunc not in ks.functions:
        raise ire(f"State function {sfunc} not found")
    if ks.functions[sfunc].return_type != stype:
        raise ire(f"State function '{stmt.state_function}' doesn't return state ({udf.type_name(stype)})")
    rfunc = None
    if stmt.reduce_function is not None:
        rfunc = udf.signature(stmt.reduce_function, [stype, stype])
        if rfunc not in ks.functions:
            raise ire(f"Scalar reduce function {stmt.reduce_function} for state type {stype.cql()} not found.")
    ffunc = None
    if stmt.final_function is not None:
        ffunc = udf.signature(stmt.final_function, [stype])
        if ffunc not in ks.functions:
            raise ire(f"Final function {ffunc} not found")
    init = text = None
    if stmt.initial_condition is not None:
        value = types.term_to_value(stmt.initial_condition, stype, "INITCOND")
        init = stype.serialize(value) if value is not None else None
        text = term_text(stmt.initial_condition) if value is not None else None
    agg = udf.UserAggregate(ks.name, stmt.name.name, tuple(arg_types), sfunc, stype, ffunc, rfunc, init, text)
    new_ks = replace(ks, aggregates={**ks.aggregates, sig: agg})
    change = SchemaChange("UPDATED" if old is not None else "CREATED", "AGGREGATE", ks.name, stmt.name.name,
                          tuple(udf.type_name(t) for t in arg_types))
    return cat._with_keyspace(new_ks), change, cat.next_store_id


def _drop_function(cat: Catalog, stmt: ast.DropFunction, current: str | None, now: int) -> Outcome:
    """ScyllaDB's ``drop_function_statement`` / ``drop_aggregate_statement``: by signature, or by name when it has
    one overload (``There are multiple functions named ...``); a function an aggregate uses stays."""
    from . import udf

    ks_name = keyspace_of(stmt.name.keyspace, current)
    ks = cat.keyspaces.get(ks_name)
    if ks is None:
        if stmt.if_exists:
            return _unchanged(cat)
        raise ire(f"Keyspace '{ks_name}' doesn't exist")
    name = stmt.name.name
    ours, theirs = (ks.aggregates, ks.functions) if stmt.aggregate else (ks.functions, ks.aggregates)
    what = "aggregate" if stmt.aggregate else "function"
    if stmt.argument_types is not None:
        for expr in stmt.argument_types:
            _function_type(cat, expr, ks)
        arg_types = [_function_value_type(cat._resolve(e, ks)) for e in stmt.argument_types]
        sig = udf.signature(name, arg_types)
        if sig not in ours:
            if sig in theirs:
                raise ire(f"'{ks_name}.{sig}' is not a user defined {what}")
            if stmt.if_exists:
                return _unchanged(cat)
            raise ire(f"User function {ks_name}.{name}({', '.join(udf.type_name(t) for t in arg_types)}) "
                      f"doesn't exist")
    else:
        found = [s for s, f in ours.items() if f.name == name]
        if len(found) + len([s for s, f in theirs.items() if f.name == name]) > 1:
            raise ire(f"There are multiple functions named {ks_name}.{name}")
        if not found:
            if any(f.name == name for f in theirs.values()):
                sig = next(s for s, f in theirs.items() if f.name == name)
                raise ire(f"'{ks_name}.{sig}' is not a user defined {what}")
            if stmt.if_exists:
                return _unchanged(cat)
            raise ire(f"No function named {ks_name}.{name} found")
        sig = found[0]
    if not stmt.aggregate:
        for agg in ks.aggregates.values():
            if sig in (agg.state_function, agg.final_function, agg.reduce_function):
                raise ire(f"Cannot delete function {ks_name}.{sig}, as it is used by user-defined aggregate "
                          f"{ks_name}.{agg.signature}")
    dropped = ours[sig]
    rest = {s: f for s, f in ours.items() if s != sig}
    new_ks = replace(ks, aggregates=rest) if stmt.aggregate else replace(ks, functions=rest)
    change = SchemaChange("DROPPED", "AGGREGATE" if stmt.aggregate else "FUNCTION", ks_name, name,
                          tuple(udf.type_name(t) for t in dropped.arg_types))
    return cat._with_keyspace(new_ks), change, cat.next_store_id


def _view_statement(cat: Catalog, stmt: Any, current: str | None) -> Outcome:
    """CREATE / ALTER / DROP MATERIALIZED VIEW (``views.py``) in a keyspace DDL may change."""
    ks_name = keyspace_of(stmt.name.keyspace, current)
    check_modifiable(ks_name)
    return views.HANDLERS[type(stmt)](cat, ks_name, stmt)


_HANDLERS: dict[type, Callable[..., Outcome]] = {
    ast.CreateKeyspace: _create_keyspace,
    ast.AlterKeyspace: _alter_keyspace,
    ast.DropKeyspace: _drop_keyspace,
    ast.CreateTable: _create_table,
    ast.AlterTableAdd: _alter_table_add,
    ast.AlterTableDrop: _alter_table_drop,
    ast.AlterTableRename: _alter_table_rename,
    ast.AlterTableWith: _alter_table_with,
    ast.AlterTableTtl: _alter_table_ttl,
    ast.AlterTableAlterType: _alter_table_alter_type,
    ast.DropTable: _drop_table,
    ast.CreateType: _create_type,
    ast.AlterTypeAdd: _alter_type_add,
    ast.AlterTypeRename: _alter_type_rename,
    ast.DropType: _drop_type,
    ast.CreateFunction: _create_function,
    ast.CreateAggregate: _create_aggregate,
    ast.DropFunction: _drop_function,
    **{kind: lambda cat, stmt, current, now: _view_statement(cat, stmt, current) for kind in views.HANDLERS},
    ast.CreateIndex: lambda cat, stmt, current, now: _indexes().create_index(cat, stmt, _index_keyspace(
        stmt.table.keyspace, current, not stmt.targets and not stmt.custom)),
    ast.DropIndex: lambda cat, stmt, current, now: _indexes().drop_index(cat, stmt, _index_keyspace(
        stmt.name.keyspace, current)),
}


def _index_keyspace(name: str | None, current: str | None, no_target: bool = False) -> str:
    """The keyspace of an index statement, checked modifiable (after ScyllaDB's first check of CREATE INDEX)."""
    if no_target:
        raise ire("Only CUSTOM indexes can be created without specifying a target column")
    ks = keyspace_of(name, current)
    check_modifiable(ks)
    return ks


def _indexes() -> Any:
    from logtide.schema import indexes
    return indexes


# --------------------------------------------------------------------------
# JSON documents
# --------------------------------------------------------------------------


def _table_to_doc(t: Table) -> dict[str, Any]:
    return {
        "name": t.name,
        "id": str(t.id),
        "store_id": t.store_id,
        "columns": [
            {"name": c.name, "type": c.type.cql(), "kind": c.kind, "position": c.position, "clustering_order": c.clustering_order}
            for c in t.columns
        ],
        "options": dict(t.options),
        "cdc": dict(t.cdc) if t.cdc is not None else None,
        "cdc_base": t.cdc_base,
        "dropped_columns": {n: [ty, ts] for n, (ty, ts) in t.dropped_columns.items()},
        **({"changefeeds": [f.to_doc() for f in t.changefeeds]} if t.changefeeds else {}),
        **({"view": t.view.to_doc()} if t.view is not None else {}),
        **({"indexes": [ix.to_doc() for ix in t.indexes]} if t.indexes else {}),
        **({"ttl_column": t.ttl_column} if t.ttl_column is not None else {}),
    }


def _keyspace_to_doc(ks: Keyspace) -> dict[str, Any]:
    return {
        "name": ks.name,
        "replication": dict(ks.replication),
        "durable_writes": ks.durable_writes,
        "types": [
            {"name": u.name, "fields": [[n, t.cql()] for n, t in zip(u.field_names, u.field_types)]}
            for u in ks.types.values()
        ],
        "tables": [_table_to_doc(t) for t in ks.tables.values()],
        **({"functions": [f.to_doc() for f in ks.functions.values()]} if ks.functions else {}),
        **({"aggregates": [a.to_doc() for a in ks.aggregates.values()]} if ks.aggregates else {}),
    }


def _table_from_doc(ks: str, d: Mapping[str, Any], lookup: Lookup) -> Table:
    columns = tuple(
        Column(c["name"], types.parse_type_string(c["type"], ks, lookup), c["kind"], int(c["position"]), c["clustering_order"])
        for c in d["columns"]
    )
    return Table(
        ks,
        d["name"],
        uuid.UUID(d["id"]),
        int(d["store_id"]),
        columns,
        dict(d["options"]),
        dict(d["cdc"]) if d.get("cdc") is not None else None,
        d.get("cdc_base"),
        {n: (v[0], int(v[1])) for n, v in d.get("dropped_columns", {}).items()},
        _changefeeds_from_doc(d.get("changefeeds", ())),
        _view_from_doc(d.get("view")),
        tuple(_indexes().SecondaryIndex.from_doc(ix) for ix in d.get("indexes", ())),
        d.get("ttl_column"),
    )


def _view_from_doc(doc: Any) -> Any:
    if doc is None:
        return None
    from logtide.schema.views import ViewInfo
    return ViewInfo.from_doc(doc)


def _changefeeds_from_doc(docs: Any) -> tuple[Any, ...]:
    if not docs:
        return ()
    from logtide.schema.changefeeds import Changefeed
    return tuple(Changefeed.from_doc(f) for f in docs)


def _keyspace_from_doc(d: Mapping[str, Any]) -> Keyspace:
    name = d["name"]
    specs = {u["name"]: (tuple(f[0] for f in u["fields"]), tuple(f[1] for f in u["fields"])) for u in d["types"]}
    ks = Keyspace(name, dict(d["replication"]), bool(d["durable_writes"]), {}, build_user_types(name, specs))
    lookup = keyspace_lookup(ks)
    tables = {t["name"]: _table_from_doc(name, t, lookup) for t in d["tables"]}
    if not d.get("functions") and not d.get("aggregates"):
        return replace(ks, tables=tables)
    from .udf import UserAggregate, UserFunction

    functions = [UserFunction.from_doc(name, f, lookup) for f in d.get("functions", ())]
    aggregates = [UserAggregate.from_doc(name, a, lookup) for a in d.get("aggregates", ())]
    return replace(ks, tables=tables, functions={f.signature: f for f in functions},
                   aggregates={a.signature: a for a in aggregates})
