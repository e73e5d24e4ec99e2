"""DESCRIBE: CQL text for schema objects as ScyllaDB's server-side describe prints it.

The rules follow ScyllaDB's ``cql3/statements/describe_statement.cc`` and
``schema/schema.cc`` (``get_create_statement``, ``schema_properties``): a
table's statement ends with ``;`` and a newline, a keyspace's and a type's
with ``;``; ``WITH INTERNALS`` adds the table id and the history of dropped
columns; an attached CDC log table is never listed as a table of its keyspace
but described, after its base table, as ``ALTER TABLE <log> WITH ...`` (so a
dump restores the log's properties), and ``DESCRIBE TABLE <log>`` returns its
CREATE statement inside a comment.  Text for several statements joins them
with a blank line, as cqlsh prints them.  ``describe_rows`` gives the rows of
the server-side DESCRIBE (``keyspace_name, type, name, create_statement``).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any, Iterable

from logtide.cql import ast
from logtide.errors import InvalidRequest
from logtide.schema import types as T
from logtide.schema.model import Keyspace, Table, UserTypeDef
from logtide.schema.udf import UserAggregate, UserFunction, type_name

if TYPE_CHECKING:
    from logtide.schema.catalog import Catalog

# Cassandra 4's ReservedKeywords: these must always be quoted.
RESERVED_KEYWORDS = frozenset(
    """
    add allow alter and apply asc authorize batch begin by columnfamily create default delete desc describe drop
    entries execute from full grant if in index infinity insert into is keyspace limit mbean mbeans modify nan
    norecursive not null of on or order primary rename replace revoke schema select set table to token truncate
    unlogged unset update use using view where with materialized
    """.split()
)
_UNQUOTED = re.compile(r"[a-z][a-z0-9_]*")
CDC_LOG_SUFFIX = "_scylla_cdc_log"
SYSTEM_KEYSPACES = ("system", "system_auth", "system_schema", "system_distributed", "system_logtide",
                    "system_traces")


def quote_identifier(name: str) -> str:
    """``name`` as CQL must write it: bare when lower-case alphanumeric and not reserved, else double-quoted."""
    if _UNQUOTED.fullmatch(name) and name not in RESERVED_KEYWORDS:
        return name
    return '"' + name.replace('"', '""') + '"'


def quote_string(text: str) -> str:
    """A CQL string literal."""
    return "'" + text.replace("'", "''") + "'"


def _qualified(keyspace: str, name: str) -> str:
    return f"{quote_identifier(keyspace)}.{quote_identifier(name)}"


def _map_literal(options: dict[str, Any], sort: bool = True) -> str:
    items = sorted(options.items()) if sort else list(options.items())
    return "{" + ", ".join(f"{quote_string(str(k))}: {quote_string(str(v))}" for k, v in items) + "}"


def _number(value: Any) -> str:
    """A number as C++ streams print it (``1`` for 1.0, ``0.01``)."""
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


# --------------------------------------------------------------------------
# CREATE statements
# --------------------------------------------------------------------------


def create_keyspace_statement(ks: Keyspace) -> str:
    """``CREATE KEYSPACE ks WITH replication = {...} AND durable_writes = true;``."""
    replication = {"class": ks.replication.get("class", "")}
    replication.update(sorted((k, v) for k, v in ks.replication.items() if k != "class"))
    durable = "true" if ks.durable_writes else "false"
    return (
        f"CREATE KEYSPACE {quote_identifier(ks.name)} WITH replication = {_map_literal(replication, sort=False)}"
        f" AND durable_writes = {durable} AND tablets = {{'enabled': false}};"
    )


def describe_type(udt: UserTypeDef) -> str:
    """``CREATE TYPE ks.ut (\\n    a int,\\n    b int\\n);``."""
    fields = ",\n".join(f"    {quote_identifier(n)} {t.cql()}" for n, t in zip(udt.field_names, udt.field_types))
    return f"CREATE TYPE {_qualified(udt.keyspace, udt.name)} (\n{fields}\n);"


def _primary_key_clause(table: Table) -> str:
    pk = [quote_identifier(c.name) for c in table.partition_key]
    head = f"({', '.join(pk)})" if len(pk) > 1 else pk[0]
    return "PRIMARY KEY (" + ", ".join([head] + [quote_identifier(c.name) for c in table.clustering_key]) + ")"


def table_properties(table: Table) -> list[str]:
    """The ``name = value`` items of the WITH clause, in ScyllaDB's order."""
    from logtide.schema.properties import table_defaults

    o = {**table_defaults(), **table.options}
    compaction = dict(o["compaction"])
    klass = compaction.pop("class", "SizeTieredCompactionStrategy")
    compaction_text = "{" + ", ".join([f"'class': {quote_string(klass)}"] + [
        f"{quote_string(k)}: {quote_string(str(v))}" for k, v in sorted(compaction.items())
    ]) + "}"
    items = [
        f"bloom_filter_fp_chance = {_number(o['bloom_filter_fp_chance'])}",
        f"caching = {_map_literal(o['caching'])}",
        f"comment = {quote_string(o['comment'])}",
        f"compaction = {compaction_text}",
        f"compression = {_map_literal(o['compression'])}",
        f"crc_check_chance = {_number(o['crc_check_chance'])}",
        f"default_time_to_live = {_number(o['default_time_to_live'])}",
        f"gc_grace_seconds = {_number(o['gc_grace_seconds'])}",
        f"max_index_interval = {_number(o['max_index_interval'])}",
        f"memtable_flush_period_in_ms = {_number(o['memtable_flush_period_in_ms'])}",
        f"min_index_interval = {_number(o['min_index_interval'])}",
        f"speculative_retry = {quote_string(o['speculative_retry'])}",
    ]
    if table.cdc is not None:
        items.append(f"cdc = {_map_literal(dict(table.cdc))}")
    items.append(f"tombstone_gc = {_map_literal(o['tombstone_gc'])}")
    return items


