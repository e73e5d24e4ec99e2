"""Secondary indexes as the catalog keeps them, and ``CREATE INDEX`` / ``DROP INDEX`` with ScyllaDB's rules and
messages (``cql3/statements/create_index_statement.cc``, ``drop_index_statement.cc``, ``index/secondary_index.cc``).

An index lives on its table (``Table.indexes``), so dropping the table drops it.  ``store_id`` keys the index's
entries in storage (drawn from the catalog's store-id counter, never reused); the entries themselves are kept
by ``engine.indexes``.  ``target`` is the ``target`` option ``system_schema.indexes`` shows, serialized as
ScyllaDB serializes it (``v``, ``keys(m)``, ``values(l)``, ``entries(m)``, ``f`` for ``full(f)``, and a local
index's ``{"pk":["p"],"ck":["v"]}``).
"""

from __future__ import annotations

import json
import re
import uuid
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Collection, Mapping

from logtide.cql import ast
from logtide.cql.tokens import RESERVED_KEYWORDS
from logtide.errors import ConfigurationException, InvalidRequest
from logtide.result import SchemaChange
from logtide.schema import properties
from logtide.schema.views import view_options

if TYPE_CHECKING:
    from logtide.schema.model import Column, Keyspace, Table

Catalog = Any  # logtide.schema.catalog.Catalog (which imports this module)
Outcome = tuple[Mapping[str, Any], "SchemaChange | None", int]  # as catalog.Outcome

REGULAR_VALUES = "regular_values"
KEYS = "keys"
VALUES = "values"
ENTRIES = "entries"
FULL = "full"
NAME_LENGTH = 192  # ScyllaDB's schema::NAME_LENGTH
_SAI_CLASSES = ("org.apache.cassandra.index.sai.storageattachedindex", "storageattachedindex", "sai")
_OBSOLETE = ("index_interval", "replicate_on_write", "populate_io_cache_on_flush", "read_repair_chance",
             "dclocal_read_repair_chance")


@dataclass(frozen=True)
class SecondaryIndex:
    """One secondary index of a table: its name, the indexed ``column`` and what of it is indexed (``kind``: the
    column's value, a collection's keys, values or entries, or a frozen collection whole), whether it is local
    (``CREATE INDEX ON t ((pk), v)``: entries per base partition) and the view properties given at creation."""

    name: str
    store_id: int
    column: str
    kind: str = REGULAR_VALUES
    local: bool = False
    partition_key: tuple[str, ...] = ()  # a local index's base partition key columns, as written
    options: Mapping[str, Any] = field(default_factory=dict)  # WITH properties (the hidden view's, in ScyllaDB)
    id: uuid.UUID | None = None  # WITH ID = ... (the id of ScyllaDB's hidden view); see ``index_id``

    @property
    def index_id(self) -> uuid.UUID:
        """The id ``DESCRIBE ... WITH INTERNALS`` prints (``WITH ID = ...``): the one given or drawn at creation;
        for an index created before ids were kept, one derived from its name and store id (stable)."""
        if self.id is not None:
            return self.id
        return uuid.uuid5(uuid.NAMESPACE_OID, f"logtide secondary index {self.store_id} {self.name}")

    @property
    def target(self) -> str:
        """The ``target`` option (``index/secondary_index.cc``: ``target_parser::serialize_targets``)."""
        if self.local:
            return json.dumps({"pk": list(self.partition_key), "ck": [self.column]}, separators=(",", ":"))
        col = quote(self.column)
        if self.kind in (KEYS, VALUES, ENTRIES):
            return f"{self.kind}({col})"
        return col

    def describe_target(self, column_type: Any) -> str:
        """The target as DESCRIBE prints it (``schema.cc``: ``describe_index_columns``): ``full(f)`` for a frozen
        collection, ``values(s)`` for a set, a local index's ``(pk), v``."""
        col = quote(self.column)
        if self.kind == FULL:
            inner = f"full({col})"
        elif self.kind == KEYS and type(column_type).__name__ == "SetType":
            inner = f"values({col})"
        elif self.kind in (KEYS, VALUES, ENTRIES):
            inner = f"{self.kind}({col})"
        else:
            inner = col
        if self.local:
            return "(" + ", ".join(quote(c) for c in self.partition_key) + "), " + inner
        return inner

    def to_doc(self) -> dict[str, Any]:
        doc = {"name": self.name, "store_id": self.store_id, "column": self.column, "kind": self.kind,
               "local": self.local, "partition_key": list(self.partition_key), "options": dict(self.options)}
        if self.id is not None:
            doc["id"] = str(self.id)
        return doc

    @classmethod
    def from_doc(cls, d: Mapping[str, Any]) -> "SecondaryIndex":
        return cls(d["name"], int(d["store_id"]), d["column"], d.get("kind", REGULAR_VALUES), bool(d.get("local")),
                   tuple(d.get("partition_key", ())), dict(d.get("options", {})),
                   uuid.UUID(d["id"]) if d.get("id") else None)


