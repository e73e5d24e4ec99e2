"""The service level statements (ScyllaDB's ``cql3/statements/*service_level*``), run on the roles and service
levels an ``AuthManager`` keeps (``logtide.auth``; the values and their text are ``logtide.service_levels``).

Every statement is checked on ScyllaDB's root service level resource (``<all service levels>``): CREATE, ALTER,
DROP, AUTHORIZE (ATTACH, DETACH) and DESCRIBE (the listings).  CQL has no GRANT on it, so only a superuser (or a
session without a user) passes, as in ScyllaDB.
"""

from __future__ import annotations

from typing import Any

from .cql import service_level_ast as ast
from .errors import InvalidRequest, Unauthorized
from .result import ColumnSpec, ResultSet, Row
from .schema import types as T
from .service_levels import (ALL_SERVICE_LEVELS, DEFAULT_NAME, DEFAULT_SHARES, MAX_SERVICE_LEVELS, ServiceLevel,
                             check_new_name, effective, parse_options)

_PERMISSION = {ast.CreateServiceLevel: "CREATE", ast.AlterServiceLevel: "ALTER", ast.DropServiceLevel: "DROP",
               ast.AttachServiceLevel: "AUTHORIZE", ast.DetachServiceLevel: "AUTHORIZE"}


def execute(auth: Any, stmt: Any, user: str | None) -> ResultSet:
    """Run one service level statement for ``user`` (the caller holds the manager's lock)."""
    permission = _PERMISSION.get(type(stmt), "DESCRIBE")
    if not auth.is_superuser(user):
        raise Unauthorized(f"User {user} has no {permission} permission on {ALL_SERVICE_LEVELS} or any of its parents")
    levels: dict[str, ServiceLevel] = auth.service_levels
    if isinstance(stmt, ast.CreateServiceLevel):
        changes = parse_options(stmt.options)
        check_new_name(stmt.name)
        if stmt.name in levels:
            if stmt.if_not_exists:
                return ResultSet("void")
            raise InvalidRequest(f"The service level '{stmt.name}' already exists.")
        if len(levels) >= MAX_SERVICE_LEVELS:
            raise InvalidRequest("Can't create service level - no more scheduling groups exist")
        levels[stmt.name] = changes.applied(ServiceLevel(stmt.name, shares=DEFAULT_SHARES))
    elif isinstance(stmt, ast.AlterServiceLevel):
        changes = parse_options(stmt.options)
        if stmt.name == DEFAULT_NAME:
            raise InvalidRequest(f"The default service level, {DEFAULT_NAME}, cannot be altered")
        if stmt.name not in levels:
            raise InvalidRequest(f"The service level '{stmt.name}' doesn't exist.")
        levels[stmt.name] = changes.applied(levels[stmt.name])
    elif isinstance(stmt, ast.DropServiceLevel):
        if stmt.name == DEFAULT_NAME:
            raise InvalidRequest(f"The default service level, {DEFAULT_NAME}, cannot be dropped")
        if stmt.name not in levels:
            if stmt.if_exists:
                return ResultSet("void")
            raise InvalidRequest(f"Service Level {stmt.name} doesn't exists.")
        del levels[stmt.name]
        for role in auth.roles.values():
            if role.service_level == stmt.name:
                role.service_level = None
    elif isinstance(stmt, ast.AttachServiceLevel):
        if stmt.service_level == DEFAULT_NAME:
            raise InvalidRequest(f"The default service level, {DEFAULT_NAME}, cannot be attached to a role. If you "
                                 "want to detach an attached service level, use the DETACH SERVICE LEVEL statement")
        if stmt.service_level not in levels:
            raise InvalidRequest(f"Service Level {stmt.service_level} doesn't exists.")
        _role(auth, stmt.role).service_level = stmt.service_level
    elif isinstance(stmt, ast.DetachServiceLevel):
        _role(auth, stmt.role).service_level = None
    elif isinstance(stmt, ast.ListServiceLevels):
        return _list_levels(levels, stmt.name)
    elif isinstance(stmt, ast.ListAttachedServiceLevels):
        return _list_attached(auth, stmt.role)
    elif isinstance(stmt, ast.ListEffectiveServiceLevel):
        return _list_effective(auth, stmt.role)
    else:
        raise InvalidRequest(f"{type(stmt).__name__} is not a service level statement")
    auth._save()
    return ResultSet("void")


