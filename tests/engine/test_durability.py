"""Storage: acknowledged writes survive SIGKILL, statements are atomic, one writer per directory."""

from __future__ import annotations

import random
import subprocess
import sys
import textwrap

import pytest

import logtide
from logtide.errors import InvalidRequest, StorageLocked

from ..sigkill import run_and_kill

WRITER = textwrap.dedent("""
    import sys
    import logtide
    db = logtide.open(sys.argv[1])
    s = db.session()
    s.execute("CREATE KEYSPACE IF NOT EXISTS ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}")
    s.execute("CREATE TABLE IF NOT EXISTS ks.t (pk int, ck int, v int, l list<int>, PRIMARY KEY (pk, ck))")
    start = int(sys.argv[2])
    print("ready", flush=True)
    seq = start
    while True:
        s.execute("BEGIN BATCH "
                  f"INSERT INTO ks.t (pk, ck, v) VALUES ({seq % 7}, {seq}, {seq}); "
                  f"INSERT INTO ks.t (pk, ck, v) VALUES ({seq % 7 + 100}, {seq}, {seq}); "
                  f"UPDATE ks.t SET l = l + [{seq}] WHERE pk = 1000 AND ck = 0; "
                  "APPLY BATCH")
        print(seq, flush=True)
        seq += 1
""")


def test_acknowledged_writes_survive_sigkill_and_nothing_partial_is_visible(tmp_path):
    data = tmp_path / "data"
    script = tmp_path / "writer.py"
    script.write_text(WRITER)
    rng = random.Random(7)
    acked = -1
    next_seq = 0
    kills = 0
    for _ in range(20):
        acked = max(acked, run_and_kill(script, data, next_seq, rng))
        kills += 1
        with logtide.open(data) as db:
            s = db.session()
            seen = {}
            for r in s.execute("SELECT pk, ck, v FROM ks.t"):
                if r.pk == 1000:
                    continue
                seen.setdefault(r.ck, set()).add(r.pk)
            for seq in range(acked + 1):
                assert seen.get(seq) == {seq % 7, seq % 7 + 100}, f"acknowledged write {seq} lost"
            for seq, pks in seen.items():
                assert pks == {seq % 7, seq % 7 + 100}, f"partial batch {seq} visible"
            lst = s.execute("SELECT l FROM ks.t WHERE pk = 1000 AND ck = 0").one()
            listed = set(lst.l) if lst is not None and lst.l else set()
            assert listed == set(seen), "list appends must commit with their batch"
            next_seq = max(seen, default=-1) + 1
    assert kills >= 20 and acked > 20


def test_second_writer_process_is_refused(tmp_path):
    data = tmp_path / "data"
    with logtide.open(data):
        out = subprocess.run([sys.executable, "-c", f"import logtide; logtide.open({str(data)!r})"],
                             capture_output=True, text=True)
        assert out.returncode != 0
        assert "in use by another logtide process" in out.stderr
    # released on close: a new writer may open it
    with logtide.open(data):
        pass


def test_second_open_in_same_process_is_refused(tmp_path):
    with logtide.open(tmp_path / "d"):
        with pytest.raises(StorageLocked):
            logtide.open(tmp_path / "d")


def test_data_and_schema_survive_reopen(tmp_path):
    with logtide.open(tmp_path / "d") as db:
        s = db.session()
        s.execute("CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}")
        s.execute("CREATE TYPE ks.ut (a int)")
        s.execute("CREATE TABLE ks.t (pk int PRIMARY KEY, u ut, m map<int, text>)")
        s.execute("UPDATE ks.t SET u.a = 1, m[1] = 'x' WHERE pk = 0")
    with logtide.open(tmp_path / "d") as db:
        r = db.session("ks").execute("SELECT u, m FROM t").one()
        assert r.u.a == 1 and dict(r.m) == {1: "x"}


def test_failed_statement_changes_nothing(tmp_path):
    with logtide.open(tmp_path / "d") as db:
        s = db.session()
        s.execute("CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}")
        s.execute("CREATE TABLE ks.t (pk int, ck int, l list<int>, PRIMARY KEY (pk, ck))")
        s.execute("INSERT INTO ks.t (pk, ck, l) VALUES (0, 0, [1])")
        with pytest.raises(InvalidRequest):
            s.execute("BEGIN BATCH UPDATE ks.t SET l = l + [2] WHERE pk = 0 AND ck = 0; "
                      "UPDATE ks.t SET l[7] = 3 WHERE pk = 0 AND ck = 0; APPLY BATCH")
        assert s.execute("SELECT l FROM ks.t").one().l == [1]


def test_readers_in_other_processes_see_consistent_snapshots(tmp_path):
    from logtide.storage.sqlite import Store
    with logtide.open(tmp_path / "d") as db:
        s = db.session()
        s.execute("CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}")
        s.execute("CREATE TABLE ks.t (pk int PRIMARY KEY, v int)")
        s.execute("INSERT INTO ks.t (pk, v) VALUES (1, 1)")
        reader = Store.open(tmp_path / "d", readonly=True)
        try:
            table = db.catalog.table("ks", "t")
            with reader.snapshot() as txn:
                before = list(txn.partitions(table.store_id))
                s.execute("INSERT INTO ks.t (pk, v) VALUES (2, 2)")
                during = list(txn.partitions(table.store_id))
            with reader.snapshot() as txn:
                after = list(txn.partitions(table.store_id))
        finally:
            reader.close()
        assert len(before) == len(during) == 1 and len(after) == 2


def test_concurrent_writes_share_commits_and_a_failing_one_changes_nothing(tmp_path):
    import threading
    from logtide.storage.group_commit import GroupCommitter

    with logtide.open(tmp_path / "d") as db:
        s = db.session()
        s.execute("CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}")
        s.execute("CREATE TABLE ks.t (pk int, ck int, l list<int>, PRIMARY KEY (pk, ck))")
        errors: list[Exception] = []
        commits = 0
        real_write = db.store.write

        def counting_write():
            nonlocal commits
            commits += 1
            return real_write()

        db.store.write = counting_write  # type: ignore[method-assign]

        def writer(k: int) -> None:
            ws = db.session("ks")
            for i in range(50):
                try:
                    if i % 10 == 9:  # fails: the list has no element 5
                        ws.execute(f"UPDATE t SET l[5] = 1 WHERE pk = {k} AND ck = {i}")
                    else:
                        ws.execute(f"UPDATE t SET l = l + [{i}] WHERE pk = {k} AND ck = 0")
                except InvalidRequest as e:
                    errors.append(e)

        threads = [threading.Thread(target=writer, args=(k,)) for k in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert len(errors) == 40
        for k in range(8):
            assert s.execute(f"SELECT l FROM ks.t WHERE pk = {k} AND ck = 0").one().l == [i for i in range(50) if i % 10 != 9]
        assert commits < 400  # 400 statements shared commits
        assert isinstance(db.committer, GroupCommitter)
