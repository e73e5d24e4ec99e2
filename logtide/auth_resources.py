"""The resources permissions are granted on, as ScyllaDB names them (``auth/resource.cc``): data (all keyspaces, a
keyspace, a table), roles (all roles, a role) and functions (all functions, a keyspace's functions, one
user-defined function or aggregate), each with the permissions it takes, its parents and its printed form.
``logtide.auth`` keeps the grants; this module only names what they are on."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .cql import ast
from .schema import types as T

ALL_DATA_PERMISSIONS = ("CREATE", "ALTER", "DROP", "SELECT", "MODIFY", "AUTHORIZE")
TABLE_PERMISSIONS = ("ALTER", "DROP", "SELECT", "MODIFY", "AUTHORIZE")
ALL_ROLES_PERMISSIONS = ("CREATE", "ALTER", "DROP", "AUTHORIZE", "DESCRIBE")
ROLE_PERMISSIONS = ("ALTER", "DROP", "AUTHORIZE")
ALL_FUNCTIONS_PERMISSIONS = ("CREATE", "ALTER", "DROP", "AUTHORIZE", "EXECUTE")
FUNCTION_PERMISSIONS = ("ALTER", "DROP", "AUTHORIZE", "EXECUTE")  # no CREATE: a grant needs the function to exist


# --------------------------------------------------------------------------
# Resources
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class DataResource:
    """``data`` (all keyspaces), ``data/ks`` or ``data/ks/t``, Cassandra's DataResource names."""

    keyspace: str | None = None
    table: str | None = None

    @property
    def key(self) -> str:
        return "/".join(["data"] + [p for p in (self.keyspace, self.table) if p is not None])

    @classmethod
    def from_key(cls, key: str) -> "DataResource":
        parts = key.split("/")[1:]
        return cls(*(parts + [None] * (2 - len(parts))))  # type: ignore[arg-type]

    def parents(self) -> list["DataResource"]:
        """This resource, then its parents up to all keyspaces."""
        out = [self]
        if self.table is not None:
            out.append(DataResource(self.keyspace))
        if self.keyspace is not None:
            out.append(DataResource())
        return out

    def applicable(self) -> tuple[str, ...]:
        return TABLE_PERMISSIONS if self.table is not None else ALL_DATA_PERMISSIONS

    def __str__(self) -> str:
        if self.table is not None:
            return f"<table {self.keyspace}.{self.table}>"
        if self.keyspace is not None:
            return f"<keyspace {self.keyspace}>"
        return "<all keyspaces>"


@dataclass(frozen=True)
class RoleResource:
    """``roles`` (all roles) or ``roles/r``, Cassandra's RoleResource names."""

    role: str | None = None

    @property
    def key(self) -> str:
        return "roles" if self.role is None else f"roles/{self.role}"

    def parents(self) -> list["RoleResource"]:
        """This resource, then all roles."""
        return [self, RoleResource()] if self.role is not None else [self]

    def applicable(self) -> tuple[str, ...]:
        return ROLE_PERMISSIONS if self.role is not None else ALL_ROLES_PERMISSIONS

    def __str__(self) -> str:
        return f"<role {self.role}>" if self.role is not None else "<all roles>"


@dataclass(frozen=True)
class FunctionResource:
    """``functions`` (all functions), ``functions/ks`` (all functions in a keyspace) or ``functions/ks/f(int, text)``
    (one user-defined function or aggregate, by logtide's signature: its name and argument types), ScyllaDB's
    functions resources (``auth/resource.cc``).  ``label`` is how the function is shown, ``f(int, text)`` with
    the name quoted where CQL needs it and user types as ``frozen<t>`` (ScyllaDB's ``<function ks.f(...)>``)."""

    keyspace: str | None = None
    signature: str | None = None
    label: str | None = field(default=None, compare=False)

    @property
    def key(self) -> str:
        return "/".join(["functions"] + [p for p in (self.keyspace, self.signature) if p is not None])

    @classmethod
    def of(cls, fn: Any) -> "FunctionResource":
        """The resource of a user-defined function or aggregate (``schema.udf``)."""
        return cls(fn.keyspace, fn.signature, function_label(fn))

    def parents(self) -> list["FunctionResource"]:
        """This resource, then the keyspace's functions, then all functions."""
        out = [self]
        if self.signature is not None:
            out.append(FunctionResource(self.keyspace))
        if self.keyspace is not None:
            out.append(FunctionResource())
        return out

    def applicable(self) -> tuple[str, ...]:
        return FUNCTION_PERMISSIONS if self.signature is not None else ALL_FUNCTIONS_PERMISSIONS

    def __str__(self) -> str:
        if self.signature is not None:
            return f"<function {self.keyspace}.{self.label or self.signature}>"
        if self.keyspace is not None:
            return f"<all functions in {self.keyspace}>"
        return "<all functions>"


