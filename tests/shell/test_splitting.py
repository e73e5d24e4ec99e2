"""Statements are cut and run as cqlsh cuts and runs them."""

from __future__ import annotations

from pathlib import Path

from logtide.cql import split_statements
from logtide.shell import ShellArgs, capture, clean_statement, first_word, split_script, words

from .cases import INT
from .fakes import FakeSession, factory, rows_result


def pieces(text: str) -> list[tuple[str, bool]]:
    return [(p.text, p.complete) for p in split_script(text, split_statements)]


def test_semicolons_and_trailing_piece() -> None:
    assert pieces("SELECT 1; SELECT 'a;b';\nSEL") == [("SELECT 1", True), ("SELECT 'a;b'", True), ("SEL", False)]


def test_shell_commands_end_at_newline() -> None:
    assert pieces("EXPAND ON\nSELECT * FROM t;") == [("EXPAND ON", True), ("SELECT * FROM t", True)]
    assert pieces("CONSISTENCY QUORUM\n") == [("CONSISTENCY QUORUM", True)]
    assert pieces("CONSISTENCY QUORUM") == [("CONSISTENCY QUORUM", False)]
    assert pieces("desc tables\nexpand off\n") == [("desc tables", True), ("expand off", True)]


def test_comments_and_blank_pieces_are_dropped() -> None:
    assert pieces("-- nothing\n/* still nothing */\n;;\n") == []


def test_batch_is_one_statement() -> None:
    text = "BEGIN BATCH\nINSERT INTO t (a) VALUES (1);\nAPPLY BATCH;"
    assert pieces(text) == [("BEGIN BATCH\nINSERT INTO t (a) VALUES (1);\nAPPLY BATCH", True)]
    assert pieces("BEGIN BATCH INSERT INTO t (a) VALUES (1);")[-1][1] is False


def test_words_helpers() -> None:
    assert first_word("  -- c\n /* x */ SeLeCt *") == "select"
    assert words('DESCRIBE TABLE "My Tab";', 3) == ["DESCRIBE", "TABLE", '"My Tab"']
    assert clean_statement("\n  SELECT 1 ;  ") == "SELECT 1"


def test_multi_line_statement_runs_when_complete(tmp_path: Path) -> None:
    session = FakeSession({"SELECT *\nFROM ks.t\nWHERE pk = 1": rows_result([("pk", INT)], [(1,)])})
    status, out, err = capture(ShellArgs(data_dir=str(tmp_path)), factory(session),
                               "SELECT *\nFROM ks.t\nWHERE pk = 1;\nINSERT INTO ks.t (pk) VALUES (2);\n")
    assert session.executed == ["SELECT *\nFROM ks.t\nWHERE pk = 1", "INSERT INTO ks.t (pk) VALUES (2)"]
    assert (status, err) == (0, "")
    assert out == "\n pk\n----\n  1\n\n(1 rows)\n"


def test_statements_wait_for_an_incomplete_last_one(tmp_path: Path) -> None:
    """cqlsh runs nothing on a line until the last statement read so far is complete."""
    session = FakeSession()
    capture(ShellArgs(data_dir=str(tmp_path)), factory(session),
            "INSERT INTO t (a) VALUES (1); INSERT INTO t (a)\nVALUES (2);\n")
    assert session.executed == ["INSERT INTO t (a) VALUES (1)", "INSERT INTO t (a)\nVALUES (2)"]


def test_exit_stops_reading(tmp_path: Path) -> None:
    session = FakeSession()
    status, _, _ = capture(ShellArgs(data_dir=str(tmp_path)), factory(session),
                           "INSERT INTO t (a) VALUES (1);\nEXIT\nINSERT INTO t (a) VALUES (2);\n")
    assert status == 0 and session.executed == ["INSERT INTO t (a) VALUES (1)"]