LOG_COMMENT_HEAD = ("/* Do NOT execute this statement! It's only for informational purposes.\n"
                    "   A CDC log table is created automatically when creating the base with CDC\n"
                    "   enabled option or creating the vector index on the base table's vector column.\n\n")


def is_attached_log(table: Table, catalog: "Catalog | None") -> bool:
    """A CDC log table whose base table has CDC on (ScyllaDB's ``is_log_for_some_table``); without a catalog, any log."""
    if table.cdc_base is None:
        return False
    if catalog is None:
        return True
    base = catalog.find_table(table.keyspace, table.cdc_base)
    return base is not None and base.cdc is not None and base.cdc.get("enabled") == "true"


def _column(name: str, type_cql: str, static: bool = False) -> str:
    return f"{quote_identifier(name)} {type_cql}{' STATIC' if static else ''}"


def create_table_statement(table: Table, with_internals: bool = False) -> str:
    """``CREATE TABLE ks.t (...) WITH ...;`` and a newline; ``with_internals`` adds the id and dropped columns."""
    head = _qualified(table.keyspace, table.name)
    dropped = table.dropped_columns if with_internals else {}
    # ScyllaDB reads dropped columns back from system_schema.dropped_columns (by name) into a hash map
    # whose iteration order is the reverse of insertion for a few names
    dropped_names = sorted(dropped, reverse=True)
    lines = [f"CREATE TABLE {head} ("]
    for c in table.columns:
        if c.name not in dropped:
            ttl = " TTL" if c.name == table.ttl_column else ""  # ScyllaDB's per-row TTL column (schema/row_ttl.py)
            lines.append(f"    {_column(c.name, c.type.cql(), c.is_static)}{ttl},")
    for name in dropped_names:
        lines.append(f"    {_column(name, dropped[name][0])},")
    lines.append(f"    {_primary_key_clause(table)}")
    with_items = table_properties(table)
    if table.clustering_key:
        order = ", ".join(f"{quote_identifier(c.name)} {'DESC' if c.reversed else 'ASC'}" for c in table.clustering_key)
        with_items.insert(0, f"CLUSTERING ORDER BY ({order})")
    props = "\n    AND ".join(with_items)
    ident = f"ID = {table.id}\nAND " if with_internals else ""
    text = "\n".join(lines) + f"\n) WITH {ident}{props};\n"
    for name in dropped_names:
        text += f"\nALTER TABLE {head} DROP {quote_identifier(name)} USING TIMESTAMP {dropped[name][1]};"
        column = table.column(name)
        if column is not None:
            text += f"\nALTER TABLE {head} ADD {_column(name, column.type.cql(), column.is_static)};"
    return text


