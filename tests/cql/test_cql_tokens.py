"""The CQL tokenizer."""

import pytest

from logtide.cql import tokenize
from logtide.cql.tokens import DURATION
from logtide.errors import SyntaxException


def kinds_values(text):
    return [(t.kind, t.value) for t in tokenize(text)][:-1]


def test_unquoted_identifiers_are_lower_cased_and_quoted_keep_case():
    assert kinds_values('Foo "Bar""x"') == [("IDENT", "foo"), ("QIDENT", 'Bar"x')]


def test_string_constant_unescapes_doubled_quotes():
    assert kinds_values("'it''s'") == [("STRING", "it's")]


def test_dollar_string_keeps_content_verbatim():
    assert kinds_values("$$it's\n;$$") == [("STRING", "it's\n;")]


@pytest.mark.parametrize(
    "text,kind",
    [
        ("42", "INTEGER"),
        ("1.5", "FLOAT"),
        ("2e10", "FLOAT"),
        ("1.5E-3", "FLOAT"),
        ("0xCAFE", "HEX"),
        ("0x", "HEX"),
        ("123e4567-e89b-12d3-a456-426614174000", "UUID"),
        ("deadbeef-dead-beef-dead-beefdeadbeef", "UUID"),
        ("1h30m", "DURATION"),
        ("12mo3d", "DURATION"),
        ("10ms", "DURATION"),
        ("5us", "DURATION"),
        ("5µs", "DURATION"),
        ("7ns", "DURATION"),
        ("1y2w", "DURATION"),
        ("P1DT2H", "DURATION"),
        ("P2W", "DURATION"),
        ("PT30M", "DURATION"),
        ("P0001-02-03T04:05:06", "DURATION"),
    ],
)
def test_constant_token_kinds(text, kind):
    assert kinds_values(text) == [(kind, text)]


def test_minus_is_a_separate_token_before_numbers():
    assert kinds_values("-12") == [("PUNCT", "-"), ("INTEGER", "12")]


def test_comments_of_all_three_styles_are_skipped():
    assert kinds_values("a -- x\n b // y\n /* z\n */ c") == [("IDENT", "a"), ("IDENT", "b"), ("IDENT", "c")]


def test_multi_character_operators():
    assert [v for _, v in kinds_values("!= <= >= += -= < > =")] == ["!=", "<=", ">=", "+=", "-=", "<", ">", "="]


def test_tokens_carry_source_offsets():
    toks = tokenize("SELECT  x")
    assert (toks[1].start, toks[1].end, toks[1].text) == (8, 9, "x")
    assert toks[-1].kind == "EOF"


def test_unterminated_string_reports_eof_position():
    with pytest.raises(SyntaxException, match=r"line 2:3 mismatched character '<EOF>' expecting '''"):
        tokenize("x\n'ab")


def test_unknown_character_reports_token_recognition_error():
    with pytest.raises(SyntaxException, match=r"line 1:2 token recognition error at: '@'"):
        tokenize("a @")


@pytest.mark.parametrize("text", ["P1y2D", "p1Y2D", "P0001-03-00t02:10:00"])
def test_an_iso_8601_duration_is_upper_case_only(text):
    kinds = []
    try:
        kinds = [t.kind for t in tokenize(text)]
    except SyntaxException:
        return
    assert kinds[0] != DURATION


def test_human_readable_duration_units_are_any_case():
    assert [t.kind for t in tokenize("1Y2MO 3ms P1Y2D")][:3] == [DURATION, DURATION, DURATION]
