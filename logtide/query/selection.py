"""The selection of a SELECT: selectors compiled into functions of a row, and their aggregation.

A selector (``ast.Selector``) is compiled once per execution into a :class:`Selected`: its result
column's name and type, and ``compute(row)``.  A selector that aggregates (``count(*)``,
``sum(v)``, ``todate(min(b))``) also has ``state``: a factory of :class:`GroupState` objects that
take the rows of one group (``add``) and give the selector's value (``result``).  When a selection
aggregates, or the statement has ``GROUP BY``, every other selector takes the value of its group's
first row (ScyllaDB wraps them in ``first()``).

Names and rules follow ScyllaDB (cql3/selection, cql3/expr/prepare_expr.cc): functions are found
by name and argument types (:meth:`FunctionRegistry.resolve`); a literal selector (``SELECT 1``,
``'a'``, ``[1, 2]``) takes its default type (an integer is an int, or a bigint or varint when it
does not fit; a float a double); ``CAST(x AS t)`` converts with ScyllaDB's cast functions
(:mod:`logtide.query.casts`).

One idea split for size with ``select.py``, ``grouping.py``, ``projection.py``, ``read.py``, ``cell_meta.py``
and ``select_result.py``: the SELECT pipeline (its compiled selectors here).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Callable, Sequence

from ..cql import ast
from ..errors import InvalidRequest
from ..schema import types as T
from ..schema.model import Column, Table
from ..schema.types_convert import NOT_ASSIGNABLE, assignment, convert
from ..schema.types_literal import sorted_set_of, term_text
from . import casts
from .evaluate import arg_text, call_text, default_type, literal_text
from .functions import AGGREGATES, SIMILARITY_FUNCTIONS, Aggregate, argument_name
from .restrictions import unrecognized_name

if TYPE_CHECKING:
    from .select import CqlRow, SelectContext


class GroupState:
    """The value of one aggregating selector over the rows of one group."""

    def add(self, r: "CqlRow") -> None:
        raise NotImplementedError

    def result(self) -> Any:
        raise NotImplementedError


@dataclass
class Selected:
    """A compiled selector: result column name and type, and how to compute it from a row.

    ``state`` is set when the selector aggregates; ``column`` for a plain column reference (read
    by ``projection.row_projector``)."""

    name: str
    type: Any
    compute: Callable[["CqlRow"], Any]
    columns: tuple[str, ...] = ()
    column: Column | None = None
    state: Callable[[], GroupState] | None = None


class FirstValue(GroupState):
    """A selector that does not aggregate, in an aggregating selection: its value in the group's first row."""

    __slots__ = ("compute", "seen", "value")

    def __init__(self, compute: Callable[["CqlRow"], Any]) -> None:
        self.compute = compute
        self.seen = False
        self.value: Any = None

    def add(self, r: "CqlRow") -> None:
        if not self.seen:
            self.value = self.compute(r)
            self.seen = True

    def result(self) -> Any:
        return self.value


class AggregateState(GroupState):
    """An aggregate function (``count``, ``min``, ``max``, ``sum``, ``avg``) of its argument's values."""

    __slots__ = ("agg", "compute")

    def __init__(self, name: str, arg_type: Any, compute: Callable[["CqlRow"], Any]) -> None:
        self.agg = Aggregate(name, arg_type)
        self.compute = compute

    def add(self, r: "CqlRow") -> None:
        self.agg.add(self.compute(r))

    def result(self) -> Any:
        return self.agg.result()


class AppliedState(GroupState):
    """A scalar function (or cast, field, element) of selectors some of which aggregate."""

    __slots__ = ("fn", "parts")

    def __init__(self, fn: Callable[..., Any], parts: list[GroupState]) -> None:
        self.fn = fn
        self.parts = parts

    def add(self, r: "CqlRow") -> None:
        for p in self.parts:
            p.add(r)

    def result(self) -> Any:
        return self.fn(*[p.result() for p in self.parts])


def group_state(s: Selected) -> GroupState:
    """The state one group needs for a selector of an aggregating selection."""
    return s.state() if s.state is not None else FirstValue(s.compute)


def _applied(name: str, ctype: Any, fn: Callable[..., Any], args: Sequence[Selected]) -> Selected:
    """A selector computing ``fn`` of other selectors' values; it aggregates when one of them does."""
    computes = [a.compute for a in args]
    columns = tuple(c for a in args for c in a.columns)
    state = None
    if any(a.state is not None for a in args):
        def state(fn=fn, args=tuple(args)) -> GroupState:
            return AppliedState(fn, [group_state(a) for a in args])
    if len(computes) == 1:
        c0 = computes[0]
        return Selected(name, ctype, lambda r: fn(c0(r)), columns=columns, state=state)
    return Selected(name, ctype, lambda r: fn(*[c(r) for c in computes]), columns=columns, state=state)