def quote(name: str) -> str:
    """A column or index name as CQL writes it (ScyllaDB's ``maybe_quote``; ``schema.describe.quote_identifier``)."""
    if re.fullmatch(r"[a-z][a-z0-9_]*", name) and name not in RESERVED_KEYWORDS:
        return name
    return '"' + name.replace('"', '""') + '"'


def default_name(table: str, column: str) -> str:
    """ScyllaDB's default index name: ``<table>_<column>_idx`` with non-word characters dropped from the column."""
    return f"{table}_{re.sub(r'[^A-Za-z0-9_]', '', column)}_idx"


def index_table_name(name: str) -> str:
    """The name of the hidden view ScyllaDB backs an index with (``<index>_index``): a table of that name blocks it."""
    return f"{name}_index"


def find_index(ks: "Keyspace", name: str) -> tuple["Table", SecondaryIndex] | None:
    """The table and index named ``name`` in keyspace ``ks``, or None."""
    for t in ks.tables.values():
        for ix in t.indexes:
            if ix.name == name:
                return t, ix
    return None


def backing_view(table: "Table", ix: SecondaryIndex) -> "Table":
    """The materialized view ``<index>_index`` ScyllaDB backs ``ix`` with (``create_index_statement::
    create_view_for_index``), for ``DESCRIBE MATERIALIZED VIEW`` and ``system_schema.views`` / ``columns``
    (``index_views``): logtide keeps the index's entries, not this view, so it cannot be read, and the other
    DESCRIBE statements leave it out, as ScyllaDB's do.

    A global index's view is keyed by the indexed value (the column, or ``coll_value`` computed from a
    collection), then ``idx_token`` (the base token), the rest of the base partition key and the base clustering
    key (none for a static column), and ``keys_for_values_idx`` for a collection's values; a local index's by the
    base partition key, then the column and the rest of the clustering key.  Names taken by base columns get
    ``_1``, ``_2`` ...; the view's properties and id are the index's."""
    from logtide.schema import types as T
    from logtide.schema.model import CLUSTERING, PARTITION_KEY, Column, Table
    from logtide.schema.views import ViewInfo

    taken = {c.name for c in table.columns}

    def available(root: str) -> str:
        name, i = root, 0
        while name in taken:
            i += 1
            name = f"{root}_{i}"
        return name

    col = table.column(ix.column)
    assert col is not None
    t = col.type
    pk: list[tuple[str, Any]] = []
    ck: list[tuple[str, Any, bool]] = []  # (name, type, descending)
    if ix.local:
        pk = [(c.name, c.type) for c in table.partition_key]
        ck = [(col.name, t, col.reversed)]
    else:
        if ix.kind in (REGULAR_VALUES, FULL):
            pk = [(col.name, t)]
        else:
            element = getattr(t, "element", None)
            computed = {KEYS: getattr(t, "key", element), VALUES: getattr(t, "value", element),
                        ENTRIES: T.TupleType((getattr(t, "key", None), getattr(t, "value", None)))}[ix.kind]
            pk = [(available("coll_value"), computed)]
        ck = [(available("idx_token"), T.BIGINT, False)]
        ck += [(c.name, c.type, False) for c in table.partition_key if c.name != col.name]
    if not col.is_static:
        ck += [(c.name, c.type, c.reversed) for c in table.clustering_key if c.name != col.name]
    if not ix.local and ix.kind == VALUES:
        keys = T.TIMEUUID if type(t).__name__ == "ListType" else getattr(t, "key", T.TIMEUUID)
        ck.append((available("keys_for_values_idx"), keys, False))
    columns = tuple(Column(n, ty, PARTITION_KEY, i) for i, (n, ty) in enumerate(pk)) + tuple(
        Column(n, ty, CLUSTERING, i, "desc" if desc else "asc") for i, (n, ty, desc) in enumerate(ck))
    where = f"{quote(col.name)} IS NOT NULL" if ix.kind == REGULAR_VALUES else ""  # none for a collection, full() too
    return Table(table.keyspace, index_table_name(ix.name), ix.index_id, ix.store_id, columns, dict(ix.options),
                 view=ViewInfo(table.name, table.id, False, where))