def describe_table(table: Table, catalog: "Catalog | None" = None, with_internals: bool = False) -> str:
    """A table's CREATE statement as ScyllaDB prints it (an attached CDC log's inside a comment), then its changefeeds."""
    text = create_table_statement(table, with_internals)
    if is_attached_log(table, catalog):
        text = LOG_COMMENT_HEAD + text + "\n*/"
    return text + "".join(s + "\n" for s in changefeed_statements(table))


def alter_log_statement(log: Table) -> str:
    """``ALTER TABLE ks.t_scylla_cdc_log WITH <every property>;``: how a keyspace's description restores a log's properties."""
    return f"ALTER TABLE {_qualified(log.keyspace, log.name)} WITH " + "\n    AND ".join(table_properties(log)) + ";\n"


def index_statement(table: Table, index: Any, with_internals: bool = False) -> str:
    """``CREATE INDEX name ON ks.t(target) WITH ...;`` as ScyllaDB describes an index (``schema.cc``:
    ``get_create_statement`` of the index's view: ``ID = ...`` with internals, its properties, ScyllaDB's
    ``synchronous_updates`` when given, the target as ``describe_index_columns``)."""
    from dataclasses import replace as _replace
    column = table.column(index.column)
    target = index.describe_target(column.type if column is not None else None)
    items = table_properties(_replace(table, options=dict(index.options), cdc=None))
    if "synchronous_updates" in index.options:
        items.append(f"synchronous_updates = {index.options['synchronous_updates']}")
    ident = f"ID = {index.index_id}\n    AND " if with_internals else ""
    return (f"CREATE INDEX {quote_identifier(index.name)} ON {_qualified(table.keyspace, table.name)}({target})"
            f" WITH {ident}" + "\n    AND ".join(items) + ";\n")


INDEX_VIEW_COMMENT_HEAD = ("/* Do NOT execute this statement! It's only for informational purposes.\n"
                           "   This materialized view is the underlying materialized view of a secondary\n"
                           "   index. It can be restored via restoring the index.\n\n")


def index_view_description(ks: Keyspace, name: str, with_internals: bool = False) -> tuple[str, str, str] | None:
    """``DESCRIBE MATERIALIZED VIEW <index>_index``: the view ScyllaDB backs a secondary index with
    (``indexes.backing_view``), its statement inside a comment, as ScyllaDB prints it (restore the index,
    not the view); None when no index of ``ks`` has that view name."""
    from logtide.schema.indexes import backing_view, index_table_name
    from logtide.schema.views import describe_view
    for table in ks.tables.values():
        for ix in table.indexes:
            if index_table_name(ix.name) == name:
                text = describe_view(backing_view(table, ix), table_properties, with_internals)
                return "view", name, INDEX_VIEW_COMMENT_HEAD + text + "\n*/"
    return None


def table_descriptions(table: Table, catalog: "Catalog | None", with_internals: bool = False) -> list[tuple[str, str, str]]:
    """(type, name, statement) of ``DESCRIBE TABLE``: the table, its secondary indexes, its materialized views,
    then, when CDC is on, its log's ALTER statement."""
    if table.view is not None:
        raise InvalidRequest("Cannot use DESC TABLE on materialized View. (Did you mean DESC MATERIALIZED VIEW)?")
    out = [("table", table.name, describe_table(table, catalog, with_internals))]
    out += [("index", ix.name, index_statement(table, ix, with_internals))
            for ix in sorted(table.indexes, key=lambda ix: ix.name)]
    if catalog is not None:
        from logtide.schema.views import view_descriptions
        out += view_descriptions(catalog.keyspace(table.keyspace), table, table_properties, with_internals)
    if table.cdc is not None and table.cdc.get("enabled") == "true" and catalog is not None:
        log = catalog.find_table(table.keyspace, table.name + CDC_LOG_SUFFIX)
        if log is not None and log.cdc_base == table.name:
            out.append(("table", log.name, alter_log_statement(log)))
    return out


