"""Lua user-defined functions as ScyllaDB runs them (docs/compatibility.md "User-defined functions").

ScyllaDB compiles a ``LANGUAGE lua`` body as a chunk whose arguments are bound by a leading
``local a, b = ...``, runs each call in a fresh Lua state holding only the base, string, coroutine and table
libraries, bounds the memory a call may allocate (``user_defined_function_allocation_limit_bytes``, 1 MiB) and
its time (``user_defined_function_time_limit_ms``, 10 ms), and maps CQL values to Lua values and back by the
declared types.  logtide does the same with the ``lupa`` binding of Lua 5.4 (the ``udf`` extra): a fresh runtime
per call, a memory cap, an instruction hook that stops a call past its time, and an environment without ``os``,
``io``, ``require``, ``load``, ``dofile``, ``debug`` or ``math`` (ScyllaDB opens no math library either).
"""

from __future__ import annotations

import datetime
import ipaddress
import time
import uuid
from decimal import Decimal
from typing import Any, Sequence

from ..errors import InvalidRequest
from . import types as T
from .lua_decimal import decimal_maker, decimal_of_table, to_lua_decimal
from .lua_decimal import exact as exact_value

MEMORY_LIMIT = 1024 * 1024  # ScyllaDB's user_defined_function_allocation_limit_bytes
TIME_LIMIT_MS = 10  # ScyllaDB's user_defined_function_time_limit_ms
HOOK_EVERY = 1000  # instructions between two time checks (ScyllaDB's hook runs every 1000 too)
SAFE_BASE = ("assert", "error", "ipairs", "next", "pairs", "pcall", "rawequal", "rawget", "rawlen", "rawset",
             "select", "setmetatable", "getmetatable", "tonumber", "tostring", "type", "xpcall", "_VERSION")
SAFE_LIBRARIES = ("string", "coroutine", "table")
DATE_OFFSET = 1 << 31  # a CQL date: days since the epoch + 2^31
EPOCH = datetime.datetime(1970, 1, 1)

_SANDBOX = """
local names, libraries = ...
local env = {}
for _, n in ipairs(names) do env[n] = _G[n] end
for _, n in ipairs(libraries) do
  local copy = {}
  for k, v in pairs(_G[n]) do copy[k] = v end
  env[n] = copy
end
env._G = env
return env
"""


def lupa_module() -> Any:
    """``lupa.lua54``, or InvalidRequest naming the extra that installs it."""
    try:
        from lupa import lua54
    except ImportError:
        raise InvalidRequest("Lua user-defined functions need the lupa package: pip install 'logtide[udf]'") from None
    return lua54


def chunk(arg_names: Sequence[str], body: str) -> str:
    """The Lua chunk of a function: its arguments bound by name, then its body (ScyllaDB's ``lua::compile``)."""
    return (f"local {','.join(arg_names)} = ...;\n" if arg_names else "") + body


def _runtime(lua54: Any) -> Any:
    try:
        return lua54.LuaRuntime(register_eval=False, register_builtins=False, unpack_returned_tuples=False,
                                encoding=None,  # Lua strings are bytes: a text result is checked as UTF-8 here
                                max_memory=MEMORY_LIMIT + 256 * 1024)  # the libraries' own tables on top
    except TypeError:  # an older lupa without max_memory
        return lua54.LuaRuntime(register_eval=False, register_builtins=False, unpack_returned_tuples=False,
                                encoding=None)


def compile_check(arg_names: Sequence[str], body: str) -> None:
    """Compile the function's chunk (CREATE FUNCTION): a syntax error is ScyllaDB's ``could not compile: ...``."""
    lua54 = lupa_module()
    lua = _runtime(lua54)
    loader = lua.eval(b"function(src) local f, err = load(src, '=<internal>', 't'); return err end")
    err = loader(chunk(arg_names, body).encode())
    if err is not None:
        raise InvalidRequest(f"could not compile: {_decoded(err)}")


class _Deadline:
    """The time bound of one call, checked by the instruction hook: the CPU time of the calling thread, so a
    busy machine does not fail a function that would finish in time (ScyllaDB counts only the time the Lua
    state runs, too)."""

    def __init__(self, limit_ms: float) -> None:
        self.start = time.thread_time()
        self.limit = limit_ms / 1000

    def check(self) -> None:
        elapsed = time.thread_time() - self.start
        if elapsed > self.limit:
            raise _Timeout(elapsed * 1000)


class _Timeout(Exception):
    def __init__(self, ms: float) -> None:
        super().__init__(ms)
        self.ms = ms


