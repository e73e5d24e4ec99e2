"""Interactive mode on a pseudo-terminal: prompts, multi-line input, Ctrl-C, Ctrl-D, history."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import pytest

from logtide.shell import history_file

from .ptyutil import PtyProcess

HERE = Path(__file__).resolve().parent


def spawn(tmp_path: Path, history: Path) -> PtyProcess:
    env = {**os.environ, "HOME": str(tmp_path), "TERM": "dumb", "LOGTIDE_HISTORY": str(history),
           "INPUTRC": "/dev/null"}
    return PtyProcess([sys.executable, str(HERE / "interactive_fake.py")], env, str(tmp_path))


@pytest.fixture
def history(tmp_path: Path) -> Path:
    return tmp_path / "hist" / "logtide_history"


def test_session_prompts_multiline_and_history(tmp_path: Path, history: Path) -> None:
    proc = spawn(tmp_path, history)
    try:
        proc.expect("Use HELP for help.")
        proc.expect("logtide> ")
        proc.send("SELECT *\r")
        proc.expect("   ... ")
        proc.send("FROM ks.t;\r")
        seen = proc.expect("logtide> ")
        assert "\n pk\n----\n  1\n\n(1 rows)\n" in seen
        proc.send("USE ks;\r")
        proc.expect("logtide:ks> ")
        proc.send("SELECT\r")
        proc.expect("      ... ")  # len('ks') spaces, then cqlsh's continuation
        time.sleep(0.5)  # let readline take the terminal before the interrupt arrives
        proc.interrupt("logtide:ks> ")  # Ctrl-C drops the pending statement
        proc.send("SELECT * FROM ks.missing;\r")
        seen = proc.expect("logtide:ks> ")
        assert 'InvalidRequest: Error from server: code=2200 [Invalid query] message="unconfigured table missing"' in seen
        assert "<stdin>:" not in seen
        proc.send("\x04")  # Ctrl-D
        assert proc.wait() == 0
    finally:
        proc.kill()
    lines = history.read_text(encoding="utf-8").splitlines()
    assert "SELECT * FROM ks.t;" in lines  # the multi-line statement, joined
    assert "USE ks;" in lines


def test_history_is_recalled_and_exit_works(tmp_path: Path, history: Path) -> None:
    history.parent.mkdir(parents=True)
    history.write_text("SELECT * FROM ks.t;\n", encoding="utf-8")
    proc = spawn(tmp_path, history)
    try:
        proc.expect("logtide> ")
        proc.send("\x10\r")  # Ctrl-P: previous history line, then Enter
        assert "(1 rows)" in proc.expect("logtide> ")
        proc.send("EXIT\r")
        assert proc.wait() == 0
    finally:
        proc.kill()


def test_history_file_location() -> None:
    assert history_file({"LOGTIDE_HISTORY": "/x/h"}) == "/x/h"
    assert history_file({"LOGTIDE_HISTORY": ""}) is None
    assert history_file({}).endswith(".logtide_history")