def _constant(name: str, ctype: Any, value: Any) -> Selected:
    return Selected(name, ctype, lambda r, v=value: v)


def _deser(t: Any, b: bytes | None) -> Any:
    return None if b is None else t.deserialize(b)


# ---------------------------------------------------------------------------
# compiling selectors
# ---------------------------------------------------------------------------


def compile_selector(sel: Any, table: Table, ctx: "SelectContext", text: str | None = None) -> Selected:
    """Compile one selector expression (``text``: its source text, the name of a literal's column)."""
    if isinstance(sel, ast.ColumnRef):
        col = table.column(sel.name)
        if col is None:
            raise unrecognized_name(sel.name)
        t = col.type
        return Selected(col.name, t, lambda r, c=col, t=t: _deser(t, r.bytes_of(c)), columns=(col.name,), column=col)
    if isinstance(sel, ast.FunctionCall):
        return _compile_call(sel, table, ctx)
    if isinstance(sel, ast.FieldSelection):
        return _field(sel, table, ctx)
    if isinstance(sel, ast.ElementSelection):
        return _element(sel, table, ctx)
    if isinstance(sel, ast.Star):
        raise InvalidRequest("Invalid use of * in a selector: only count(*) takes it")
    return _literal(sel, ctx, text)


def _literal(term: Any, ctx: "SelectContext", text: str | None) -> Selected:
    """A literal selector (ScyllaDB): a constant, collection, tuple or type-hinted term, of its default type."""
    if isinstance(term, ast.BindMarker):
        raise InvalidRequest(f"Could not infer type of {arg_text(term)}")
    ctype = default_type(term, ctx.table.keyspace)
    if ctype is None:
        raise InvalidRequest(f"Could not infer type of {term_text(term)}")
    name = text if text else literal_text(term)
    return _constant(name, ctype, ctx.ev.value(term, ctype, name))


def _field(sel: ast.FieldSelection, table: Table, ctx: "SelectContext") -> Selected:
    inner = compile_selector(sel.expr, table, ctx)
    t = inner.type
    if not isinstance(t, T.UserType):
        raise InvalidRequest(f"Invalid field selection: {inner.name} of type {t.cql()} is not a user type")
    if sel.field not in t.field_names:
        raise InvalidRequest(f"{t.name} has no field {sel.field}")
    idx = t.field_names.index(sel.field)

    def field_value(v: Any, idx=idx) -> Any:
        if v is None:
            return None
        return v[idx] if idx < len(v) else None
    return _applied(f"{inner.name}.{sel.field}", t.field_types[idx], field_value, [inner])


def _element(sel: ast.ElementSelection, table: Table, ctx: "SelectContext") -> Selected:
    """``m[key]``, ``s[element]`` (the element when present) and ScyllaDB's ``l[index]``; a null key gives null."""
    inner = compile_selector(sel.expr, table, ctx)
    t = inner.type
    if isinstance(t, T.MapType):
        kt, rt, label = t.key, t.value, f"key({inner.name})"
    elif isinstance(t, T.SetType):
        kt, rt, label = t.element, t.element, f"value({inner.name})"
    elif isinstance(t, T.ListType):
        kt, rt, label = T.INT, t.element, f"idx({inner.name})"
    else:
        raise InvalidRequest(f"Column {inner.name} is not a map/set/list, cannot be subscripted")
    key = ctx.ev.value(sel.key, kt, label)
    if key is T.UNSET:
        raise InvalidRequest(f"Unsupported unset value for subscript of {inner.name}")

    def element(v: Any, key=key) -> Any:
        if v is None or key is None:
            return None
        if isinstance(t, T.MapType):
            return v.get(key)
        if isinstance(t, T.SetType):
            return key if key in v else None
        return v[key] if 0 <= key < len(v) else None
    return _applied(f"{inner.name}[{arg_text(sel.key)}]", rt, element, [inner])


SPECIAL = ("token", "tojson", "cast", "set_intersection")  # native functions compiled apart