def index_views(ks: "Keyspace") -> list["Table"]:
    """The views ScyllaDB backs the indexes of keyspace ``ks`` with (``backing_view``), by name: listed in
    ``system_schema.views`` and ``system_schema.columns`` as ScyllaDB lists them, nowhere else."""
    return sorted((backing_view(t, ix) for t in ks.tables.values() for ix in t.indexes), key=lambda v: v.name)


def index_named(ks: "Keyspace", name: str) -> tuple["Table", SecondaryIndex] | None:
    """The index called ``name``, or whose ScyllaDB view is called ``name`` (``<index>_index``), in ``ks``."""
    found = find_index(ks, name)
    if found is None and name.endswith("_index"):
        found = find_index(ks, name[:-len("_index")])
    return found


def _ire(message: str) -> InvalidRequest:
    return InvalidRequest(message)


def _check_properties(stmt: ast.CreateIndex) -> tuple[dict[str, Any], uuid.UUID | None]:
    """``index_prop_defs`` and ``view_prop_defs``: OPTIONS only for a custom index, the view properties (a
    view's rules: no CDC, no default TTL; ScyllaDB's ``synchronous_updates``), no obsolete keywords; the
    properties that differ from the defaults, and the ``ID`` given (``cf_prop_defs::get_id``)."""
    from logtide.errors import SyntaxException
    custom_class = stmt.custom_class
    if stmt.custom and custom_class is None:
        raise _ire("CUSTOM index requires specifying the index class")
    opts = [(n, v) for n, v in stmt.options if n != "options"]
    if any(n == "options" for n, _ in stmt.options) and custom_class is None:
        raise _ire("Cannot specify options for a non-CUSTOM index")
    for name, _ in opts:
        if name in _OBSOLETE:
            raise SyntaxException(f"Unknown property '{name}'")
    if any(n == "clustering_order" for n, _ in opts):
        raise _ire("Indexes do not allow for specifying the clustering order")
    if not opts:
        return {}, None
    index_id = properties.table_id_option(opts)
    try:
        ident = uuid.UUID(index_id) if index_id is not None else None
    except ValueError:
        raise ConfigurationException("Invalid table id") from None
    params = view_options(tuple(opts), None)
    defaults = properties.table_defaults()
    return {n: v for n, v in params.items() if defaults.get(n) != v}, ident  # what DESCRIBE gives back is no change


