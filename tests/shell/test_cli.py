"""The ``logtide`` command line."""

from __future__ import annotations

import pytest

from logtide.cli import build_parser, default_data_dir, main


def test_default_data_dir_resolution() -> None:
    assert default_data_dir({"LOGTIDE_DATA_DIR": "/d", "XDG_DATA_HOME": "/x"}) == "/d"
    assert default_data_dir({"XDG_DATA_HOME": "/x"}) == "/x/logtide"
    assert default_data_dir({}).endswith("/.local/share/logtide")


def test_top_level_help_lists_shell(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["--help"], environ={})
    assert exit_info.value.code == 0
    out = capsys.readouterr().out
    assert "usage: logtide" in out and "shell" in out


def test_shell_help_describes_options(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["shell", "--help"], environ={"LOGTIDE_DATA_DIR": "/srv/lt"})
    out = capsys.readouterr().out
    for option in ("--data-dir", "-k", "-e", "-f", "--output", "{table,json}", "--disable-history", "/srv/lt"):
        assert option in out


def test_execute_and_file_are_exclusive(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["shell", "-e", "SELECT 1", "-f", "x.cql"], environ={})
    assert exit_info.value.code == 2


def test_parsed_shell_arguments() -> None:
    ns = build_parser({}).parse_args(["shell", "--data-dir", "/d", "-k", "ks", "-e", "SELECT 1", "--output", "json"])
    assert (ns.command, ns.data_dir, ns.keyspace, ns.execute, ns.output) == ("shell", "/d", "ks", "SELECT 1", "json")
