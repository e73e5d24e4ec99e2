"""Writes to ScyllaDB's virtual tables of the ``system`` keyspace (``db/virtual_tables.cc``, ``db/virtual_table.cc``).

``UPDATE system.config SET value = '...' WHERE name = '...'`` (or ``INSERT INTO system.config (name, value)``) is
ScyllaDB's live configuration update (``db_config_table::apply``), against the database's ``live_config``: only
live-updatable settings change; the others are refused with ScyllaDB's words (``option is not live-updateable``,
``no such option``, ``cannot parse option value``), and ``type`` and ``source`` cannot be set.  A change lasts
while the database is open: like ScyllaDB's, it is not written to any file.  Any other write to a virtual table
(``system.one_row``, ``system.clients``, ``system.size_estimates``, ``system.token_ring``, ``system.protocol_servers``,
``system.versions``, ``system.runtime_info``) is refused: ``this virtual table doesn't allow updates``.  ScyllaDB
reports these refusals as a WriteFailure (0x1500), and so does logtide.
"""

from __future__ import annotations

from typing import Any

from ..cql import ast
from ..errors import InvalidRequest, WriteFailure
from ..live_config import ConfigUpdateError
from ..query.evaluate import TermEvaluator
from ..result import ResultSet
from ..schema import types as T
from ..schema.system_schema import SYSTEM
from .commit import WriteJob

CONFIG_TABLE = "config"
VIRTUAL_TABLES = ("config", "one_row", "clients", "size_estimates", "token_ring", "protocol_servers", "versions",
                  "runtime_info")  # ScyllaDB's virtual tables logtide has in ``system``


def writes_virtual_table(stmt: Any, keyspace: str | None) -> bool:
    """Whether ``stmt`` is an INSERT, UPDATE or DELETE of one of ``system``'s virtual tables."""
    if not isinstance(stmt, (ast.Update, ast.Insert, ast.Delete)):
        return False
    return (stmt.table.keyspace or keyspace) == SYSTEM and stmt.table.name in VIRTUAL_TABLES


def refused(message: str) -> WriteFailure:
    """A virtual table's refusal of a write, as ScyllaDB answers it."""
    return WriteFailure(message, "virtual table update")


def virtual_write_job(db: Any, stmt: Any, ev: TermEvaluator) -> WriteJob:
    """The write job of a write to a virtual table: a setting of ``system.config`` changes when the job runs;
    anything else is refused."""
    if stmt.table.name != CONFIG_TABLE or isinstance(stmt, ast.Delete):
        raise refused("this virtual table doesn't allow updates")
    name, value = _name_and_value(stmt, ev)

    def work(txn: Any) -> ResultSet | None:
        try:
            db.config.update(name, value)
        except ConfigUpdateError as e:
            raise refused(str(e)) from None
        return None

    return WriteJob(work)


def _name_and_value(stmt: ast.Update | ast.Insert, ev: TermEvaluator) -> tuple[str | None, str | None]:
    if isinstance(stmt, ast.Insert):
        if stmt.json is not None or stmt.if_not_exists:
            raise InvalidRequest("system.config takes INSERT INTO system.config (name, value) VALUES (...) only")
        given = dict(zip(stmt.columns, stmt.values))
        columns = set(given) - {"name"}
        name_term = given.get("name")
    else:
        if stmt.if_exists or stmt.conditions:
            raise InvalidRequest("Conditional updates of system.config are not supported")
        given = {}
        for a in stmt.assignments:
            if not isinstance(a, ast.SetColumn):
                raise InvalidRequest("system.config takes SET value = '...' only")
            given[a.column] = a.value
        columns = set(given)
        keys = [r for r in stmt.where if isinstance(r.lhs, ast.ColumnRef) and r.lhs.name == "name" and r.op == "="]
        if len(keys) != 1 or len(stmt.where) != 1:
            raise InvalidRequest("system.config is updated one option at a time: WHERE name = '...'")
        name_term = keys[0].rhs
    if "type" in columns:
        raise refused("option type is immutable")
    if "source" in columns:
        raise refused("option source is not updateable")
    name = None if name_term is None else ev.value(name_term, T.TEXT, "name")
    value = ev.value(given["value"], T.TEXT, "value") if "value" in given else None
    return (None if name is T.UNSET else name), (None if value is T.UNSET else value)