def _check_custom(stmt: ast.CreateIndex, table: "Table") -> None:
    """Custom index classes: SAI as ScyllaDB rewrites it (vector columns only), every other class refused."""
    cls = stmt.custom_class
    if cls is None:
        return
    if cls.lower() in _SAI_CLASSES or cls == "org.apache.cassandra.index.sai.StorageAttachedIndex":
        single = [t for t in stmt.targets if t.kind != "columns"]
        if len(single) == 1 and single[0].kind == ENTRIES:
            c = table.column(single[0].column)
            if c is not None and c.type.is_multicell and type(c.type).__name__ == "MapType":
                if any(n == "options" for n, _ in stmt.options):
                    raise _ire("StorageAttachedIndex (SAI) on map entries cannot be rewritten to a regular secondary "
                               "index when WITH OPTIONS are specified; remove the options or use a secondary index "
                               "directly")
                raise _ire("StorageAttachedIndex (SAI) on ENTRIES of a map column is not supported; if this is a "
                           "CassIO/LangChain workload, enable the enable_cassio_compatibility configuration option "
                           "to rewrite this index as a regular secondary index")
        if len(single) == 1:  # ScyllaDB builds a vector index (ANN search) on a vector column: logtide has none
            c = table.column(single[0].column)
            if c is not None and type(c.type).__name__ == "VectorType":
                raise _ire(f"Vector indexes (StorageAttachedIndex on vector column {c.name}, for ANN search) are not "
                           "supported by logtide")
        raise _ire("StorageAttachedIndex (SAI) is only supported on vector columns; use a secondary index for "
                   "non-vector columns")
    raise _ire(f"Non-supported custom class '{cls}' provided")


def _check_local(stmt: ast.CreateIndex, table: "Table") -> None:
    """``validate_for_local_index``: the first target names the whole partition key, in order."""
    targets = stmt.targets
    if targets and targets[0].kind == "columns":
        pk_names = [c.name for c in table.partition_key]
        expected = 0
        for name in targets[0].columns:
            col = table.column(name)
            if col is None or col.kind != "partition_key":
                raise _ire(f"Local index definition must contain full partition key only. Redundant column: {name}")
            if expected == len(pk_names):
                raise _ire(f"Duplicate column definition in local index: {name}")
            if pk_names[expected] != name:
                break
            expected += 1
        if expected != len(pk_names):
            raise _ire(f"Local index definition must contain full partition key only. Missing column: "
                       f"{pk_names[expected]}")
        if len(targets) == 1:
            raise _ire("Local index definition must provide an indexed column, not just partition key")
    for t in targets[1:]:
        if t.kind == "columns":
            raise _ire("Multi-column index targets are currently only supported for partition key")
        col = table.column(t.column)
        if col is not None and col.is_static:
            raise _ire("Local indexes containing static columns are not supported.")


def _kind_name(kind: str) -> str:
    return {KEYS: "keys()", ENTRIES: "entries()", VALUES: "values()", FULL: "full()"}.get(kind, "value")


def _check_target(target: ast.IndexTarget, col: "Column | None", local: bool, pk_columns: int) -> str:
    """The checks of one target column (``validate_while_executing``); the kind the index gets (a collection's
    plain target becomes ``values``, or ``keys`` for a set, as ScyllaDB rewrites it)."""
    if col is None:
        raise _ire(f"No column definition found for column {target.column}")
    t = col.type
    if t.references_duration():
        if t.is_collection:
            raise _ire("Secondary indexes are not supported on collections containing durations")
        if type(t).__name__ == "UserType":
            raise _ire("Secondary indexes are not supported on UDTs containing durations")
        if type(t).__name__ == "TupleType":
            raise _ire("Secondary indexes are not supported on tuples containing durations")
        raise _ire("Secondary indexes are not supported on duration columns")
    if col.kind == "partition_key" and pk_columns == 1:
        raise _ire(f"Cannot create secondary index on partition key column {target.column}")
    kind = target.kind
    is_map = type(t).__name__ == "MapType"
    if t.is_multicell:
        if not t.is_collection:
            raise _ire(f"Cannot create secondary index on UDT column {col.name}")
        if local:
            raise _ire(f"Local secondary index on collection column {target.column} is not implemented yet.")
        if kind == FULL:
            raise _ire("full() indexes can only be created on frozen collections")
        if kind in (KEYS, ENTRIES) and not is_map:
            raise _ire(f"Cannot create secondary index on {kind} of column {col.name} with non-map type")
        if kind in (REGULAR_VALUES, VALUES):
            kind = KEYS if type(t).__name__ == "SetType" else VALUES
        return kind
    if t.is_collection:
        if kind != FULL:
            raise _ire(f"Cannot create index on {_kind_name(kind)} of frozen collection column {target.column}")
        return kind
    if kind == FULL:
        raise _ire("full() indexes can only be created on frozen collections")
    if kind != REGULAR_VALUES:
        raise _ire(f"Cannot create index on {_kind_name(kind)} of column {target.column}; only non-frozen "
                   f"collections support {_kind_name(kind)} indexes")
    return kind


