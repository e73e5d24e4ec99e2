"""Roles, passwords and permissions, as Cassandra's PasswordAuthenticator and CassandraAuthorizer.

An ``AuthManager`` is attached to a Database as ``db.auth`` (``attach`` or,
lazily and with authentication off, ``of``).  Roles and their grants live in
the store's meta table under ``roles`` as JSON, written in one storage
transaction per change; passwords are kept as scrypt hashes with a random salt.

* ``authenticate(user, password)`` checks a login (SASL PLAIN on the wire).
* ``authorize(role, statement, keyspace)`` raises ``Unauthorized`` with
  Cassandra's message unless the role (or a superuser), itself or through a role
  granted to it, holds the permission on the resource or one of its parents
  (table -> keyspace -> all keyspaces; function -> the keyspace's functions -> all
  functions, ScyllaDB's function resources); ``ensure_execute`` checks EXECUTE on
  each user-defined function a statement calls.
  Reads of ``system`` / ``system_schema`` are open to every role; a read of a CDC log
  table ``<t>_scylla_cdc_log`` is checked against its base table, anything else against the
  log table itself, as ScyllaDB does.
* ``execute(statement, session)`` runs CREATE/ALTER/DROP ROLE, LIST ROLES,
  GRANT, REVOKE (of permissions and of roles) and LIST PERMISSIONS.

A session without a user (the embedded API, or a server without ``--auth``)
is never checked and may manage roles.
"""

from __future__ import annotations

import functools
import hashlib
import hmac
import json
import os
import threading
from dataclasses import dataclass, field
from typing import Any, Iterable

from .auth_resources import (FUNCTION_PERMISSIONS, DataResource, FunctionResource, Resource, RoleResource,
                             find_function, function_arg_type, key_order, raw_function, resource_from_key,
                             udf_signature)
from .cql import ast
from .cql.service_level_ast import SERVICE_LEVEL_STATEMENTS
from .cql.view_ast import VIEW_STATEMENTS, CreateView
from .errors import AuthenticationError, InvalidRequest, SyntaxException, Unauthorized
from .result import ColumnSpec, ResultSet, Row
from .schema import types as T
from .scram import HASHES, SHA256, ScramCredentials, ScramError, scram_credentials
from .service_levels import DRIVER, ServiceLevel

Database = Any  # a logtide.session.Database (auth sits below the engine: it gets the database, not its class)

META_KEY = "roles"
DEFAULT_SUPERUSER = "cassandra"  # ScyllaDB's auth_superuser_name default, when logtide has no bootstrap superuser
CDC_LOG_SUFFIX = "_scylla_cdc_log"

# system tables every role may read (ScyllaDB's client_state readable_system_resources); the rest of the
# system keyspaces needs a grant, and only a superuser may change them
READABLE_SYSTEM_TABLES = frozenset({("system", "local"), ("system", "peers"), ("system", "peers_v2"),
                                    ("system", "one_row")})
READABLE_SYSTEM_KEYSPACES = frozenset({"system_schema", "system_virtual_schema"})
PERMISSION_ORDER = ("CREATE", "ALTER", "DROP", "SELECT", "MODIFY", "AUTHORIZE", "DESCRIBE", "EXECUTE")
ROLE_OPTIONS = frozenset({"password", "hashed password", "login", "superuser", "options"})

SCRYPT_N, SCRYPT_R, SCRYPT_P, SCRYPT_LEN = 2 ** 14, 8, 1, 32


class AuthSetupError(Exception):
    """Authentication is misconfigured (raised at startup, never to a client)."""


# --------------------------------------------------------------------------
# Stored state
# --------------------------------------------------------------------------


@dataclass
class Role:
    """A stored role; ``password`` is ``scrypt$salt-hex$hash-hex`` or None; ``scram`` the SCRAM credentials of
    each mechanism (SCRAM-SHA-256, SCRAM-SHA-512) made when the password was last set (a mechanism is missing
    when the password was set before logtide kept its credentials)."""

    name: str
    superuser: bool = False
    login: bool = False
    password: str | None = None
    options: dict[str, str] = field(default_factory=dict)
    scram: dict[str, ScramCredentials] = field(default_factory=dict)
    member_of: set[str] = field(default_factory=set)  # the roles granted to this one (GRANT r TO this)
    service_level: str | None = None  # the service level attached to this role (ATTACH SERVICE LEVEL)

    def set_password(self, password: str) -> None:
        """Keep the scrypt hash and the SCRAM credentials of ``password`` for every mechanism (never the
        password)."""
        self.password = hash_password(password)
        self.scram = {m: scram_credentials(password, mechanism=m) for m in HASHES}

    def to_json(self) -> dict[str, Any]:
        doc = {"superuser": self.superuser, "login": self.login, "password": self.password,
               "options": self.options}
        if self.member_of:
            doc["member_of"] = sorted(self.member_of)
        if self.service_level is not None:
            doc["service_level"] = self.service_level
        for mechanism, creds in sorted(self.scram.items()):
            doc[_scram_key(mechanism)] = creds.to_json()
        return doc

    @classmethod
    def from_json(cls, name: str, doc: dict[str, Any]) -> "Role":
        scram = {m: ScramCredentials.from_json(doc[_scram_key(m)], m) for m in HASHES if doc.get(_scram_key(m))}
        return cls(name, bool(doc.get("superuser")), bool(doc.get("login")), doc.get("password"),
                   dict(doc.get("options") or {}), scram, set(doc.get("member_of") or ()), doc.get("service_level"))


def _scram_key(mechanism: str) -> str:
    """Where a role's document keeps a mechanism's credentials: ``scram_sha_256``, ``scram_sha_512``."""
    return mechanism.lower().replace("-", "_")


