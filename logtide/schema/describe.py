"""DESCRIBE: CQL text for schema objects as ScyllaDB 5.x's server-side describe prints it.

Statements are returned without a trailing newline; text for several
statements joins them with a blank line, as cqlsh prints them.
``describe_rows`` gives the rows of Cassandra 4's server-side DESCRIBE
(``keyspace_name, type, name, create_statement``).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any, Iterable

from logtide.cql import ast
from logtide.errors import InvalidRequest
from logtide.schema.model import Keyspace, Table, UserTypeDef

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
SYSTEM_KEYSPACES = ("system", "system_auth", "system_schema", "system_distributed", "system_logtide", "system_traces")


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
        f" AND durable_writes = {durable};"
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


def describe_table(table: Table, catalog: "Catalog | None" = None) -> str:
    """``CREATE TABLE ks.t (...) WITH ...;`` as ScyllaDB prints it."""
    lines = [f"CREATE TABLE {_qualified(table.keyspace, table.name)} ("]
    for c in table.columns:
        static = " STATIC" if c.is_static else ""
        lines.append(f"    {quote_identifier(c.name)} {c.type.cql()}{static},")
    lines.append(f"    {_primary_key_clause(table)}")
    with_items = table_properties(table)
    if table.clustering_key:
        order = ", ".join(f"{quote_identifier(c.name)} {'DESC' if c.reversed else 'ASC'}" for c in table.clustering_key)
        with_items.insert(0, f"CLUSTERING ORDER BY ({order})")
    lines.append(") WITH " + "\n    AND ".join(with_items) + ";")
    text = "\n".join(lines)
    if table.cdc_base is not None:
        # ScyllaDB shows a CDC log table as informational CQL that must not be executed
        text = ("/* Do NOT execute this statement! It's only for informational purposes.\n"
                "   A CDC log table is created automatically when creating a base table with CDC enabled.\n\n"
                + text + "\n*/")
    return text + "".join("\n" + s for s in changefeed_statements(table))


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


def keyspace_statements(ks: Keyspace, with_contents: bool) -> list[tuple[str, str, str]]:
    """(type, name, statement) for a keyspace and, with contents, its types then its tables by name."""
    items = [("keyspace", ks.name, create_keyspace_statement(ks))]
    if with_contents:
        items += [("type", u.name, describe_type(u)) for u in sorted_types(ks)]
        items += [("table", n, describe_table(ks.tables[n])) for n in sorted(ks.tables)]
    return items


def describe_keyspace(ks: Keyspace, catalog: "Catalog | None" = None, with_contents: bool = True) -> str:
    """DESCRIBE KEYSPACE text: the keyspace, then (with contents) its types and tables."""
    return "\n\n".join(s for _, _, s in keyspace_statements(ks, with_contents))


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


def _listing(catalog: "Catalog", keyspace: str | None, attr: str) -> str:
    if keyspace is not None:
        ks = catalog.keyspace(keyspace)
        return columnize([quote_identifier(n) for n in sorted(getattr(ks, attr))])
    parts = []
    for ks in catalog.all_keyspaces():
        names = [quote_identifier(n) for n in sorted(getattr(ks, attr))]
        header = f"Keyspace {ks.name}\n---------{'-' * len(ks.name)}\n"
        parts.append(header + columnize(names))
    return "\n".join(parts)


def describe_tables(catalog: "Catalog", keyspace: str | None) -> str:
    """DESCRIBE TABLES: table names of one keyspace, or of every keyspace under a header."""
    return _listing(catalog, keyspace, "tables")


def describe_types(catalog: "Catalog", keyspace: str | None) -> str:
    """DESCRIBE TYPES: user type names of one keyspace, or of every keyspace under a header."""
    return _listing(catalog, keyspace, "types")


# --------------------------------------------------------------------------
# Server-side DESCRIBE rows (Cassandra 4 DescribeStatement)
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


def _listing_rows(catalog: "Catalog", current: str | None, attr: str, kind: str) -> list[Row]:
    keyspaces = [_find_keyspace(catalog, current)] if current is not None else catalog.all_keyspaces()
    return [
        (quote_identifier(ks.name), kind, quote_identifier(n), None)
        for ks in keyspaces
        for n in sorted(getattr(ks, attr))
    ]


def _keyspace_rows(stmt: ast.Describe, catalog: "Catalog", current: str | None) -> list[Row]:
    if stmt.name is None:
        if current is None:
            raise InvalidRequest("No keyspace specified and no current keyspace")
        ks = _find_keyspace(catalog, current)
    else:
        ks = _find_keyspace(catalog, stmt.name.name)
    return _rows(ks, keyspace_statements(ks, True))


def _table_rows(stmt: ast.Describe, catalog: "Catalog", current: str | None) -> list[Row]:
    ks = _element_keyspace(stmt, catalog, current)
    name = stmt.name.name
    if name not in ks.tables:
        raise InvalidRequest(f"Table '{name}' not found in keyspace '{ks.name}'")
    return _rows(ks, [("table", name, describe_table(ks.tables[name]))])


def _type_rows(stmt: ast.Describe, catalog: "Catalog", current: str | None) -> list[Row]:
    ks = _element_keyspace(stmt, catalog, current)
    name = stmt.name.name
    if name not in ks.types:
        raise InvalidRequest(f"User defined type '{name}' not found in '{ks.name}'")
    return _rows(ks, [("type", name, describe_type(ks.types[name]))])


def _generic_rows(stmt: ast.Describe, catalog: "Catalog", current: str | None) -> list[Row]:
    """``DESCRIBE x``: a keyspace if one has that name, else a table of the current keyspace."""
    name = stmt.name
    if name.keyspace is None and catalog.find_keyspace(name.name) is not None:
        return _rows(catalog.keyspace(name.name), keyspace_statements(catalog.keyspace(name.name), True))
    ks_name = name.keyspace if name.keyspace is not None else (current if current is not None else name.name)
    ks = _find_keyspace(catalog, ks_name)
    if name.name in ks.tables:
        return _rows(ks, [("table", name.name, describe_table(ks.tables[name.name]))])
    raise InvalidRequest(f"'{name.name}' not found in keyspace '{ks.name}'")


def _schema_rows(catalog: "Catalog", full: bool) -> list[Row]:
    rows: list[Row] = []
    for ks in catalog.all_keyspaces():
        if full or ks.name not in SYSTEM_KEYSPACES:
            rows += _rows(ks, keyspace_statements(ks, True))
    return rows


def describe_rows(stmt: ast.Describe, catalog: "Catalog", current_keyspace: str | None) -> list[Row]:
    """Rows ``(keyspace_name, type, name, create_statement)`` of a server-side DESCRIBE.

    Listings (KEYSPACES, TABLES, TYPES) have ``None`` as create_statement:
    Cassandra returns only the first three columns for them.  ``DESCRIBE
    CLUSTER`` has other columns and is not handled here.
    """
    kind = stmt.kind
    if kind == "keyspaces":
        return [(quote_identifier(ks.name), "keyspace", quote_identifier(ks.name), None) for ks in catalog.all_keyspaces()]
    if kind == "tables":
        return _listing_rows(catalog, current_keyspace, "tables", "table")
    if kind == "types":
        return _listing_rows(catalog, current_keyspace, "types", "type")
    if kind == "keyspace":
        return _keyspace_rows(stmt, catalog, current_keyspace)
    if kind == "table":
        return _table_rows(stmt, catalog, current_keyspace)
    if kind == "type":
        return _type_rows(stmt, catalog, current_keyspace)
    if kind == "name":
        return _generic_rows(stmt, catalog, current_keyspace)
    if kind in ("schema", "full schema"):
        return _schema_rows(catalog, kind == "full schema")
    raise InvalidRequest(f"DESCRIBE {kind.upper()} is not supported here")