def changefeed_statements(table: Table) -> list[str]:
    """The table's changefeeds as YDB's SHOW CREATE prints them: ``ALTER TABLE ... ADD CHANGEFEED ...;``."""
    out = []
    for f in table.changefeeds:
        head = f"ALTER TABLE {_qualified(table.keyspace, table.name)}"
        out.append(f"{head} ADD CHANGEFEED {quote_identifier(f.name)} WITH ({f.options.settings_ddl()});")
        if f.disabled:
            out.append(f"{head} ALTER CHANGEFEED {quote_identifier(f.name)} DISABLE;")
    return out


def sorted_types(ks: Keyspace) -> list[UserTypeDef]:
    """User types with every type after the types it uses (then by name)."""
    from logtide.schema.catalog import references_udt

    remaining = sorted(ks.types)
    result: list[UserTypeDef] = []
    done: set[str] = set()
    while remaining:
        for name in remaining:
            udt = ks.types[name]
            deps = {
                other for other in ks.types
                if other != name and any(references_udt(t, ks.name, other) for t in udt.field_types)
            }
            if deps <= done:
                result.append(udt)
                done.add(name)
                remaining.remove(name)
                break
        else:  # a cycle cannot happen; keep going rather than loop forever
            result.extend(ks.types[n] for n in remaining)
            break
    return result


def listed_tables(ks: Keyspace, catalog: "Catalog | None") -> list[Table]:
    """A keyspace's tables by name, without attached CDC log tables (ScyllaDB hides them from listings) and without
    materialized views (described after their base table)."""
    return [ks.tables[n] for n in sorted(ks.tables)
            if not is_attached_log(ks.tables[n], catalog) and ks.tables[n].view is None]


def keyspace_statements(ks: Keyspace, with_contents: bool, catalog: "Catalog | None" = None,
                        with_internals: bool = False) -> list[tuple[str, str, str]]:
    """(type, name, statement) for a keyspace and, with contents, its types then its tables by name."""
    items = [("keyspace", ks.name, create_keyspace_statement(ks))]
    if with_contents:
        items += [("type", u.name, describe_type(u)) for u in sorted_types(ks)]
        items += function_descriptions(ks)
        for t in listed_tables(ks, catalog):
            items += table_descriptions(t, catalog, with_internals)
    return items


def function_descriptions(ks: Keyspace, kind: str | None = None, name: str | None = None) -> list[tuple[str, str, str]]:
    """(type, name, statement) of the keyspace's user-defined functions then aggregates (ScyllaDB's order), or of
    one ``kind`` and ``name``."""
    items = [("function", f.name, describe_function(f)) for f in sorted(ks.functions.values(), key=_by_signature)
             if kind in (None, "function") and name in (None, f.name)]
    items += [("aggregate", a.name, describe_aggregate(a, ks)) for a in sorted(ks.aggregates.values(),
                                                                                key=_by_signature)
              if kind in (None, "aggregate") and name in (None, a.name)]
    return items


def _described_type(t: Any) -> str:
    """A function's type as DESCRIBE writes it: without ``frozen``, a user type's name quoted where CQL needs it
    (ScyllaDB's ``cql3_type_name_without_frozen``), so the statement runs again."""
    return quote_identifier(t.name) if isinstance(t, T.UserType) else type_name(t)


def describe_function(f: UserFunction) -> str:
    """ScyllaDB's DESCRIBE text of a function (``user_function::describe``)."""
    args = ", ".join(f"{quote_identifier(n)} {_described_type(t)}" for n, t in zip(f.arg_names, f.arg_types))
    return (f"CREATE FUNCTION {quote_identifier(f.keyspace)}.{quote_identifier(f.name)}({args})\n"
            f"{'CALLED' if f.called_on_null_input else 'RETURNS NULL'} ON NULL INPUT\n"
            f"RETURNS {_described_type(f.return_type)}\nLANGUAGE {f.language}\nAS $${f.body}$$;")


def describe_aggregate(a: UserAggregate, ks: Any) -> str:
    """ScyllaDB's DESCRIBE text of an aggregate (``user_aggregate::describe``)."""
    lines = [f"CREATE AGGREGATE {quote_identifier(a.keyspace)}.{quote_identifier(a.name)}"
             f"({', '.join(_described_type(t) for t in a.arg_types)})",
             f"SFUNC {quote_identifier(a.state_function.split('(', 1)[0])}", f"STYPE {_described_type(a.state_type)}"]
    if a.reduce_function:
        lines.append(f"REDUCEFUNC {quote_identifier(a.reduce_function.split('(', 1)[0])}")
    if a.final_function:
        lines.append(f"FINALFUNC {quote_identifier(a.final_function.split('(', 1)[0])}")
    if a.initcond_text is not None:
        lines.append(f"INITCOND {a.initcond_text}")
    return "\n".join(lines) + ";"