def hash_password(password: str, salt: bytes | None = None) -> str:
    """``scrypt$<salt hex>$<hash hex>`` for a password, with a fresh random salt unless given."""
    salt = os.urandom(16) if salt is None else salt
    digest = hashlib.scrypt(password.encode("utf-8"), salt=salt, n=SCRYPT_N, r=SCRYPT_R, p=SCRYPT_P,
                            dklen=SCRYPT_LEN)
    return f"scrypt${salt.hex()}${digest.hex()}"


def check_password(password: str, stored: str | None) -> bool:
    if not stored or not stored.startswith("scrypt$"):
        return False
    _, salt_hex, _ = stored.split("$", 2)
    return hmac.compare_digest(hash_password(password, bytes.fromhex(salt_hex)), stored)


# --------------------------------------------------------------------------
# The manager
# --------------------------------------------------------------------------


class AuthManager:
    """Roles and permissions of one Database; ``enabled`` says whether logins are required."""

    def __init__(self, db: "Database", enabled: bool) -> None:
        self.db = db
        self.enabled = enabled
        self.default_superuser = DEFAULT_SUPERUSER  # the bootstrap superuser's name once attached with one
        self._lock = threading.RLock()
        self.roles: dict[str, Role] = {}
        self.grants: dict[str, dict[str, set[str]]] = {}  # role -> resource key -> permissions
        # a database whose document has no service levels yet has ScyllaDB's automatic `driver` level
        self.service_levels: dict[str, ServiceLevel] = {DRIVER.name: DRIVER}
        with db.store.snapshot() as txn:
            raw = txn.get_meta(META_KEY)
        if raw:
            doc = json.loads(raw.decode("utf-8"))
            self.roles = {n: Role.from_json(n, d) for n, d in doc.get("roles", {}).items()}
            self.grants = {r: {k: set(v) for k, v in g.items()} for r, g in doc.get("grants", {}).items()}
            if "service_levels" in doc:
                self.service_levels = {n: ServiceLevel.from_json(n, d) for n, d in doc["service_levels"].items()}

    # -- persistence ------------------------------------------------------
    def _save(self) -> None:
        doc = {"roles": {n: r.to_json() for n, r in sorted(self.roles.items())},
               "grants": {r: {k: sorted(v) for k, v in g.items() if v} for r, g in sorted(self.grants.items())},
               "service_levels": {n: sl.to_json() for n, sl in sorted(self.service_levels.items())}}
        data = json.dumps(doc, sort_keys=True).encode("utf-8")
        with self.db.write_lock:
            with self.db.store.write() as txn:
                txn.put_meta(META_KEY, data)

    def forget(self, keyspace: str, table: str | None = None) -> None:
        """Revoke every permission on a dropped table, or on a dropped keyspace and its tables (as Cassandra); a
        dropped keyspace takes the grants on its functions with it too (``ALL FUNCTIONS IN KEYSPACE`` and each
        function's: ScyllaDB keeps the latter, its issue #13820; logtide does as Cassandra)."""
        self._forget(DataResource(keyspace, table).key, table is None)
        if table is None:
            self._forget(FunctionResource(keyspace).key, True)

    def forget_function(self, keyspace: str, signature: str) -> None:
        """Revoke every permission on a dropped function or aggregate (ScyllaDB's ``revoke_all`` on DROP FUNCTION)."""
        self._forget(FunctionResource(keyspace, signature).key, False)

    def _forget(self, prefix: str, children: bool) -> None:
        """Drop every grant on the resource stored as ``prefix`` (and, with ``children``, on what is below it)."""
        with self._lock:
            changed = False
            for grants in self.grants.values():
                for key in [k for k in grants if k == prefix or (children and k.startswith(prefix + "/"))]:
                    del grants[key]
                    changed = True
            if changed:
                self._save()

    def grant_to_creator(self, role: str | None, resource: Resource) -> None:
        """Grant every applicable permission on a new resource to the role that created it (ScyllaDB's
        ``grant_permissions_to_creator``: CREATE KEYSPACE, CREATE TABLE, CREATE ROLE); a session without a user
        gets nothing."""
        if role is None or role not in self.roles:
            return
        with self._lock:
            self.grants.setdefault(role, {}).setdefault(resource.key, set()).update(resource.applicable())
            self._save()

    def bootstrap(self, name: str, password: str) -> bool:
        """Create superuser ``name`` with ``password`` unless a role of that name exists; True if created."""
        with self._lock:
            if name in self.roles:
                return False
            role = Role(name, superuser=True, login=True)
            role.set_password(password)
            self.roles[name] = role
            self._save()
            return True

    def role_permission_rows(self) -> list[dict[str, Any]]:
        """The rows of ``system.role_permissions`` (ScyllaDB's auth table): role, resource as ScyllaDB names it
        (``data/ks/t``, ``roles/r``, ``functions/ks/f[org.apache.cassandra.db.marshal.Int32Type^...]``) and the set of
        permissions, in primary-key order."""
        from .query.casts import marshal_class

        with self._lock:
            out = []
            for role in sorted(self.grants):
                rows = []
                for key, held in self.grants[role].items():
                    if not held:
                        continue
                    resource = resource_from_key(key, self.db.catalog)
                    if isinstance(resource, FunctionResource) and resource.signature is not None:
                        fn = find_function(self.db.catalog, resource.keyspace or "", resource.signature)
                        if fn is not None:
                            encoded = f"{fn.name}[{'^'.join(marshal_class(t) for t in fn.arg_types)}]"
                            key = f"functions/{fn.keyspace}/{encoded}"
                    rows.append({"role": role, "resource": key, "permissions": set(held)})
                out.extend(sorted(rows, key=lambda r: r["resource"]))
            return out

    # -- DESC SCHEMA WITH INTERNALS ---------------------------------------
    def describe_rows(self, user: str | None, with_passwords: bool) -> list[tuple[None, str, str, str]]:
        """The rows ``DESC SCHEMA WITH INTERNALS`` adds after the keyspaces, in ScyllaDB's order (its
        ``auth::service::describe_auth`` then ``describe_service_levels``): the roles by name (the default
        superuser as ``CREATE ROLE IF NOT EXISTS``), the role grants, the permissions by role and statement, then
        the service levels and their attachments.  ``AND PASSWORDS`` adds each role's stored hash (``HASHED
        PASSWORD``) and needs a superuser."""
        from .schema.types import maybe_quote
        from .service_levels import describe_rows as service_level_rows

        with self._lock:
            if with_passwords and not self.is_superuser(user):
                raise Unauthorized("DESCRIBE SCHEMA WITH INTERNALS AND PASSWORDS can only be issued by a superuser")
            out: list[tuple[str, str, str]] = []
            for name in sorted(self.roles):
                role = self.roles[name]
                who = f"IF NOT EXISTS {maybe_quote(name)}" if name == self.default_superuser else maybe_quote(name)
                hashed = f"WITH HASHED PASSWORD = '{role.password.replace(chr(39), chr(39) * 2)}' AND" \
                    if with_passwords and role.password else "WITH"
                flags = f"LOGIN = {str(role.login).lower()} AND SUPERUSER = {str(role.superuser).lower()}"
                out.append(("role", name, f"CREATE ROLE {who} {hashed} {flags};"))
            grants = [("grant_role", granted, f"GRANT {maybe_quote(granted)} TO {maybe_quote(grantee)};")
                      for grantee, role in self.roles.items() for granted in role.member_of]
            out += sorted(grants, key=lambda r: (r[1], r[2]))
            permissions = [("grant_permission", role, f"GRANT {p} ON {self._described_resource(key)} TO "
                                                      f"{maybe_quote(role)};")
                           for role, held in self.grants.items() for key, perms in held.items() for p in perms]
            out += sorted(permissions, key=lambda r: (r[1], r[2]))
            attached = {n: r.service_level for n, r in self.roles.items() if r.service_level is not None}
            out += service_level_rows(self.service_levels, attached)
            return [(None, kind, maybe_quote(name), text) for kind, name, text in out]

    def _described_resource(self, key: str) -> str:
        """A stored resource as a GRANT names it (ScyllaDB's ``describe_resource_kind``): ``ALL KEYSPACES``,
        ``KEYSPACE ks``, ``ks.t``, ``ALL ROLES``, ``ROLE r``, ``ALL FUNCTIONS [IN KEYSPACE ks]``, ``FUNCTION
        ks.f(int, t)`` (argument types without ``frozen``)."""
        from .schema.types import maybe_quote

        resource = resource_from_key(key)
        if isinstance(resource, RoleResource):
            return "ALL ROLES" if resource.role is None else f"ROLE {maybe_quote(resource.role)}"
        if isinstance(resource, DataResource):
            if resource.keyspace is None:
                return "ALL KEYSPACES"
            if resource.table is None:
                return f"KEYSPACE {maybe_quote(resource.keyspace)}"
            return f"{maybe_quote(resource.keyspace)}.{maybe_quote(resource.table)}"
        if resource.keyspace is None:
            return "ALL FUNCTIONS"
        if resource.signature is None:
            return f"ALL FUNCTIONS IN KEYSPACE {maybe_quote(resource.keyspace)}"
        fn = find_function(self.db.catalog, resource.keyspace, resource.signature)
        if fn is None:  # a grant whose function is gone (never kept: a drop revokes it)
            return f"FUNCTION {maybe_quote(resource.keyspace)}.{resource.signature}"
        types = ", ".join(t.unfreeze().cql() for t in fn.arg_types)
        return f"FUNCTION {maybe_quote(fn.keyspace)}.{maybe_quote(fn.name)}({types})"

    def role_rows(self) -> list[dict[str, Any]]:
        """The rows of ``system.roles`` (ScyllaDB's auth table): role, can_login, is_superuser, member_of and
        salted_hash (the stored hash: logtide's ``scrypt$...`` or one given with ``HASHED PASSWORD``).  Reading it
        needs a superuser or a grant, as every system table but ScyllaDB's readable few."""
        with self._lock:
            return [{"role": n, "can_login": r.login, "is_superuser": r.superuser,
                     "member_of": set(r.member_of) or None, "salted_hash": r.password}
                    for n, r in sorted(self.roles.items())]

    def can_anyone_log_in(self) -> bool:
        return any(r.login and r.password for r in self.roles.values())

    # -- authentication -----------------------------------------------------
    @functools.cached_property
    def _decoy_hash(self) -> str:
        """A hash of a random password, checked against for unknown names (made on first use)."""
        return hash_password(os.urandom(16).hex())

    def authenticate(self, user: str, password: str) -> str:
        """The role name for a valid login; AuthenticationError otherwise."""
        role = self.roles.get(user)
        stored = role.password if role is not None and role.password else self._decoy_hash
        # an unknown name (or a role without a password) costs the same scrypt as a wrong password,
        # so the time taken does not tell which names exist
        matched = check_password(password, stored)
        if role is None or not role.password or not matched:
            raise AuthenticationError(f"Provided username {user} and/or password are incorrect")
        if not role.login:
            raise AuthenticationError(f"{user} is not permitted to log in")
        return user

    @functools.cached_property
    def _decoy_scram(self) -> dict[str, ScramCredentials]:
        password = os.urandom(16).hex()
        return {m: scram_credentials(password, mechanism=m) for m in HASHES}

    def scram_lookup(self, user: str, mechanism: str = SHA256) -> ScramCredentials:
        """The ``mechanism`` credentials to check ``user``'s proof against.  An unknown name (or a role without
        a password) gets made-up ones, so the exchange fails at the proof as for a wrong password; a role whose
        password was set before logtide kept that mechanism's credentials raises ScramError saying how to fix
        it."""
        role = self.roles.get(user)
        if role is None or not role.password:
            return self._decoy_scram[mechanism]
        creds = role.scram.get(mechanism)
        if creds is None:
            raise ScramError(f"Role {user} has no {mechanism} credentials: its password was set before logtide "
                             f"kept them, or as a hash (HASHED PASSWORD); set it again (ALTER ROLE {user} WITH "
                             f"PASSWORD = '...') or use SASL/PLAIN")
        return creds

    def check_login(self, user: str) -> str:
        """After a SCRAM proof: the role name, or AuthenticationError if the role may not log in."""
        role = self.roles.get(user)
        if role is None or not role.password:
            raise AuthenticationError(f"Provided username {user} and/or password are incorrect")
        if not role.login:
            raise AuthenticationError(f"{user} is not permitted to log in")
        return user

    # -- authorization ------------------------------------------------------
    def granted_roles(self, role: str) -> list[str]:
        """``role`` and every role granted to it, directly or through other roles (ScyllaDB's recursive
        ``query_granted``), in a stable order."""
        out: list[str] = []
        todo = [role]
        while todo:
            name = todo.pop(0)
            if name in out:
                continue
            out.append(name)
            r = self.roles.get(name)
            if r is not None:
                todo.extend(sorted(r.member_of))
        return out

    def is_superuser(self, role: str | None) -> bool:
        """A session without a user, a superuser role, or a role granted one (as Cassandra and ScyllaDB)."""
        if role is None:
            return True
        return any(r is not None and r.superuser for r in (self.roles.get(n) for n in self.granted_roles(role)))

    def has_permission(self, role: str | None, permission: str, resource: Resource) -> bool:
        """Whether ``role`` holds ``permission`` on ``resource`` or one of its parents, itself or through a role
        granted to it."""
        if self.is_superuser(role):
            return True
        keys = [r.key for r in resource.parents()]
        for name in self.granted_roles(role or ""):
            grants = self.grants.get(name, {})
            if any(permission in grants.get(k, ()) for k in keys):
                return True
        return False

    def ensure(self, role: str | None, permission: str, resource: Resource) -> None:
        if not self.has_permission(role, permission, resource):
            raise Unauthorized(f"User {role} has no {permission} permission on {resource} or any of its parents")

    def ensure_execute(self, role: str | None, fn: Any) -> None:
        """EXECUTE on a user-defined function or aggregate a statement calls, and on an aggregate's state, reduce
        and final functions too (ScyllaDB's ``select_statement::check_access``: native functions need nothing)."""
        if self.is_superuser(role):
            return
        self.ensure(role, "EXECUTE", FunctionResource.of(fn))
        for sig in (getattr(fn, "state_function", None), getattr(fn, "reduce_function", None),
                    getattr(fn, "final_function", None)):
            if sig is not None:
                sub = find_function(self.db.catalog, fn.keyspace, sig)
                self.ensure(role, "EXECUTE", FunctionResource.of(sub) if sub is not None
                            else FunctionResource(fn.keyspace, sig))

    def authorize(self, role: str | None, statement: Any, keyspace: str | None) -> None:
        """Raise Unauthorized unless ``role`` may run ``statement`` with ``keyspace`` as the current keyspace.

        As ScyllaDB's ``client_state::has_access``: ``system.local``, ``system.peers``, ``system.one_row`` and
        ``system_schema`` are readable by every role; anything else of the system keyspaces needs a grant, and
        a non-superuser can never change them.
        """
        if role is None or self.is_superuser(role):
            return
        from .schema.system_schema import is_system_keyspace

        if isinstance(statement, (ast.CreateFunction, ast.CreateAggregate, ast.DropFunction)):
            for permission, fresource in self._function_statement_permissions(statement, keyspace):
                self.ensure(role, permission, fresource)
            return
        for permission, resource in required_permissions(statement, keyspace):
            if isinstance(resource, DataResource):
                if permission == "SELECT" and (resource.keyspace in READABLE_SYSTEM_KEYSPACES
                                               or (resource.keyspace, resource.table) in READABLE_SYSTEM_TABLES):
                    continue
                if is_system_keyspace(resource.keyspace or "") and permission not in ("SELECT", "DESCRIBE"):
                    raise Unauthorized(f"{resource.keyspace} can be granted only SELECT or DESCRIBE permissions "
                                       "to a non-superuser.")
            self.ensure(role, permission, resource)

    def _function_statement_permissions(self, stmt: Any, keyspace: str | None) -> list[tuple[str, Resource]]:
        """What ScyllaDB's function statements check (``function_statement.cc``): CREATE on the keyspace's functions
        to create one, and ALTER on the function too with OR REPLACE (whether it exists or not); EXECUTE on an
        aggregate's state, reduce and final functions; DROP on the function dropped, none when the statement names
        no single existing function (its own error comes first)."""
        ks = stmt.name.keyspace or keyspace
        if ks is None:
            return []  # the statement fails for want of a keyspace
        catalog = self.db.catalog
        out: list[tuple[str, Resource]] = []
        if isinstance(stmt, ast.DropFunction):
            fn = self._dropped_function(stmt, ks)
            return [("DROP", FunctionResource.of(fn))] if fn is not None else []
        out.append(("CREATE", FunctionResource(ks)))
        try:
            if isinstance(stmt, ast.CreateFunction):
                arg_types = [function_arg_type(catalog, e, ks) for _, e in stmt.arguments]
            else:
                arg_types = [function_arg_type(catalog, e, ks) for e in stmt.argument_types]
            if stmt.or_replace:
                out.append(("ALTER", FunctionResource(ks, udf_signature(stmt.name.name, arg_types))))
            if isinstance(stmt, ast.CreateAggregate):
                stype = function_arg_type(catalog, stmt.state_type, ks)
                for name, types in ((stmt.state_function, [stype, *arg_types]), (stmt.reduce_function, [stype, stype]),
                                    (stmt.final_function, [stype])):
                    if name is not None:
                        sig = udf_signature(name, types)
                        sub = find_function(catalog, ks, sig)
                        out.append(("EXECUTE", FunctionResource.of(sub) if sub is not None
                                    else FunctionResource(ks, sig)))
        except InvalidRequest:
            pass  # a type that does not resolve: the statement's own error, once permitted to create
        return out

    def _dropped_function(self, stmt: ast.DropFunction, ks: str) -> Any:
        """The one function a DROP FUNCTION|AGGREGATE names, or None (no such function, or several by that name)."""
        found = self.db.catalog.keyspaces.get(ks)
        if found is None:
            return None
        every = {**found.functions, **found.aggregates}
        if stmt.argument_types is None:
            named = [f for f in every.values() if f.name == stmt.name.name]
            return named[0] if len(named) == 1 else None
        try:
            types = [function_arg_type(self.db.catalog, e, ks) for e in stmt.argument_types]
        except InvalidRequest:
            return None
        return every.get(udf_signature(stmt.name.name, types))

    # -- role statements ----------------------------------------------------
    def execute(self, stmt: Any, session: Any) -> ResultSet:
        """Run a role or permission statement for the session's user."""
        user = getattr(session, "user", None)
        with self._lock:
            if isinstance(stmt, ast.CreateRole):
                return self._create_role(stmt, user)
            if isinstance(stmt, ast.AlterRole):
                return self._alter_role(stmt, user)
            if isinstance(stmt, ast.DropRole):
                return self._drop_role(stmt, user)
            if isinstance(stmt, ast.ListRoles):
                return self._list_roles(stmt, user)
            if isinstance(stmt, (ast.Grant, ast.Revoke)):
                return self._grant_or_revoke(stmt, user, session)
            if isinstance(stmt, ast.ListPermissions):
                return self._list_permissions(stmt, user, session)
            if isinstance(stmt, (ast.GrantRole, ast.RevokeRole)):
                return self._grant_or_revoke_role(stmt, user)
            if isinstance(stmt, SERVICE_LEVEL_STATEMENTS):
                from .service_level_statements import execute
                return execute(self, stmt, user)
        raise InvalidRequest(f"{type(stmt).__name__} is not a role statement")

    def _create_role(self, stmt: ast.CreateRole, user: str | None) -> ResultSet:
        opts = _role_options(stmt.options)
        if not stmt.name:
            raise InvalidRequest("Role name can't be an empty string")
        self.ensure(user, "CREATE", RoleResource())
        if "hashed password" in opts and not self.is_superuser(user):
            raise Unauthorized("Only superusers can create a role with a hashed password.")
        if opts.get("superuser") and not self.is_superuser(user):
            raise Unauthorized("Only superusers can create a role with superuser status.")
        if stmt.name in self.roles:
            if stmt.if_not_exists:
                return ResultSet("void")
            raise InvalidRequest(f"{stmt.name} already exists")
        role = Role(stmt.name, bool(opts.get("superuser", False)), bool(opts.get("login", False)))
        self._apply_options(role, opts)
        self.roles[role.name] = role
        self._save()
        self.grant_to_creator(user, RoleResource(role.name))
        return ResultSet("void")

    def _alter_role(self, stmt: ast.AlterRole, user: str | None) -> ResultSet:
        opts = _role_options(stmt.options)
        role = self.roles.get(stmt.name)
        if role is None:
            raise InvalidRequest(f"{stmt.name} doesn't exist")
        if "hashed password" in opts and not self.is_superuser(user):
            raise Unauthorized("Only superusers can set a hashed password.")
        if "superuser" in opts:
            if not self.is_superuser(user):
                raise Unauthorized("Only superusers are allowed to alter superuser status.")
            if stmt.name == user:
                raise Unauthorized("You aren't allowed to alter your own superuser status or that of a role "
                                   "granted to you.")
        if user is not None and stmt.name != user:
            self.ensure(user, "ALTER", RoleResource(stmt.name))
        elif not self.is_superuser(user) and set(opts) - {"password", "superuser", "hashed password"}:
            raise Unauthorized(f"You aren't allowed to alter the {sorted(set(opts) - {'password', 'superuser'})[0]} option.")
        if "superuser" in opts:
            role.superuser = bool(opts["superuser"])
        if "login" in opts:
            role.login = bool(opts["login"])
        self._apply_options(role, opts)
        self._save()
        return ResultSet("void")

    def _drop_role(self, stmt: ast.DropRole, user: str | None) -> ResultSet:
        self.ensure(user, "DROP", RoleResource(stmt.name))
        target = self.roles.get(stmt.name)
        if target is not None and target.superuser and not self.is_superuser(user):
            raise Unauthorized("Only superusers can drop a superuser role.")
        if user is not None and stmt.name == user:
            raise InvalidRequest("Cannot DROP primary role for current login")
        if stmt.name not in self.roles:
            if stmt.if_exists:
                return ResultSet("void")
            raise InvalidRequest(f"{stmt.name} doesn't exist")
        del self.roles[stmt.name]
        self.grants.pop(stmt.name, None)
        for other in self.roles.values():
            other.member_of.discard(stmt.name)
        self._save()
        self._forget(RoleResource(stmt.name).key, False)
        return ResultSet("void")

    def _list_roles(self, stmt: ast.ListRoles, user: str | None) -> ResultSet:
        if stmt.of is not None and stmt.of not in self.roles:
            raise InvalidRequest(f"{stmt.of} doesn't exist")
        if self.has_permission(user, "DESCRIBE", RoleResource()):
            if stmt.of is None:
                names = sorted(self.roles)
            else:  # the role and the roles granted to it (directly only with NORECURSIVE)
                names = sorted(self.granted_roles(stmt.of) if stmt.recursive else {stmt.of, *self.roles[stmt.of].member_of})
        else:
            if stmt.of is not None and stmt.of != user:
                raise Unauthorized(f"You are not authorized to view roles granted to {stmt.of}")
            names = sorted(self.granted_roles(user)) if user in self.roles else []
        text, boolean = T.TEXT, T.BOOLEAN
        columns = tuple(ColumnSpec("system_auth", "roles", n, t) for n, t in
                        (("role", text), ("super", boolean), ("login", boolean),
                         ("options", T.MapType(text, text, frozen=True))))
        labels = tuple(c.name for c in columns)
        out = [Row(labels, [r.name, r.superuser, r.login, dict(r.options)])
               for r in (self.roles[n] for n in names)]
        return ResultSet("rows", columns, out)

    def _grant_or_revoke(self, stmt: ast.Grant | ast.Revoke, user: str | None, session: Any) -> ResultSet:
        res = stmt.resource
        if res.kind == "function" and stmt.permission not in ("ALL", *FUNCTION_PERMISSIONS):
            # refused as the statement is read, before the function is looked up (ScyllaDB)
            raise SyntaxException(f"Resource {raw_function(res, session)} does not support any of the requested "
                                  "permissions.")
        resource = self._resource(stmt.resource, session)
        permissions = _expand(stmt.permission, resource)
        if not self.is_superuser(user):
            self.ensure(user, "AUTHORIZE", resource)
            for p in permissions:
                self.ensure(user, p, resource)
        if stmt.role not in self.roles:
            raise InvalidRequest(f"Role {stmt.role} doesn't exist")
        held = self.grants.setdefault(stmt.role, {}).setdefault(resource.key, set())
        if isinstance(stmt, ast.Grant):
            held.update(permissions)
        else:
            held.difference_update(permissions)
        self._save()
        return ResultSet("void")

    def _list_permissions(self, stmt: ast.ListPermissions, user: str | None, session: Any) -> ResultSet:
        """``LIST ... [ON resource] [OF role] [NORECURSIVE]``: one row per role, resource and permission; OF a role
        lists the permissions of the roles granted to it too unless NORECURSIVE (ScyllaDB's
        ``list_permissions_statement``); ON a resource lists its parents' too."""
        resource = self._resource(stmt.resource, session) if stmt.resource is not None else None
        if stmt.role is not None and stmt.role not in self.roles:
            raise InvalidRequest(f"{stmt.role} doesn't exist")
        if not self.is_superuser(user) and (stmt.role is None or stmt.role not in self.granted_roles(user or "")):
            raise Unauthorized(f"You are not authorized to view {stmt.role or 'everyone'}'s permissions")
        wanted = set(_expand(stmt.permission, resource)) if stmt.permission != "ALL" else set(PERMISSION_ORDER)
        keys = {r.key for r in resource.parents()} if resource is not None else None
        roles = None
        if stmt.role is not None:
            roles = set(self.granted_roles(stmt.role)) if stmt.recursive else {stmt.role}
        text = T.TEXT
        columns = tuple(ColumnSpec("system_auth", "role_permissions", n, text)
                        for n in ("role", "username", "resource", "permission"))
        labels = tuple(c.name for c in columns)
        out = []
        catalog = self.db.catalog
        for role in sorted(self.grants):
            if roles is not None and role not in roles:
                continue
            for key in sorted(self.grants[role], key=key_order):
                if keys is not None and key not in keys:
                    continue
                for p in PERMISSION_ORDER:
                    if p in self.grants[role][key] and p in wanted:
                        out.append(Row(labels, [role, role, str(resource_from_key(key, catalog)), p]))
        return ResultSet("rows", columns, out)

    def _grant_or_revoke_role(self, stmt: ast.GrantRole | ast.RevokeRole, user: str | None) -> ResultSet:
        """``GRANT r TO g`` / ``REVOKE r FROM g`` (ScyllaDB's ``grant_role_statement``): AUTHORIZE on role ``r``,
        both roles must exist, no role may include itself (``g already includes role r.``), and only a granted role
        can be revoked."""
        self.ensure(user, "AUTHORIZE", RoleResource(stmt.role))
        other = stmt.grantee if isinstance(stmt, ast.GrantRole) else stmt.revokee
        for name in (other, stmt.role):
            if name not in self.roles:
                raise InvalidRequest(f"Role {name} doesn't exist.")
        member = self.roles[other]
        if isinstance(stmt, ast.GrantRole):
            if stmt.role in self.granted_roles(other):
                raise InvalidRequest(f"{other} already includes role {stmt.role}.")
            if other in self.granted_roles(stmt.role):
                raise InvalidRequest(f"{stmt.role} already includes role {other}.")
            member.member_of.add(stmt.role)
        else:
            if stmt.role not in member.member_of:
                raise InvalidRequest(f"{other} was not granted role {stmt.role}, so it cannot be revoked.")
            member.member_of.discard(stmt.role)
        self._save()
        return ResultSet("void")

    def _resource(self, res: ast.Resource, session: Any) -> Resource:
        """The resource named in GRANT/REVOKE/LIST, which must exist."""
        catalog = self.db.catalog
        if res.kind == "all keyspaces":
            return DataResource()
        if res.kind == "all roles":
            return RoleResource()
        if res.kind == "role":
            if res.role not in self.roles:
                raise InvalidRequest(f"Role {res.role} doesn't exist")
            return RoleResource(res.role)
        if res.kind in ("all functions", "function"):
            return self._function_resource(res, session)
        keyspace = res.keyspace or getattr(session, "keyspace", None)
        if keyspace is None:
            raise InvalidRequest("No keyspace has been specified. USE a keyspace, or explicitly specify "
                                 "keyspace.tablename")
        resource = DataResource(keyspace, res.table if res.kind == "table" else None)
        if not _exists(catalog, resource):
            raise InvalidRequest(f"Resource {resource} doesn't exist")
        return resource

    def _function_resource(self, res: ast.Resource, session: Any) -> FunctionResource:
        """``ALL FUNCTIONS``, ``ALL FUNCTIONS IN KEYSPACE ks`` or ``FUNCTION [ks.]f(types)``, which must exist, with
        ScyllaDB's messages (``<function ks.f(int,)> doesn't exist.`` when the keyspace does not, as ScyllaDB
        writes the resource before it resolves the types; ``<function ks.f(int)> doesn't exist.`` when the function
        does not).  An unqualified function is looked up in the session's keyspace."""
        catalog = self.db.catalog
        if res.kind == "all functions" and res.keyspace is None:
            return FunctionResource()
        keyspace = res.keyspace or getattr(session, "keyspace", None)
        if keyspace is None:
            raise InvalidRequest("No keyspace has been specified. USE a keyspace, or explicitly specify "
                                 "keyspace.function")
        if keyspace == "system":  # the native functions' keyspace (ScyllaDB's check)
            raise InvalidRequest("Altering permissions on builtin functions is not supported")
        if res.kind == "all functions":
            if keyspace not in catalog.keyspaces:
                raise InvalidRequest(f"{FunctionResource(keyspace)} doesn't exist.")
            return FunctionResource(keyspace)
        if keyspace not in catalog.keyspaces:
            raise InvalidRequest(f"{raw_function(res, session)} doesn't exist.")
        types = [function_arg_type(catalog, e, keyspace) for e in res.arg_types]
        sig = udf_signature(res.table or "", types)
        fn = find_function(catalog, keyspace, sig)
        if fn is None:
            label = f"{T.maybe_quote(res.table or '')}({', '.join(t.cql() for t in types)})"
            raise InvalidRequest(f"{FunctionResource(keyspace, sig, label)} doesn't exist.")
        return FunctionResource.of(fn)

    @staticmethod
    def _apply_options(role: Role, opts: dict[str, Any]) -> None:
        if "password" in opts:
            if not isinstance(opts["password"], str):
                raise InvalidRequest("Invalid value for property 'password'. It must be a string")
            role.set_password(opts["password"])
        if "hashed password" in opts:  # ScyllaDB's: the hash as given (a restore of DESC ... AND PASSWORDS)
            if not isinstance(opts["hashed password"], str):
                raise InvalidRequest("Invalid value for property 'hashed password'. It must be a string")
            role.password = opts["hashed password"]
            role.scram = {}
        if "options" in opts:
            if not isinstance(opts["options"], dict):
                raise InvalidRequest("Invalid value for property 'options'. It must be a map")
            role.options = {str(k): str(v) for k, v in opts["options"].items()}


