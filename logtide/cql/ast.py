"""Statement and expression classes produced by the CQL parser.

Every class is a frozen dataclass that reads like the grammar rule it stands
for (in the style of sqlglot's expressions).  Constants stay untyped text:
as in Cassandra, a literal only gets its type from the column (the
*receiver*) it is assigned to or compared with; ``logtide.schema.types`` does
that conversion.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Union

# --------------------------------------------------------------------------
# Names and types
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class QualifiedName:
    """``[keyspace.]name``; identifiers already case-folded (unquoted -> lower case)."""

    keyspace: str | None
    name: str


@dataclass(frozen=True)
class TypeExpr:
    """A CQL type as written: ``int``, ``map<int, text>``, ``frozen<ut>``, ``ks.ut``, ``tuple<int, text>``.

    ``name`` is the lower-cased native/collection name (``'int'``, ``'map'``,
    ``'frozen'``, ``'tuple'``, ``'list'``, ``'set'``, ``'varchar'`` ...) or a
    user-defined type name (case-folded like any identifier), in which case
    ``keyspace`` may be given.  ``params`` holds the type arguments; ``dimension`` is the
    size of a ``vector<T, N>`` as written (``name`` ``'vector'``, ``params`` ``(T,)``).
    """

    name: str
    params: tuple["TypeExpr", ...] = ()
    keyspace: str | None = None
    dimension: int | None = None


# --------------------------------------------------------------------------
# Terms: values written in statements
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class Constant:
    """An untyped literal.

    ``kind`` is one of ``'string'`` (text is the unquoted, unescaped string,
    also for ``$$...$$`` strings), ``'integer'`` (text like ``'-12'``),
    ``'float'`` (``'1.5e3'``, ``'NaN'``, ``'Infinity'``, ``'-Infinity'``),
    ``'boolean'`` (``'true'``/``'false'`` lower-cased), ``'uuid'``,
    ``'hex'`` (text like ``'0xcafe'``), ``'duration'`` (``'1h30m'``, ``'P1D'``),
    ``'null'``.
    """

    kind: str
    text: str


@dataclass(frozen=True)
class BindMarker:
    """``?`` or ``:name``; ``index`` is its 0-based position among the statement's markers."""

    index: int
    name: str | None = None


@dataclass(frozen=True)
class ListLiteral:
    """``[t1, t2, ...]``."""

    items: tuple["Term", ...]


@dataclass(frozen=True)
class SetLiteral:
    """``{t1, t2, ...}`` (non-empty)."""

    items: tuple["Term", ...]


@dataclass(frozen=True)
class MapLiteral:
    """``{k1: v1, ...}``; the empty ``{}`` is a MapLiteral with no entries and also stands for an empty set."""

    entries: tuple[tuple["Term", "Term"], ...]


@dataclass(frozen=True)
class TupleLiteral:
    """``(t1, t2, ...)`` as a value (tuple type or multi-column relation)."""

    items: tuple["Term", ...]


@dataclass(frozen=True)
class UdtLiteral:
    """``{field1: t1, field2: t2}`` where the keys are identifiers (field names, case-folded)."""

    fields: tuple[tuple[str, "Term"], ...]


@dataclass(frozen=True)
class FunctionCall:
    """``name(arg, ...)`` as a term or a selector; ``name`` lower-cased unless quoted.

    ``keyspace`` is set for qualified calls such as ``system.now()``.
    Special forms are represented as calls too: ``writetime(c)``,
    ``ttl(c)``, ``token(a, b)``, ``count(*)`` (args ``(Star(),)``),
    ``cast(x AS type)`` (``args=(x, TypeExpr)``).
    """

    name: str
    args: tuple["Selectable", ...] = ()
    keyspace: str | None = None


@dataclass(frozen=True)
class TypeHint:
    """``(type) term``: a term with an explicit type."""

    type: TypeExpr
    term: "Term"


@dataclass(frozen=True)
class TimeuuidListIndex:
    """``SCYLLA_TIMEUUID_LIST_INDEX(k)``: addresses a list element by its timeuuid key."""

    key: "Term"


Term = Union[
    Constant,
    BindMarker,
    ListLiteral,
    SetLiteral,
    MapLiteral,
    TupleLiteral,
    UdtLiteral,
    FunctionCall,
    TypeHint,
]

# --------------------------------------------------------------------------
# Selectors
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class Star:
    """``*`` (in ``SELECT *`` the selector list is ``None`` instead; Star appears inside ``count(*)``)."""