def _compile_call(fc: ast.FunctionCall, table: Table, ctx: "SelectContext") -> Selected:
    from . import cell_meta

    from .user_calls import user_call

    name = fc.name
    native = (name in cell_meta.FUNCTIONS or name in AGGREGATES or name in SPECIAL or name in SIMILARITY_FUNCTIONS
              or bool(ctx.ev.functions.candidates(name)))
    user = user_call(fc, table, ctx, compile_selector, native)
    if user is not None:
        return user
    if fc.keyspace not in (None, "system"):
        raise InvalidRequest(f"Unknown function '{fc.keyspace}.{name}'")
    if name in cell_meta.FUNCTIONS:
        return cell_meta.compile_meta(fc, table, ctx, compile_selector)
    if name == "token":
        return _token_selector(fc, table, ctx)
    if name in AGGREGATES:
        return _aggregate(fc, table, ctx)
    if name == "tojson":
        if len(fc.args) != 1:
            raise InvalidRequest("toJson() accepts 1 argument only")
        inner = _typed_argument(fc.args[0], table, ctx, "toJson() is only valid when its argument type is known")
        return _applied(f"system.tojson({inner.name})", T.TEXT,
                        lambda v, t=inner.type: T.to_json(t, v), [inner])
    if name == "cast":
        inner = _typed_argument(fc.args[0], table, ctx, "Could not infer type of " + term_text(fc.args[0]))
        target = T.resolve_type(fc.args[1], table.keyspace, lambda ks, n: None)
        if target == inner.type:  # ScyllaDB omits a cast to the argument's own type
            return inner
        fn = casts.cast_function(inner.type, target)
        return _applied(f"cast({inner.name} as {target.cql()})", target, fn, [inner])
    if name == "set_intersection":
        return _set_intersection(fc, table, ctx)
    return _scalar_call(fc, table, ctx)


def _token_selector(fc: ast.FunctionCall, table: Table, ctx: "SelectContext") -> Selected:
    """``token(...)`` as ScyllaDB has it, a function whose parameters are the partition key's types: of the
    key's own columns it is the row's token, of other values (``token(k2, k1)`` of the same types, literals)
    the token of the key they make."""
    from ..storage.keys import partition_token, serialize_partition_key

    pk = table.partition_key
    if [a.name if isinstance(a, ast.ColumnRef) else None for a in fc.args] == [c.name for c in pk]:
        return Selected(call_text(fc), T.BIGINT, lambda r: r.token, columns=tuple(c.name for c in pk))
    if len(fc.args) != len(pk):
        raise InvalidRequest(f"Invalid number of arguments in call to function system.token: "
                             f"{len(pk)} required but {len(fc.args)} provided")
    args = [_typed_argument(a, table, ctx, "Could not infer type of " + term_text(a)) for a in fc.args]
    for i, (a, c) in enumerate(zip(args, pk)):
        if assignment(a.type, c.type) == NOT_ASSIGNABLE:
            raise InvalidRequest(f"Type error: {arg_text(fc.args[i])} cannot be passed as argument {i} of function "
                                 f"system.token of type {c.type.cql()}")

    def token(*values: Any) -> int | None:
        if any(v is None for v in values):
            return None
        return partition_token(table, serialize_partition_key(
            [c.type.serialize(convert(v, a.type, c.type)) for v, a, c in zip(values, args, pk)]))
    return _applied(call_text(fc), T.BIGINT, token, args)


def _typed_argument(arg: Any, table: Table, ctx: "SelectContext", unknown: str) -> Selected:
    """A function's argument whose type the function needs up front (a bind marker has none)."""
    if isinstance(arg, ast.BindMarker):
        raise InvalidRequest(unknown)
    return compile_selector(arg, table, ctx)


def _aggregate(fc: ast.FunctionCall, table: Table, ctx: "SelectContext") -> Selected:
    """``count(*)``, ``count(x)``, ``min``, ``max``, ``sum``, ``avg`` of one selector."""
    name = fc.name
    if name == "count" and len(fc.args) == 1 and isinstance(fc.args[0], ast.Star):
        return Selected("count", T.BIGINT, lambda r: 1, state=lambda: AggregateState("count", T.BIGINT, lambda r: 1))
    if len(fc.args) != 1 or isinstance(fc.args[0], ast.Star):
        if any(isinstance(a, ast.Star) for a in fc.args):
            raise InvalidRequest(f"Invalid use of * in a call to function system.{name}")
        raise InvalidRequest(f"Invalid number of arguments in call to function system.{name}: "
                             f"1 required but {len(fc.args)} provided")
    inner = _typed_argument(fc.args[0], table, ctx, f"{name}() function is only valid when argument types are known")
    if inner.state is not None:
        raise InvalidRequest("SELECT clause contains aggeregation of an aggregation")
    if name in ("sum", "avg") and getattr(inner.type, "name", None) not in (
            "tinyint", "smallint", "int", "bigint", "varint", "decimal", "float", "double", "counter"):
        known = ", ".join(f"system.{name} : ({t}) -> {t}" for t in
                          ("tinyint", "smallint", "int", "bigint", "float", "double", "decimal", "varint"))
        raise InvalidRequest(f"Invalid call to function {name}, none of its type signatures match "
                             f"(known type signatures: {known})")
    arg = fc.args[0]
    # Cassandra's COUNT(1) is COUNT(*) by another name (its column is "count")
    label = "count" if name == "count" and isinstance(arg, ast.Constant) and arg.text == "1" else None
    compute = inner.compute
    return Selected(label or f"system.{name}({inner.name})", Aggregate(name, inner.type).return_type, compute,
                    columns=inner.columns, state=lambda name=name, t=inner.type, c=compute: AggregateState(name, t, c))


