"""The grammar of secondary index statements: ``CREATE [CUSTOM] INDEX`` and ``DROP INDEX`` (ScyllaDB's
``createIndexStatement``, ``indexIdent`` and ``dropIndexStatement``), as functions of the parser
(``cql.parser``), which calls them when a statement's object is ``INDEX``.
"""

from __future__ import annotations

from typing import Any

from logtide.cql import ast
from logtide.cql.tokens import STRING

_TARGET_KINDS = {"keys": "keys", "values": "values", "entries": "entries", "full": "full"}


def create_index(p: Any) -> ast.CreateIndex:
    """``CREATE [CUSTOM] INDEX [IF NOT EXISTS] [[ks.]name] ON t '(' [target (',' target)*] ')'
    [USING 'class'] [WITH properties]`` (the parser stands on ``CUSTOM`` or ``INDEX``)."""
    custom = p._accept_kw("custom")
    p._expect_kw("index")
    if_not_exists = p._if_not_exists()
    name: str | None = None
    name_keyspace: str | None = None
    if not p._at_kw("on"):
        name = p._ident()
        if p._accept_punct("."):
            name_keyspace, name = name, p._ident()
    p._expect_kw("on")
    table = p._qualified_name()
    p._expect_punct("(")
    targets: list[ast.IndexTarget] = []
    if not p._at_punct(")"):
        targets.append(_target(p))
        while p._accept_punct(","):
            targets.append(_target(p))
    p._expect_punct(")")
    custom_class = None
    if p._accept_kw("using"):
        tok = p._peek()
        if tok.kind != STRING:
            p._mismatched("STRING_LITERAL")
        p._advance()
        custom_class = tok.value
    options = p._properties() if p._accept_kw("with") else ()
    return ast.CreateIndex(table, name, tuple(targets), if_not_exists, custom, custom_class, options, name_keyspace)


def _target(p: Any) -> ast.IndexTarget:
    """indexIdent: cident | VALUES '(' cident ')' | KEYS (...) | ENTRIES (...) | FULL (...) | '(' cident, ... ')'."""
    if p._accept_punct("("):
        columns = [p._ident()]
        while p._accept_punct(","):
            columns.append(p._ident())
        p._expect_punct(")")
        return ast.IndexTarget("columns", columns=tuple(columns))
    for word, kind in _TARGET_KINDS.items():
        if p._at_kw(word) and p._at_punct("(", k=1):
            p.i += 2
            column = p._ident()
            p._expect_punct(")")
            return ast.IndexTarget(kind, column)
    return ast.IndexTarget("regular_values", p._ident())


def drop_index(p: Any) -> ast.DropIndex:
    """``DROP INDEX [IF EXISTS] [ks.]name`` (the parser stands on ``INDEX``)."""
    p._expect_kw("index")
    if_exists = p._if_exists()
    return ast.DropIndex(p._qualified_name(), if_exists)