@dataclass(frozen=True)
class ColumnRef:
    """A column name (case-folded unless quoted)."""

    name: str


@dataclass(frozen=True)
class FieldSelection:
    """``expr.field`` in a selector (UDT field access)."""

    expr: "Selectable"
    field: str


@dataclass(frozen=True)
class ElementSelection:
    """``expr[key]`` in a selector (collection element access)."""

    expr: "Selectable"
    key: "Term"


Selectable = Union[ColumnRef, FunctionCall, FieldSelection, ElementSelection, Star, Term]


@dataclass(frozen=True)
class Selector:
    """One item of a SELECT clause with its optional ``AS alias``; ``text`` is the source text as written."""

    expr: Selectable
    alias: str | None = None
    text: str = ""


# --------------------------------------------------------------------------
# WHERE relations and IF conditions
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class TokenOf:
    """``token(c1, c2, ...)`` on the left side of a relation."""

    columns: tuple[str, ...]


@dataclass(frozen=True)
class ColumnTuple:
    """``(c1, c2, ...)`` on the left side of a multi-column relation."""

    columns: tuple[str, ...]


@dataclass(frozen=True)
class InValues:
    """The right side of ``IN (t1, t2, ...)``; ``IN ?`` is a plain BindMarker instead."""

    items: tuple[Term, ...]


@dataclass(frozen=True)
class Relation:
    """``lhs op rhs`` in a WHERE clause.

    ``op`` is one of ``'='``, ``'!='``, ``'<'``, ``'<='``, ``'>'``, ``'>='``,
    ``'IN'``, ``'NOT IN'``, ``'CONTAINS'``, ``'CONTAINS KEY'``, ``'LIKE'``, ``'IS NOT'``
    (``IS NOT NULL``, rhs a null Constant).  An ``ElementRef`` on the left is ScyllaDB's
    ``m[key] = v`` / ``l[index] = v``.
    """

    lhs: Union[ColumnRef, ColumnTuple, TokenOf, "ElementRef"]
    op: str
    rhs: Union[Term, InValues]

    @property
    def column_names(self) -> tuple[str, ...]:
        """The columns the relation restricts: each of a multi-column relation's, none for ``token(...)``."""
        lhs = self.lhs
        if isinstance(lhs, ColumnTuple):
            return lhs.columns
        if isinstance(lhs, TokenOf):
            return ()
        return (lhs.name,) if isinstance(lhs, ColumnRef) else (lhs.column,)


@dataclass(frozen=True)
class ElementRef:
    """``column[key]`` on the left of an IF condition, in DELETE, or (ScyllaDB) of a WHERE relation."""

    column: str
    key: Term


@dataclass(frozen=True)
class FieldRef:
    """``column.field`` on the left of an IF condition or in DELETE."""

    column: str
    field: str


@dataclass(frozen=True)
class Condition:
    """``lhs op rhs`` in an IF clause (ops as in Relation, plus ``'IN'`` and ScyllaDB's ``'NOT IN'``)."""

    lhs: Union[ColumnRef, ElementRef, FieldRef]
    op: str
    rhs: Union[Term, InValues]

    @property
    def column_name(self) -> str:
        """The column the condition tests (of an element or a field: its column)."""
        lhs = self.lhs
        return lhs.name if isinstance(lhs, ColumnRef) else lhs.column


# --------------------------------------------------------------------------
# Assignments (UPDATE ... SET)
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class SetColumn:
    """``c = term``."""

    column: str
    value: Term


@dataclass(frozen=True)
class SetElement:
    """``c[key] = term`` (map key, list index, or TimeuuidListIndex)."""

    column: str
    key: Union[Term, TimeuuidListIndex]
    value: Term


@dataclass(frozen=True)
class SetField:
    """``c.field = term`` (non-frozen UDT field)."""

    column: str
    field: str
    value: Term


@dataclass(frozen=True)
class AddTo:
    """``c = c + term`` (collection append/union, map put, or counter increment)."""

    column: str
    value: Term


@dataclass(frozen=True)
class PrependTo:
    """``c = term + c`` (list prepend)."""

    column: str
    value: Term


@dataclass(frozen=True)
class SubtractFrom:
    """``c = c - term`` (element removal by value/key, or counter decrement)."""

    column: str
    value: Term


Assignment = Union[SetColumn, SetElement, SetField, AddTo, PrependTo, SubtractFrom]

