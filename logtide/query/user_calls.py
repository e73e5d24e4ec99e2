"""Calls of user-defined functions and aggregates in a SELECT's selectors (docs/compatibility.md "User-defined
functions"), one idea split for size with ``selection.py``: ``ks.f(a, 1)`` or ``f(a)`` in the statement's keyspace, found by name and argument types as
ScyllaDB's ``functions::get`` finds them; an aggregate folds each row into its state with its state function and
ends with its final function."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable

from ..cql import ast
from ..errors import InvalidRequest
from .evaluate import arg_text
from .functions import argument_name
from .user_resolve import resolve_user

if TYPE_CHECKING:
    from ..schema.model import Table
    from .select import SelectContext
    from .selection import Selected


class UserAggregateState:
    """One group's state of a user-defined aggregate: INITCOND, then ``SFUNC(state, args...)`` per row, then
    ``FINALFUNC(state)``."""

    __slots__ = ("agg", "sfunc", "ffunc", "compute", "state")

    def __init__(self, agg: Any, sfunc: Any, ffunc: Any, compute: Callable[[Any], list[Any]]) -> None:
        self.agg, self.sfunc, self.ffunc, self.compute = agg, sfunc, ffunc, compute
        self.state = agg.initial_state()

    def add(self, r: Any) -> None:
        self.state = self.sfunc.call([self.state, *self.compute(r)])

    def result(self) -> Any:
        return self.ffunc.call([self.state]) if self.ffunc is not None else self.state


def user_call(fc: ast.FunctionCall, table: "Table", ctx: "SelectContext", compile_selector: Callable[..., Any],
              native: bool) -> "Selected | None":
    """The selector of a call of a user-defined function or aggregate, or None when ``fc`` names none (and may
    be a native function: ``native``)."""
    if fc.keyspace == "system":
        return None
    keyspace = fc.keyspace or (ctx.ev.keyspace if table.keyspace == "system" and ctx.ev.keyspace else table.keyspace)
    if fc.keyspace is None and native:
        return None
    functions, aggregates = ctx.ev.functions.user(keyspace, fc.name)
    if not functions and not aggregates:
        if fc.keyspace is not None:
            raise InvalidRequest(f"Unknown function '{keyspace}.{fc.name}'")
        return None
    from .selection import Selected, _applied, _constant

    args: list[Any] = []
    for a in fc.args:
        if isinstance(a, ast.Star):
            raise InvalidRequest(f"Invalid use of * in a call to function {keyspace}.{fc.name}")
        if isinstance(a, (ast.ColumnRef, ast.FunctionCall, ast.FieldSelection, ast.ElementSelection)):
            args.append(compile_selector(a, table, ctx))
        else:
            args.append(None)
    chosen = resolve_user([*functions, *aggregates], keyspace, fc, [a.type if a is not None else None for a in args],
                          [arg_text(t) for t in fc.args])
    if ctx.ev.permit is not None:
        ctx.ev.permit(chosen)
    parts: list[Selected] = []
    for i, (a, term, p) in enumerate(zip(args, fc.args, chosen.arg_types)):
        if a is None:
            parts.append(_constant(arg_text(term), p, ctx.ev.value(term, p, argument_name(keyspace, chosen.name, i))))
        else:
            parts.append(a)
    name = f"{keyspace}.{fc.name}({', '.join(p.name for p in parts)})"  # ScyllaDB's column name of the call
    if chosen in aggregates:
        lookup = _functions_of(ctx, keyspace, chosen.state_function, chosen.final_function)
        sfunc = lookup[chosen.state_function]
        ffunc = lookup[chosen.final_function] if chosen.final_function else None
        if any(p.state is not None for p in parts):
            raise InvalidRequest("SELECT clause contains aggeregation of an aggregation")
        computes = [p.compute for p in parts]
        rtype = ffunc.return_type if ffunc is not None else chosen.state_type
        return Selected(name, rtype, lambda r: [c(r) for c in computes],
                        columns=tuple(c for p in parts for c in p.columns),
                        state=lambda: UserAggregateState(chosen, sfunc, ffunc, lambda r: [c(r) for c in computes]))
    return _applied(name, chosen.return_type, lambda *values: chosen.call(list(values)), parts)


def _functions_of(ctx: "SelectContext", keyspace: str, *signatures: str | None) -> dict[str, Any]:
    """The keyspace's user-defined functions of these signatures, by signature."""
    out: dict[str, Any] = {}
    for sig in signatures:
        if sig is not None:
            out.update({f.signature: f for f in ctx.ev.functions.user(keyspace, sig.split("(", 1)[0])[0]})
    return out
