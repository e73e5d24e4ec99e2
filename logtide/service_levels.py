"""Service levels, as ScyllaDB has them (``service/qos``, ``cql3/statements/*service_level*``, ``sl_prop_defs``).

A service level is a named set of options a role can be given (``ATTACH SERVICE LEVEL sl TO role``): a
``timeout`` (milliseconds), a ``workload_type`` (``interactive`` or ``batch``) and ``shares`` (1 to 1000,
1000 when not given).  logtide stores, lists and describes them; it schedules nothing by them (one process, no
scheduling groups), so none of the three changes how a statement runs (docs/server.md "Service levels").  A new
database has ScyllaDB's ``driver`` service level (``SHARES = 200``, ``WORKLOAD_TYPE = 'batch'``), which may be
altered or dropped like any other.

This module holds the values and their text; ``logtide.auth`` keeps them (in the same checksummed document as
the roles) and runs the statements.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Iterable

from .errors import InvalidRequest, SyntaxException

DEFAULT_NAME = "default"
DRIVER_NAME = "driver"
DEFAULT_SHARES = 1000
SHARES_MIN, SHARES_MAX = 1, 1000
WORKLOAD_TYPES = ("interactive", "batch")
OPTION_NAMES = ("timeout", "workload_type", "shares")
# ScyllaDB's limit (its scheduling groups, docs/features/workload-prioritization.rst): 8 service levels a user
# creates besides `driver`, 9 in all
MAX_SERVICE_LEVELS = 9
ALL_SERVICE_LEVELS = "<all service levels>"  # the resource every service level statement is checked on


@dataclass(frozen=True)
class ServiceLevel:
    """One service level: ``timeout_ms``, ``workload_type`` and ``shares`` are None when not set."""

    name: str
    timeout_ms: int | None = None
    workload_type: str | None = None
    shares: int | None = None

    def to_json(self) -> dict[str, Any]:
        return {"timeout_ms": self.timeout_ms, "workload_type": self.workload_type, "shares": self.shares}

    @classmethod
    def from_json(cls, name: str, doc: dict[str, Any]) -> "ServiceLevel":
        return cls(name, doc.get("timeout_ms"), doc.get("workload_type"), doc.get("shares"))


DRIVER = ServiceLevel(DRIVER_NAME, workload_type="batch", shares=200)

_UNSET = object()  # an option the statement does not name: kept (ALTER) or defaulted (CREATE)


@dataclass(frozen=True)
class Changes:
    """The options a CREATE or ALTER SERVICE LEVEL names: each a value, None (``null``: removed) or unset."""

    timeout_ms: Any = _UNSET
    workload_type: Any = _UNSET
    shares: Any = _UNSET

    def applied(self, base: ServiceLevel) -> ServiceLevel:
        """``base`` with these changes (ScyllaDB's ``replace_defaults``)."""
        out = base
        for attr in ("timeout_ms", "workload_type", "shares"):
            value = getattr(self, attr)
            if value is not _UNSET:
                out = replace(out, **{attr: value})
        return out


def parse_options(options: Iterable[tuple[str, Any]]) -> Changes:
    """The options of a service level statement, checked as ScyllaDB's ``sl_prop_defs::validate`` does."""
    from .schema.types_literal import duration_from_string

    seen: dict[str, Any] = {}
    for name, value in options:
        if name in seen:
            raise SyntaxException(f"Multiple definition for property '{name}'")
        if name not in OPTION_NAMES:
            raise SyntaxException(f"Unknown property '{name}'")
        seen[name] = value
    changes: dict[str, Any] = {}
    if "timeout" in seen:
        text = _simple(seen["timeout"], "timeout")
        if text.lower() == "null":
            changes["timeout_ms"] = None
        else:
            d = duration_from_string(text)
            if d.months or d.days:
                raise InvalidRequest("Timeout values cannot be expressed in days/months")
            if d.nanoseconds % 1_000_000:
                raise InvalidRequest("Timeout values must be expressed in millisecond granularity")
            if d.nanoseconds < 0:
                raise InvalidRequest("Timeout values must be nonnegative")
            changes["timeout_ms"] = d.nanoseconds // 1_000_000
    if "workload_type" in seen:
        text = _simple(seen["workload_type"], "workload_type")
        if text == "null":
            changes["workload_type"] = None
        elif text in WORKLOAD_TYPES:
            changes["workload_type"] = text
        else:
            raise InvalidRequest(f"Invalid workload type: {text}")
    if "shares" in seen:
        value = seen["shares"]
        if isinstance(value, bool) or not isinstance(value, int):
            try:
                value = int(str(value))
            except ValueError:
                raise SyntaxException(f"Invalid integer value {value} for 'shares'") from None
        if not SHARES_MIN <= value <= SHARES_MAX:
            raise SyntaxException(f"'SHARES' can only take values of {SHARES_MIN}-{SHARES_MAX} (given {value})")
        changes["shares"] = value
    return Changes(**changes)


def _simple(value: Any, name: str) -> str:
    if isinstance(value, (dict, list, tuple)):
        raise SyntaxException(f"Invalid value for property '{name}'. It should be a string")
    return str(value).lower() if isinstance(value, bool) else str(value)


def check_new_name(name: str) -> None:
    """ScyllaDB's checks of a name CREATE SERVICE LEVEL is given."""
    if name.startswith("$"):
        raise InvalidRequest("Names starting with '$' are reserved for internal tenants. Use a different name.")
    if name == DEFAULT_NAME:
        raise InvalidRequest(f"The default service level, {DEFAULT_NAME}, already exists and cannot be created")


def describe(sl: ServiceLevel, command: str = "CREATE SERVICE LEVEL") -> str:
    """``CREATE SERVICE LEVEL sl WITH TIMEOUT = 10ms AND WORKLOAD_TYPE = 'batch' AND SHARES = 1000;`` as ScyllaDB's
    ``describe_service_level`` writes it (the timeout in milliseconds; no WITH when nothing is set)."""
    from .schema.types import maybe_quote

    opts = []
    if sl.timeout_ms is not None:
        opts.append(f"TIMEOUT = {sl.timeout_ms}ms")
    if sl.workload_type is not None:
        opts.append(f"WORKLOAD_TYPE = '{sl.workload_type}'")
    if sl.shares is not None:
        opts.append(f"SHARES = {sl.shares}")
    name = maybe_quote(sl.name)
    return f"{command} {name} WITH {' AND '.join(opts)};" if opts else f"{command} {name};"


def describe_rows(levels: dict[str, ServiceLevel], attached: dict[str, str]) -> list[tuple[str, str, str]]:
    """``(type, name, statement)`` of ``DESC SCHEMA WITH INTERNALS`` for service levels (ScyllaDB's
    ``describe_service_levels``): first the ``driver`` level (``CREATE ... IF NOT EXISTS`` and ``ALTER``, or ``DROP
    SERVICE LEVEL IF EXISTS driver`` when it was dropped, so a restore starts from the same slots), then the others
    by name, then the attachments (``ATTACH SERVICE LEVEL sl TO role;``) by service level and statement."""
    from .schema.types import maybe_quote

    out: list[tuple[str, str, str]] = []
    driver = levels.get(DRIVER_NAME)
    if driver is not None:
        out.append(("service_level", DRIVER_NAME, describe(driver, "CREATE SERVICE LEVEL IF NOT EXISTS")))
        out.append(("service_level", DRIVER_NAME, describe(driver, "ALTER SERVICE LEVEL")))
    else:
        out.append(("service_level", DRIVER_NAME, f"DROP SERVICE LEVEL IF EXISTS {DRIVER_NAME};"))
    out += [("service_level", n, describe(levels[n])) for n in sorted(levels) if n != DRIVER_NAME]
    attachments = [("service_level_attachment", sl, f"ATTACH SERVICE LEVEL {maybe_quote(sl)} TO {maybe_quote(role)};")
                   for role, sl in attached.items()]
    return out + sorted(attachments, key=lambda r: (r[1], r[2]))


def effective(levels: list[ServiceLevel]) -> dict[str, tuple[Any, str]]:
    """The options a role gets from the service levels attached to it and to the roles granted to it, each with
    the service level it comes from (ScyllaDB's ``merge_with``: the smallest timeout, the fewest shares, a given
    workload type over none and ``batch`` over ``interactive``)."""
    out: dict[str, tuple[Any, str]] = {}
    for sl in levels:
        for attr in ("timeout_ms", "shares"):
            value = getattr(sl, attr)
            if value is not None and (attr not in out or value < out[attr][0]):
                out[attr] = (value, sl.name)
        if sl.workload_type is not None and ("workload_type" not in out or sl.workload_type == "batch"
                                             and out["workload_type"][0] != "batch"):
            out["workload_type"] = (sl.workload_type, sl.name)
    return out