def call(arg_names: Sequence[str], body: str, arg_types: Sequence[Any], args: Sequence[Any], return_type: Any,
         time_limit_ms: float = TIME_LIMIT_MS) -> Any:
    """Run the function on ``args`` (Python values of ``arg_types``) in a fresh sandboxed Lua state and return
    its value as a Python value of ``return_type``.  A failure is InvalidRequest with ScyllaDB's wording
    (``lua execution failed: ...``, ``lua execution timeout: Nms elapsed``)."""
    lua54 = lupa_module()
    lua = _runtime(lua54)
    deadline = _Deadline(time_limit_ms)
    try:
        env = lua.execute(_SANDBOX.encode(), lua.table(*[n.encode() for n in SAFE_BASE]),
                          lua.table(*[n.encode() for n in SAFE_LIBRARIES]))
        fn = lua.eval(b"function(src, env) local f, err = load(src, '=<internal>', 't', env); "
                      b"if not f then error(err, 0) end; return f end")(chunk(arg_names, body).encode(), env)
        runner = lua.eval(b"""function(f, env, check, every, ...)
            local hook = function() check() end
            local create, resume, pack, unpack = coroutine.create, coroutine.resume, table.pack, table.unpack
            local function guarded(catch)  -- pcall and resume cannot swallow the time bound
                return function(...)
                    local r = pack(catch(...))
                    check()
                    return unpack(r, 1, r.n)
                end
            end
            env.pcall, env.xpcall = guarded(pcall), guarded(xpcall)
            resume = guarded(resume)
            env.coroutine.resume = resume
            env.coroutine.create = function(g)  -- a coroutine runs under the same bound
                local co = create(g); debug.sethook(co, hook, '', every); return co
            end
            env.coroutine.wrap = function(g)
                local co = env.coroutine.create(g)
                return function(...)
                    local r = table.pack(resume(co, ...))
                    if not r[1] then error(r[2], 0) end
                    return table.unpack(r, 2, r.n)
                end
            end
            debug.sethook(hook, '', every)
            local results = table.pack(pcall(f, ...))
            debug.sethook()
            return results
        end""")
        make_decimal = decimal_maker(lua)
        values = [to_lua(lua, t, v, make_decimal) for t, v in zip(arg_types, args)]
        results = runner(fn, env, deadline.check, HOOK_EVERY, *values)
    except _Timeout as e:
        raise InvalidRequest(f"lua execution timeout: {e.ms:g}ms elapsed") from None
    except MemoryError:
        raise InvalidRequest("lua execution failed: not enough memory") from None
    except lua54.LuaError as e:
        raise InvalidRequest(f"lua execution failed: {_lua_message(e)}") from None
    ok, n = results[1], results[b"n"]
    if not ok:
        err = results[2]
        if isinstance(err, _Timeout):
            raise InvalidRequest(f"lua execution timeout: {err.ms:g}ms elapsed")
        text = _decoded(err) if err is not None else "nil"
        if "not enough memory" in text:
            raise InvalidRequest("lua execution failed: not enough memory")
        if "_Timeout" in text:
            raise InvalidRequest(f"lua execution timeout: {deadline.limit * 1000:g}ms elapsed")
        raise InvalidRequest(f"lua execution failed: {text}")
    if n - 1 != 1:
        raise InvalidRequest(f"{n - 1} values returned, expected 1")
    return from_lua(lua54, return_type, results[2])


def _decoded(v: Any) -> str:
    """A Lua value (an error message) as text."""
    return v.decode("utf-8", "replace") if isinstance(v, bytes) else str(v)


def _lua_message(e: Exception) -> str:
    return str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__


# ---- CQL -> Lua -------------------------------------------------------------------------------------------

