"""``logtide replay``: CQL-literal differences, a summary count, and a clear message without CDC."""

from __future__ import annotations

import logtide
from logtide.cli import main

CDC = "WITH cdc = {'enabled': true}"


def make_source(path) -> None:
    with logtide.open(path) as db:
        s = db.session()
        s.execute("CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}")
        s.execute("CREATE TYPE ks.addr (street text, no int)")
        s.execute("CREATE TABLE ks.t (pk int, ck text, v text, d double, ts timestamp, tags set<text>, "
                  f"m map<text, int>, a addr, s int static, PRIMARY KEY (pk, ck)) {CDC}")
        s.execute("CREATE TABLE ks.plain (pk int PRIMARY KEY, v int)")
        for i in range(3):
            s.execute(f"INSERT INTO ks.t (pk, ck, v, d, ts, tags, m, a, s) VALUES ({i}, 'c''{i}', 'it''s {i}', "
                      f"{i}.25, '2024-01-0{i + 1} 00:00:00+0000', {{'x', 'y'}}, {{'k': {i}}}, "
                      f"{{street: 'main', no: {i}}}, 7) USING TIMESTAMP 1000")


def test_replay_then_verify_reports_no_difference(tmp_path, capsys):
    make_source(tmp_path)
    assert main(["replay", "ks.t", "--to", "ks.copy", "--verify", "--data-dir", str(tmp_path)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("replayed ") and out[0].endswith("from ks.t into ks.copy")
    assert out[-1] == "verify: 0 differences between ks.t and ks.copy"


def test_verify_prints_one_cql_line_per_difference_with_a_count(tmp_path, capsys):
    make_source(tmp_path)
    other = tmp_path / "replica"
    with logtide.open(other) as db:  # a stale replica: one changed cell, one extra row, one missing row
        s = db.session()
        s.execute("CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}")
        s.execute("CREATE TYPE ks.addr (street text, no int)")
        s.execute("CREATE TABLE ks.t (pk int, ck text, v text, d double, ts timestamp, tags set<text>, "
                  "m map<text, int>, a addr, s int static, PRIMARY KEY (pk, ck))")
        s.execute("INSERT INTO ks.t (pk, ck, v) VALUES (9, 'z', 'extra') USING TIMESTAMP 5")
    with logtide.open(tmp_path) as db:  # the source changes after the replica was made: still replayed
        db.session().execute("UPDATE ks.t USING TIMESTAMP 2000 SET v = 'new' WHERE pk = 1 AND ck = 'c''1'")
    assert main(["replay", "ks.t", "--target-data-dir", str(other), "--data-dir", str(tmp_path)]) == 0
    with logtide.open(other) as db:
        db.session().execute("UPDATE ks.t USING TIMESTAMP 3000 SET d = 0.1 WHERE pk = 2 AND ck = 'c''2'")
        db.session().execute("DELETE FROM ks.t USING TIMESTAMP 3000 WHERE pk = 0 AND ck = 'c''0'")
    capsys.readouterr()
    # a second replay into the damaged replica, verifying: the deleted row stays deleted (newer tombstone)
    assert main(["replay", "ks.t", "--target-data-dir", str(other), "--verify", "--data-dir", str(tmp_path)]) == 1
    lines = capsys.readouterr().out.splitlines()[1:]
    assert lines == [
        "pk = 0 AND ck = 'c''0': row missing from the replica",
        "pk = 2 AND ck = 'c''2': d: source 2.25 (writetime 1000), replica 0.1 (writetime 3000)",
        "pk = 9 AND ck = 'z': row only in the replica",
        "verify: 3 differences between ks.t and ks.t",
    ]


def test_differences_show_collections_udts_and_ttls_as_literals(tmp_path, capsys):
    make_source(tmp_path)
    assert main(["replay", "ks.t", "--to", "ks.copy", "--data-dir", str(tmp_path)]) == 0
    with logtide.open(tmp_path) as db:
        s = db.session()
        s.execute("UPDATE ks.copy USING TIMESTAMP 4000 AND TTL 100 SET tags = tags + {'z'}, m['q'] = 5, "
                  "a = {street: 'side', no: 1}, ts = '2030-01-01 00:00:00+0000' WHERE pk = 1 AND ck = 'c''1'")
    capsys.readouterr()
    assert main(["replay", "ks.t", "--to", "ks.copy", "--verify", "--data-dir", str(tmp_path)]) == 1
    lines = capsys.readouterr().out.splitlines()[1:]
    where = "pk = 1 AND ck = 'c''1'"
    assert lines == [
        f"{where}: a: source {{street: 'main', no: 1}} (writetime 1000), "
        f"replica {{street: 'side', no: 1}} (writetime 4000, ttl 100)",
        f"{where}: m: source {{'k': 1}} (writetime 1000), replica {{'k': 1, 'q': 5}} (writetimes 1000, 4000, ttl 100)",
        f"{where}: tags: source {{'x', 'y'}} (writetime 1000), "
        f"replica {{'x', 'y', 'z'}} (writetimes 1000, 4000, ttl 100)",
        f"{where}: ts: source '2024-01-02 00:00:00.000000+0000' (writetime 1000), "
        f"replica '2030-01-01 00:00:00.000000+0000' (writetime 4000, ttl 100)",
        "verify: 4 differences between ks.t and ks.copy",
    ]


def test_replaying_a_table_without_cdc_says_so_and_creates_nothing(tmp_path, capsys):
    make_source(tmp_path)
    assert main(["replay", "ks.plain", "--to", "ks.copy", "--data-dir", str(tmp_path)]) == 2
    assert capsys.readouterr().err == "logtide replay: error: CDC is not enabled on ks.plain\n"
    with logtide.open(tmp_path) as db:
        assert db.catalog.find_table("ks", "copy") is None


def test_replay_is_quiet_when_piped(tmp_path, capsys):
    make_source(tmp_path)
    assert main(["replay", "ks.t", "--to", "ks.copy", "--data-dir", str(tmp_path)]) == 0
    assert capsys.readouterr().err == ""
