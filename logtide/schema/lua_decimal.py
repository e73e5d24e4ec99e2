"""``decimal`` and ``varint`` values in Lua user-defined functions, as ScyllaDB passes them (``lang/lua.cc``: its
``Scylla.decimal`` userdata; docs/compatibility.md "User-defined functions").

ScyllaDB hands a ``decimal`` or ``varint`` argument to Lua as an exact decimal value that supports ``+`` and ``-``
with integers, decimal strings and other decimals (exact results), and with a number that is not an integer (a
double result); a function may return one where a ``decimal``, ``varint`` (when it is integral), integer, float or
text is declared.  logtide makes the value a Lua table holding the decimal's text under a key of its own, with a
hidden metatable (``__add``, ``__sub``, ``__tostring``, ``__name`` ``Scylla.decimal``) whose arithmetic is done
here in Python with exact ``Decimal`` arithmetic; Lua code never reaches a Python object (the metamethods hold the
helper as an upvalue, and the metatable is protected)."""

from __future__ import annotations

import decimal
from decimal import Decimal
from typing import Any

KEY = b"\x00scylla.decimal"  # where the decimal's text is kept in its Lua table
EXACT = decimal.Context(prec=decimal.MAX_PREC, Emax=decimal.MAX_EMAX, Emin=decimal.MIN_EMIN)

_SETUP = b"""
local arith, KEY = ...
local mt = {}
local function new(text) return setmetatable({[KEY] = text}, mt) end
local function value(x)
  if type(x) == 'table' then
    local text = rawget(x, KEY)
    if text ~= nil then return text end
  end
  return x
end
local function op(name)
  return function(a, b)
    local r = arith(name, value(a), value(b))
    if r == false then error('value is not a number', 0) end
    if type(r) == 'string' then return new(r) end
    return r
  end
end
mt.__add, mt.__sub = op('add'), op('sub')
mt.__tostring = function(x) return rawget(x, KEY) end
mt.__name = 'Scylla.decimal'
mt.__metatable = 'Scylla.decimal'
return new
"""


def decimal_maker(lua: Any) -> Any:
    """The Lua function that makes a decimal value from its text, in this Lua runtime."""
    return lua.execute(_SETUP, _arith, KEY)


def to_lua_decimal(make: Any, v: Any) -> Any:
    """A CQL ``decimal`` or ``varint`` (an int) as ScyllaDB's Lua decimal."""
    return make(_text(Decimal(v)).encode())


def _text(d: Decimal) -> str:
    return str(d)


def exact(v: Any) -> Decimal | None:
    """The exact value of a Lua operand (decimal text, integer, integral number, decimal string), None for a number
    that is not an integer (ScyllaDB then computes in doubles); ValueError for what is no number at all."""
    if isinstance(v, bool):
        raise ValueError(v)
    if isinstance(v, int):
        return Decimal(v)
    if isinstance(v, float):
        if v != v or v in (float("inf"), float("-inf")):
            return None
        return Decimal(int(v)) if v.is_integer() else None
    if isinstance(v, (bytes, str)):
        text = v.decode("utf-8", "replace") if isinstance(v, bytes) else v
        try:
            d = Decimal(text.strip())
        except decimal.InvalidOperation:
            return exact(float(text))  # Lua's own reading of a number (hex, ...): ValueError if none
        if d.is_finite():
            return d
        return exact(float(d))
    raise ValueError(v)


def _float(v: Any) -> float:
    if isinstance(v, (bytes, str)):
        return float(Decimal(v.decode() if isinstance(v, bytes) else v))
    return float(v)


def _arith(name: bytes, a: Any, b: Any) -> Any:
    """``a + b`` or ``a - b`` for the Lua metamethods: decimal text when both are exact, a float when one is a
    number that is not an integer, False when one is no number."""
    try:
        x, y = exact(a), exact(b)
        if x is None or y is None:
            fa, fb = _float(a), _float(b)
            return fa + fb if name == b"add" else fa - fb
    except (ValueError, decimal.InvalidOperation):
        return False
    result = EXACT.add(x, y) if name == b"add" else EXACT.subtract(x, y)
    return _text(result).encode()


def decimal_of_table(lua54: Any, v: Any) -> Decimal | None:
    """The value of a Lua decimal a function returned, None when ``v`` is not one."""
    if lua54.lua_type(v) != "table":
        return None
    text = v[KEY]
    return Decimal(text.decode()) if isinstance(text, bytes) else None