def to_lua(lua: Any, t: Any, v: Any, make_decimal: Any = None) -> Any:
    """A CQL value as ScyllaDB passes it to Lua: integers as integers, floats as numbers, text and blobs as
    strings, timestamps as milliseconds, dates as days + 2^31, times as nanoseconds, uuids and inets as strings,
    lists and tuples as sequences, sets as ``{v = true}``, maps as ``{k = v}``, user types as ``{field = v}``,
    durations as ``{months, days, nanoseconds}``; decimals and varints as ScyllaDB's exact decimal values
    (``lua_decimal``, made by ``make_decimal``; without one, as numbers)."""
    if v is None:
        return None
    if isinstance(t, T.UserType):
        out = lua.table()
        for i, (name, ft) in enumerate(zip(t.field_names, t.field_types)):
            out[name.encode()] = to_lua(lua, ft, v[i] if i < len(v) else None, make_decimal)
        return out
    if isinstance(t, T.TupleType):
        return lua.table(*[to_lua(lua, et, x, make_decimal) for et, x in zip(t.items, v)])
    if isinstance(t, T.ListType):
        return lua.table(*[to_lua(lua, t.element, x, make_decimal) for x in v])
    if isinstance(t, T.SetType):
        out = lua.table()
        for x in v:
            out[to_lua(lua, t.element, x, make_decimal)] = True
        return out
    if isinstance(t, T.MapType):
        out = lua.table()
        for k, x in v.items():
            out[to_lua(lua, t.key, k, make_decimal)] = to_lua(lua, t.value, x, make_decimal)
        return out
    name = getattr(t, "name", "")
    if name in ("timestamp",) and isinstance(v, datetime.datetime):
        delta = (v.replace(tzinfo=None) if v.tzinfo else v) - EPOCH
        return delta.days * 86_400_000 + delta.seconds * 1000 + delta.microseconds // 1000
    if name == "date":
        days = v.days_from_epoch if hasattr(v, "days_from_epoch") else (v - datetime.date(1970, 1, 1)).days
        return days + DATE_OFFSET
    if name == "time":
        return v.nanosecond_time if hasattr(v, "nanosecond_time") else int(v)
    if name == "duration":
        return lua.table_from({b"months": v.months, b"days": v.days, b"nanoseconds": v.nanoseconds})
    if name in ("uuid", "timeuuid", "inet"):
        return str(v).encode()
    if name in ("decimal", "varint") and make_decimal is not None:
        return to_lua_decimal(make_decimal, v)
    if name == "decimal":
        return float(v)
    if name == "varint":
        return int(v) if -(1 << 63) <= v < (1 << 63) else float(v)
    if name == "blob":
        return bytes(v)
    if isinstance(v, str):
        return v.encode("utf-8")
    return v


# ---- Lua -> CQL -------------------------------------------------------------------------------------------

INTEGERS = {"tinyint": 8, "smallint": 16, "int": 32, "bigint": 64, "counter": 64, "varint": None}


def from_lua_integer(name: str, n: int) -> int:
    """An integer returned as integer type ``name``: wrapped to its size as ScyllaDB's cast does (varint: as is)."""
    bits = INTEGERS[name]
    if bits is not None:
        n = ((n + (1 << (bits - 1))) % (1 << bits)) - (1 << (bits - 1))
    return n


def _is_table(lua54: Any, v: Any) -> bool:
    return lua54.lua_type(v) == "table"