def create_index(cat: Catalog, stmt: ast.CreateIndex, ks_name: str) -> Outcome:
    """``CREATE INDEX`` on a table of keyspace ``ks_name`` (resolved and checked modifiable by the catalog):
    ScyllaDB's checks in its order, then the index on its table (a schema change ``UPDATED TABLE`` of the base,
    as ScyllaDB announces it)."""
    if stmt.name_keyspace is not None and stmt.name_keyspace != ks_name:
        raise _ire(f"Index keyspace '{stmt.name_keyspace}' must be the same as its table's keyspace '{ks_name}'")
    options, index_id = _check_properties(stmt)
    ks = cat.keyspaces.get(ks_name)
    if ks is None:
        raise _ire(f"Keyspace {ks_name} does not exist")
    table = ks.tables.get(stmt.table.name)
    if table is None:
        raise _ire(f"unconfigured table {stmt.table.name}")
    if table.cdc_base is not None:
        raise _ire(f"Secondary indexes are not supported on CDC log tables ({ks_name}.{table.name})")
    if table.is_counter_table:
        raise _ire("Secondary indexes are not supported on counter tables")
    if table.view is not None:  # its rows are written by the view's maintenance, which keeps no index entries
        raise _ire("Secondary indexes are not supported on materialized views")
    if stmt.name is not None and len(stmt.name) > NAME_LENGTH:
        raise _ire(f'index names shouldn\'t be more than {NAME_LENGTH} characters long (got "{stmt.name}")')
    _check_local(stmt, table)
    _check_custom(stmt, table)
    local = bool(stmt.targets) and stmt.targets[0].kind == "columns"
    single = stmt.targets[1:] if local else stmt.targets
    if len(single) > 1 or (local and len(stmt.targets) > 2):
        raise _ire("Only CUSTOM indexes support multiple columns")
    target = single[0]
    col = table.column(target.column)
    kind = _check_target(target, col, local, len(table.partition_key))
    existing = {ix.name for t in ks.tables.values() for ix in t.indexes}
    if stmt.name is not None and stmt.name in existing and not stmt.if_not_exists:
        raise _ire("Index already exists")
    name = stmt.name if stmt.name is not None else _available_name(ks, table.name, target.column, existing)
    partition_key = tuple(c.name for c in table.partition_key) if local else ()
    index = SecondaryIndex(name, cat.next_store_id, target.column, kind, local, partition_key, options,
                           index_id if index_id is not None else uuid.uuid1())
    duplicate = next((ix for ix in table.indexes if (ix.column, ix.kind, ix.local) == (index.column, index.kind,
                                                                                       index.local)), None)
    if duplicate is not None:
        if stmt.if_not_exists:
            return cat.keyspaces, None, cat.next_store_id
        raise _ire(f"Index {name} is a duplicate of existing index {duplicate.name}")
    if index_table_name(name) in ks.tables or (stmt.name is not None and stmt.name in existing):
        # the name taken by another index (IF NOT EXISTS: not this index, so still an error, as in ScyllaDB)
        raise _ire(f"Index {name} cannot be created, because table {index_table_name(name)} already exists")
    new_table = replace(table, indexes=table.indexes + (index,))
    new_ks = replace(ks, tables={**ks.tables, table.name: new_table})
    return ({**cat.keyspaces, ks_name: new_ks}, SchemaChange("UPDATED", "TABLE", ks_name, table.name),
            cat.next_store_id + 1)


