"""Lua user-defined functions and aggregates through the real ``logtide serve`` (docs/compatibility.md
"User-defined functions"): cassandra-driver's metadata sees them (schema events with their signatures,
system_schema.functions / aggregates), a runaway function fails its own query while the server keeps serving
others, a prepared call binds its arguments, and functions survive a restart."""

from __future__ import annotations

import threading

import pytest
from cassandra import InvalidRequest

from .conftest import KEYSPACE_DDL, cluster
from .serveproc import Serve

PLUS = "CREATE FUNCTION udfs.plus (a int, b int) RETURNS NULL ON NULL INPUT RETURNS int LANGUAGE lua AS 'return a + b'"
ACC = ("CREATE FUNCTION udfs.acc (st bigint, v int) CALLED ON NULL INPUT RETURNS bigint LANGUAGE lua "
       "AS 'return st + (v or 0)'")
TOTAL = "CREATE AGGREGATE udfs.total (int) SFUNC acc STYPE bigint INITCOND 0"


def start(data_dir) -> Serve:
    srv = Serve("--data-dir", str(data_dir), "--synchronous", "OFF")
    srv.wait_listening()
    return srv


def test_functions_are_seen_by_the_driver_and_survive_a_restart(tmp_path):
    srv = start(tmp_path)
    try:
        c = cluster(srv.port)
        s = c.connect()
        s.execute(KEYSPACE_DDL.format("udfs"))
        s.execute("CREATE TABLE udfs.t (p int, c int, v int, PRIMARY KEY (p, c))")
        for i in range(5):
            s.execute("INSERT INTO udfs.t (p, c, v) VALUES (1, %s, %s)", (i, i * 10))
        for ddl in (PLUS, ACC, TOTAL):
            s.execute(ddl)
        ks = c.metadata.keyspaces["udfs"]
        assert sorted(ks.functions) == ["acc(bigint,int)", "plus(int,int)"]
        assert list(ks.aggregates) == ["total(int)"]
        assert ks.aggregates["total(int)"].state_func == "acc"
        prepared = s.prepare("SELECT udfs.plus(c, ?) FROM udfs.t WHERE p = 1")
        assert [r[0] for r in s.execute(prepared, (100,))] == [100, 101, 102, 103, 104]
        assert s.execute("SELECT udfs.total(v) FROM udfs.t").one()[0] == 100
        c.shutdown()
        assert srv.stop() == 0
        srv = start(tmp_path)
        c = cluster(srv.port)
        s = c.connect()
        assert s.execute("SELECT udfs.total(v) AS sum FROM udfs.t").one().sum == 100
        assert [tuple(r) for r in s.execute("SELECT function_name, argument_types FROM system_schema.functions "
                                            "WHERE keyspace_name = 'udfs'")] == [("acc", ["bigint", "int"]),
                                                                                  ("plus", ["int", "int"])]
        s.execute("DROP AGGREGATE udfs.total")
        assert "total(int)" not in c.metadata.keyspaces["udfs"].aggregates
        c.shutdown()
    finally:
        srv.stop()


def test_a_runaway_function_fails_its_query_and_the_server_keeps_serving(tmp_path):
    srv = start(tmp_path)
    try:
        c = cluster(srv.port)
        s = c.connect()
        s.execute(KEYSPACE_DDL.format("udfs"))
        s.execute("CREATE TABLE udfs.t (p int, c int, v int, PRIMARY KEY (p, c))")
        s.execute("INSERT INTO udfs.t (p, c, v) VALUES (1, 1, 1)")
        s.execute("CREATE FUNCTION udfs.spin (v int) CALLED ON NULL INPUT RETURNS int LANGUAGE lua "
                  "AS 'while true do end'")
        s.execute(PLUS)
        errors: list[str] = []

        def spin() -> None:
            for _ in range(5):
                try:
                    s.execute("SELECT udfs.spin(v) FROM udfs.t")
                except InvalidRequest as e:
                    errors.append(str(e))
        runaways = [threading.Thread(target=spin) for _ in range(3)]
        for t in runaways:
            t.start()
        for _ in range(20):  # other queries are answered meanwhile
            assert s.execute("SELECT udfs.plus(c, v) FROM udfs.t").one()[0] == 2
        for t in runaways:
            t.join(60)
        assert len(errors) == 15 and all("lua execution timeout: " in e for e in errors), errors
        c.shutdown()
    finally:
        assert srv.stop() == 0