def from_lua(lua54: Any, t: Any, v: Any) -> Any:
    """A Lua value as a Python value of CQL type ``t``, by ScyllaDB's rules (an integer type takes an integer, or
    a number or string holding one; text takes a string or a number; a collection a table); anything else is
    InvalidRequest with ScyllaDB's message."""
    if v is None:
        return None
    if isinstance(t, T.UserType):
        if not _is_table(lua54, v):
            raise InvalidRequest("value is not a table")
        fields = {_decoded(k): x for k, x in v.items()}
        for k in fields:
            if k not in t.field_names:
                raise InvalidRequest(f"invalid UDT field '{k}'")
        for name in t.field_names:
            if name not in fields:
                raise InvalidRequest(f"key {name} missing in udt {t.name}")
        return tuple(from_lua(lua54, ft, fields[n]) for n, ft in zip(t.field_names, t.field_types))
    if isinstance(t, (T.ListType, T.TupleType)):
        if not _is_table(lua54, v):
            raise InvalidRequest("value is not a table")
        items = dict(v.items())
        size = len(items)
        for k in items:
            if not isinstance(k, int) or not 1 <= k <= size:
                raise InvalidRequest(f"key {k} is not valid for a sequence of size {size}")
        if isinstance(t, T.ListType):
            return [from_lua(lua54, t.element, items[i]) for i in range(1, size + 1)]
        subtypes = t.items
        return tuple(from_lua(lua54, st, items.get(i + 1)) for i, st in enumerate(subtypes))
    if isinstance(t, T.SetType):
        if not _is_table(lua54, v):
            raise InvalidRequest("value is not a table")
        out = []
        for k, x in v.items():
            if x is not True:
                raise InvalidRequest("sets are represented with tables with true values")
            out.append(from_lua(lua54, t.element, k))
        from .types_literal import sorted_set_of
        return sorted_set_of(t.element, out)
    if isinstance(t, T.MapType):
        if not _is_table(lua54, v):
            raise InvalidRequest("value is not a table")
        from .types_literal import map_of
        return map_of(t.key, [(from_lua(lua54, t.key, k), from_lua(lua54, t.value, x)) for k, x in v.items()])
    name = getattr(t, "name", "")
    exact = decimal_of_table(lua54, v)
    if exact is not None:
        return _from_decimal(name, exact)
    if name == "decimal":
        return _decimal(v)
    if _is_table(lua54, v) and name not in ("duration", "date", "timestamp"):
        raise InvalidRequest("unexpected value")
    if isinstance(v, bool) and name != "boolean":
        raise InvalidRequest("unexpected value")
    if name == "boolean":
        if not isinstance(v, bool):
            raise InvalidRequest("value is not a boolean")
        return v
    if name in INTEGERS:
        return from_lua_integer(name, _integer(v))
    if name in ("float", "double"):
        return float(_number(v))
    if name in ("text", "varchar", "ascii"):
        if isinstance(v, bytes):
            if name == "ascii" and not v.isascii():
                raise InvalidRequest("value is not valid ascii")
            try:
                return v.decode("utf-8")
            except UnicodeDecodeError as e:
                raise InvalidRequest(f"value is not valid utf8, invalid character at byte offset {e.start}") from None
        return v if isinstance(v, str) else _number_text(v)
    if name == "blob":
        if isinstance(v, (bytes, str)):
            return v.encode() if isinstance(v, str) else v
        raise InvalidRequest("unexpected value")
    if name == "timestamp":
        ms = _integer(v)
        return EPOCH + datetime.timedelta(milliseconds=ms)
    if name == "date":
        from cassandra.util import Date
        return Date(_integer(v) - DATE_OFFSET)
    if name == "time":
        from cassandra.util import Time
        return Time(_integer(v))
    if name in ("uuid", "timeuuid"):
        try:
            return uuid.UUID(_text(v))
        except ValueError:
            raise InvalidRequest(f"unable to make uuid from '{v}'") from None
    if name == "inet":
        try:
            return str(ipaddress.ip_address(_text(v)))
        except ValueError:
            raise InvalidRequest(f"Failed to parse inet_address from '{v}'") from None
    if name == "duration":
        if not _is_table(lua54, v):
            raise InvalidRequest("a duration must be of the form { months = v1, days = v2, nanoseconds = v3 }")
        from cassandra.util import Duration
        fields = {_decoded(k): x for k, x in v.items()}
        for k in fields:
            if k not in ("months", "days", "nanoseconds"):
                raise InvalidRequest(f"invalid duration field: '{k}'")
        return Duration(_integer(fields.get("months", 0)), _integer(fields.get("days", 0)),
                        _integer(fields.get("nanoseconds", 0)))
    raise InvalidRequest("unexpected value")


def _from_decimal(name: str, d: Decimal) -> Any:
    """A Lua decimal returned as a value of type ``name`` (ScyllaDB: a decimal, an integer when integral, a
    double, or its text)."""
    if name == "decimal":
        return d
    if name in INTEGERS:
        if d != d.to_integral_value():
            raise InvalidRequest("value is not an integer")
        return from_lua_integer(name, int(d))
    if name in ("float", "double"):
        return float(d)
    if name in ("text", "varchar", "ascii"):
        return str(d)
    raise InvalidRequest("unexpected value")


def _decimal(v: Any) -> Decimal:
    """A Lua value returned as a ``decimal``: exact from an integer, an integral number or a decimal string; a number
    that is not an integer is refused, as ScyllaDB refuses it (``value is not a decimal``)."""
    if isinstance(v, bool) or not isinstance(v, (int, float, bytes, str)):
        raise InvalidRequest("value is not a number")
    try:
        d = exact_value(v)
    except (ValueError, ArithmeticError):
        raise InvalidRequest("value is not a number") from None
    if d is None:
        raise InvalidRequest("value is not a decimal")
    return d


def _text(v: Any) -> str:
    if isinstance(v, bytes):
        return v.decode("utf-8", "replace")
    return v if isinstance(v, str) else _number_text(v)


def _number_text(v: Any) -> str:
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        return repr(v) if not v.is_integer() else f"{v:.1f}"
    raise InvalidRequest("unexpected value")


def _number(v: Any) -> float | int:
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        return v
    if isinstance(v, (str, bytes)):
        try:
            return float(v)
        except ValueError:
            pass
    raise InvalidRequest("value is not a number")


def _integer(v: Any) -> int:
    if isinstance(v, int) and not isinstance(v, bool):
        return v
    if isinstance(v, float):
        if v != v or v in (float("inf"), float("-inf")) or not v.is_integer():
            raise InvalidRequest("value is not an integer")
        return int(v)
    if isinstance(v, (str, bytes)):
        try:
            return int(v)
        except ValueError:
            pass
    raise InvalidRequest("value is not an integer")
