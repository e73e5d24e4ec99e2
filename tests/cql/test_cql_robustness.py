"""Property tests: the front end never fails with anything but CQL errors."""

from hypothesis import given, settings
from hypothesis import strategies as st

from logtide.cql import parse, parse_many, split_statements
from logtide.errors import InvalidRequest, SyntaxException

FRAGMENTS = [
    "SELECT", "*", "FROM", "t", "ks.t", "WHERE", "k", "=", "?", ":n", "AND", "IN", "(", ")", ",", "'s'",
    "'", "$$", '"Q"', '"', "1", "-", "1.5", "1h", "0xff", "{", "}", "[", "]", ":", ";", "UPDATE", "SET",
    "+", "INSERT", "INTO", "VALUES", "BEGIN", "BATCH", "APPLY", "DELETE", "IF", "EXISTS", "NOT", "--c\n",
    "/*", "*/", "token", "CREATE", "TABLE", "int", "PRIMARY", "KEY", "map", "<", ">", "\n", " ", "@",
]


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(FRAGMENTS), max_size=25))
def test_parse_raises_only_cql_errors_on_arbitrary_token_soup(parts):
    text = " ".join(parts)
    for func in (parse, parse_many):
        try:
            func(text)
        except (SyntaxException, InvalidRequest) as exc:
            if isinstance(exc, SyntaxException):
                assert str(exc).startswith("line ")
    split_statements(text)


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=60))
def test_arbitrary_text_gives_only_syntax_errors(text):
    try:
        parse(text)
    except SyntaxException as exc:
        assert str(exc).startswith("line ")
    except InvalidRequest:
        pass
    split_statements(text)


STATEMENTS = [
    "SELECT * FROM t WHERE a = 'x;y'",
    'INSERT INTO "a;b" (a) VALUES ($$;$$)',
    "BEGIN BATCH INSERT INTO t (a) VALUES (1); DELETE FROM t WHERE a = 1; APPLY BATCH",
    "UPDATE t SET v = 1 /* ; */ WHERE k = 2",
    "USE ks",
]


@given(st.lists(st.sampled_from(STATEMENTS), max_size=8), st.sampled_from([";", ";\n", " ;  -- x\n", ";/**/"]))
def test_split_statements_agrees_with_parse_many(stmts, sep):
    script = "".join(s + sep for s in stmts)
    pieces = split_statements(script)
    assert [p.text for p in pieces] == stmts
    assert all(p.complete for p in pieces)
    assert [p.text for p in parse_many(script)] == stmts


def test_a_statement_nested_too_deeply_is_a_syntax_error_not_a_crash():
    for depth in (3_000, 200_000):
        for text in ("INSERT INTO t (k, v) VALUES (1, " + "[" * depth + "1" + "]" * depth + ")",
                     "SELECT * FROM t WHERE k = " + "(" * depth + "1" + ")" * depth,
                     "SELECT " + "f(" * depth + "k" + ")" * depth + " FROM t"):
            for func in (parse, parse_many):
                try:
                    func(text)
                except SyntaxException as exc:
                    assert str(exc).startswith("line 1:") and "nested too deeply to parse" in str(exc)
                else:
                    raise AssertionError("parsed a statement nested %d deep" % depth)
