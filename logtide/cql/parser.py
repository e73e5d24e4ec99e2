"""Recursive-descent parser for Cassandra 4 / ScyllaDB CQL producing ``logtide.cql.ast``.

One method per grammar rule (``_select``, ``_relation``, ``_term`` ...), in the
style of sqlglot.  Syntax errors raise ``SyntaxException`` with messages shaped
like Cassandra's ANTLR ones: ``line L:C mismatched input 'X' expecting K_Y (...)``.
"""

from __future__ import annotations

from typing import NoReturn

from logtide.cql import ast
from logtide.cql.view_grammar import ViewGrammar
from logtide.cql import service_level_grammar
from logtide.cql.tokens import (
    DURATION,
    EOF,
    FLOAT,
    HEX,
    IDENT,
    INTEGER,
    PUNCT,
    QIDENT,
    RESERVED_KEYWORDS,
    STRING,
    UUID,
    Token,
    position,
    tokenize,
)
from logtide.errors import InvalidRequest, SyntaxException

NATIVE_TYPES = frozenset(
    "ascii bigint blob boolean counter date decimal double duration float inet int smallint "
    "text time timestamp timeuuid tinyint uuid varchar varint".split()
)
_COMPARISON_OPS = frozenset(("=", "!=", "<", "<=", ">", ">="))
_CONSTANT_WORDS = frozenset(("true", "false", "null", "nan", "infinity"))
_PERMISSIONS = frozenset(
    ("create", "alter", "drop", "select", "modify", "authorize", "describe", "execute")
)
_NUMBER_KINDS = {INTEGER: "integer", FLOAT: "float", DURATION: "duration"}
_CONSTANT_KINDS = {
    STRING: "string", INTEGER: "integer", FLOAT: "float", UUID: "uuid", HEX: "hex", DURATION: "duration",
}


_AFTER_FROM = ("where", "group", "order", "per", "limit", "allow", "bypass", "using")  # clauses after SELECT's FROM
MAX_RELATIONS = 100
_TOO_DEEP = "statement nested too deeply to parse (collection literals, parentheses or function calls)"


def parse(text: str, same_name_same_variable: bool = True) -> ast.Parsed:
    """Parse exactly one CQL statement (a trailing ``;`` is allowed).  ``same_name_same_variable`` False: a bind
    marker name used twice makes two variables, as in Cassandra (ScyllaDB's
    ``cql_duplicate_bind_variable_names_refer_to_same_variable`` set to false)."""
    parser = _Parser(text, tokenize(text), same_name_same_variable)
    try:
        if parser._peek().kind == EOF or parser._at_punct(";"):
            parser._empty_statement()
        parsed = parser._parsed_statement()
    except RecursionError:  # the parser descends once per nesting level: a clear error, not a crash
        raise parser._too_deep() from None
    parser._accept_punct(";")
    parser._expect_eof()
    return parsed


def parse_many(text: str) -> list[ast.Parsed]:
    """Parse a script of ``;``-separated statements (empty pieces are skipped)."""
    parser = _Parser(text, tokenize(text))
    result: list[ast.Parsed] = []
    while True:
        while parser._accept_punct(";"):
            pass
        if parser._peek().kind == EOF:
            return result
        try:
            result.append(parser._parsed_statement())
        except RecursionError:
            raise parser._too_deep() from None
        if not parser._accept_punct(";"):
            parser._expect_eof()