def _scalar_call(fc: ast.FunctionCall, table: Table, ctx: "SelectContext") -> Selected:
    """A native scalar function of selectors and literals, found by its arguments' types."""
    name = fc.name
    args: list[Selected | None] = []
    for a in fc.args:
        if isinstance(a, ast.Star):
            raise InvalidRequest(f"Invalid use of * in a call to function system.{name}")
        if isinstance(a, (ast.ColumnRef, ast.FunctionCall, ast.FieldSelection, ast.ElementSelection)):
            args.append(compile_selector(a, table, ctx))
        elif isinstance(a, ast.TypeHint):
            hinted = T.resolve_type(a.type, table.keyspace, lambda ks, n: None)
            args.append(_constant(term_text(a), hinted, ctx.ev.value(a, hinted, term_text(a))))
        else:
            args.append(None)
    arg_types = [a.type if a is not None else None for a in args]
    texts = [a.name if a is not None else arg_text(t) for a, t in zip(args, fc.args)]
    f = ctx.ev.functions.resolve(name, arg_types, fc.args, texts)
    parts: list[Selected] = []
    for i, (a, t, p) in enumerate(zip(args, fc.args, f.arg_types)):
        if a is None:
            parts.append(_constant(texts[i], p, ctx.ev.value(t, p, argument_name("system", name, i))))
        elif a.type != p:
            parts.append(_applied(a.name, p, lambda v, at=a.type, p=p: convert(v, at, p), [a]))
        else:
            parts.append(a)
    if not f.deterministic:
        return Selected(call_text(fc), f.return_type, lambda r, f=f: f.impl(),
                        columns=tuple(c for a in parts for c in a.columns))
    impl = f.impl

    def call(*values: Any) -> Any:
        if any(v is None for v in values):
            return None
        return impl(*values)
    return _applied(call_text(fc), f.return_type, call, parts)


def _set_intersection(fc: ast.FunctionCall, table: Table, ctx: "SelectContext") -> Selected:
    """ScyllaDB's ``set_intersection(a, b)``: the elements of two sets of the same element type."""
    if len(fc.args) != 2:
        raise InvalidRequest("set_intersection() accepts 2 arguments only")
    known = [compile_selector(a, table, ctx) if not _untyped(a) else None for a in fc.args]
    types = [k.type for k in known if k is not None]
    if not types:
        raise InvalidRequest("set_intersection() can only be called if at least one argument type is known")
    if not all(isinstance(t, T.SetType) for t in types):
        raise InvalidRequest("set_intersection() can only be called if both arguments are of set type")
    frozen = {t.freeze() for t in types}
    if len(frozen) != 1:
        raise InvalidRequest("set_intersection() can only be called if both arguments are of the same set type: "
                             + ", ".join(casts.marshal_name(t) for t in types))
    set_type = frozen.pop()
    args = [k if k is not None else _constant(arg_text(a), set_type, ctx.ev.value(a, set_type, "set_intersection"))
            for k, a in zip(known, fc.args)]
    el = set_type.element

    def intersect(a: Any, b: Any) -> Any:
        if a is None or b is None:
            return None
        theirs = {el.serialize(x) for x in b}
        return sorted_set_of(el, [x for x in a if el.serialize(x) in theirs])
    return _applied(call_text(fc), set_type, intersect, args)


def _untyped(term: Any) -> bool:
    return isinstance(term, (ast.Constant, ast.BindMarker, ast.ListLiteral, ast.SetLiteral, ast.MapLiteral,
                             ast.TupleLiteral, ast.UdtLiteral))


# ---------------------------------------------------------------------------
# the selection of a statement
# ---------------------------------------------------------------------------


def selection(stmt: ast.Select, table: Table, ctx: "SelectContext") -> list[Selected]:
    """The compiled selectors of a SELECT (``*``: every column in ``SELECT *`` order)."""
    if stmt.selectors is None:
        if stmt.no_from:
            raise InvalidRequest("SELECT * is not allowed without a FROM clause")
        return [compile_selector(ast.ColumnRef(c.name), table, ctx) for c in table.columns]
    out = []
    for s in stmt.selectors:
        sel = compile_selector(s.expr, table, ctx, s.text)
        if s.alias:
            sel = replace(sel, name=s.alias)
        out.append(sel)
    return out