def _by_signature(f: Any) -> tuple[str, str]:
    return f.name, f.signature


def describe_keyspace(ks: Keyspace, catalog: "Catalog | None" = None, with_contents: bool = True) -> str:
    """DESCRIBE KEYSPACE text: the keyspace, then (with contents) its types and tables."""
    return "\n\n".join(s.rstrip("\n") for _, _, s in keyspace_statements(ks, with_contents, catalog))


def describe_schema(catalog: "Catalog", full: bool = False) -> str:
    """DESCRIBE [FULL] SCHEMA text: every keyspace with its contents (system ones only when full)."""
    parts = [
        describe_keyspace(ks, catalog, True)
        for ks in catalog.all_keyspaces()
        if full or ks.name not in SYSTEM_KEYSPACES
    ]
    return "\n\n".join(parts)


# --------------------------------------------------------------------------
# Listings (cqlsh prints names in columns, as cmd.Cmd.columnize does)
# --------------------------------------------------------------------------


def columnize(names: list[str], width: int = 80) -> str:
    """Python's ``cmd.Cmd.columnize`` as text (each line ends with a newline)."""
    if not names:
        return "<empty>\n"
    size = len(names)
    if size == 1:
        return names[0] + "\n"
    for nrows in range(1, size):
        ncols = (size + nrows - 1) // nrows
        colwidths = []
        totwidth = -2
        for col in range(ncols):
            colwidth = max((len(names[col * nrows + r]) for r in range(nrows) if col * nrows + r < size), default=0)
            colwidths.append(colwidth)
            totwidth += colwidth + 2
            if totwidth > width:
                break
        if totwidth <= width:
            break
    else:
        nrows, ncols, colwidths = size, 1, [0]
    lines = []
    for row in range(nrows):
        texts = [names[col * nrows + row] for col in range(ncols) if col * nrows + row < size]
        while texts and not texts[-1]:
            del texts[-1]
        lines.append("  ".join(t.ljust(colwidths[i]) for i, t in enumerate(texts)))
    return "".join(line + "\n" for line in lines)


def describe_keyspaces(catalog: "Catalog") -> str:
    """DESCRIBE KEYSPACES: keyspace names in columns."""
    return columnize([quote_identifier(ks.name) for ks in catalog.all_keyspaces()])


def _names(ks: Keyspace, attr: str, catalog: "Catalog") -> list[str]:
    if attr == "tables":
        return [quote_identifier(t.name) for t in listed_tables(ks, catalog)]
    return [quote_identifier(n) for n in sorted(getattr(ks, attr))]


def _listing(catalog: "Catalog", keyspace: str | None, attr: str) -> str:
    if keyspace is not None:
        return columnize(_names(catalog.keyspace(keyspace), attr, catalog))
    parts = []
    for ks in catalog.all_keyspaces():
        header = f"Keyspace {ks.name}\n---------{'-' * len(ks.name)}\n"
        parts.append(header + columnize(_names(ks, attr, catalog)))
    return "\n".join(parts)


def describe_tables(catalog: "Catalog", keyspace: str | None) -> str:
    """DESCRIBE TABLES: table names of one keyspace, or of every keyspace under a header."""
    return _listing(catalog, keyspace, "tables")


def describe_types(catalog: "Catalog", keyspace: str | None) -> str:
    """DESCRIBE TYPES: user type names of one keyspace, or of every keyspace under a header."""
    return _listing(catalog, keyspace, "types")


# --------------------------------------------------------------------------
# Server-side DESCRIBE rows (ScyllaDB's describe_statement.cc)
# --------------------------------------------------------------------------

Row = tuple[str, str, str, "str | None"]


def _find_keyspace(catalog: "Catalog", name: str) -> Keyspace:
    ks = catalog.find_keyspace(name)
    if ks is None:
        raise InvalidRequest(f"'{name}' not found in keyspaces")
    return ks