class _Parser(ViewGrammar):
    """Parser state over one token list; a fresh instance per call."""

    __slots__ = ("text", "tokens", "i", "markers", "same_name_same_variable")

    def __init__(self, text: str, tokens: list[Token], same_name_same_variable: bool = True) -> None:
        self.text = text
        self.tokens = tokens
        self.i = 0
        self.markers: list[ast.BindMarker] = []
        self.same_name_same_variable = same_name_same_variable

    # ------------------------------------------------------------------
    # Token helpers
    # ------------------------------------------------------------------

    def _peek(self, k: int = 0) -> Token:
        j = self.i + k
        toks = self.tokens
        return toks[j] if j < len(toks) else toks[-1]

    def _advance(self) -> Token:
        tok = self.tokens[self.i]
        if tok.kind != EOF:
            self.i += 1
        return tok

    def _at_kw(self, *words: str, k: int = 0) -> bool:
        tok = self._peek(k)
        return tok.kind == IDENT and tok.value in words

    def _accept_kw(self, word: str) -> bool:
        tok = self.tokens[self.i]
        if tok.kind == IDENT and tok.value == word:
            self.i += 1
            return True
        return False

    def _expect_kw(self, word: str) -> Token:
        tok = self.tokens[self.i]
        if tok.kind == IDENT and tok.value == word:
            self.i += 1
            return tok
        self._mismatched(f"K_{word.upper()}")

    def _at_punct(self, p: str, k: int = 0) -> bool:
        tok = self._peek(k)
        return tok.kind == PUNCT and tok.value == p

    def _accept_punct(self, p: str) -> bool:
        tok = self.tokens[self.i]
        if tok.kind == PUNCT and tok.value == p:
            self.i += 1
            return True
        return False

    def _expect_punct(self, p: str) -> Token:
        tok = self.tokens[self.i]
        if tok.kind == PUNCT and tok.value == p:
            self.i += 1
            return tok
        self._mismatched(f"'{p}'")

    def _expect_eof(self) -> None:
        if self._peek().kind != EOF:
            self._mismatched("EOF")

    # ------------------------------------------------------------------
    # Errors
    # ------------------------------------------------------------------

    def _too_deep(self) -> SyntaxException:
        """The error for a statement nested deeper than the parser's recursion allows, where it gave up."""
        return SyntaxException(f"{self._where(self.tokens[min(self.i, len(self.tokens) - 1)])} {_TOO_DEEP}")

    def _where(self, tok: Token) -> str:
        line, col = position(self.text, tok.start)
        return f"line {line}:{col}"

    def _snippet(self) -> str:
        """Cassandra-style context: a few tokens before the offending one, which is bracketed."""
        first = max(0, self.i - 10)
        tok = self.tokens[self.i]
        before = self.text[self.tokens[first].start:tok.start].rstrip() if first < self.i else ""
        prefix = "..." if first > 0 else ""
        bracket = f"[{tok.text}]" if tok.kind != EOF else "[<EOF>]"
        more = "..." if tok.kind != EOF else ""
        return f"({prefix}{before} {bracket}{more})" if before else f"({bracket}{more})"

    def _mismatched(self, expecting: str) -> NoReturn:
        tok = self.tokens[self.i]
        raise SyntaxException(
            f"{self._where(tok)} mismatched input '{tok.text}' expecting {expecting} {self._snippet()}"
        )

    def _no_viable(self, tok: Token | None = None) -> NoReturn:
        tok = tok or self.tokens[self.i]
        raise SyntaxException(f"{self._where(tok)} no viable alternative at input '{tok.text}'")

    def _empty_statement(self) -> NoReturn:
        tok = self.tokens[self.i]
        raise SyntaxException(
            f"{self._where(tok)} no viable alternative at input '{tok.text}' (the statement is empty)"
        )

    def _error_at(self, tok: Token, message: str) -> NoReturn:
        raise SyntaxException(f"{self._where(tok)} {message}")

    # ------------------------------------------------------------------
    # Names
    # ------------------------------------------------------------------

    def _ident(self) -> str:
        """ident: unquoted non-reserved word (lower-cased) | quoted identifier."""
        tok = self.tokens[self.i]
        if tok.kind == QIDENT or (tok.kind == IDENT and tok.value not in RESERVED_KEYWORDS):
            self.i += 1
            return tok.value
        if tok.kind == IDENT:
            self._no_viable()
        self._mismatched("IDENT")

    def _at_ident(self, k: int = 0) -> bool:
        tok = self._peek(k)
        return tok.kind == QIDENT or (tok.kind == IDENT and tok.value not in RESERVED_KEYWORDS)

    def _qualified_name(self) -> ast.QualifiedName:
        """qualifiedName: [ks '.'] name."""
        first = self._ident()
        if self._accept_punct("."):
            return ast.QualifiedName(first, self._ident())
        return ast.QualifiedName(None, first)

    def _role_name(self) -> str:
        """roleName: identifier | quoted identifier | string literal."""
        tok = self.tokens[self.i]
        if tok.kind == STRING:
            self.i += 1
            return tok.value
        return self._ident()

    # ------------------------------------------------------------------
    # Statements
    # ------------------------------------------------------------------

    def _parsed_statement(self) -> ast.Parsed:
        start_tok = self._peek()
        self.markers = []
        statement = self._statement()
        end = self.tokens[self.i - 1].end
        return ast.Parsed(statement, self.text[start_tok.start:end], tuple(self.markers))

    def _statement(self) -> ast.Statement:
        tok = self._peek()
        if tok.kind != IDENT:
            self._no_viable()
        handler = _STATEMENTS.get(tok.value)
        if handler is None:
            self._no_viable()
        return handler(self)

    def _select(self) -> ast.Select:
        """SELECT [JSON] [DISTINCT] selectClause [FROM t] [WHERE] [GROUP BY] [ORDER BY] [PER PARTITION LIMIT] [LIMIT] [ALLOW FILTERING]
        [BYPASS CACHE] [USING TIMEOUT t] (the last two are ScyllaDB's, in the order its grammar takes them).

        Without FROM (ScyllaDB) the statement reads ``system.one_row``; DISTINCT then is a syntax error."""
        self._expect_kw("select")
        json = self._select_flag("json")
        distinct = self._select_flag("distinct")
        selectors = self._select_clause()
        if self._accept_kw("from"):
            table, no_from = self._qualified_name(), False
        else:  # ScyllaDB's SELECT without FROM reads its one-row table (``system.one_row``)
            nxt = self._peek()
            if distinct or not (nxt.kind == EOF or self._at_punct(";") or self._at_kw(*_AFTER_FROM)):
                self._mismatched("K_FROM")
            table, no_from = ast.QualifiedName("system", "one_row"), True
        where = self._where_clause() if self._accept_kw("where") else ()
        group_by: tuple[str, ...] = ()
        if self._accept_kw("group"):
            self._expect_kw("by")
            group_by = self._ident_list()
        order_by: tuple[ast.OrderBy, ...] = ()
        if self._accept_kw("order"):
            self._expect_kw("by")
            order_by = self._ordering_list()
        per_partition_limit = None
        if self._accept_kw("per"):
            self._expect_kw("partition")
            self._expect_kw("limit")
            per_partition_limit = self._limit_value()
        limit = self._limit_value() if self._accept_kw("limit") else None
        allow_filtering = False
        if self._accept_kw("allow"):
            self._expect_kw("filtering")
            allow_filtering = True
        bypass_cache = False
        if self._accept_kw("bypass"):
            self._expect_kw("cache")
            bypass_cache = True
        return ast.Select(
            table, selectors, where, json, distinct, group_by, order_by, per_partition_limit, limit,
            allow_filtering, bypass_cache, self._using(("timeout",)), no_from,
        )

    def _select_clause(self) -> tuple[ast.Selector, ...] | None:
        """selectClause: '*' (None) | selector (',' selector)*."""
        if self._accept_punct("*"):
            return None
        items = [self._selector()]
        while self._accept_punct(","):
            items.append(self._selector())
        return tuple(items)

    def _select_flag(self, word: str) -> bool:
        """``JSON`` / ``DISTINCT`` after SELECT, unless the word is a column name being selected."""
        if not self._at_kw(word):
            return False
        nxt = self._peek(1)
        if nxt.kind == PUNCT and nxt.value in (",", "(", ".", "[") or nxt.kind == IDENT and nxt.value in (
            "from", "as",
        ):
            return False
        self.i += 1
        return True

    def _limit_value(self) -> ast.Term:
        tok = self._peek()
        if tok.kind == INTEGER:
            self.i += 1
            return ast.Constant("integer", tok.value)
        if tok.kind == PUNCT and tok.value in ("?", ":"):
            return self._bind_marker()
        self._mismatched("INTEGER")

    def _ident_list(self) -> tuple[str, ...]:
        names = [self._ident()]
        while self._accept_punct(","):
            names.append(self._ident())
        return tuple(names)

    def _ordering_list(self) -> tuple[ast.OrderBy, ...]:
        items = [self._ordering()]
        while self._accept_punct(","):
            items.append(self._ordering())
        return tuple(items)

    def _ordering(self) -> ast.OrderBy:
        """ordering: ident [ASC | DESC]."""
        name = self._ident()
        if self._accept_kw("desc"):
            return ast.OrderBy(name, True)
        self._accept_kw("asc")
        return ast.OrderBy(name, False)

    def _insert(self) -> ast.Insert:
        """INSERT INTO t ( '(' cols ')' VALUES '(' terms ')' | JSON term [DEFAULT NULL|UNSET] ) [IF NOT EXISTS] [USING ...]."""
        self._expect_kw("insert")
        self._expect_kw("into")
        table = self._qualified_name()
        columns: tuple[str, ...] = ()
        values: tuple[ast.Term, ...] = ()
        json = None
        default_unset = False
        if self._accept_kw("json"):
            json = self._term()
            if self._accept_kw("default"):
                if self._accept_kw("unset"):
                    default_unset = True
                else:
                    self._expect_kw("null")
        else:
            self._expect_punct("(")
            columns = self._ident_list()
            self._expect_punct(")")
            self._expect_kw("values")
            self._expect_punct("(")
            values = self._term_list()
            self._expect_punct(")")
            if len(columns) != len(values):
                raise InvalidRequest("Unmatched column names/values")
        if_not_exists = self._if_not_exists()
        using = self._using()
        return ast.Insert(table, columns, values, json, default_unset, if_not_exists, using)

    def _term_list(self) -> tuple[ast.Term, ...]:
        items = [self._term()]
        while self._accept_punct(","):
            items.append(self._term())
        return tuple(items)

    def _if_not_exists(self) -> bool:
        if self._at_kw("if"):
            self.i += 1
            self._expect_kw("not")
            self._expect_kw("exists")
            return True
        return False

    def _if_exists(self) -> bool:
        if self._at_kw("if"):
            self.i += 1
            self._expect_kw("exists")
            return True
        return False

    def _using(self, kinds: tuple[str, ...] = ("ttl", "timestamp", "timeout")) -> ast.Using:
        """usingClause: USING (TTL t | TIMESTAMP t | TIMEOUT t) (AND ...)*; a SELECT takes only TIMEOUT."""
        if not self._accept_kw("using"):
            return ast.Using()
        values: dict[str, ast.Term] = {}
        while True:
            tok = self._peek()
            if not self._at_kw(*kinds):
                self._mismatched("K_TIMEOUT" if kinds == ("timeout",) else "K_TIMESTAMP")
            self.i += 1
            values[tok.value] = self._term()
            if not (self._at_kw("and") and self._at_kw(*kinds, k=1)):
                break
            self.i += 1
        return ast.Using(values.get("timestamp"), values.get("ttl"), values.get("timeout"))

    def _update(self) -> ast.Update:
        """UPDATE t [USING ...] SET assignment (, assignment)* WHERE relations [IF EXISTS | IF conditions]."""
        self._expect_kw("update")
        table = self._qualified_name()
        using = self._using()
        self._expect_kw("set")
        assignments = [self._assignment()]
        while self._accept_punct(","):
            assignments.append(self._assignment())
        self._expect_kw("where")
        where = self._where_clause()
        if_exists, conditions = self._if_clause()
        return ast.Update(table, tuple(assignments), where, using, if_exists, conditions)

    def _assignment(self) -> ast.Assignment:
        """assignment: c = term | c = c (+|-) term | c = term + c | c (+=|-=) term | c[k] = term | c.f = term."""
        column = self._ident()
        if self._accept_punct("["):
            if self._at_kw("scylla_timeuuid_list_index") and self._at_punct("(", k=1):
                self.i += 2
                key: ast.Term | ast.TimeuuidListIndex = ast.TimeuuidListIndex(self._term())
                self._expect_punct(")")
            else:
                key = self._term()
            self._expect_punct("]")
            self._expect_punct("=")
            return ast.SetElement(column, key, self._term())
        if self._accept_punct("."):
            name = self._ident()
            self._expect_punct("=")
            return ast.SetField(column, name, self._term())
        if self._accept_punct("+="):
            return ast.AddTo(column, self._term())
        if self._accept_punct("-="):
            return ast.SubtractFrom(column, self._term())
        self._expect_punct("=")
        tok = self._peek()
        if self._at_ident() and not self._at_punct("(", k=1) and not (
            self._at_punct(".", k=1) and self._at_punct("(", k=3)
        ) and not (tok.kind == IDENT and tok.value in _CONSTANT_WORDS):
            other = self._ident()
            if other != column:
                self._error_at(tok, "Only expressions of the form X = X +/- <value> are supported.")
            if self._accept_punct("+"):
                return ast.AddTo(column, self._term())
            if self._accept_punct("-"):
                return ast.SubtractFrom(column, self._term())
            self._mismatched("'+'")
        value = self._term()
        if self._accept_punct("+"):
            tail = self._peek()
            other = self._ident()
            if other != column:
                self._error_at(tail, "Only expressions of the form X = <value> + X are supported.")
            return ast.PrependTo(column, value)
        return ast.SetColumn(column, value)

    def _delete(self) -> ast.Delete:
        """DELETE [target (, target)*] FROM t [USING TIMESTAMP t | TIMEOUT d ...] WHERE relations [IF EXISTS | IF
        conditions] (ScyllaDB's usingClauseDelete: no TTL)."""
        self._expect_kw("delete")
        targets: list[ast.ColumnRef | ast.ElementRef | ast.FieldRef] = []
        if not self._at_kw("from"):
            targets.append(self._delete_target())
            while self._accept_punct(","):
                targets.append(self._delete_target())
        self._expect_kw("from")
        table = self._qualified_name()
        using = self._using(("timestamp", "timeout"))
        self._expect_kw("where")
        where = self._where_clause()
        if_exists, conditions = self._if_clause()
        return ast.Delete(table, tuple(targets), where, using, if_exists, conditions)

    def _delete_target(self) -> ast.ColumnRef | ast.ElementRef | ast.FieldRef:
        """deleteSelection: c | c[term] | c.field."""
        column = self._ident()
        if self._accept_punct("["):
            key = self._term()
            self._expect_punct("]")
            return ast.ElementRef(column, key)
        if self._accept_punct("."):
            return ast.FieldRef(column, self._ident())
        return ast.ColumnRef(column)

    def _batch(self) -> ast.Batch:
        """BEGIN [UNLOGGED|COUNTER] BATCH [USING ...] (insert|update|delete [;])* APPLY BATCH."""
        self._expect_kw("begin")
        kind = "LOGGED"
        if self._accept_kw("unlogged"):
            kind = "UNLOGGED"
        elif self._accept_kw("counter"):
            kind = "COUNTER"
        self._expect_kw("batch")
        using = self._using()
        statements: list[ast.Insert | ast.Update | ast.Delete] = []
        while not self._at_kw("apply"):
            if self._at_kw("insert"):
                statements.append(self._insert())
            elif self._at_kw("update"):
                statements.append(self._update())
            elif self._at_kw("delete"):
                statements.append(self._delete())
            else:
                self._mismatched("K_APPLY")
            self._accept_punct(";")
        self._expect_kw("apply")
        self._expect_kw("batch")
        return ast.Batch(kind, tuple(statements), using)

    # ------------------------------------------------------------------
    # WHERE / IF
    # ------------------------------------------------------------------

    def _where_clause(self) -> tuple[ast.Relation, ...]:
        """whereClause: relation (AND relation)*, at most MAX_RELATIONS of them (ScyllaDB's default
        ``max_relations_in_where_clause``: more is a syntax error)."""
        relations = [self._relation()]
        while self._accept_kw("and"):
            relations.append(self._relation())
            if len(relations) > MAX_RELATIONS:
                raise SyntaxException(f"{self._where(self.tokens[self.i - 1])} too many relations in WHERE clause "
                                      f"(at most {MAX_RELATIONS})")
        return tuple(relations)

    def _relation(self) -> ast.Relation:
        """relation: c op term | c [NOT] IN ... | c CONTAINS [KEY] t | c LIKE t | c IS NOT NULL | c '[' t ']' op term
        | (c, ...) op ... | token(c, ...) op term | '(' relation ')'."""
        if self._at_punct("(") and (self._at_punct("(", k=1) or not (self._at_punct(",", k=2) or self._at_punct(")", k=2))):
            self.i += 1  # a relation in parentheses (ScyllaDB), not a tuple of columns
            relation = self._relation()
            self._expect_punct(")")
            return relation
        if self._accept_punct("("):
            columns = self._ident_list()
            self._expect_punct(")")
            lhs: ast.ColumnRef | ast.ColumnTuple | ast.TokenOf = ast.ColumnTuple(columns)
            if self._accept_kw("in"):
                return ast.Relation(lhs, "IN", self._in_values())
            return ast.Relation(lhs, self._comparison_op(), self._term())
        if self._at_kw("token") and self._at_punct("(", k=1):
            self.i += 2
            columns = self._ident_list()
            self._expect_punct(")")
            return ast.Relation(ast.TokenOf(columns), self._comparison_op(), self._term())
        name = self._ident()
        if self._accept_punct("["):  # ScyllaDB: m[key] = v, l[index] = v
            key = self._term()
            self._expect_punct("]")
            element = ast.ElementRef(name, key)
            if self._accept_kw("like"):
                return ast.Relation(element, "LIKE", self._term())
            return ast.Relation(element, self._comparison_op(), self._term())
        lhs = ast.ColumnRef(name)
        if self._accept_kw("in"):
            return ast.Relation(lhs, "IN", self._in_values())
        if self._at_kw("not") and self._at_kw("in", k=1):  # ScyllaDB's NOT IN
            self.i += 2
            return ast.Relation(lhs, "NOT IN", self._in_values())
        if isinstance(lhs, ast.ColumnRef) and self._accept_kw("contains"):  # not after c[x] / c.f (ScyllaDB)
            if self._accept_kw("key"):
                return ast.Relation(lhs, "CONTAINS KEY", self._term())
            return ast.Relation(lhs, "CONTAINS", self._term())
        if self._accept_kw("like"):
            return ast.Relation(lhs, "LIKE", self._term())
        if self._accept_kw("is"):
            self._expect_kw("not")
            self._expect_kw("null")
            return ast.Relation(lhs, "IS NOT", ast.Constant("null", "null"))
        return ast.Relation(lhs, self._comparison_op(), self._term())

    def _comparison_op(self) -> str:
        tok = self._peek()
        if tok.kind == PUNCT and tok.value in _COMPARISON_OPS:
            self.i += 1
            return tok.value
        self._mismatched("'='")

    def _in_values(self) -> ast.InValues | ast.BindMarker:
        """inValues: '?' | ':name' | '(' [term (, term)*] ')'."""
        if self._at_punct("?") or self._at_punct(":"):
            return self._bind_marker()
        self._expect_punct("(")
        if self._accept_punct(")"):
            return ast.InValues(())
        items = self._term_list()
        self._expect_punct(")")
        return ast.InValues(items)

    def _if_clause(self) -> tuple[bool, tuple[ast.Condition, ...]]:
        """[IF EXISTS | IF condition (AND condition)*]."""
        if not self._accept_kw("if"):
            return False, ()
        if self._accept_kw("exists"):
            return True, ()
        conditions = [self._condition()]
        while self._accept_kw("and"):
            conditions.append(self._condition())
        return False, tuple(conditions)

    def _condition(self) -> ast.Condition:
        """condition: (c | c[term] | c.field) (op term | [NOT] IN inValues) | c CONTAINS [KEY] term (an element or
        field followed by CONTAINS is a syntax error, as in ScyllaDB's columnCondition)."""
        column = self._ident()
        lhs: ast.ColumnRef | ast.ElementRef | ast.FieldRef
        if self._accept_punct("["):
            key = self._term()
            self._expect_punct("]")
            lhs = ast.ElementRef(column, key)
        elif self._accept_punct("."):
            lhs = ast.FieldRef(column, self._ident())
        else:
            lhs = ast.ColumnRef(column)
        if self._accept_kw("in"):
            return ast.Condition(lhs, "IN", self._in_values())
        if self._accept_kw("not"):  # ScyllaDB's IF c NOT IN (...)
            self._expect_kw("in")
            return ast.Condition(lhs, "NOT IN", self._in_values())
        if isinstance(lhs, ast.ColumnRef) and self._accept_kw("contains"):  # not after c[x] / c.f (ScyllaDB)
            if self._accept_kw("key"):
                return ast.Condition(lhs, "CONTAINS KEY", self._term())
            return ast.Condition(lhs, "CONTAINS", self._term())
        return ast.Condition(lhs, self._comparison_op(), self._term())

    # ------------------------------------------------------------------
    # Terms
    # ------------------------------------------------------------------

    def _bind_marker(self) -> ast.BindMarker:
        """bindMarker: '?' | ':' ident.  A name used again is the same variable (ScyllaDB's
        ``duplicate_bind_variable_names_refer_to_same_variable``): one value binds every use; unless the parser
        was asked for Cassandra's rule (each use a variable of its own)."""
        if self._accept_punct("?"):
            marker = ast.BindMarker(len(self.markers))
        else:
            self._expect_punct(":")
            name = self._ident()
            for earlier in self.markers if self.same_name_same_variable else ():
                if earlier.name == name:
                    return earlier
            marker = ast.BindMarker(len(self.markers), name)
        self.markers.append(marker)
        return marker

    def _term(self) -> ast.Term:
        """term: constant | bindMarker | collection | tuple | typeHint | functionCall."""
        tok = self.tokens[self.i]
        kind = tok.kind
        if kind in _CONSTANT_KINDS:
            self.i += 1
            return ast.Constant(_CONSTANT_KINDS[kind], tok.value)
        if kind == PUNCT:
            p = tok.value
            if p == "?" or p == ":":
                return self._bind_marker()
            if p == "-":
                return self._negative_constant()
            if p == "[":
                return self._list_literal()
            if p == "{":
                return self._brace_literal()
            if p == "(":
                return self._paren_term()
            self._no_viable()
        if kind == IDENT or kind == QIDENT:
            if kind == IDENT and tok.value in _CONSTANT_WORDS and not self._at_punct("(", k=1):
                self.i += 1
                return _word_constant(tok.value)
            if self._at_punct("(", k=1) or (self._at_punct(".", k=1) and self._at_punct("(", k=3)):
                return self._function_call(self._term)
        self._no_viable()

    def _negative_constant(self) -> ast.Constant:
        minus = self._advance()
        tok = self._peek()
        if tok.start == minus.end:
            if tok.kind in _NUMBER_KINDS:
                self.i += 1
                return ast.Constant(_NUMBER_KINDS[tok.kind], "-" + tok.value)
            if tok.kind == IDENT and tok.value == "infinity":
                self.i += 1
                return ast.Constant("float", "-Infinity")
        self._no_viable(minus)

    def _list_literal(self) -> ast.ListLiteral:
        """listLiteral: '[' [term (, term)*] ']'."""
        self._expect_punct("[")
        if self._accept_punct("]"):
            return ast.ListLiteral(())
        items = self._term_list()
        self._expect_punct("]")
        return ast.ListLiteral(items)

    def _brace_literal(self) -> ast.MapLiteral | ast.SetLiteral | ast.UdtLiteral:
        """'{' '}' | mapLiteral | setLiteral | udtLiteral (identifier keys)."""
        self._expect_punct("{")
        if self._accept_punct("}"):
            return ast.MapLiteral(())
        tok = self._peek()
        if (
            self._at_ident()
            and self._at_punct(":", k=1)
            and not (tok.kind == IDENT and tok.value in _CONSTANT_WORDS)
        ):
            fields = [self._udt_field()]
            while self._accept_punct(","):
                fields.append(self._udt_field())
            self._expect_punct("}")
            return ast.UdtLiteral(tuple(fields))
        first = self._term()
        if self._accept_punct(":"):
            entries = [(first, self._term())]
            while self._accept_punct(","):
                key = self._term()
                self._expect_punct(":")
                entries.append((key, self._term()))
            self._expect_punct("}")
            return ast.MapLiteral(tuple(entries))
        items = [first]
        while self._accept_punct(","):
            items.append(self._term())
        self._expect_punct("}")
        return ast.SetLiteral(tuple(items))

    def _udt_field(self) -> tuple[str, ast.Term]:
        name = self._ident()
        self._expect_punct(":")
        return name, self._term()

    def _paren_term(self) -> ast.TypeHint | ast.TupleLiteral:
        """typeHint: '(' type ')' term  |  tupleLiteral: '(' term (, term)* ')'."""
        self._expect_punct("(")
        hint = self._try_type_hint()
        if hint is not None:
            return ast.TypeHint(hint, self._term())
        items = self._term_list()
        self._expect_punct(")")
        return ast.TupleLiteral(items)

    def _try_type_hint(self) -> ast.TypeExpr | None:
        """After '(': parse ``type ')'`` if that is what follows, else rewind and return None."""
        tok = self._peek()
        if not self._at_ident() or (tok.kind == IDENT and tok.value in _CONSTANT_WORDS):
            return None
        if self._at_punct("(", k=1) or (self._at_punct(".", k=1) and self._at_punct("(", k=3)):
            return None
        saved, saved_markers = self.i, len(self.markers)
        try:
            type_expr = self._type()
        except SyntaxException:
            type_expr = None
        if type_expr is not None and self._accept_punct(")"):
            return type_expr
        self.i = saved
        del self.markers[saved_markers:]
        return None

    def _function_call(self, argument) -> ast.FunctionCall:
        """functionCall: [ks '.'] name '(' [arg (, arg)*] ')' with CAST(x AS type) and COUNT(*) forms."""
        tok = self._advance()
        keyspace = None
        if tok.kind == IDENT and tok.value in RESERVED_KEYWORDS and tok.value != "token":
            self._no_viable(tok)
        name = tok.value
        if self._accept_punct("."):
            keyspace = name
            name = self._ident()
        self._expect_punct("(")
        if keyspace is None and tok.kind == IDENT and name == "cast":
            value = argument()
            self._expect_kw("as")
            type_expr = self._type()
            self._expect_punct(")")
            return ast.FunctionCall("cast", (value, type_expr))
        args: list[ast.Selectable] = []
        if not self._at_punct(")"):
            if self._at_punct("*") and self._at_punct(")", k=1):
                if name != "count":  # only COUNT(*) takes a star (``sum(*)`` is a syntax error)
                    self._no_viable()
                self.i += 1
                args.append(ast.Star())
            else:
                args.append(argument())
                while self._accept_punct(","):
                    args.append(argument())
        self._expect_punct(")")
        return ast.FunctionCall(name, tuple(args), keyspace)

    # ------------------------------------------------------------------
    # Selectors
    # ------------------------------------------------------------------

    def _selector(self) -> ast.Selector:
        """selector: selectable [AS ident]; ``text`` is the selectable's source text."""
        start = self._peek().start
        expr = self._selectable()
        text = self.text[start:self.tokens[self.i - 1].end]
        alias = self._ident() if self._accept_kw("as") else None
        return ast.Selector(expr, alias, text)

    def _selectable(self) -> ast.Selectable:
        """selectable: (column | functionCall | term) ('.' field | '[' term ']')*."""
        tok = self._peek()
        expr: ast.Selectable
        if tok.kind == IDENT or tok.kind == QIDENT:
            if self._at_punct("(", k=1) or (self._at_punct(".", k=1) and self._at_punct("(", k=3)):
                expr = self._function_call(self._selectable)
            elif tok.kind == IDENT and tok.value in _CONSTANT_WORDS:
                expr = self._term()
            else:
                expr = ast.ColumnRef(self._ident())
        else:
            expr = self._term()
        while True:
            if self._accept_punct("."):
                expr = ast.FieldSelection(expr, self._ident())
            elif self._accept_punct("["):
                key = self._term()
                self._expect_punct("]")
                expr = ast.ElementSelection(expr, key)
            else:
                return expr

    # ------------------------------------------------------------------
    # Types
    # ------------------------------------------------------------------

    def _type_list(self) -> list[ast.TypeExpr]:
        """'(' [type (',' type)*] ')': a function's argument types."""
        self._expect_punct("(")
        types: list[ast.TypeExpr] = []
        if not self._at_punct(")"):
            types.append(self._type())
            while self._accept_punct(","):
                types.append(self._type())
        self._expect_punct(")")
        return types

    def _type(self) -> ast.TypeExpr:
        """type: native | list<T> | set<T> | map<K, V> | tuple<T, ...> | frozen<T> | vector<T, N> | [ks.]udt."""
        tok = self._peek()
        if tok.kind == IDENT:
            name = tok.value
            if name in NATIVE_TYPES:
                self.i += 1
                return ast.TypeExpr(name)
            if name == "vector" and self._at_punct("<", k=1):
                return self._vector_type()
            if name in ("list", "set", "frozen", "map", "tuple") and self._at_punct("<", k=1):
                self.i += 2
                params = [self._type()]
                if name == "map":
                    self._expect_punct(",")
                    params.append(self._type())
                elif name == "tuple":
                    while self._accept_punct(","):
                        params.append(self._type())
                self._expect_punct(">")
                return ast.TypeExpr(name, tuple(params))
        if tok.kind == STRING:
            self._no_viable()
        first = self._ident()
        if self._accept_punct("."):
            return ast.TypeExpr(self._ident(), (), first)
        return ast.TypeExpr(first)

    def _vector_type(self) -> ast.TypeExpr:
        """vector_type: VECTOR '<' type ',' INTEGER '>' (Cassandra 5, ScyllaDB); the dimension's range is
        checked when the type is resolved, a dimension that is no integer is a syntax error."""
        self.i += 2
        element = self._type()
        self._expect_punct(",")
        negative = self._accept_punct("-")
        tok = self._peek()
        if tok.kind != INTEGER:
            self._no_viable()
        self.i += 1
        self._expect_punct(">")
        dimension = int(tok.value)
        return ast.TypeExpr("vector", (element,), dimension=-dimension if negative else dimension)

    # ------------------------------------------------------------------
    # Properties (WITH ... AND ...)
    # ------------------------------------------------------------------

    def _properties(self) -> tuple[tuple[str, ast.PropertyValue], ...]:
        """properties: property (AND property)*."""
        props = [self._property()]
        while self._accept_kw("and"):
            props.append(self._property())
        return tuple(props)

    def _property(self) -> tuple[str, ast.PropertyValue]:
        """property: ident '=' propertyValue."""
        name = self._ident()
        self._expect_punct("=")
        return name, self._property_value()

    def _property_value(self) -> ast.PropertyValue:
        """propertyValue: constant | identifier | '{' key ':' value, ... '}'."""
        tok = self._peek()
        if tok.kind == PUNCT and tok.value == "{":
            self.i += 1
            result: dict = {}
            if self._accept_punct("}"):
                return result
            while True:
                key = self._property_value()
                self._expect_punct(":")
                result[str(key) if not isinstance(key, bool) else str(key).lower()] = self._property_value()
                if not self._accept_punct(","):
                    break
            self._expect_punct("}")
            return result
        if tok.kind == PUNCT and tok.value == "-":
            constant = self._negative_constant()
            return _python_number(constant)
        if tok.kind == STRING or tok.kind == QIDENT:
            self.i += 1
            return tok.value
        if tok.kind in (INTEGER, FLOAT):
            self.i += 1
            return _python_number(ast.Constant(_NUMBER_KINDS[tok.kind], tok.value))
        if tok.kind == IDENT:
            self.i += 1
            if tok.value in ("true", "false"):
                return tok.value == "true"
            return tok.value
        if tok.kind in (DURATION, UUID, HEX):
            self.i += 1
            return tok.value
        self._no_viable()

    # ------------------------------------------------------------------
    # DDL
    # ------------------------------------------------------------------

    def _create(self) -> ast.Statement:
        self._expect_kw("create")
        tok = self._peek()
        if self._at_kw("keyspace", "schema"):
            return self._create_keyspace()
        if self._at_kw("table", "columnfamily"):
            return self._create_table()
        if self._at_kw("type"):
            return self._create_type()
        if self._at_kw("role"):
            return self._create_role()
        if self._at_kw("user"):
            return self._create_user()
        if service_level_grammar.at_service_level(self):
            return service_level_grammar.create(self)
        if self._at_kw("function") or self._at_kw("or") and self._at_kw("replace", k=1) and self._at_kw("function", k=2):
            return self._create_function()
        if self._at_kw("aggregate") or self._at_kw("or") and self._at_kw("replace", k=1) and self._at_kw("aggregate", k=2):
            return self._create_aggregate()
        if self._at_kw("materialized") and self._at_kw("view", k=1):
            return self._create_materialized_view()
        if self._at_kw("index") or self._at_kw("custom") and self._at_kw("index", k=1):
            from logtide.cql.index_grammar import create_index
            return create_index(self)
        if self._at_kw("index", "custom", "materialized", "trigger", "or"):
            self._unsupported("CREATE")
        self._no_viable()

    # the statements logtide refuses, named as CQL names them; the ones a later logtide will have say "yet"
    _UNSUPPORTED = {("materialized", "view"): ("MATERIALIZED VIEW", True), ("function",): ("FUNCTION", False),
                    ("aggregate",): ("AGGREGATE", False), ("trigger",): ("TRIGGER", False)}

    def _unsupported(self, verb: str) -> NoReturn:
        """Refuse ``<verb> INDEX|MATERIALIZED VIEW|FUNCTION|...`` (at the object's first word) with a message
        naming the whole statement: ``CREATE MATERIALIZED VIEW is not supported by logtide yet``."""
        for words, (name, later) in sorted(self._UNSUPPORTED.items(), key=lambda kv: -len(kv[0])):
            if all(self._at_kw(w, k=i) for i, w in enumerate(words)):
                raise InvalidRequest(f"{verb} {name} is not supported by logtide{' yet' if later else ''}")
        matched = max(next((i for i, w in enumerate(words) if not self._at_kw(w, k=i)), len(words))
                      for words in self._UNSUPPORTED)
        self._no_viable(self._peek(matched))  # ``CREATE MATERIALIZED x``: not a statement at all

    def _create_keyspace(self) -> ast.CreateKeyspace:
        """CREATE KEYSPACE [IF NOT EXISTS] ks [WITH properties] (ScyllaDB: the WITH clause may be omitted)."""
        self.i += 1
        if_not_exists = self._if_not_exists()
        name = self._ident()
        if self._peek().kind == EOF or self._at_punct(";"):
            return ast.CreateKeyspace(name, (), if_not_exists)
        self._expect_kw("with")
        return ast.CreateKeyspace(name, self._properties(), if_not_exists)

    def _create_table(self) -> ast.CreateTable:
        """CREATE TABLE [IF NOT EXISTS] t '(' columnDef, ... [PRIMARY KEY (...)] ')' [WITH tableOptions]."""
        self.i += 1
        if_not_exists = self._if_not_exists()
        table = self._qualified_name()
        self._expect_punct("(")
        columns: list[ast.ColumnDef] = []
        keys: list[tuple[tuple[str, ...], tuple[str, ...]]] = []
        while True:
            if self._at_kw("primary"):
                self.i += 1
                self._expect_kw("key")
                keys.append(self._primary_key())
            else:
                name = self._ident()
                type_expr = self._type()
                ttl = self._accept_kw("ttl")  # ScyllaDB's per-row TTL column: ident type [TTL] [STATIC]
                static = self._accept_kw("static")
                if self._accept_kw("primary"):
                    self._expect_kw("key")
                    keys.append(((name,), ()))
                columns.append(ast.ColumnDef(name, type_expr, static, ttl))
            if not self._accept_punct(","):
                break
            while self._accept_punct(","):  # the grammar's ( ',' cfamColumns? )*: empty definitions are allowed
                pass
            if self._at_punct(")"):
                break
        self._expect_punct(")")
        if not keys:
            raise InvalidRequest("No PRIMARY KEY specifed (exactly one required)")
        if len(keys) > 1:
            raise InvalidRequest("Multiple PRIMARY KEYs specifed (exactly one required)")
        partition_key, clustering_key = keys[0]
        clustering_order, options, compact_storage = self._table_with_clause()
        return ast.CreateTable(
            table, tuple(columns), partition_key, clustering_key, clustering_order, options,
            if_not_exists, compact_storage,
        )

    def _table_with_clause(self) -> tuple[tuple[ast.OrderBy, ...], tuple[tuple[str, ast.PropertyValue], ...], bool]:
        """[WITH (CLUSTERING ORDER BY '(' ordering, ... ')' | COMPACT STORAGE | property) (AND ...)*] of CREATE
        TABLE and CREATE MATERIALIZED VIEW: (clustering order, properties, compact storage)."""
        clustering_order: tuple[ast.OrderBy, ...] = ()
        options: list[tuple[str, ast.PropertyValue]] = []
        compact_storage = False
        if self._accept_kw("with"):
            while True:
                if self._accept_kw("clustering"):
                    self._expect_kw("order")
                    self._expect_kw("by")
                    self._expect_punct("(")
                    clustering_order = self._ordering_list()
                    self._expect_punct(")")
                elif self._accept_kw("compact"):
                    self._expect_kw("storage")
                    compact_storage = True
                else:
                    options.append(self._property())
                if not self._accept_kw("and"):
                    break
        return clustering_order, tuple(options), compact_storage

    def _primary_key(self) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """primaryKey: '(' (ident | '(' ident, ... ')') (, ident)* ')'."""
        self._expect_punct("(")
        if self._accept_punct("("):
            partition = self._ident_list()
            self._expect_punct(")")
        else:
            partition = (self._ident(),)
        clustering: list[str] = []
        while self._accept_punct(","):
            clustering.append(self._ident())
        self._expect_punct(")")
        return partition, tuple(clustering)

    def _create_type(self) -> ast.CreateType:
        """CREATE TYPE [IF NOT EXISTS] ut '(' field type, ... ')'; ScyllaDB's grammar takes empty items
        between commas and a trailing comma (``(a int,)``, ``(a int,, b int)``)."""
        self.i += 1
        if_not_exists = self._if_not_exists()
        name = self._qualified_name()
        self._expect_punct("(")
        fields = [self._field_def()]
        while self._accept_punct(","):
            if not self._at_punct(",") and not self._at_punct(")"):
                fields.append(self._field_def())
        self._expect_punct(")")
        return ast.CreateType(name, tuple(fields), if_not_exists)

    def _or_replace(self, word: str) -> bool:
        """``[OR REPLACE] FUNCTION|AGGREGATE``: consumes through ``word``."""
        or_replace = self._accept_kw("or")
        if or_replace:
            self._expect_kw("replace")
        self._expect_kw(word)
        return or_replace

    def _create_function(self) -> ast.CreateFunction:
        """CREATE [OR REPLACE] FUNCTION [IF NOT EXISTS] f '(' [a type, ...] ')' (CALLED | RETURNS NULL) ON NULL
        INPUT RETURNS type LANGUAGE lang AS 'body' (ScyllaDB: OR REPLACE and IF NOT EXISTS exclude each other)."""
        or_replace = self._or_replace("function")
        if_not_exists = not or_replace and self._if_not_exists()
        name = self._qualified_name()
        self._expect_punct("(")
        arguments: list[tuple[str, ast.TypeExpr]] = []
        if not self._at_punct(")"):
            arguments.append(self._field_def())
            while self._accept_punct(","):
                arguments.append(self._field_def())
        self._expect_punct(")")
        called = self._accept_kw("called")
        if not called:
            self._expect_kw("returns")
            self._expect_kw("null")
        for word in ("on", "null", "input", "returns"):
            self._expect_kw(word)
        returns = self._type()
        self._expect_kw("language")
        language = self._ident()
        self._expect_kw("as")
        if self._peek().kind != STRING:
            self._mismatched("STRING_LITERAL")
        body = self._advance()
        return ast.CreateFunction(name, tuple(arguments), called, returns, language.lower(), body.value,
                                  or_replace, if_not_exists)

    def _create_aggregate(self) -> ast.CreateAggregate:
        """CREATE [OR REPLACE] AGGREGATE [IF NOT EXISTS] a '(' [type, ...] ')' SFUNC f STYPE type
        [REDUCEFUNC f] [FINALFUNC f] [INITCOND term]."""
        or_replace = self._or_replace("aggregate")
        if_not_exists = self._if_not_exists()
        name = self._qualified_name()
        argument_types = self._type_list()
        self._expect_kw("sfunc")
        state_function = self._ident()
        self._expect_kw("stype")
        state_type = self._type()
        reduce_function = self._ident() if self._accept_kw("reducefunc") else None
        final_function = self._ident() if self._accept_kw("finalfunc") else None
        initial_condition = self._term() if self._accept_kw("initcond") else None
        return ast.CreateAggregate(name, tuple(argument_types), state_function, state_type, reduce_function,
                                   final_function, initial_condition, or_replace, if_not_exists)

    def _field_def(self) -> tuple[str, ast.TypeExpr]:
        name = self._ident()
        return name, self._type()

    def _alter(self) -> ast.Statement:
        self._expect_kw("alter")
        if self._at_kw("keyspace", "schema"):
            self.i += 1
            name = self._ident()
            self._expect_kw("with")
            return ast.AlterKeyspace(name, self._properties())
        if self._at_kw("table", "columnfamily"):
            self.i += 1
            return self._alter_table()
        if self._at_kw("type"):
            self.i += 1
            return self._alter_type()
        if self._at_kw("role"):
            self.i += 1
            name = self._role_name()
            self._expect_kw("with")
            return ast.AlterRole(name, self._role_options())
        if service_level_grammar.at_service_level(self):
            return service_level_grammar.alter(self)
        if self._at_kw("user"):
            self.i += 1
            name = self._role_name()
            return ast.AlterRole(name, self._user_options())
        if self._at_kw("materialized") and self._at_kw("view", k=1):
            return self._alter_materialized_view()
        if self._at_kw("materialized"):
            self._unsupported("ALTER")
        if self._at_kw("topic"):
            self.i += 1
            return self._alter_topic()
        self._no_viable()

    def _alter_table(self) -> ast.Statement:
        """ALTER TABLE t (ADD ... | DROP ... | RENAME ... | WITH ... | ALTER c TYPE t)."""
        table = self._qualified_name()
        changefeed = self._alter_table_changefeed(table)
        if changefeed is not None:
            return changefeed
        if self._accept_kw("add"):
            if_not_exists = self._if_not_exists()
            if self._accept_punct("("):
                columns = [self._column_def()]
                while self._accept_punct(","):
                    columns.append(self._column_def())
                self._expect_punct(")")
            else:
                columns = [self._column_def()]
                while self._accept_punct(","):
                    columns.append(self._column_def())
            return ast.AlterTableAdd(table, tuple(columns), if_not_exists)
        if self._accept_kw("drop"):
            if_exists = self._if_exists()
            if self._accept_punct("("):
                names = self._ident_list()
                self._expect_punct(")")
            else:
                names = self._ident_list()
            timestamp = self._using(("timestamp",)).timestamp if self._at_kw("using") else None
            return ast.AlterTableDrop(table, names, if_exists, timestamp)
        if self._accept_kw("rename"):
            return ast.AlterTableRename(table, self._renames())
        if self._accept_kw("with"):
            return ast.AlterTableWith(table, self._properties())
        if self._accept_kw("ttl"):  # ScyllaDB: ALTER TABLE t TTL (column | NULL)
            return ast.AlterTableTtl(table, None if self._accept_kw("null") else self._ident())
        if self._accept_kw("alter"):
            column = self._ident()
            self._expect_kw("type")
            return ast.AlterTableAlterType(table, column, self._type())
        self._no_viable()

    # -- YDB changefeed and topic DDL (spec 004) -------------------------------------------------

    def _alter_table_changefeed(self, table: ast.QualifiedName) -> ast.Statement | None:
        """ADD CHANGEFEED n WITH (...) | DROP CHANGEFEED n | ALTER CHANGEFEED n (DISABLE | SET (...)); None otherwise.

        ``changefeed`` is not reserved: ``ADD changefeed int`` still adds a column."""
        if not self._at_kw("changefeed", k=1) or not self._at_ident(2):
            return None
        if self._at_kw("add") and self._at_kw("with", k=3):
            self.i += 2
            name = self._ident()
            self._expect_kw("with")
            return ast.AlterTableAddChangefeed(table, name, self._changefeed_settings())
        end = self._peek(3)
        if self._at_kw("drop") and (end.kind == EOF or (end.kind == PUNCT and end.value == ";")):
            self.i += 2
            return ast.AlterTableDropChangefeed(table, self._ident())
        column_type = self._at_kw("type", k=2) and not self._at_kw("disable", "set", k=3)
        if self._at_kw("alter") and not column_type:  # ``ALTER changefeed TYPE t`` changes a column's type
            self.i += 2
            name = self._ident()
            if self._accept_kw("disable"):
                return ast.AlterTableAlterChangefeed(table, name, True)
            if not self._at_kw("set"):
                self._mismatched(f"DISABLE or SET (ALTER CHANGEFEED {name} DISABLE)")
            self.i += 1
            return ast.AlterTableAlterChangefeed(table, name, False, self._changefeed_settings())
        return None

    def _changefeed_settings(self) -> tuple[tuple[str, object], ...]:
        """'(' name '=' value (',' name '=' value)* ')' as YQL writes them."""
        self._expect_punct("(")
        out = []
        while True:
            name_tok = self._peek()
            if name_tok.kind not in (IDENT, QIDENT):
                self._mismatched("IDENT")
            self.i += 1
            self._expect_punct("=")
            out.append((name_tok.text if name_tok.kind == IDENT else name_tok.value, self._setting_value()))
            if not self._accept_punct(","):
                break
        self._expect_punct(")")
        return tuple(out)

    def _setting_value(self) -> object:
        """A YQL literal: 'string', TRUE/FALSE, an integer, Interval('PT..'); anything else is kept as text."""
        tok = self._peek()
        start = tok.start
        if tok.kind == STRING and self._peek(1).value in (",", ")"):
            self.i += 1
            return ast.SettingValue("string", tok.value, tok.text)
        if tok.kind == IDENT and tok.value in ("true", "false") and self._peek(1).value in (",", ")"):
            self.i += 1
            return ast.SettingValue("bool", tok.value == "true", tok.text)
        if tok.kind == INTEGER and self._peek(1).value in (",", ")"):
            self.i += 1
            return ast.SettingValue("int", int(tok.value), tok.text)
        if (tok.kind == PUNCT and tok.value == "-" and self._peek(1).kind == INTEGER
                and self._peek(2).value in (",", ")")):
            self.i += 2
            return ast.SettingValue("int", -int(self._peek(-1).value), self.text[start:self._peek(-1).end])
        if (tok.kind == IDENT and tok.value == "interval" and self._peek(1).value == "("
                and self._peek(2).kind == STRING and self._peek(3).value == ")"
                and self._peek(4).value in (",", ")")):
            self.i += 4
            return ast.SettingValue("interval", self._peek(-2).value, self.text[start:self._peek(-1).end])
        depth = 0
        while True:  # any other expression: up to the next ',' or ')' at depth 0
            t = self._peek()
            if t.kind == EOF:
                self._mismatched("')'")
            if t.kind == PUNCT and t.value in (",", ")") and depth == 0:
                break
            if t.kind == PUNCT and t.value == "(":
                depth += 1
            elif t.kind == PUNCT and t.value == ")":
                depth -= 1
            self.i += 1
        if self.tokens[self.i - 1].start < start:
            self._mismatched("a value")
        raw = self.text[start:self.tokens[self.i - 1].end]
        return ast.SettingValue("other", raw, raw)

    def _alter_topic(self) -> ast.Statement:
        """ALTER TOPIC path (ADD CONSUMER c [WITH (...)] | DROP CONSUMER c); path is 'ks/t/name' quoted."""
        tok = self._peek()
        if tok.kind in (QIDENT, STRING):
            self.i += 1
            path = tok.value
        else:
            path = self._ident()
            while self._accept_punct("."):
                path += "." + self._ident()
        if self._accept_kw("add"):
            self._expect_kw("consumer")
            name = self._consumer_name()
            settings = self._changefeed_settings() if self._accept_kw("with") else ()
            return ast.AlterTopicAddConsumer(path, name, settings)
        if self._accept_kw("drop"):
            self._expect_kw("consumer")
            return ast.AlterTopicDropConsumer(path, self._consumer_name())
        self._no_viable()

    def _consumer_name(self) -> str:
        tok = self._peek()
        if tok.kind == STRING:
            self.i += 1
            return tok.value
        return self._ident()

    def _column_def(self) -> ast.ColumnDef:
        name = self._ident()
        type_expr = self._type()
        return ast.ColumnDef(name, type_expr, self._accept_kw("static"))

    def _renames(self) -> tuple[tuple[str, str], ...]:
        """renames: ident TO ident (AND ident TO ident)*."""
        renames = []
        while True:
            old = self._ident()
            self._expect_kw("to")
            renames.append((old, self._ident()))
            if not self._accept_kw("and"):
                return tuple(renames)

    def _alter_type(self) -> ast.Statement:
        """ALTER TYPE ut (ADD field type | RENAME a TO b [AND ...])."""
        name = self._qualified_name()
        if self._accept_kw("add"):
            field = self._ident()
            return ast.AlterTypeAdd(name, field, self._type())
        if self._accept_kw("rename"):
            return ast.AlterTypeRename(name, self._renames())
        self._no_viable()

    def _drop(self) -> ast.Statement:
        self._expect_kw("drop")
        tok = self._peek()
        if self._at_kw("keyspace", "schema"):
            self.i += 1
            if_exists = self._if_exists()
            return ast.DropKeyspace(self._ident(), if_exists)
        if self._at_kw("table", "columnfamily"):
            self.i += 1
            if_exists = self._if_exists()
            return ast.DropTable(self._qualified_name(), if_exists)
        if self._at_kw("type"):
            self.i += 1
            if_exists = self._if_exists()
            return ast.DropType(self._qualified_name(), if_exists)
        if self._at_kw("role", "user"):
            self.i += 1
            if_exists = self._if_exists()
            return ast.DropRole(self._role_name(), if_exists)
        if service_level_grammar.at_service_level(self):
            return service_level_grammar.drop(self)
        if self._at_kw("materialized") and self._at_kw("view", k=1):
            return self._drop_materialized_view()
        if self._at_kw("index"):
            from logtide.cql.index_grammar import drop_index
            return drop_index(self)
        if self._at_kw("function", "aggregate"):
            aggregate = self._advance().value.lower() == "aggregate"
            if_exists = self._if_exists()
            name = self._qualified_name()
            argument_types = self._type_list() if self._at_punct("(") else None
            return ast.DropFunction(name, tuple(argument_types) if argument_types is not None else None, aggregate,
                                    if_exists)
        if self._at_kw("index", "materialized", "trigger"):
            self._unsupported("DROP")
        self._no_viable()

    def _use(self) -> ast.UseKeyspace:
        """USE ks."""
        self._expect_kw("use")
        return ast.UseKeyspace(self._ident())

    def _truncate(self) -> ast.Truncate:
        """TRUNCATE [TABLE] t [USING TIMEOUT d] (ScyllaDB's usingTimeoutClause: no TTL, no TIMESTAMP)."""
        self._expect_kw("truncate")
        if not self._accept_kw("table"):
            self._accept_kw("columnfamily")
        return ast.Truncate(self._qualified_name(), self._using(("timeout",)))

    def _describe(self) -> ast.Describe:
        """DESCRIBE|DESC (CLUSTER | [FULL] SCHEMA | KEYSPACES | [ONLY] KEYSPACE [ks] | TABLES | TABLE t | TYPES
        | TYPE t | FUNCTIONS | FUNCTION f | AGGREGATES | AGGREGATE a | INDEX i | MATERIALIZED VIEW v | name)
        [WITH INTERNALS [AND PASSWORDS]] (ScyllaDB's describeStatement)."""
        from dataclasses import replace

        self._advance()
        stmt = self._describe_target()
        if self._at_kw("with") and self._at_kw("internals", k=1):
            self.i += 2
            passwords = False
            if self._at_kw("and") and self._at_kw("passwords", k=1):
                self.i += 2
                passwords = True
            stmt = replace(stmt, internals=True, passwords=passwords)
        return stmt

    def _describe_target(self) -> ast.Describe:
        tok = self._peek()
        follows = self._peek(1)
        at_end = follows.kind == EOF or self._at_punct(";", k=1) or (follows.kind == IDENT and follows.value == "with")
        if tok.kind == IDENT:
            word = tok.value
            if word in ("keyspaces", "tables", "types", "functions", "aggregates", "cluster", "schema") and at_end:
                self.i += 1
                return ast.Describe(word)
            if word == "full" and self._at_kw("schema", k=1):
                self.i += 2
                return ast.Describe("full schema")
            only = word == "only" and self._at_kw("keyspace", k=1)
            if word == "keyspace" or only:
                self.i += 2 if only else 1
                if self._peek().kind == EOF or self._at_punct(";") or self._at_kw("with"):
                    return ast.Describe("keyspace", only=only)
                return ast.Describe("keyspace", ast.QualifiedName(None, self._ident()), only=only)
            if word in ("table", "columnfamily"):
                self.i += 1
                return ast.Describe("table", self._qualified_name())
            if word == "materialized" and self._at_kw("view", k=1):
                self.i += 2
                return ast.Describe("materialized view", self._qualified_name())
            if word in ("type", "function", "aggregate", "index") and self._at_ident(1) and not at_end:
                self.i += 1
                return ast.Describe(word, self._qualified_name())
        return ast.Describe("name", self._qualified_name())

    # ------------------------------------------------------------------
    # Auth
    # ------------------------------------------------------------------

    def _create_role(self) -> ast.CreateRole:
        """CREATE ROLE [IF NOT EXISTS] r [WITH roleOption (AND roleOption)*]."""
        self.i += 1
        if_not_exists = self._if_not_exists()
        name = self._role_name()
        options = self._role_options() if self._accept_kw("with") else ()
        return ast.CreateRole(name, options, if_not_exists)

    def _role_options(self) -> tuple[tuple[str, ast.PropertyValue], ...]:
        """roleOptions: roleOption (AND roleOption)*, where ScyllaDB's ``HASHED PASSWORD = 'hash'`` is one option
        (``hashed password``) and every other is a property."""
        options = []
        while True:
            if self._at_kw("hashed") and self._at_kw("password", k=1):
                self.i += 2
                self._expect_punct("=")
                options.append(("hashed password", self._string_literal()))
            else:
                options.append(self._property())
            if not self._accept_kw("and"):
                return tuple(options)

    def _string_literal(self) -> str:
        """STRING_LITERAL (a password, a hash)."""
        tok = self._peek()
        if tok.kind != STRING:
            self._mismatched("STRING_LITERAL")
        self.i += 1
        return tok.value

    def _create_user(self) -> ast.CreateRole:
        """CREATE USER [IF NOT EXISTS] u [WITH PASSWORD 'p'] [SUPERUSER | NOSUPERUSER] (a role with LOGIN)."""
        self.i += 1
        if_not_exists = self._if_not_exists()
        name = self._role_name()
        options = self._user_options()
        return ast.CreateRole(name, options + (("login", True),), if_not_exists)

    def _user_options(self) -> tuple[tuple[str, ast.PropertyValue], ...]:
        """[WITH PASSWORD 'p'] [SUPERUSER | NOSUPERUSER]."""
        options: list[tuple[str, ast.PropertyValue]] = []
        if self._accept_kw("with"):
            self._expect_kw("password")
            options.append(("password", self._string_literal()))
        if self._accept_kw("superuser"):
            options.append(("superuser", True))
        elif self._accept_kw("nosuperuser"):
            options.append(("superuser", False))
        return tuple(options)

    def _permission(self) -> str:
        """permission: ALL [PERMISSIONS] | CREATE | ALTER | DROP | SELECT | MODIFY | AUTHORIZE | DESCRIBE | EXECUTE [PERMISSION]."""
        tok = self._peek()
        if self._accept_kw("all"):
            self._accept_kw("permissions")
            return "ALL"
        if tok.kind == IDENT and tok.value in _PERMISSIONS:
            self.i += 1
            self._accept_kw("permission")
            return tok.value.upper()
        self._no_viable()

    def _resource(self) -> ast.Resource:
        """resource: ALL KEYSPACES | KEYSPACE ks | [TABLE] [ks.]t | ALL ROLES | ROLE r | ALL FUNCTIONS [IN KEYSPACE ks]
        | FUNCTION [ks.]f '(' [type (',' type)*] ')'."""
        if self._at_kw("all") and self._at_kw("keyspaces", k=1):
            self.i += 2
            return ast.Resource("all keyspaces")
        if self._at_kw("all") and self._at_kw("roles", k=1):
            self.i += 2
            return ast.Resource("all roles")
        if self._at_kw("all") and self._at_kw("functions", k=1):
            self.i += 2
            if self._accept_kw("in"):
                self._expect_kw("keyspace")
                return ast.Resource("all functions", self._ident())
            return ast.Resource("all functions")
        if self._at_kw("function") and not self._at_punct(".", k=1) and not self._at_kw("to", "from", "of", k=1):
            self.i += 1
            name = self._qualified_name()
            return ast.Resource("function", name.keyspace, name.name, arg_types=tuple(self._type_list()))
        if self._at_kw("role") and not self._at_punct(".", k=1) and not self._at_kw("to", "from", "of", k=1):
            self.i += 1
            return ast.Resource("role", role=self._role_name())
        if self._accept_kw("keyspace"):
            return ast.Resource("keyspace", self._ident())
        if not self._accept_kw("table"):
            self._accept_kw("columnfamily")
        name = self._qualified_name()
        return ast.Resource("table", name.keyspace, name.name)

    def _is_role_grant(self) -> bool:
        """After GRANT/REVOKE: a role name followed by TO/FROM (``GRANT r TO u``), not a permission."""
        tok = self._peek()
        if tok.kind == IDENT and tok.value in _PERMISSIONS and self._at_kw("on", "permission", k=1):
            return False
        if self._at_kw("all"):
            return False
        return tok.kind in (IDENT, QIDENT, STRING) and self._at_kw("to", "from", k=1)

    def _grant(self) -> ast.Grant | ast.GrantRole:
        """GRANT permission ON resource TO role | GRANT role TO grantee."""
        self._expect_kw("grant")
        if self._is_role_grant():
            role = self._role_name()
            self._expect_kw("to")
            return ast.GrantRole(role, self._role_name())
        permission = self._permission()
        self._expect_kw("on")
        resource = self._resource()
        self._expect_kw("to")
        return ast.Grant(permission, resource, self._role_name())

    def _revoke(self) -> ast.Revoke | ast.RevokeRole:
        """REVOKE permission ON resource FROM role | REVOKE role FROM revokee."""
        self._expect_kw("revoke")
        if self._is_role_grant():
            role = self._role_name()
            self._expect_kw("from")
            return ast.RevokeRole(role, self._role_name())
        permission = self._permission()
        self._expect_kw("on")
        resource = self._resource()
        self._expect_kw("from")
        return ast.Revoke(permission, resource, self._role_name())

    def _list(self) -> ast.ListRoles | ast.ListPermissions:
        """LIST ROLES [OF r] [NORECURSIVE] | LIST USERS | LIST permission [ON resource] [OF role] [NORECURSIVE]."""
        self._expect_kw("list")
        if service_level_grammar.at_list(self):
            return service_level_grammar.listing(self)
        if self._accept_kw("roles"):
            of = self._role_name() if self._accept_kw("of") else None
            return ast.ListRoles(of, not self._accept_kw("norecursive"))
        if self._accept_kw("users"):
            return ast.ListRoles()
        permission = self._permission()
        resource = self._resource() if self._accept_kw("on") else None
        role = self._role_name() if self._accept_kw("of") else None
        return ast.ListPermissions(permission, resource, role, not self._accept_kw("norecursive"))


def _word_constant(word: str) -> ast.Constant:
    if word == "null":
        return ast.Constant("null", "null")
    if word == "nan":
        return ast.Constant("float", "NaN")
    if word == "infinity":
        return ast.Constant("float", "Infinity")
    return ast.Constant("boolean", word)


def _python_number(constant: ast.Constant) -> ast.PropertyValue:
    if constant.kind == "integer":
        return int(constant.text)
    if constant.kind == "float":
        return float(constant.text)
    return constant.text


_STATEMENTS = {
    "select": _Parser._select,
    "insert": _Parser._insert,
    "update": _Parser._update,
    "delete": _Parser._delete,
    "begin": _Parser._batch,
    "create": _Parser._create,
    "alter": _Parser._alter,
    "drop": _Parser._drop,
    "use": _Parser._use,
    "truncate": _Parser._truncate,
    "describe": _Parser._describe,
    "desc": _Parser._describe,
    "grant": _Parser._grant,
    "revoke": _Parser._revoke,
    "list": _Parser._list,
    "attach": service_level_grammar.attach,
    "detach": service_level_grammar.detach,
}