# --------------------------------------------------------------------------
# Statements
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class Using:
    """``USING TIMESTAMP t AND TTL n`` (either may be absent)."""

    timestamp: Term | None = None
    ttl: Term | None = None
    timeout: Term | None = None


@dataclass(frozen=True)
class Insert:
    """``INSERT INTO t (cols) VALUES (terms)`` or ``INSERT INTO t JSON 'json' [DEFAULT NULL|UNSET]``."""

    table: QualifiedName
    columns: tuple[str, ...] = ()
    values: tuple[Term, ...] = ()
    json: Term | None = None
    json_default_unset: bool = False
    if_not_exists: bool = False
    using: Using = field(default_factory=Using)


@dataclass(frozen=True)
class Update:
    """``UPDATE t [USING ...] SET assignments WHERE relations [IF EXISTS | IF conditions]``."""

    table: QualifiedName
    assignments: tuple[Assignment, ...]
    where: tuple[Relation, ...]
    using: Using = field(default_factory=Using)
    if_exists: bool = False
    conditions: tuple[Condition, ...] = ()

    @property
    def changed_names(self) -> tuple[str, ...]:
        """The columns the assignments set, in their order (a column set twice: twice)."""
        return tuple(a.column for a in self.assignments)


@dataclass(frozen=True)
class Delete:
    """``DELETE [targets] FROM t [USING TIMESTAMP t] WHERE relations [IF EXISTS | IF conditions]``.

    ``targets`` holds ColumnRef / ElementRef / FieldRef items; empty means a
    row, range or partition delete depending on the WHERE clause.
    """

    table: QualifiedName
    targets: tuple[Union[ColumnRef, ElementRef, FieldRef], ...]
    where: tuple[Relation, ...]
    using: Using = field(default_factory=Using)
    if_exists: bool = False
    conditions: tuple[Condition, ...] = ()

    @property
    def changed_names(self) -> tuple[str, ...]:
        """The columns the targets delete from (of an element or a field: its column); none for whole rows."""
        return tuple(t.name if isinstance(t, ColumnRef) else t.column for t in self.targets)


@dataclass(frozen=True)
class Batch:
    """``BEGIN [UNLOGGED|COUNTER] BATCH [USING TIMESTAMP t] stmts APPLY BATCH``; kind is LOGGED/UNLOGGED/COUNTER."""

    kind: str
    statements: tuple[Union[Insert, Update, Delete], ...]
    using: Using = field(default_factory=Using)


@dataclass(frozen=True)
class OrderBy:
    """One ``ORDER BY`` item."""

    column: str
    descending: bool = False


@dataclass(frozen=True)
class Select:
    """``SELECT [JSON] [DISTINCT] selectors [FROM t] [WHERE ...] [GROUP BY ...] [ORDER BY ...] [PER PARTITION LIMIT n] [LIMIT n] [ALLOW FILTERING] [BYPASS CACHE] [USING TIMEOUT t]``.

    ``selectors`` is ``None`` for ``*``.
    """

    table: QualifiedName
    selectors: tuple[Selector, ...] | None
    where: tuple[Relation, ...] = ()
    json: bool = False
    distinct: bool = False
    group_by: tuple[str, ...] = ()
    order_by: tuple[OrderBy, ...] = ()
    per_partition_limit: Term | None = None
    limit: Term | None = None
    allow_filtering: bool = False
    bypass_cache: bool = False  # ScyllaDB's ``BYPASS CACHE``: accepted, changes nothing here
    using: Using = field(default_factory=Using)  # ScyllaDB's ``USING TIMEOUT t`` (only timeout)
    no_from: bool = False  # ScyllaDB's SELECT without FROM: ``table`` is then ``system.one_row``


# Property values in WITH clauses: plain Python values.  A quoted string is a
# str, an unquoted identifier is also a str, numbers are int/float, booleans
# are bool, and a map literal is a dict from str to such values.
PropertyValue = Union[str, int, float, bool, dict]


@dataclass(frozen=True)
class ColumnDef:
    """A column definition in CREATE TABLE or ALTER TABLE ADD."""

    name: str
    type: TypeExpr
    static: bool = False
    ttl: bool = False  # ScyllaDB's per-row TTL column marker: ``expiration timestamp TTL`` (CREATE TABLE only)


@dataclass(frozen=True)
class CreateKeyspace:
    """``CREATE KEYSPACE [IF NOT EXISTS] ks WITH replication = {...} [AND durable_writes = b]``."""

    name: str
    options: tuple[tuple[str, PropertyValue], ...]
    if_not_exists: bool = False


