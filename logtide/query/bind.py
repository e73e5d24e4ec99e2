"""Bind metadata of prepared statements: the name and type each marker receives, as Cassandra reports them.

Cassandra names a marker after its receiver: the column (``v``), an element
(``key(m)``, ``value(m)``, ``idx(l)``), a list of values (``in(pk)``), or a
special receiver (``[timestamp]``, ``[ttl]``, ``[limit]``,
``[per_partition_limit]``, ``partition key token``, ``[json]``); a named
marker keeps its own name.
"""

from __future__ import annotations

from typing import Any, Callable

from ..cql import ast
from ..errors import InvalidRequest
from ..mutation.assignments import check_assignments
from ..mutation.targets import (check_conditional_delete, check_conditional_where, check_primary_key_parts,
                                check_static_only_statement)
from ..result import ColumnSpec
from ..schema import types as T
from ..schema.model import Column, Table
from .functions import argument_name
from .where_rules import check_operator, check_relation, check_restrictions, where_column

BIGINT = T.BIGINT
INT = T.INT
TEXT = T.TEXT


class BindCollector:
    """Walks a statement and records, per marker index, its receiver name and type."""

    def __init__(self, table_of: Callable[[ast.QualifiedName], Table], infer: Callable[[Any, Table | None], Any],
                 in_uppercase: bool = True) -> None:
        self.table_of = table_of
        self.infer = infer
        self.in_uppercase = in_uppercase  # IN(c) / NOT IN(c); False: in(c) / not in(c), Cassandra's spelling
        self.specs: dict[int, ColumnSpec] = {}
        self.pk_markers: dict[str, int] = {}
        self._table: Table | None = None
        self._aliases: frozenset[str] = frozenset()  # a SELECT's selector aliases (not columns of its WHERE)

    def _where_column(self, table: Table, name: str) -> Column:
        """A column a relation or condition names; an unknown name is refused with ScyllaDB's words."""
        return where_column(table, name, self._aliases)

    def _record(self, marker: ast.BindMarker, name: str, ctype: Any) -> None:
        t = self._table
        self.specs[marker.index] = ColumnSpec(t.keyspace if t else "", t.name if t else "", marker.name or name, ctype)

    def term(self, term: Any, ctype: Any, name: str) -> None:
        """Record the markers inside a term assigned to a receiver of ``ctype``."""
        if term is None:
            return
        if isinstance(term, ast.BindMarker):
            self._record(term, name, ctype)
        elif isinstance(term, (ast.ListLiteral, ast.SetLiteral)):
            elem = getattr(ctype, "element", None)
            if isinstance(ctype, T.MapType) and isinstance(term, ast.SetLiteral):
                elem = ctype.key
            for item in term.items:
                self.term(item, elem, f"value({name})")
        elif isinstance(term, ast.MapLiteral):
            for k, v in term.entries:
                self.term(k, getattr(ctype, "key", None), f"key({name})")
                self.term(v, getattr(ctype, "value", None), f"value({name})")
        elif isinstance(term, ast.TupleLiteral):
            items = getattr(ctype, "items", ())
            for i, item in enumerate(term.items):
                self.term(item, items[i] if i < len(items) else None, f"{name}[{i}]")
        elif isinstance(term, ast.UdtLiteral):
            names = getattr(ctype, "field_names", ())
            types = getattr(ctype, "field_types", ())
            for fname, item in term.fields:
                ft = types[names.index(fname)] if fname in names else None
                self.term(item, ft, f"{name}.{fname}")
        elif isinstance(term, ast.TypeHint):
            ks = self._table.keyspace if self._table else ""
            self.term(term.term, T.resolve_type(term.type, ks, lambda k, n: None), name)
        elif isinstance(term, ast.FunctionCall):
            self._call(term)

    def _call(self, fc: ast.FunctionCall) -> None:
        if fc.name == "fromjson":
            for a in fc.args:
                self.term(a, TEXT, "fromjson")
            return
        if fc.name == "token" and self._table is not None and fc.keyspace in (None, "system"):
            for i, (a, c) in enumerate(zip(fc.args, self._table.partition_key)):  # the partition key's types
                self.term(a, c.type, argument_name("system", "token", i))
            return
        try:
            f = self.infer(fc, self._table)  # the function called: native, or user-defined
        except InvalidRequest:
            if any(isinstance(a, ast.BindMarker) for a in fc.args):
                raise  # a marker typed only by this call: the call's own error (ambiguous, wrong arguments)
            f = None
        keyspace, name = (f.keyspace, f.name) if f is not None else (fc.keyspace or "system", fc.name)
        for i, a in enumerate(fc.args):
            ptype = f.arg_types[i] if f is not None and i < len(f.arg_types) else None
            self.term(a, ptype, argument_name(keyspace, name, i))

    def using(self, using: ast.Using) -> None:
        self.term(using.timestamp, BIGINT, "[timestamp]")
        self.term(using.ttl, INT, "[ttl]")
        self.term(using.timeout, T.DURATION, "[timeout]")

    def relation(self, table: Table, rel: ast.Relation) -> None:
        lhs = rel.lhs
        if isinstance(lhs, ast.TokenOf):
            self.term(rel.rhs, BIGINT, "partition key token")
            return
        if isinstance(lhs, ast.ColumnTuple):
            cols = [self._where_column(table, n) for n in lhs.columns]
            self.operand(rel.op, rel.rhs, T.TupleType(tuple(c.type for c in cols)), "(" + ",".join(lhs.columns) + ")")
            return
        if isinstance(lhs, ast.ElementRef):  # ScyllaDB's m[key] = v / l[index] = v
            col = self._where_column(table, lhs.column)
            t = col.type
            if isinstance(t, T.MapType):
                self.term(lhs.key, t.key, f"key({col.name})")
                self.term(rel.rhs, t.value, f"value({col.name})")
            elif isinstance(t, T.ListType):
                self.term(lhs.key, INT, f"idx({col.name})")
                self.term(rel.rhs, t.element, f"value({col.name})")
            return
        col = self._where_column(table, lhs.name)
        if rel.op in ("IN", "NOT IN"):
            self.operand(rel.op, rel.rhs, col.type, col.name)
            return
        if rel.op in ("CONTAINS", "CONTAINS KEY"):
            t = col.type  # not a collection (a map for CONTAINS KEY): refused by check_relation
            et = (getattr(t, "key", None) if rel.op == "CONTAINS KEY"
                  else (t.value if isinstance(t, T.MapType) else getattr(t, "element", None)))
            self.term(rel.rhs, et, col.name)
            return
        if rel.op == "=" and isinstance(rel.rhs, ast.BindMarker) and col.kind == "partition_key":
            self.pk_markers[col.name] = rel.rhs.index
        self.term(rel.rhs, col.type, col.name)

    def condition(self, table: Table, cond: ast.Condition) -> None:
        lhs = cond.lhs
        name = lhs.name if isinstance(lhs, ast.ColumnRef) else lhs.column
        col = self._where_column(table, name)
        t = col.type
        label = name
        if isinstance(lhs, ast.ElementRef):
            if isinstance(t, T.MapType):
                self.term(lhs.key, t.key, f"key({name})")
                t, label = t.value, f"value({name})"
            else:
                self.term(lhs.key, INT, f"idx({name})")
                t, label = getattr(t, "element", None), f"value({name})"
        elif isinstance(lhs, ast.FieldRef) and isinstance(t, T.UserType) and lhs.field in t.field_names:
            t = t.field_types[t.field_names.index(lhs.field)]
            label = f"{name}.{lhs.field}"
        self.operand(cond.op, cond.rhs, t, label)

    def operand(self, op: str, rhs: Any, ctype: Any, name: str) -> None:
        """The right side of a relation or condition: one value, or the values of ``IN``."""
        if op not in ("IN", "NOT IN"):
            self.term(rhs, ctype, name)
        elif isinstance(rhs, ast.InValues):
            for item in rhs.items:
                self.term(item, ctype, name)
        else:  # ScyllaDB's name for the marker of a whole list: IN(c), NOT IN(c) (in(c) in Cassandra's spelling)
            self.term(rhs, T.ListType(ctype, False), f"{op if self.in_uppercase else op.lower()}({name})")

    # -- statements ----------------------------------------------------------
    def statement(self, stmt: Any) -> None:
        if isinstance(stmt, ast.Batch):
            self.using(stmt.using)
            for s in stmt.statements:
                self.statement(s)
            return
        if isinstance(stmt, ast.AlterTableDrop) and stmt.timestamp is not None:
            self.term(stmt.timestamp, BIGINT, "[timestamp]")  # the table need not exist when it is prepared
            return
        if isinstance(stmt, ast.Truncate):
            self._table = self.table_of(stmt.table)
            self.using(stmt.using)
            return
        if not isinstance(stmt, (ast.Insert, ast.Update, ast.Delete, ast.Select)):
            return
        table = self.table_of(stmt.table)
        self._table = table
        if isinstance(stmt, ast.Select):
            self._aliases = frozenset(s.alias for s in stmt.selectors or () if s.alias)
        if isinstance(stmt, ast.Insert):
            if stmt.json is not None:
                self.term(stmt.json, TEXT, "[json]")
            for name, term in zip(stmt.columns, stmt.values):
                col = table.column(name)
                if col is None:  # ScyllaDB's words (update_statement's prepare)
                    raise InvalidRequest(f"Unknown identifier {name}")
                if col.kind == "partition_key" and isinstance(term, ast.BindMarker):
                    self.pk_markers[col.name] = term.index
                self.term(term, col.type, col.name)
            self.using(stmt.using)
            check_primary_key_parts(stmt, table)
            return
        if isinstance(stmt, ast.Update):
            check_assignments(stmt, table)
            self.using(stmt.using)
            for a in stmt.assignments:
                self._assignment(table, a)
        if isinstance(stmt, ast.Delete):
            self.using(stmt.using)
            for tgt in stmt.targets:
                name = tgt.name if isinstance(tgt, ast.ColumnRef) else tgt.column
                col = table.column(name)
                if col is None:  # ScyllaDB's words (delete_statement's prepare)
                    raise InvalidRequest(f"Unknown identifier {name}")
                if isinstance(tgt, ast.ElementRef):
                    t = col.type
                    kt = t.key if isinstance(t, T.MapType) else (t.element if isinstance(t, T.SetType) else INT)
                    self.term(tgt.key, kt, f"key({col.name})" if isinstance(t, T.MapType) else f"idx({col.name})")
        for rel in stmt.where:  # ScyllaDB's order: the operator, the names and types, the relation's rules
            check_operator(rel)
            self.relation(table, rel)
            check_relation(table, rel)
        check_restrictions(table, stmt.where, isinstance(stmt, ast.Select) and stmt.allow_filtering)
        if isinstance(stmt, (ast.Update, ast.Delete)):
            check_static_only_statement(stmt, table)
            check_primary_key_parts(stmt, table)
            if stmt.conditions or stmt.if_exists:
                check_conditional_where(stmt, table)
                if isinstance(stmt, ast.Delete):
                    check_conditional_delete(stmt, table)
        if isinstance(stmt, (ast.Update, ast.Delete)):
            for cond in stmt.conditions:
                self.condition(table, cond)
        if isinstance(stmt, ast.Select):
            self.term(stmt.per_partition_limit, INT, "[per_partition_limit]")
            self.term(stmt.limit, INT, "[limit]")
            self.using(stmt.using)

    def _assignment(self, table: Table, a: Any) -> None:
        col = table.column(a.column)
        if col is None:  # ScyllaDB's words (update_statement's prepare)
            raise InvalidRequest(f"Unknown identifier {a.column}")
        t = col.type
        if isinstance(a, ast.SetColumn):
            self.term(a.value, t, col.name)
        elif isinstance(a, (ast.AddTo, ast.SubtractFrom, ast.PrependTo)):
            if t.is_counter:
                self.term(a.value, BIGINT, col.name)
            elif isinstance(a, ast.SubtractFrom) and isinstance(t, T.MapType):
                self.term(a.value, T.SetType(t.key, True), col.name)
            else:
                self.term(a.value, t, col.name)
        elif isinstance(a, ast.SetElement):
            if isinstance(a.key, ast.TimeuuidListIndex):
                self.term(a.key.key, T.TIMEUUID, f"key({col.name})")
                self.term(a.value, getattr(t, "element", None), f"value({col.name})")
            elif isinstance(t, T.MapType):
                self.term(a.key, t.key, f"key({col.name})")
                self.term(a.value, t.value, f"value({col.name})")
            else:
                self.term(a.key, INT, f"idx({col.name})")
                self.term(a.value, getattr(t, "element", None), f"value({col.name})")
        elif isinstance(a, ast.SetField):
            if isinstance(t, T.UserType) and a.field in t.field_names:
                self.term(a.value, t.field_types[t.field_names.index(a.field)], f"{col.name}.{a.field}")

    def result(self, count: int, table: Table | None) -> tuple[tuple[ColumnSpec, ...], tuple[int, ...]]:
        """Bind specs in marker order and the partition key indexes (empty unless all are bound)."""
        specs = []
        for i in range(count):
            spec = self.specs.get(i)
            if spec is None or spec.type is None:
                raise InvalidRequest(f"Cannot infer the type of bind marker {i + 1}")
            specs.append(spec)
        pk_idx: tuple[int, ...] = ()
        if table is not None and all(c.name in self.pk_markers for c in table.partition_key):
            pk_idx = tuple(self.pk_markers[c.name] for c in table.partition_key)
        return tuple(specs), pk_idx
