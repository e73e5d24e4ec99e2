"""Writes to ScyllaDB's virtual tables of the ``system`` keyspace (``db/virtual_tables.cc``, ``db/virtual_table.cc``).

``UPDATE system.config SET value = '...' WHERE name = '...'`` (or ``INSERT INTO system.config (name, value)``) is
ScyllaDB's live configuration update (``db_config_table::apply``), against the database's ``live_config``: only
live-updatable settings change; the others are refused with ScyllaDB's words (``option is not live-updateable``,
``no such option``, ``cannot parse option value``), and ``type`` and ``source`` cannot be set.  A change lasts
while the database is open: like ScyllaDB's, it is not written to any file.  Any other write to a virtual table
(``system.one_row``, ``system.clients``, ``system.size_estimates``, ``system.token_ring``, ``system.protocol_servers``,
``system.versions``, ``system.runtime_info``) is refused: ``this virtual table doesn't allow updates``.  ScyllaDB
reports these refusals as a WriteFailure (0x1500), and so does logtide.  logtide's other system tables
(``system.local``, ``system_schema``, ...) are made from its catalog and state like the virtual ones, so writes to
them, ``TRUNCATE`` and any of them in a batch get the same refusal rather than being stored and never read.
"""

from __future__ import annotations

from typing import Any

from ..cql import ast
from ..errors import InvalidRequest, WriteFailure
from ..live_config import ConfigUpdateError
from ..query.evaluate import TermEvaluator
from ..result import ResultSet
from ..schema import types as T
from ..schema.system_schema import SYSTEM, is_system_keyspace
from .commit import WriteJob

CONFIG_TABLE = "config"


def writes_virtual_table(stmt: Any, keyspace: str | None) -> bool:
    """Whether ``stmt`` is an INSERT, UPDATE or DELETE of a table of a system keyspace: ``system``'s virtual
    tables, and the others, which logtide makes from its catalog and state as it makes the virtual ones (a write
    there would be acknowledged and never read)."""
    if not isinstance(stmt, (ast.Update, ast.Insert, ast.Delete)):
        return False
    return is_system_keyspace(stmt.table.keyspace or keyspace or "")


def check_truncatable(table: Any) -> None:
    """``TRUNCATE`` of a system table is refused as a write to it is: there are no stored rows to remove."""
    if is_system_keyspace(table.keyspace):
        raise refused("this virtual table doesn't allow updates")


def refused(message: str) -> WriteFailure:
    """A virtual table's refusal of a write, as ScyllaDB answers it."""
    return WriteFailure(message, "virtual table update")


def virtual_write_job(db: Any, stmt: Any, ev: TermEvaluator, keyspace: str | None, alone: bool = True) -> WriteJob:
    """The write job of a write to a system table: a setting of ``system.config`` (a statement ``alone``, not in
    a batch) changes when the job runs; anything else is refused."""
    if (not alone or (stmt.table.keyspace or keyspace, stmt.table.name) != (SYSTEM, CONFIG_TABLE)
            or isinstance(stmt, ast.Delete)):
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