@dataclass(frozen=True)
class AlterKeyspace:
    """``ALTER KEYSPACE ks WITH ...``."""

    name: str
    options: tuple[tuple[str, PropertyValue], ...]


@dataclass(frozen=True)
class DropKeyspace:
    """``DROP KEYSPACE [IF EXISTS] ks``."""

    name: str
    if_exists: bool = False


@dataclass(frozen=True)
class UseKeyspace:
    """``USE ks``."""

    name: str


@dataclass(frozen=True)
class CreateTable:
    """``CREATE TABLE [IF NOT EXISTS] t (columns, PRIMARY KEY (...)) [WITH options]``.

    ``partition_key`` / ``clustering_key`` list column names in key order;
    ``clustering_order`` holds the ``CLUSTERING ORDER BY`` items; ``options``
    the other ``WITH`` properties in the order written.
    """

    table: QualifiedName
    columns: tuple[ColumnDef, ...]
    partition_key: tuple[str, ...]
    clustering_key: tuple[str, ...] = ()
    clustering_order: tuple[OrderBy, ...] = ()
    options: tuple[tuple[str, PropertyValue], ...] = ()
    if_not_exists: bool = False
    compact_storage: bool = False


@dataclass(frozen=True)
class AlterTableAdd:
    """``ALTER TABLE t ADD [IF NOT EXISTS] c type [static], ...``."""

    table: QualifiedName
    columns: tuple[ColumnDef, ...]
    if_not_exists: bool = False


@dataclass(frozen=True)
class AlterTableDrop:
    """``ALTER TABLE t DROP [IF EXISTS] c, ... [USING TIMESTAMP t]`` (also ``DROP (c1, c2)``).

    ScyllaDB's ``USING TIMESTAMP`` (a literal or a bind marker) gives the drop time: cells written at or
    before it stay hidden when a column of that name is added again."""

    table: QualifiedName
    columns: tuple[str, ...]
    if_exists: bool = False
    timestamp: "Term | None" = None


@dataclass(frozen=True)
class AlterTableRename:
    """``ALTER TABLE t RENAME a TO b [AND c TO d]``."""

    table: QualifiedName
    renames: tuple[tuple[str, str], ...]


@dataclass(frozen=True)
class AlterTableTtl:
    """ScyllaDB's ``ALTER TABLE t TTL c`` (``c`` becomes the per-row TTL column) or ``ALTER TABLE t TTL NULL``
    (``column`` None: the table has none any more)."""

    table: QualifiedName
    column: str | None


@dataclass(frozen=True)
class AlterTableWith:
    """``ALTER TABLE t WITH options``."""

    table: QualifiedName
    options: tuple[tuple[str, PropertyValue], ...]


@dataclass(frozen=True)
class SettingValue:
    """One literal of ``WITH (...)`` as the parser read it (``changefeed_options`` reads changefeed settings from it).

    ``kind`` is ``'string'``, ``'bool'``, ``'int'``, ``'interval'`` (``value``
    is the ISO-8601 text inside ``Interval('...')``) or ``'other'`` (any other
    expression; ``value`` is its raw text).  ``text`` is the literal as written.
    """

    kind: str
    value: object
    text: str


@dataclass(frozen=True)
class AlterTableAddChangefeed:
    """``ALTER TABLE t ADD CHANGEFEED name WITH (setting = value, ...)`` (YDB, spec ``004``).

    ``settings`` pairs each name as written with a :class:`SettingValue`."""

    table: QualifiedName
    name: str
    settings: tuple[tuple[str, Any], ...]


@dataclass(frozen=True)
class AlterTableDropChangefeed:
    """``ALTER TABLE t DROP CHANGEFEED name``."""

    table: QualifiedName
    name: str


@dataclass(frozen=True)
class AlterTableAlterChangefeed:
    """``ALTER TABLE t ALTER CHANGEFEED name DISABLE`` (``settings`` empty) or ``... SET (settings)``."""

    table: QualifiedName
    name: str
    disable: bool
    settings: tuple[tuple[str, Any], ...] = ()


@dataclass(frozen=True)
class AlterTopicAddConsumer:
    """``ALTER TOPIC "ks/t/name" ADD CONSUMER c [WITH (important = true, read_from = ...)]`` (YDB topics)."""

    path: str
    consumer: str
    settings: tuple[tuple[str, Any], ...] = ()


@dataclass(frozen=True)
class AlterTopicDropConsumer:
    """``ALTER TOPIC "ks/t/name" DROP CONSUMER c``."""

    path: str
    consumer: str


