"""kill -9 during writes and during an initial scan: base table, CDC log and changefeeds agree (spec 004).

No record without its write, no acknowledged write without its records; offsets contiguous from 0; no
duplicate; an interrupted initial scan resumes and exports each row exactly once.
"""

from __future__ import annotations

import json
import random
import textwrap
import time

import logtide

from ..sigkill import run_and_kill

WRITER = textwrap.dedent("""
    import sys
    import logtide
    db = logtide.open(sys.argv[1])
    s = db.session()
    s.execute("CREATE KEYSPACE IF NOT EXISTS ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}")
    if db.catalog.find_table("ks", "t") is None:
        s.execute("CREATE TABLE ks.t (pk int, ck int, v int, PRIMARY KEY (pk, ck)) WITH cdc = {'enabled': true}")
        s.execute("ALTER TABLE ks.t ADD CHANGEFEED img WITH (MODE = 'NEW_AND_OLD_IMAGES', FORMAT = 'JSON', "
                  "VIRTUAL_TIMESTAMPS = TRUE, TOPIC_MIN_ACTIVE_PARTITIONS = 3)")
        s.execute("ALTER TABLE ks.t ADD CHANGEFEED dbz WITH (MODE = 'NEW_IMAGE', FORMAT = 'DEBEZIUM_JSON')")
    seq = int(sys.argv[2])
    print("ready", flush=True)
    while True:
        s.execute("BEGIN BATCH "
                  f"INSERT INTO ks.t (pk, ck, v) VALUES ({seq % 7}, {seq}, {seq}); "
                  f"UPDATE ks.t SET v = {seq} WHERE pk = 1000 AND ck = 0; "
                  "APPLY BATCH")
        print(seq, flush=True)
        seq += 1
""")


def _check_offsets(reader, path: str) -> list:
    recs = []
    for p in reader.partitions(path):
        got = reader.read(path, p.partition, 0, max_records=1_000_000, max_bytes=1 << 40)
        assert [r.offset for r in got] == list(range(p.end_offset)), "offsets must be contiguous from 0"
        recs.extend(got)
    return recs


def test_kill_during_writes_base_table_cdc_log_and_feeds_agree(tmp_path):
    data = tmp_path / "data"
    script = tmp_path / "writer.py"
    script.write_text(WRITER)
    rng = random.Random(11)
    acked = -1
    next_seq = 0
    for _ in range(8):
        acked = max(acked, run_and_kill(script, data, next_seq, rng))
        with logtide.open(data) as db:
            s = db.session()
            base = {r.ck for r in s.execute("SELECT pk, ck FROM ks.t") if r.pk != 1000}
            assert set(range(acked + 1)) <= base, "an acknowledged write was lost"
            log = {r.ck for r in s.execute("SELECT pk, ck FROM ks.t_scylla_cdc_log") if r.pk != 1000}
            assert log == base
            img = [json.loads(r.value) for r in _check_offsets(db.changefeeds, "ks/t/img")]
            keys = [tuple(v["key"]) for v in img if v["key"][0] != 1000]
            assert len(keys) == len(set(keys)), "a record was written twice"
            assert {k[1] for k in keys} == base, "records and base rows disagree"
            hot = [v for v in img if v["key"][0] == 1000]
            assert len(hot) == len(base)  # the row every batch updates: one record per batch
            by_tx = {}
            for v in img:
                by_tx.setdefault(tuple(v["ts"]), set()).add(v["key"][0] == 1000)
            assert all(flags == {True, False} for flags in by_tx.values()), "a batch's records share one timestamp"
            dbz = _check_offsets(db.changefeeds, "ks/t/dbz")
            assert len(dbz) == 2 * len(base)
            next_seq = max(base, default=-1) + 1
    assert acked > 10


SCANNER = textwrap.dedent("""
    import sys
    import logtide
    db = logtide.open(sys.argv[1])
    db.feeds.pause()  # the scan advances one partition every other write, so a kill lands mid-scan
    s = db.session()
    if db.catalog.find_table("ks", "t") is None:
        s.execute("CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}")
        s.execute("CREATE TABLE ks.t (k int PRIMARY KEY, v int)")
        for k in range(300):
            s.execute(f"INSERT INTO ks.t (k, v) VALUES ({k}, {k})")
        s.execute("ALTER TABLE ks.t ADD CHANGEFEED f WITH (MODE = 'NEW_AND_OLD_IMAGES', FORMAT = 'JSON', "
                  "VIRTUAL_TIMESTAMPS = TRUE, INITIAL_SCAN = TRUE)")
    seq = int(sys.argv[2])
    print("ready", flush=True)
    while True:
        s.execute(f"UPDATE ks.t SET v = {100000 + seq} WHERE k = {(seq * 37) % 300}")
        s.execute(f"INSERT INTO ks.t (k, v) VALUES ({1000 + seq}, 0)")
        if seq % 2 == 0:
            db.feeds.scan_step(1)
        print(seq, flush=True)
        seq += 1
""")


def test_kill_during_an_initial_scan_resumes_it_and_exports_each_row_once(tmp_path):
    data = tmp_path / "data"
    script = tmp_path / "scanner.py"
    script.write_text(SCANNER)
    rng = random.Random(5)
    seq = 0
    states = []
    for _ in range(5):
        seq = max(seq, run_and_kill(script, data, seq * 1000, rng) + 1)
        with logtide.open(data) as db:
            db.feeds.pause()
            states.append(db.changefeeds.describe("ks/t/f").state)
    assert "INITIAL_SCAN" in states  # the kills did interrupt the scan
    with logtide.open(data) as db:
        deadline = time.monotonic() + 120
        while db.changefeeds.describe("ks/t/f").state != "ENABLED" and time.monotonic() < deadline:
            time.sleep(0.05)
        assert db.changefeeds.describe("ks/t/f").state == "ENABLED"
        snapshot = list(db.catalog.table("ks", "t").changefeeds[0].snapshot)
        recs = [json.loads(r.value) for r in _check_offsets(db.changefeeds, "ks/t/f")]
        by_key: dict[int, list[dict]] = {}
        for v in recs:
            by_key.setdefault(v["key"][0], []).append(v)
        for k in range(300):
            assert [v["ts"] == snapshot for v in by_key[k]].count(True) == 1, f"row {k} exported once"
            assert by_key[k][0]["ts"] == snapshot and by_key[k][0]["newImage"] == {"v": k}, "source value first"
        assert all(v["ts"] != snapshot for k, vs in by_key.items() if k >= 1000 for v in vs)
        table = {r.k: r.v for r in db.session().execute("SELECT k, v FROM ks.t")}
        replayed = {k: vs[-1]["newImage"]["v"] for k, vs in by_key.items() if "newImage" in vs[-1]}
        assert replayed == table
