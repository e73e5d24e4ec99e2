"""The grammar of materialized views (ScyllaDB's ``createMaterializedViewStatement``,
``alterMaterializedViewStatement`` and ``dropMaterializedViewStatement``), a part of the parser kept in its
own module: ``parser._Parser`` inherits these rules (one idea split for size with ``parser.py``)."""

from __future__ import annotations

from typing import Any

from logtide.cql import ast
from logtide.cql.view_ast import AlterView, CreateView, DropView
from logtide.errors import InvalidRequest

class ViewGrammar:
    """CREATE / ALTER / DROP MATERIALIZED VIEW, mixed into the parser (uses its token helpers)."""

    __slots__ = ()

    def _create_materialized_view(self: Any) -> CreateView:
        """CREATE MATERIALIZED VIEW [IF NOT EXISTS] v AS SELECT selectors FROM t [WHERE relations]
        PRIMARY KEY '(' key ')' [WITH CLUSTERING ORDER BY '(' ... ')' | property (AND ...)*]."""
        self._expect_kw("materialized")
        self._expect_kw("view")
        if_not_exists = self._if_not_exists()
        name = self._qualified_name()
        self._expect_kw("as")
        self._expect_kw("select")
        selectors = self._select_clause()
        self._expect_kw("from")
        base = self._qualified_name()
        where: list[ast.Relation] = []
        if self._accept_kw("where"):
            while True:
                where.append(self._relation())
                if not self._accept_kw("and"):
                    break
        self._expect_kw("primary")
        self._expect_kw("key")
        partition_key, clustering_key = self._primary_key()
        clustering_order, options, compact = self._table_with_clause()
        if compact:
            raise InvalidRequest("Cannot use 'COMPACT STORAGE' when defining a materialized view")
        if self.markers:
            raise InvalidRequest("Cannot use query parameters in CREATE MATERIALIZED VIEW statements")
        return CreateView(name, base, selectors, tuple(where), partition_key, clustering_key,
                          clustering_order, options, if_not_exists)

    def _alter_materialized_view(self: Any) -> AlterView:
        """ALTER MATERIALIZED VIEW v WITH property (AND property)*."""
        self._expect_kw("materialized")
        self._expect_kw("view")
        name = self._qualified_name()
        self._expect_kw("with")
        return AlterView(name, self._properties())

    def _drop_materialized_view(self: Any) -> DropView:
        """DROP MATERIALIZED VIEW [IF EXISTS] v."""
        self._expect_kw("materialized")
        self._expect_kw("view")
        if_exists = self._if_exists()
        return DropView(self._qualified_name(), if_exists)
