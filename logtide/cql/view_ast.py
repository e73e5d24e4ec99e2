"""Statement classes of materialized views (ScyllaDB's ``create_view_statement``, ``alter_view_statement``,
``drop_view_statement``): frozen dataclasses that read like the grammar, beside ``ast.py``."""

from __future__ import annotations

from dataclasses import dataclass

from .ast import OrderBy, PropertyValue, QualifiedName, Relation, Selector


@dataclass(frozen=True)
class CreateView:
    """``CREATE MATERIALIZED VIEW [IF NOT EXISTS] v AS SELECT cols|* FROM t [WHERE ...] PRIMARY KEY (...)
    [WITH CLUSTERING ORDER BY (...) AND properties]``.  ``selectors`` is None for ``*``; the catalog renders
    ``where`` as ScyllaDB stores it (``system_schema.views.where_clause``)."""

    name: QualifiedName
    base: QualifiedName
    selectors: tuple[Selector, ...] | None
    where: tuple[Relation, ...]
    partition_key: tuple[str, ...]
    clustering_key: tuple[str, ...]
    clustering_order: tuple[OrderBy, ...] = ()
    options: tuple[tuple[str, PropertyValue], ...] = ()
    if_not_exists: bool = False


@dataclass(frozen=True)
class AlterView:
    """``ALTER MATERIALIZED VIEW v WITH properties``."""

    name: QualifiedName
    options: tuple[tuple[str, PropertyValue], ...]


@dataclass(frozen=True)
class DropView:
    """``DROP MATERIALIZED VIEW [IF EXISTS] v``."""

    name: QualifiedName
    if_exists: bool = False


VIEW_STATEMENTS = (CreateView, AlterView, DropView)
