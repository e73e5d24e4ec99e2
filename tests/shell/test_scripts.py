"""Whole batch runs (-e, -f, piped stdin) print what cqlsh prints, on stdout and stderr."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from logtide.shell import ShellArgs, capture

from .cases import ScriptCase, script_cases
from .conftest import golden
from .fakes import FakeSession, factory

CASES = script_cases()


def run_case(case: ScriptCase, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[int, str, str]:
    """Runs a case through ``logtide shell`` with a fake engine session."""
    session = FakeSession(dict(case.answers))
    args = ShellArgs(data_dir=str(tmp_path))
    stdin = ""
    if case.mode == "e":
        args.execute = case.script
    elif case.mode == "f":
        (tmp_path / "script.cql").write_text(case.script, encoding="utf-8")
        monkeypatch.chdir(tmp_path)
        args.file = "script.cql"
    else:
        stdin = case.script
    return capture(args, factory(session), stdin)


@pytest.mark.parametrize("name", sorted(CASES))
def test_script_matches_golden(name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    status, out, err = run_case(CASES[name], tmp_path, monkeypatch)
    assert out == golden("script_%s.out" % name)
    assert err == golden("script_%s.err" % name)
    assert status == (1 if err else 0)


@pytest.mark.parametrize("name", sorted(CASES))
def test_script_matches_live_cqlsh(name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                   cqlsh_reference: dict[str, Any]) -> None:
    status, out, err = run_case(CASES[name], tmp_path, monkeypatch)
    reference = cqlsh_reference["scripts"][name]
    assert (out, err) == (reference["out"], reference["err"])
    assert status == (1 if reference["status"] else 0)  # cqlsh exits 2, logtide 1


def test_error_lines_name_file_and_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    status, _, err = run_case(CASES["file"], tmp_path, monkeypatch)
    assert status == 1
    assert err.splitlines()[0] == (
        'script.cql:4:InvalidRequest: Error from server: code=2200 [Invalid query] '
        'message="unconfigured table missing"')
    assert "script.cql:7:SyntaxException: line 1:0 no viable alternative" in err


def test_execute_reports_line_one(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    status, _, err = run_case(CASES["execute"], tmp_path, monkeypatch)
    assert status == 1
    assert [line.split(":", 2)[:2] for line in err.splitlines()] == [["<stdin>", "1"], ["<stdin>", "1"]]


def test_successful_run_exits_zero(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert run_case(CASES["execute_ok"], tmp_path, monkeypatch) == (0, "", "")


def test_missing_file(tmp_path: Path) -> None:
    status, out, err = capture(ShellArgs(data_dir=str(tmp_path), file=str(tmp_path / "nope.cql")),
                               factory(FakeSession()))
    assert status == 1 and out == ""
    assert err.startswith("Can't open '%s': [Errno 2]" % (tmp_path / "nope.cql"))