def _role(auth: Any, name: str) -> Any:
    role = auth.roles.get(name)
    if role is None:
        raise InvalidRequest(f"Role {name} doesn't exist.")
    return role


def duration_to_string(d: Any) -> str:
    from .schema.types_literal import duration_to_string as text
    return text(d)


def _timeout(ms: int | None) -> Any:
    from .schema.types_literal import duration_from_string
    return duration_from_string(f"{ms}ms") if ms is not None else None


def _columns(table: str, names: list[tuple[str, Any]]) -> tuple[tuple[ColumnSpec, ...], tuple[str, ...]]:
    columns = tuple(ColumnSpec("QOS", table, n, t) for n, t in names)
    return columns, tuple(n for n, _ in names)


def _list_levels(levels: dict[str, ServiceLevel], name: str | None) -> ResultSet:
    """``LIST SERVICE LEVEL sl`` (no row when it does not exist) or ``LIST ALL SERVICE LEVELS`` (each level's share
    of all the shares too), ScyllaDB's ``list_service_level_statement``."""
    spec = [("service_level", T.TEXT), ("timeout", T.DURATION), ("workload_type", T.TEXT), ("shares", T.INT)]
    chosen = sorted(levels) if name is None else [n for n in (name,) if n in levels]
    if name is None:
        spec.append(("percentage of all service level shares", T.TEXT))
    columns, labels = _columns("service_levels", spec)
    total = sum(sl.shares if sl.shares is not None else DEFAULT_SHARES for sl in levels.values())
    rows = []
    for n in chosen:
        sl = levels[n]
        values = [sl.name, _timeout(sl.timeout_ms), sl.workload_type, sl.shares]
        if name is None:
            share = sl.shares if sl.shares is not None else DEFAULT_SHARES
            values.append(f"{100.0 * share / total:.2f}%")
        rows.append(Row(labels, values))
    return ResultSet("rows", columns, rows)


def _list_attached(auth: Any, role: str | None) -> ResultSet:
    """``LIST ATTACHED SERVICE LEVEL OF role`` or ``LIST ALL ATTACHED SERVICE LEVELS``: role and service level."""
    columns, labels = _columns("service_levels_attachments", [("role", T.TEXT), ("service_level", T.TEXT)])
    names = sorted(auth.roles) if role is None else [role]
    rows = [Row(labels, [n, auth.roles[n].service_level]) for n in names
            if n in auth.roles and auth.roles[n].service_level is not None]
    return ResultSet("rows", columns, rows)


def _list_effective(auth: Any, name: str) -> ResultSet:
    """``LIST EFFECTIVE SERVICE LEVEL OF role``: one row per option, with the service level it comes from, merged
    over the levels attached to the role and to the roles granted to it (ScyllaDB's
    ``list_effective_service_level_statement``)."""
    _role(auth, name)
    attached = [auth.service_levels[r.service_level] for r in (auth.roles.get(n) for n in auth.granted_roles(name))
                if r is not None and r.service_level in auth.service_levels]
    if not attached:
        raise InvalidRequest(f"Role {name} doesn't have assigned any service level")
    merged = effective(attached)
    columns, labels = _columns("effective_service_level", [("service_level_option", T.TEXT),
                                                           ("effective_service_level", T.TEXT), ("value", T.TEXT)])
    first = attached[0].name
    workload, timeout, shares = (merged.get(k, (None, first)) for k in ("workload_type", "timeout_ms", "shares"))
    rows = [Row(labels, ["workload_type", workload[1], workload[0] or "unspecified"]),
            Row(labels, ["timeout", timeout[1], duration_to_string(_timeout(timeout[0])) if timeout[0] is not None
                         else None]),
            Row(labels, ["shares", shares[1], str(shares[0]) if shares[0] is not None else None])]
    return ResultSet("rows", columns, rows)
