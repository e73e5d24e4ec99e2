"""The shell over the real embedded engine (``logtide.open``)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from logtide.shell import ShellArgs, capture

from .ptyutil import PtyProcess

logtide = pytest.importorskip("logtide")
if not hasattr(logtide, "open"):
    pytest.skip("logtide.open is not available yet", allow_module_level=True)

ROOT = Path(__file__).resolve().parents[2]
SETUP = ("CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1};\n"
         "CREATE TABLE ks.t (pk int, ck int, v text, PRIMARY KEY (pk, ck));\n"
         "INSERT INTO ks.t (pk, ck, v) VALUES (1, 1, 'one');\n"
         "INSERT INTO ks.t (pk, ck, v) VALUES (1, 2, null);\n")


def run_shell(tmp_path: Path, text: str, **kw: Any) -> tuple[int, str, str]:
    with logtide.open(tmp_path / "data") as db:
        return capture(ShellArgs(data_dir=str(tmp_path / "data"), **kw),
                       lambda keyspace: db.session(keyspace=keyspace), text)


def test_select_output(tmp_path: Path) -> None:
    status, out, err = run_shell(tmp_path, SETUP + "SELECT * FROM ks.t;\n")
    assert (status, err) == (0, "")
    assert out == ("\n"
                   " pk | ck | v\n"
                   "----+----+------\n"
                   "  1 |  1 |  one\n"
                   "  1 |  2 | null\n"
                   "\n"
                   "(2 rows)\n")


def test_engine_errors_and_status(tmp_path: Path) -> None:
    status, out, err = run_shell(tmp_path, SETUP + "SELECT * FROM ks.nope;\nSELECT * FROM ks.t WHERE pk = 9;\n")
    assert status == 1
    assert err == ('<stdin>:6:InvalidRequest: Error from server: code=2200 [Invalid query] '
                   'message="unconfigured table nope"\n')
    assert out.endswith("\n\n(0 rows)\n")


def test_use_keyspace_and_lwt(tmp_path: Path) -> None:
    status, out, _ = run_shell(tmp_path, SETUP + "USE ks;\nINSERT INTO t (pk, ck, v) VALUES (1, 1, 'x') IF NOT EXISTS;\n")
    assert status == 0
    assert out == ("\n"
                   " [applied] | pk | ck | v\n"
                   "-----------+----+----+-----\n"
                   "     False |  1 |  1 | one\n")


def test_describe_keyspaces_and_table(tmp_path: Path) -> None:
    status, out, err = run_shell(tmp_path, SETUP + "DESCRIBE KEYSPACES;\nDESCRIBE TABLE ks.t;\n")
    assert (status, err) == (0, "")
    assert out.startswith("\n") and "ks" in out.split("\n")[1]
    # a table's statement ends with ";" and a newline, as ScyllaDB's; cqlsh adds its own newline after it
    assert "\nCREATE TABLE ks.t (\n" in out and out.endswith(";\n\n")


def test_json_output(tmp_path: Path) -> None:
    status, out, _ = run_shell(tmp_path, SETUP + "SELECT pk, v FROM ks.t;\n", output="json")
    records = [json.loads(line) for line in out.splitlines()]
    assert status == 0
    assert records[0] == {"statement": SETUP.split(";")[0]}
    assert records[-1] == {"statement": "SELECT pk, v FROM ks.t", "columns": ["pk", "v"],
                           "rows": [[1, "one"], [1, None]]}


def test_command_line_file(tmp_path: Path) -> None:
    script = tmp_path / "setup.cql"
    script.write_text(SETUP + "SELECT v FROM ks.t WHERE pk = 1 AND ck = 1;\n", encoding="utf-8")
    proc = subprocess.run([sys.executable, "-m", "logtide", "shell", "--data-dir", str(tmp_path / "d"),
                           "-f", str(script)], capture_output=True, text=True, cwd=ROOT, timeout=120,
                          stdin=subprocess.DEVNULL)
    assert (proc.returncode, proc.stderr) == (0, "")
    assert proc.stdout == "\n v\n-----\n one\n\n(1 rows)\n"


def test_command_line_keyspace_and_execute(tmp_path: Path) -> None:
    data = str(tmp_path / "d")
    base = [sys.executable, "-m", "logtide", "shell", "--data-dir", data]
    subprocess.run(base + ["-e", SETUP], check=True, cwd=ROOT, timeout=120, stdin=subprocess.DEVNULL)
    proc = subprocess.run(base + ["-k", "ks", "-e", "SELECT count(*) FROM t"], capture_output=True, text=True,
                          cwd=ROOT, timeout=120, stdin=subprocess.DEVNULL)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "\n count\n-------\n     2\n\n(1 rows)\n"


def test_interactive_over_engine(tmp_path: Path) -> None:
    env = {**os.environ, "HOME": str(tmp_path), "TERM": "dumb", "LOGTIDE_HISTORY": str(tmp_path / "h"),
           "INPUTRC": "/dev/null", "PYTHONPATH": str(ROOT)}
    proc = PtyProcess([sys.executable, "-m", "logtide", "shell", "--data-dir", str(tmp_path / "d")], env, str(ROOT))
    try:
        proc.expect("logtide> ")
        proc.send("CREATE KEYSPACE ks WITH replication =\r")
        proc.expect("   ... ")
        proc.send("{'class': 'SimpleStrategy', 'replication_factor': 1};\r")
        proc.expect("logtide> ")
        proc.send("USE ks;\r")
        proc.expect("logtide:ks> ")
        proc.send("CREATE TABLE t (pk int PRIMARY KEY, v int);\r")
        proc.expect("logtide:ks> ")
        proc.send("INSERT INTO t (pk, v) VALUES (1, 2);\r")
        proc.expect("logtide:ks> ")
        proc.send("SELECT * FROM t;\r")
        seen = proc.expect("logtide:ks> ")
        assert "\n pk | v\n----+---\n  1 | 2\n\n(1 rows)\n" in seen
        proc.send("QUIT\r")
        assert proc.wait() == 0
    finally:
        proc.kill()