CHANGEFEED_STATEMENTS = (AlterTableAddChangefeed, AlterTableDropChangefeed, AlterTableAlterChangefeed,
                         AlterTopicAddConsumer, AlterTopicDropConsumer)


@dataclass(frozen=True)
class AlterTableAlterType:
    """``ALTER TABLE t ALTER c TYPE type`` (refused as in Cassandra 4)."""

    table: QualifiedName
    column: str
    type: TypeExpr


@dataclass(frozen=True)
class DropTable:
    """``DROP TABLE [IF EXISTS] t``."""

    table: QualifiedName
    if_exists: bool = False


@dataclass(frozen=True)
class Truncate:
    """``TRUNCATE [TABLE] t [USING TIMEOUT d]`` (the timeout is ScyllaDB's)."""

    table: QualifiedName
    using: Using = field(default_factory=Using)  # only a timeout


@dataclass(frozen=True)
class CreateType:
    """``CREATE TYPE [IF NOT EXISTS] ut (f type, ...)``."""

    name: QualifiedName
    fields: tuple[tuple[str, TypeExpr], ...]
    if_not_exists: bool = False


@dataclass(frozen=True)
class AlterTypeAdd:
    """``ALTER TYPE ut ADD f type``."""

    name: QualifiedName
    field: str
    type: TypeExpr


@dataclass(frozen=True)
class AlterTypeRename:
    """``ALTER TYPE ut RENAME a TO b [AND c TO d]``."""

    name: QualifiedName
    renames: tuple[tuple[str, str], ...]


@dataclass(frozen=True)
class DropType:
    """``DROP TYPE [IF EXISTS] ut``."""

    name: QualifiedName
    if_exists: bool = False


@dataclass(frozen=True)
class CreateFunction:
    """``CREATE [OR REPLACE] FUNCTION [IF NOT EXISTS] f (a type, ...) (CALLED | RETURNS NULL) ON NULL INPUT
    RETURNS type LANGUAGE lang AS 'body'`` (ScyllaDB's ``createFunctionStatement``); ``language`` lower-cased."""

    name: QualifiedName
    arguments: tuple[tuple[str, TypeExpr], ...]
    called_on_null_input: bool
    returns: TypeExpr
    language: str
    body: str
    or_replace: bool = False
    if_not_exists: bool = False


@dataclass(frozen=True)
class CreateAggregate:
    """``CREATE [OR REPLACE] AGGREGATE [IF NOT EXISTS] a (type, ...) SFUNC f STYPE type [REDUCEFUNC f]
    [FINALFUNC f] [INITCOND term]`` (ScyllaDB's ``createAggregateStatement``)."""

    name: QualifiedName
    argument_types: tuple[TypeExpr, ...]
    state_function: str
    state_type: TypeExpr
    reduce_function: str | None = None
    final_function: str | None = None
    initial_condition: "Term | None" = None
    or_replace: bool = False
    if_not_exists: bool = False


@dataclass(frozen=True)
class DropFunction:
    """``DROP FUNCTION|AGGREGATE [IF EXISTS] f [(type, ...)]`` (``aggregate`` says which); ``argument_types`` None
    when the statement gives no signature."""

    name: QualifiedName
    argument_types: tuple[TypeExpr, ...] | None
    aggregate: bool = False
    if_exists: bool = False


@dataclass(frozen=True)
class Describe:
    """``DESCRIBE|DESC ...``.

    ``kind`` is one of ``'keyspaces'``, ``'keyspace'``, ``'tables'``,
    ``'table'``, ``'types'``, ``'type'``, ``'functions'``, ``'function'``,
    ``'aggregates'``, ``'aggregate'``, ``'index'``, ``'materialized view'``,
    ``'schema'``, ``'full schema'``, ``'cluster'``, or ``'name'``
    (``DESCRIBE x`` where x may be a keyspace, a table or a type); ``name``
    is set for the singular kinds (``None`` for ``DESCRIBE KEYSPACE`` meaning
    the current keyspace).  ScyllaDB's ``DESC ONLY KEYSPACE`` sets ``only``;
    ``WITH INTERNALS [AND PASSWORDS]`` sets ``internals`` (and ``passwords``).
    """

    kind: str
    name: QualifiedName | None = None
    only: bool = False
    internals: bool = False
    passwords: bool = False


