"""The CQL tokenizer."""

import pytest

from logtide.cql import tokenize
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


def test_a_minus_sign_before_a_duration_belongs_to_it():
    assert kinds_values("1y-2mo") == [("DURATION", "1y"), ("DURATION", "-2mo")]
    assert kinds_values("-P1D") == [("DURATION", "-P1D")]
    assert kinds_values("c -= 1") == [("IDENT", "c"), ("PUNCT", "-="), ("INTEGER", "1")]


def test_iso_8601_durations_are_upper_case_and_unit_durations_any_case():
    assert kinds_values("P1Y2D PT2H P0001-03-00T02:10:00 1Y2MO") == [
        ("DURATION", "P1Y2D"), ("DURATION", "PT2H"), ("DURATION", "P0001-03-00T02:10:00"), ("DURATION", "1Y2MO")]
    assert kinds_values("P1y2D p1Y2D") == [("IDENT", "p1y2d"), ("IDENT", "p1y2d")]
