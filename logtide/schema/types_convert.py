"""Assigning a typed value to a receiver of another type, as ScyllaDB does.

A value of type ``A`` (a function's result, a column, a C-style cast ``(int)1``) goes where a ``P``
is expected when:

* ``A == P`` (an exact match; a counter also matches bigint exactly);
* ``P`` is *value compatible* with ``A``: ``A``'s bytes are a valid ``P`` (anything is a blob,
  ascii is text, a timeuuid is a uuid, every integer is a varint), so the bytes are reinterpreted;
* ``A`` *widens* losslessly to ``P`` within one numeric chain (tinyint < smallint < int < bigint <
  varint, float < double), so the value is converted (``int`` 7 becomes ``bigint`` 7).

This follows ScyllaDB's ``expression_test_assignment`` / ``is_widenable_to`` / ``coerce_to``
(cql3/expr/prepare_expr.cc); Cassandra accepts only the value-compatible cases.
"""

from __future__ import annotations

from typing import Any

from cassandra.cqltypes import EMPTY

NOT_ASSIGNABLE, WEAKLY_ASSIGNABLE, EXACT_MATCH = 0, 1, 2

INTEGER_CHAIN = ("tinyint", "smallint", "int", "bigint", "varint")
FLOAT_CHAIN = ("float", "double")


def _name(t: Any) -> str | None:
    return getattr(t, "name", None) if getattr(t, "kind", None) == "native" else None


def value_compatible(receiver: Any, other: Any) -> bool:
    """Whether every serialized ``other`` value is a valid ``receiver`` value (ScyllaDB's
    ``is_value_compatible_with``, without its bigint/timestamp equivalence: function arguments and
    results never mix those)."""
    if receiver == other:
        return True
    r, o = _name(receiver), _name(other)
    if r == "blob":
        return True
    if r is None or o is None:
        return False
    if r == "text":
        return o in ("ascii", "varchar")
    if r == "uuid":
        return o == "timeuuid"
    if r == "varint":
        return o in INTEGER_CHAIN
    return False


def widenable(actual: Any, param: Any) -> bool:
    """Whether ``actual`` widens losslessly to ``param`` (the same numeric chain, ``param`` not narrower)."""
    a, p = _name(actual), _name(param)
    for chain in (INTEGER_CHAIN, FLOAT_CHAIN):
        if a in chain and p in chain:
            return chain.index(a) <= chain.index(p)
    return False


def assignment(actual: Any, param: Any) -> int:
    """How a value of type ``actual`` fits a receiver of type ``param``: EXACT_MATCH, WEAKLY_ASSIGNABLE
    (by reinterpreting its bytes or widening it) or NOT_ASSIGNABLE."""
    if actual == param or (_name(param) == "bigint" and _name(actual) == "counter"):
        return EXACT_MATCH
    if _frozen_equal(actual, param):
        return EXACT_MATCH
    if value_compatible(param, actual) or widenable(actual, param):
        return WEAKLY_ASSIGNABLE
    return NOT_ASSIGNABLE


def _frozen_equal(a: Any, b: Any) -> bool:
    """Equal types up to freezing (a frozen set value fits a non-frozen set parameter)."""
    freeze = getattr(a, "freeze", None)
    other = getattr(b, "freeze", None)
    return freeze is not None and other is not None and a.freeze() == b.freeze()


def convert(value: Any, actual: Any, param: Any) -> Any:
    """A value of type ``actual`` as a value of ``param`` (``assignment(actual, param)`` is not
    NOT_ASSIGNABLE): the same value, its bytes reinterpreted, or the value widened."""
    if value is None or actual == param:
        return value
    if value is EMPTY:  # an empty value (zero bytes) is empty in every type
        return b"" if _name(param) == "blob" else value
    p, a = _name(param), _name(actual)
    if p == "blob":
        return value if a == "blob" else actual.serialize(value)
    if p in INTEGER_CHAIN or p == "counter":
        return int(value)
    if p in FLOAT_CHAIN:
        return float(value)
    return value