# --------------------------------------------------------------------------
# Helpers
# --------------------------------------------------------------------------


def _role_options(options: Iterable[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, value in options:
        key = name.lower()
        if key not in ROLE_OPTIONS:
            raise SyntaxException(f"Invalid property '{name}'")
        if key in out:
            raise SyntaxException(f"Multiple definition for property '{key}'")
        if {key, *out} >= {"password", "hashed password"}:
            raise SyntaxException("Only one of the options: PASSWORD, HASHED PASSWORD can be provided")
        if key in ("login", "superuser"):
            value = _boolean(key, value)
        out[key] = value
    return out


def _boolean(key: str, value: Any) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.lower() in ("true", "false"):
        return value.lower() == "true"
    raise SyntaxException(f"Invalid value for property '{key}'. It must be a boolean")


def _expand(permission: str, resource: Resource | None) -> tuple[str, ...]:
    """The permissions ``permission`` stands for on ``resource`` (ALL: every applicable one)."""
    applicable = resource.applicable() if resource is not None else PERMISSION_ORDER
    if permission == "ALL":
        return applicable
    if permission not in applicable:
        raise SyntaxException(f"Resource {resource} does not support any of the requested permissions.")
    return (permission,)


def _exists(catalog: Any, resource: DataResource) -> bool:
    from .schema.system_schema import system_keyspaces

    keyspaces = {ks.name: ks for ks in catalog.all_keyspaces()}
    keyspaces.update({n: k for n, k in system_keyspaces().items() if n not in keyspaces})
    ks = keyspaces.get(resource.keyspace or "")
    if ks is None:
        return False
    return resource.table is None or resource.table in ks.tables


def _table_resource(name: ast.QualifiedName, keyspace: str | None, read: bool = False) -> DataResource | None:
    """The table a statement needs a permission on.  A read of a CDC log ``<t>_scylla_cdc_log`` needs SELECT on
    ``t`` (ScyllaDB's ``select_statement::check_access``); every other statement on a log, writes included,
    needs the permission on the log table itself, so a grant on the base table alone does not let a role
    write into, truncate, alter or drop its log."""
    ks = name.keyspace or keyspace
    if ks is None:
        return None  # the statement fails later for want of a keyspace
    table = name.name
    if read and table.endswith(CDC_LOG_SUFFIX) and len(table) > len(CDC_LOG_SUFFIX):
        table = table[: -len(CDC_LOG_SUFFIX)]
    return DataResource(ks, table)


def _keyspace_resource(name: str | None, keyspace: str | None) -> DataResource | None:
    ks = name or keyspace
    return DataResource(ks) if ks is not None else None


def required_permissions(stmt: Any, keyspace: str | None) -> list[tuple[str, DataResource]]:
    """The (permission, resource) pairs Cassandra checks before running ``stmt`` (function statements:
    ``AuthManager._function_statement_permissions``, which needs the catalog)."""
    out: list[tuple[str, DataResource | None]] = []
    if isinstance(stmt, ast.Select):
        out.append(("SELECT", _table_resource(stmt.table, keyspace, read=True)))
    elif isinstance(stmt, (ast.Insert, ast.Update, ast.Delete)):
        res = _table_resource(stmt.table, keyspace)
        out.append(("MODIFY", res))
        if getattr(stmt, "if_not_exists", False) or getattr(stmt, "if_exists", False) \
                or getattr(stmt, "conditions", ()):
            out.append(("SELECT", res))
    elif isinstance(stmt, ast.Batch):
        for s in stmt.statements:
            out.extend(required_permissions(s, keyspace))
    elif isinstance(stmt, ast.Truncate):
        out.append(("MODIFY", _table_resource(stmt.table, keyspace)))
    elif isinstance(stmt, ast.CreateKeyspace):
        out.append(("CREATE", DataResource()))
    elif isinstance(stmt, ast.AlterKeyspace):
        out.append(("ALTER", DataResource(stmt.name)))
    elif isinstance(stmt, ast.DropKeyspace):
        out.append(("DROP", DataResource(stmt.name)))
    elif isinstance(stmt, ast.CreateTable):
        out.append(("CREATE", _keyspace_resource(stmt.table.keyspace, keyspace)))
    elif isinstance(stmt, (ast.AlterTableAdd, ast.AlterTableDrop, ast.AlterTableRename, ast.AlterTableWith, ast.AlterTableTtl,
                           ast.AlterTableAlterType, ast.AlterTableAddChangefeed, ast.AlterTableDropChangefeed,
                           ast.AlterTableAlterChangefeed)):
        out.append(("ALTER", _table_resource(stmt.table, keyspace)))
    elif isinstance(stmt, ast.DropTable):
        out.append(("DROP", _table_resource(stmt.table, keyspace)))
    elif isinstance(stmt, VIEW_STATEMENTS):
        # ScyllaDB: ALTER on the base table to create a view; logtide checks ALTER on the view itself to alter
        # or drop it (its creator has it, as for a table; docs/views-and-indexes.md)
        base = stmt.base if isinstance(stmt, CreateView) else stmt.name
        if isinstance(stmt, CreateView) and base.keyspace is None:
            base = ast.QualifiedName(stmt.name.keyspace, base.name)
        out.append(("ALTER", _table_resource(base, keyspace)))
    elif isinstance(stmt, ast.CreateIndex):
        out.append(("ALTER", _table_resource(stmt.table, keyspace)))
    elif isinstance(stmt, ast.DropIndex):  # the index's table is not named: ALTER on its keyspace
        out.append(("ALTER", _keyspace_resource(stmt.name.keyspace, keyspace)))
    elif isinstance(stmt, (ast.AlterTopicAddConsumer, ast.AlterTopicDropConsumer)):
        from .schema.changefeeds import split_path
        parts = split_path(stmt.path)  # a changefeed topic's consumers are altered with its table
        out.append(("ALTER", DataResource(parts[0], parts[1]) if parts else DataResource()))
    elif isinstance(stmt, ast.CreateType):
        out.append(("CREATE", _keyspace_resource(stmt.name.keyspace, keyspace)))
    elif isinstance(stmt, (ast.AlterTypeAdd, ast.AlterTypeRename)):
        out.append(("ALTER", _keyspace_resource(stmt.name.keyspace, keyspace)))
    elif isinstance(stmt, ast.DropType):
        out.append(("DROP", _keyspace_resource(stmt.name.keyspace, keyspace)))
    return [(p, r) for p, r in out if r is not None]


def attach(db: "Database", enabled: bool, superuser: str | None = None, password: str | None = None) -> AuthManager:
    """Attach an AuthManager as ``db.auth``, creating the bootstrap superuser if given and missing.

    With ``enabled`` and no role able to log in afterwards, raise AuthSetupError:
    there is never a default password.
    """
    if (superuser is None) != (password is None):
        raise AuthSetupError("a bootstrap superuser needs both a name and a password")
    if password is not None and not password:
        raise AuthSetupError("the bootstrap superuser's password is empty")
    manager = AuthManager(db, enabled)
    if superuser is not None and password is not None:
        manager.default_superuser = superuser
        manager.bootstrap(superuser, password)
    if enabled and not manager.can_anyone_log_in():
        raise AuthSetupError("authentication is enabled but no role can log in: give a bootstrap superuser "
                             "(--superuser NAME --superuser-password-file FILE, or superuser and "
                             "superuser_password_file in the config file)")
    db.auth = manager  # type: ignore[attr-defined]
    return manager


def of(db: "Database") -> AuthManager:
    """``db.auth``, attaching a manager with authentication off when there is none yet."""
    with db.write_lock:
        manager = getattr(db, "auth", None)
        if manager is None:
            manager = AuthManager(db, enabled=False)
            db.auth = manager  # type: ignore[attr-defined]
        return manager
