"""cqlsh from PyPI, run non-interactively against the server: output as cqlsh prints Cassandra's."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from .conftest import KEYSPACE_DDL, run_cqlsh



@pytest.fixture(scope="module")
def cqlsh(server, tmp_path_factory):
    """Run ``cqlsh 127.0.0.1 PORT ARGS...``; returns (exit status, stdout, stderr)."""
    home = tmp_path_factory.mktemp("cqlsh-home")
    return lambda *args: run_cqlsh(server.port, home, *args)


@pytest.fixture(scope="module", autouse=True)
def data(server):
    s = server.server.db.session()
    s.execute(KEYSPACE_DDL.format("cq"))
    s.execute("CREATE TYPE cq.addr (street text, num int)")
    s.execute("CREATE TABLE cq.t (pk int, ck int, v text, s set<int>, a frozen<addr>, m map<text, double>, "
              "PRIMARY KEY (pk, ck))")
    s.execute("INSERT INTO cq.t (pk, ck, v, s, a, m) VALUES (1, 1, 'one', {3, 1}, {street: 'main', num: 5}, "
              "{'pi': 3.14159, 'e': 2.5})")
    s.execute("INSERT INTO cq.t (pk, ck, v) VALUES (1, 2, 'two') USING TIMESTAMP 1600000000000000")
    s.execute("INSERT INTO cq.t (pk, ck, v) VALUES (2, 1, 'deux')")


def test_select_output(cqlsh):
    status, out, err = cqlsh("-e", "SELECT * FROM cq.t WHERE pk = 1")
    assert (status, err) == (0, "")
    assert out == """
 pk | ck | a                        | m                         | s      | v
----+----+--------------------------+---------------------------+--------+-----
  1 |  1 | {street: 'main', num: 5} | {'e': 2.5, 'pi': 3.14159} | {1, 3} | one
  1 |  2 |                     null |                      null |   null | two

(2 rows)
"""


def test_script_file_with_use_functions_and_expand(cqlsh, tmp_path):
    script = tmp_path / "script.cql"
    script.write_text("USE cq;\n"
                      "SELECT ck, v, writetime(v) FROM t WHERE pk = 1 AND ck = 2;\n"
                      "SELECT count(*) FROM t;\n"
                      "EXPAND ON;\n"
                      "SELECT pk, v FROM t WHERE pk = 2;\n")
    status, out, err = cqlsh("-f", str(script))
    assert (status, err) == (0, "")
    assert out == """
 ck | v   | writetime(v)
----+-----+------------------
  2 | two | 1600000000000000

(1 rows)

 count
-------
     3

(1 rows)
EXPAND set to ON

@ Row 1
----+------
 pk | 2
 v  | deux


(1 rows)
"""


def test_describe_table_comes_from_the_server(cqlsh, server):
    status, out, err = cqlsh("-e", "DESCRIBE TABLE cq.t")
    assert (status, err) == (0, "")
    expected = server.server.db.session().execute("DESCRIBE TABLE cq.t").one().create_statement
    assert out == "\n" + expected + "\n"
    assert expected.startswith("CREATE TABLE cq.t (\n    pk int,\n    ck int,")
    status, out, _ = cqlsh("-e", "DESCRIBE KEYSPACES")
    assert "cq" in out.split() and "system_schema" in out.split()
    status, out, _ = cqlsh("-e", "DESCRIBE TYPE cq.addr")
    assert out == "\nCREATE TYPE cq.addr (\n    street text,\n    num int\n);\n"


def test_errors_as_cqlsh_shows_cassandras(cqlsh):
    status, out, err = cqlsh("-e", "SELECT * FROM cq.nope; SELEC 1; "
                             + KEYSPACE_DDL.format("cq") + "; SELECT * FROM cq.t WHERE pk = 'a'")
    assert status == 2
    assert out == ""
    assert err.splitlines() == [
        '<stdin>:1:InvalidRequest: Error from server: code=2200 [Invalid query] message="unconfigured table nope"',
        "<stdin>:1:SyntaxException: line 1:0 no viable alternative at input 'SELEC'",
        "<stdin>:1:AlreadyExists: Keyspace 'cq' already exists",
        '<stdin>:1:InvalidRequest: Error from server: code=2200 [Invalid query] message="Invalid STRING '
        'constant (a) for "pk" of type int"',
    ]


def test_writes_through_cqlsh(cqlsh, server):
    status, out, err = cqlsh("-e", "INSERT INTO cq.t (pk, ck, v) VALUES (3, 1, 'from cqlsh'); "
                             "UPDATE cq.t SET s = s + {9} WHERE pk = 3 AND ck = 1")
    assert (status, err) == (0, "")
    row = server.server.db.session().execute("SELECT v, s FROM cq.t WHERE pk = 3").one()
    assert (row.v, set(row.s)) == ("from cqlsh", {9})


def test_cqlsh_binary_is_installed():
    assert (Path(sys.executable).parent / "cqlsh").exists()