def _element_keyspace(stmt: ast.Describe, catalog: "Catalog", current: str | None) -> Keyspace:
    name = stmt.name.keyspace if stmt.name is not None else None
    ks = name if name is not None else current
    if ks is None:
        raise InvalidRequest("No keyspace specified and no current keyspace")
    return _find_keyspace(catalog, ks)


def _rows(ks: Keyspace, items: Iterable[tuple[str, str, str]]) -> list[Row]:
    return [(quote_identifier(ks.name), kind, quote_identifier(name), stmt) for kind, name, stmt in items]


def _listing_rows(catalog: "Catalog", current: str | None, kind: str) -> list[Row]:
    """``DESC TABLES|TYPES|FUNCTIONS|AGGREGATES``: names (no statement) of the current keyspace, else of every keyspace."""
    keyspaces = [_find_keyspace(catalog, current)] if current is not None else catalog.all_keyspaces()
    rows: list[Row] = []
    for ks in keyspaces:
        if kind == "table":
            names = [t.name for t in listed_tables(ks, catalog)]
        elif kind == "type":
            names = [u.name for u in sorted_types(ks)]
        else:
            names = sorted({f.name for f in (ks.functions if kind == "function" else ks.aggregates).values()})
        rows += [(quote_identifier(ks.name), kind, quote_identifier(n), None) for n in names]
    return rows


def _keyspace_rows(stmt: ast.Describe, catalog: "Catalog", current: str | None) -> list[Row]:
    if stmt.name is None:
        if current is None:
            raise InvalidRequest("No keyspace specified and no current keyspace")
        ks = _find_keyspace(catalog, current)
    else:
        ks = _find_keyspace(catalog, stmt.name.name)
    return _rows(ks, keyspace_statements(ks, not stmt.only, catalog, stmt.internals))


def _table_rows(stmt: ast.Describe, catalog: "Catalog", current: str | None) -> list[Row]:
    ks = _element_keyspace(stmt, catalog, current)
    name = stmt.name.name
    if name not in ks.tables:
        if index_view_description(ks, name) is not None:
            raise InvalidRequest("Cannot use DESC TABLE on materialized View. (Did you mean DESC MATERIALIZED VIEW)?")
        raise InvalidRequest(f"Table '{name}' not found in keyspace '{ks.name}'")
    return _rows(ks, table_descriptions(ks.tables[name], catalog, stmt.internals))


def _view_rows(stmt: ast.Describe, catalog: "Catalog", current: str | None) -> list[Row]:
    """``DESC MATERIALIZED VIEW v`` (ScyllaDB's ``describe_statement``: ``view``)."""
    from logtide.schema.views import describe_view
    ks = _element_keyspace(stmt, catalog, current)
    view = ks.tables.get(stmt.name.name)
    if view is None and (backing := index_view_description(ks, stmt.name.name, stmt.internals)) is not None:
        return _rows(ks, [backing])
    if view is None or view.view is None:
        raise InvalidRequest(f"Materialized view '{stmt.name.name}' not found in keyspace '{ks.name}'")
    return _rows(ks, [("view", view.name, describe_view(view, table_properties, stmt.internals))])


def _type_rows(stmt: ast.Describe, catalog: "Catalog", current: str | None) -> list[Row]:
    ks = _element_keyspace(stmt, catalog, current)
    name = stmt.name.name
    if name not in ks.types:
        raise InvalidRequest(f"Type '{name}' not found in keyspace '{ks.name}'")
    return _rows(ks, [("type", name, describe_type(ks.types[name]))])


def _missing_element(stmt: ast.Describe, catalog: "Catalog", current: str | None) -> list[Row]:
    """``DESC FUNCTION|AGGREGATE|MATERIALIZED VIEW x``: logtide has none of these objects; ``DESC INDEX x``."""
    ks = _element_keyspace(stmt, catalog, current)
    name = stmt.name.name
    if stmt.kind == "index":
        from logtide.schema.indexes import find_index
        found = find_index(ks, name)
        if found is not None:
            return _rows(ks, [("index", name, index_statement(*found, stmt.internals))])
        raise InvalidRequest(f"Table for existing index '{name}' not found in '{ks.name}'")
    if stmt.kind in ("function", "aggregate") and function_descriptions(ks, stmt.kind, name):
        return _rows(ks, function_descriptions(ks, stmt.kind, name))
    what = {"function": "Function", "aggregate": "Aggregate", "materialized view": "Materialized view"}[stmt.kind]
    raise InvalidRequest(f"{what} '{name}' not found in keyspace '{ks.name}'")