Resource = DataResource | RoleResource | FunctionResource
RESOURCE_KINDS = ("data", "roles", "functions")  # ScyllaDB's order of resource kinds (LIST PERMISSIONS)


def function_label(fn: Any) -> str:
    """``f(int, frozen<t>)``: a function as ScyllaDB names it in a resource (its name quoted where CQL needs it)."""
    return f"{T.maybe_quote(fn.name)}({', '.join(t.cql() for t in fn.arg_types)})"


def resource_from_key(key: str, catalog: Any = None) -> Resource:
    """The resource a stored grant names (``data/...``, ``roles/...`` or ``functions/...``); with ``catalog``, a
    function's resource is labelled as the function it names (kept: a grant goes with its function)."""
    if key == "roles" or key.startswith("roles/"):
        return RoleResource(key[len("roles/"):] if "/" in key else None)
    if key == "functions" or key.startswith("functions/"):
        parts = key.split("/", 2)[1:]
        if len(parts) < 2:
            return FunctionResource(*parts)
        fn = find_function(catalog, parts[0], parts[1]) if catalog is not None else None
        return FunctionResource(parts[0], parts[1], function_label(fn) if fn is not None else None)
    return DataResource.from_key(key)


def find_function(catalog: Any, keyspace: str, signature: str) -> Any:
    """The user-defined function or aggregate of this signature in ``keyspace``, or None."""
    ks = catalog.keyspaces.get(keyspace)
    if ks is None:
        return None
    return ks.functions.get(signature) or ks.aggregates.get(signature)


def role_resource(name: str | None) -> str:
    return str(RoleResource(name))


def function_arg_type(catalog: Any, expr: ast.TypeExpr, keyspace: str) -> Any:
    """A function's argument type as written in a statement, resolved in ``keyspace`` as CREATE FUNCTION does (a user
    type frozen); InvalidRequest when it does not resolve."""
    from .schema.catalog import keyspace_lookup

    ks = catalog.keyspaces.get(keyspace)
    t = T.resolve_type(expr, keyspace, keyspace_lookup(ks) if ks is not None else (lambda ks, name: None))
    return t.freeze() if isinstance(t, T.UserType) else t


def udf_signature(name: str, arg_types: list[Any]) -> str:
    """logtide's signature of a function (``schema.udf.signature``): how its grants are keyed."""
    from .schema.udf import signature

    return signature(name, arg_types)


def raw_function(res: ast.Resource, session: Any) -> str:
    """``<function ks.f(int,)>``: a function resource as ScyllaDB prints it before its types are resolved."""
    keyspace = res.keyspace or getattr(session, "keyspace", None) or ""
    written = "".join(f"{T.type_expr_to_string(t)}," for t in res.arg_types)
    return f"<function {keyspace}.{T.maybe_quote(res.table or '')}({written})>"


def key_order(key: str) -> tuple[int, int, str]:
    """LIST PERMISSIONS' order of stored resources: by kind as ScyllaDB orders them (data, roles, functions),
    then parents first."""
    kind = key.split("/", 1)[0]
    return (RESOURCE_KINDS.index(kind) if kind in RESOURCE_KINDS else len(RESOURCE_KINDS), key.count("/"), key)