def _available_name(ks: "Keyspace", table: str, column: str, existing: set[str]) -> str:
    """``get_available_index_name``: the default name, with ``_1``, ``_2`` ... while it is taken."""
    base = default_name(table, column)
    name, i = base, 0
    while name in existing or index_table_name(name) in ks.tables:
        i += 1
        name = f"{base}_{i}"
    return name


def drop_index(cat: Catalog, stmt: ast.DropIndex, ks_name: str) -> Outcome:
    """``DROP INDEX [IF EXISTS] [ks.]name`` in keyspace ``ks_name``: the index and its entries go; ``UPDATED
    TABLE`` of the base."""
    ks = cat.keyspaces.get(ks_name)
    if ks is None:
        raise _ire(f"Keyspace {ks_name} does not exist")
    found = find_index(ks, stmt.name.name)
    if found is None:
        if stmt.if_exists:
            return cat.keyspaces, None, cat.next_store_id
        raise _ire(f"Index '{stmt.name.name}' could not be found in any of the tables of keyspace '{ks_name}'")
    table, index = found
    new_table = replace(table, indexes=tuple(ix for ix in table.indexes if ix.name != index.name))
    new_ks = replace(ks, tables={**ks.tables, table.name: new_table})
    return ({**cat.keyspaces, ks_name: new_ks}, SchemaChange("UPDATED", "TABLE", ks_name, table.name),
            cat.next_store_id)


def check_drop_column(table: "Table", column: str) -> None:
    """ALTER TABLE DROP of an indexed column is refused as ScyllaDB refuses it (its index is a view that needs it)."""
    for ix in table.indexes:
        if ix.column == column:
            raise _ire(f"Cannot drop column {column} from base table {table.keyspace}.{table.name}: materialized "
                       f"view {index_table_name(ix.name)} needs this column")


def check_rename_column(table: "Table", column: str) -> None:
    """ALTER TABLE RENAME of an indexed column (``validate_column_rename``)."""
    names = [ix.name for ix in table.indexes if ix.column == column or column in ix.partition_key]
    if names:
        raise _ire(f"Cannot rename column {column} because it has dependent secondary indexes ({', '.join(names)})")


def check_table_name(ks: "Keyspace", name: str) -> None:
    """CREATE TABLE of a name an index's hidden view has in ScyllaDB (``<index>_index``)."""
    for t in ks.tables.values():
        for ix in t.indexes:
            if index_table_name(ix.name) == name:
                from logtide.errors import AlreadyExists
                raise AlreadyExists(f'Cannot add already existing table "{name}" to keyspace "{ks.name}"',
                                    keyspace=ks.name, table=name)


def index_store_ids(cat: Catalog) -> set[int]:
    """The store ids of every index of the catalog (their entries are dropped with them)."""
    return {ix.store_id for ks in cat.keyspaces.values() for t in ks.tables.values() for ix in t.indexes}


def indexes_rows(catalog: Catalog) -> list[dict[str, Any]]:
    """``system_schema.indexes``: one row per index, ``kind`` COMPOSITES (every logtide table is compound) and
    ``options`` ``{'target': ...}``, in primary-key order (keyspace, table, index name)."""
    rows = []
    for ks_name in sorted(catalog.keyspaces):
        ks = catalog.keyspaces[ks_name]
        for t_name in sorted(ks.tables):
            for ix in sorted(ks.tables[t_name].indexes, key=lambda ix: ix.name):
                rows.append({"keyspace_name": ks_name, "table_name": t_name, "index_name": ix.name,
                             "kind": "COMPOSITES", "options": {"target": ix.target}})
    return rows


def built_index_rows(catalog: Catalog, building: Collection[int] = ()) -> list[dict[str, Any]]:
    """``system."IndexInfo"``: every index built (``building``: the store ids of the indexes still being built,
    which are not there yet; ``table_name`` holds the keyspace's name, as in ScyllaDB and Cassandra), by keyspace
    then index name."""
    return [{"table_name": ks_name, "index_name": name}
            for ks_name in sorted(catalog.keyspaces)
            for name in sorted(ix.name for t in catalog.keyspaces[ks_name].tables.values() for ix in t.indexes
                               if ix.store_id not in building)]