@dataclass(frozen=True)
class CreateRole:
    """``CREATE ROLE [IF NOT EXISTS] r [WITH PASSWORD = 'p' AND LOGIN = b AND SUPERUSER = b]`` (also CREATE USER)."""

    name: str
    options: tuple[tuple[str, PropertyValue], ...] = ()
    if_not_exists: bool = False


@dataclass(frozen=True)
class AlterRole:
    """``ALTER ROLE r WITH ...``."""

    name: str
    options: tuple[tuple[str, PropertyValue], ...]


@dataclass(frozen=True)
class DropRole:
    """``DROP ROLE [IF EXISTS] r``."""

    name: str
    if_exists: bool = False


@dataclass(frozen=True)
class ListRoles:
    """``LIST ROLES [OF r] [NORECURSIVE]``."""

    of: str | None = None
    recursive: bool = True


@dataclass(frozen=True)
class GrantRole:
    """``GRANT role TO grantee``: ``grantee`` becomes a member of ``role`` (inherits its permissions)."""

    role: str
    grantee: str


@dataclass(frozen=True)
class RevokeRole:
    """``REVOKE role FROM revokee``."""

    role: str
    revokee: str


@dataclass(frozen=True)
class Resource:
    """A permission target: ``ALL KEYSPACES``, ``KEYSPACE ks``, ``TABLE ks.t``, ``ALL ROLES``, ``ROLE r``, ``ALL
    FUNCTIONS``, ``ALL FUNCTIONS IN KEYSPACE ks`` or ``FUNCTION [ks.]f(type, ...)`` (``table`` is then the
    function's name and ``arg_types`` its argument types)."""

    kind: str  # 'all keyspaces' | 'keyspace' | 'table' | 'all roles' | 'role' | 'all functions' | 'function'
    keyspace: str | None = None
    table: str | None = None
    role: str | None = None
    arg_types: "tuple[TypeExpr, ...]" = ()


@dataclass(frozen=True)
class Grant:
    """``GRANT permission ON resource TO role``; permission upper-cased (``'ALL'`` for ALL PERMISSIONS)."""

    permission: str
    resource: Resource
    role: str


@dataclass(frozen=True)
class Revoke:
    """``REVOKE permission ON resource FROM role``."""

    permission: str
    resource: Resource
    role: str


@dataclass(frozen=True)
class ListPermissions:
    """``LIST permission|ALL [PERMISSIONS] [ON resource] [OF role]``."""

    permission: str
    resource: Resource | None = None
    role: str | None = None
    recursive: bool = True


@dataclass(frozen=True)
class IndexTarget:
    """One target of ``CREATE INDEX``: ``v``, ``keys(m)``, ``values(m)``, ``entries(m)``, ``full(f)``, or a local
    index's partition key ``(p1, p2)`` (``columns``).  ``kind`` in ScyllaDB's words: ``regular_values``,
    ``keys``, ``values`` (collection values), ``entries`` (keys and values), ``full``."""

    kind: str
    column: str = ""
    columns: tuple[str, ...] = ()


@dataclass(frozen=True)
class CreateIndex:
    """``CREATE [CUSTOM] INDEX [IF NOT EXISTS] [[ks.]name] ON t (target, ...) [USING 'class'] [WITH ...]``
    (ScyllaDB's createIndexStatement); ``name`` None gives ScyllaDB's default ``t_v_idx``."""

    table: QualifiedName
    name: str | None
    targets: tuple[IndexTarget, ...]
    if_not_exists: bool = False
    custom: bool = False
    custom_class: str | None = None  # USING 'class'
    options: tuple[tuple[str, PropertyValue], ...] = ()
    name_keyspace: str | None = None


@dataclass(frozen=True)
class DropIndex:
    """``DROP INDEX [IF EXISTS] [ks.]name``."""

    name: QualifiedName
    if_exists: bool = False


Statement = Union[
    Insert, Update, Delete, Batch, Select,
    CreateKeyspace, AlterKeyspace, DropKeyspace, UseKeyspace,
    CreateTable, AlterTableAdd, AlterTableDrop, AlterTableRename, AlterTableWith, AlterTableAlterType,
    DropTable, Truncate, CreateType, AlterTypeAdd, AlterTypeRename, DropType, Describe,
    CreateRole, AlterRole, DropRole, ListRoles, Grant, Revoke, ListPermissions, GrantRole, RevokeRole,
    CreateIndex, DropIndex,
]


@dataclass(frozen=True)
class Parsed:
    """A parsed statement with its source text and its bind markers in order of appearance."""

    statement: Statement
    text: str
    bind_markers: tuple[BindMarker, ...] = ()
