"""Shell commands: SOURCE, CONSISTENCY, EXPAND, PAGING, HELP, EXIT, and -k."""

from __future__ import annotations

from pathlib import Path

from logtide.errors import InvalidRequest
from logtide.shell import ShellArgs, capture

from .cases import INT
from .fakes import FakeSession, factory, rows_result, use_keyspace


def run(tmp_path: Path, stdin: str, session: FakeSession | None = None, **kw: object) -> tuple[int, str, str]:
    return capture(ShellArgs(data_dir=str(tmp_path), **kw), factory(session or FakeSession()), stdin)


def test_source_runs_file_and_names_it_in_errors(tmp_path: Path) -> None:
    script = tmp_path / "inner.cql"
    script.write_text("SELECT * FROM ks.t;\n\nSELECT * FROM ks.missing;\n", encoding="utf-8")
    session = FakeSession({"SELECT * FROM ks.t": rows_result([("pk", INT)], [(1,)]),
                           "SELECT * FROM ks.missing": InvalidRequest("unconfigured table missing")})
    status, out, err = run(tmp_path, "SOURCE '%s'\n" % script, session)
    assert out == "\n pk\n----\n  1\n\n(1 rows)\n"
    assert err == ('%s:4:InvalidRequest: Error from server: code=2200 [Invalid query] '
                   'message="unconfigured table missing"\n' % script)
    assert status == 1


def test_source_missing_file(tmp_path: Path) -> None:
    status, _, err = run(tmp_path, "SOURCE 'nope.cql';\n")
    assert status == 1
    assert err.startswith("<stdin>:2:Could not open 'nope.cql': [Errno 2] No such file or directory")


def test_source_needs_a_string(tmp_path: Path) -> None:
    assert run(tmp_path, "SOURCE nope.cql\n")[2] == "<stdin>:2:Improper SOURCE command.\n"


def test_consistency_messages(tmp_path: Path) -> None:
    status, out, _ = run(tmp_path, "CONSISTENCY\nconsistency local_quorum\nCONSISTENCY\n")
    assert status == 0
    assert out == ("Current consistency level is ONE.\nConsistency level set to LOCAL_QUORUM.\n"
                   "Current consistency level is LOCAL_QUORUM.\n")


def test_expand_and_paging_messages(tmp_path: Path) -> None:
    _, out, _ = run(tmp_path, "EXPAND\nEXPAND ON\nEXPAND ON\nPAGING\nPAGING ON\nPAGING 20\nPAGING OFF\n")
    assert out.splitlines() == ["EXPAND is OFF", "EXPAND set to ON", "EXPAND is already ON",
                                "PAGING is ON", "Page size: 100", "PAGING is already ON", "Page size: 100",
                                "Page size: 20", "PAGING set to OFF"]


def test_help(tmp_path: Path) -> None:
    status, out, err = run(tmp_path, "HELP\nHELP EXPAND\nHELP nothing\n")
    assert "Documented shell commands:" in out and "SOURCE" in out and "EXPAND [ON|OFF]" in out
    assert err == "<stdin>:4:*** No help on nothing\n" and status == 1


def test_unsupported_cqlsh_command(tmp_path: Path) -> None:
    assert run(tmp_path, "TRACING ON\n")[2] == "<stdin>:2:TRACING is not supported by the logtide shell.\n"


def test_keyspace_option_uses_protected_name(tmp_path: Path) -> None:
    session = FakeSession({"USE": use_keyspace})
    status, _, _ = run(tmp_path, "", session, keyspace="MyKs")
    assert status == 0 and session.executed == ['USE "MyKs"']


def test_keyspace_option_failure(tmp_path: Path) -> None:
    session = FakeSession({"USE": InvalidRequest("Keyspace 'nope' does not exist")})
    status, out, err = run(tmp_path, "", session, keyspace="nope")
    assert status == 1 and out == ""
    assert err == ('Connection error: InvalidRequest: Error from server: code=2200 [Invalid query] '
                   'message="Keyspace \'nope\' does not exist"\n')