def _generic_rows(stmt: ast.Describe, catalog: "Catalog", current: str | None) -> list[Row]:
    """``DESCRIBE x``: a keyspace if one has that name, else a table, view, user type, index, user-defined
    function or aggregate of the (current) keyspace (``generic_describe_statement``)."""
    name = stmt.name
    if name.keyspace is None:
        found = catalog.find_keyspace(name.name)
        if found is not None:
            return _rows(found, keyspace_statements(found, True, catalog, stmt.internals))
        if current is None:
            raise InvalidRequest(f"'{name.name}' not found in keyspaces")
    ks_name = name.keyspace if name.keyspace is not None else current
    ks = catalog.find_keyspace(ks_name)
    if ks is None:
        raise InvalidRequest(f"'{name.name}' not found in keyspaces")
    if name.name in ks.tables and ks.tables[name.name].view is not None:
        from logtide.schema.views import describe_view
        return _rows(ks, [("view", name.name, describe_view(ks.tables[name.name], table_properties, stmt.internals))])
    if name.name in ks.tables:
        return _rows(ks, table_descriptions(ks.tables[name.name], catalog, stmt.internals))
    if name.name in ks.types:
        return _rows(ks, [("type", name.name, describe_type(ks.types[name.name]))])
    if (backing := index_view_description(ks, name.name, stmt.internals)) is not None:
        return _rows(ks, [backing])
    from logtide.schema.indexes import find_index
    found = find_index(ks, name.name)
    if found is not None:
        return _rows(ks, [("index", name.name, index_statement(*found, stmt.internals))])
    for kind in ("function", "aggregate"):  # ScyllaDB's last look: the user-defined functions, then aggregates
        if described := function_descriptions(ks, kind, name.name):
            return _rows(ks, described)
    raise InvalidRequest(f"'{name.name}' not found in keyspace '{ks.name}'")


def _schema_rows(catalog: "Catalog", full: bool, internals: bool) -> list[Row]:
    rows: list[Row] = []
    for ks in catalog.all_keyspaces():
        if full or ks.name not in SYSTEM_KEYSPACES:
            rows += _rows(ks, keyspace_statements(ks, True, catalog, internals))
    return rows


def describe_rows(stmt: ast.Describe, catalog: "Catalog", current_keyspace: str | None) -> list[Row]:
    """Rows ``(keyspace_name, type, name, create_statement)`` of a server-side DESCRIBE.

    Listings (KEYSPACES, TABLES, TYPES, FUNCTIONS, AGGREGATES) have ``None``
    as create_statement: the server returns only the first three columns for
    them.  ``DESCRIBE CLUSTER`` has other columns and is not handled here;
    ``DESCRIBE SCHEMA WITH INTERNALS`` adds the roles and grants (``auth``).
    """
    kind = stmt.kind
    if stmt.passwords and kind not in ("schema", "full schema"):
        raise InvalidRequest("Option WITH PASSWORDS is only allowed with DESC SCHEMA")
    if kind == "keyspaces":
        return [(quote_identifier(ks.name), "keyspace", quote_identifier(ks.name), None) for ks in catalog.all_keyspaces()]
    if kind in ("tables", "types", "functions", "aggregates"):
        return _listing_rows(catalog, current_keyspace, kind[:-1])
    if kind == "keyspace":
        return _keyspace_rows(stmt, catalog, current_keyspace)
    if kind == "table":
        return _table_rows(stmt, catalog, current_keyspace)
    if kind == "type":
        return _type_rows(stmt, catalog, current_keyspace)
    if kind == "materialized view":
        return _view_rows(stmt, catalog, current_keyspace)
    if kind in ("function", "aggregate", "index"):
        return _missing_element(stmt, catalog, current_keyspace)
    if kind == "name":
        return _generic_rows(stmt, catalog, current_keyspace)
    if kind in ("schema", "full schema"):
        return _schema_rows(catalog, kind == "full schema", stmt.internals)
    raise InvalidRequest(f"DESCRIBE {kind.upper()} is not supported here")
