"""split_statements: cutting a script into statements without parsing."""

from logtide.cql import ScriptStatement, split_statements


def texts(script):
    return [s.text for s in split_statements(script)]


def test_split_on_top_level_semicolons_strips_whitespace_and_semicolon():
    assert texts("  SELECT 1 FROM t ;\n INSERT INTO t (a) VALUES (1);") == [
        "SELECT 1 FROM t",
        "INSERT INTO t (a) VALUES (1)",
    ]


def test_semicolon_inside_single_quoted_string_with_escaped_quote_does_not_split():
    assert texts("INSERT INTO t (a) VALUES ('it''s; here');SELECT 1") == [
        "INSERT INTO t (a) VALUES ('it''s; here')",
        "SELECT 1",
    ]


def test_semicolon_inside_dollar_string_does_not_split():
    assert texts("INSERT INTO t (a) VALUES ($$a;b$$); x") == ["INSERT INTO t (a) VALUES ($$a;b$$)", "x"]


def test_semicolon_inside_double_quoted_identifier_does_not_split():
    assert texts('SELECT "a;""b" FROM t; y') == ['SELECT "a;""b" FROM t', "y"]


def test_semicolons_inside_comments_do_not_split():
    script = "SELECT a -- x; y\n, b // z;\nFROM t /* ; */ WHERE k = 1; z"
    assert texts(script) == ["SELECT a -- x; y\n, b // z;\nFROM t /* ; */ WHERE k = 1", "z"]


def test_semicolons_inside_batch_do_not_split_until_apply_batch():
    script = (
        "BEGIN BATCH\n  INSERT INTO t (a) VALUES (1);\n  UPDATE t SET a = 2 WHERE k = 1;\nAPPLY BATCH;\n"
        "SELECT * FROM t;"
    )
    result = split_statements(script)
    assert [s.text for s in result] == [
        "BEGIN BATCH\n  INSERT INTO t (a) VALUES (1);\n  UPDATE t SET a = 2 WHERE k = 1;\nAPPLY BATCH",
        "SELECT * FROM t",
    ]
    assert result[1].line == 5


def test_lower_case_unlogged_batch_is_kept_whole():
    assert texts("begin unlogged batch insert into t (a) values (1); apply batch; x;") == [
        "begin unlogged batch insert into t (a) values (1); apply batch",
        "x",
    ]


def test_comment_only_pieces_are_dropped():
    assert split_statements("-- nothing here\n/* still nothing */ ;  ; // end") == []


def test_leading_comments_are_not_part_of_statement_text():
    [stmt] = split_statements("-- header\n/* block */  SELECT 1;")
    assert stmt == ScriptStatement("SELECT 1", 2, 14, True)


def test_line_and_column_are_one_based_positions_of_statement_start():
    result = split_statements("SELECT 1;  SELECT 2;\n\n   USE ks;")
    assert [(s.line, s.column) for s in result] == [(1, 1), (1, 12), (3, 4)]


def test_trailing_piece_without_semicolon_is_incomplete():
    result = split_statements("SELECT 1; SELECT *\nFROM t")
    assert result[0].complete is True
    assert result[1] == ScriptStatement("SELECT *\nFROM t", 1, 11, False)


def test_trailing_comment_after_incomplete_statement_is_excluded_from_text():
    assert split_statements("SELECT 1 -- more to come") == [ScriptStatement("SELECT 1", 1, 1, False)]


def test_unterminated_string_makes_statement_incomplete():
    [stmt] = split_statements("INSERT INTO t (a) VALUES ('abc;\ndef")
    assert stmt.complete is False
    assert stmt.text == "INSERT INTO t (a) VALUES ('abc;\ndef"


def test_unfinished_batch_is_incomplete():
    [stmt] = split_statements("BEGIN BATCH INSERT INTO t (a) VALUES (1);")
    assert stmt.complete is False


def test_statement_with_syntax_error_is_split_like_any_other():
    assert texts("SELEC * FORM t; SELECT 1;") == ["SELEC * FORM t", "SELECT 1"]


def test_empty_script_gives_no_statements():
    assert split_statements("") == []
    assert split_statements("   \n\t ") == []


def test_script_statement_is_frozen():
    stmt = ScriptStatement("x", 1, 1, True)
    try:
        stmt.text = "y"  # type: ignore[misc]
    except AttributeError:
        pass
    else:
        raise AssertionError("ScriptStatement should be frozen")
