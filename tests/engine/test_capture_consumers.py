"""The capture stage reads each row a write touches once, for every consumer at once: the CDC log with images,
a changefeed, a materialized view and a secondary index all take the same ``TouchedRow`` of it
(docs/architecture.md, "A write", stage 3.5); a table with none of them has nothing read for them."""

from __future__ import annotations

from collections import Counter

import pytest

from logtide.engine import touched as touched_module
from logtide.engine import capture as capture_module

from ..conftest import rows


@pytest.fixture
def reads(monkeypatch):
    """Every read of a row's stored state by the capture stage, counted by (phase, partition key, clustering key,
    static): phase "before" until the mutation is merged, "after" once it is."""
    from logtide.engine import commit

    seen: Counter = Counter()
    phase = ["before"]
    real, real_apply = touched_module.stored_row, commit.apply_mutation

    def counting(txn, table, token, pk, ck, static):
        if table.keyspace == "ks" and table.name == "t":
            seen[(phase[0], pk, ck, static)] += 1
        return real(txn, table, token, pk, ck, static)

    def applying(*args):
        real_apply(*args)
        phase[0] = "after"

    def reset():
        seen.clear()
        phase[0] = "before"

    monkeypatch.setattr(touched_module, "stored_row", counting)
    monkeypatch.setattr(commit, "apply_mutation", applying)
    seen.reset = reset  # type: ignore[attr-defined]
    return seen


@pytest.fixture
def consumers(monkeypatch):
    """The ``TouchedRow`` mapping each consumer was handed, by consumer."""
    handed: dict[str, list] = {"views": [], "indexes": [], "feeds": []}
    from logtide.engine import commit, indexes

    real_views, real_feeds = commit.update_views, commit.feed_changes
    real_entries = indexes.SecondaryIndexes.update_entries

    def views(txn, images, now, trace=None):
        handed["views"].extend(im.rows for _, im in images)
        return real_views(txn, images, now, trace)

    def feeds(images, now):
        handed["feeds"].extend(im.rows for _, im in images)
        return real_feeds(images, now)

    def entries(images, txn, now):
        handed["indexes"].extend(im.rows for _, im in images)
        return real_entries(images, txn, now)

    monkeypatch.setattr(commit, "update_views", views)
    monkeypatch.setattr(commit, "feed_changes", feeds)
    monkeypatch.setattr(indexes.SecondaryIndexes, "update_entries", staticmethod(entries))
    return handed


def every_consumer(session):
    session.execute("CREATE TABLE ks.t (p int, c int, v int, s int static, PRIMARY KEY (p, c)) "
                    "WITH cdc = {'enabled': true, 'preimage': true, 'postimage': true}")
    session.execute("CREATE MATERIALIZED VIEW ks.t_by_v AS SELECT p, c, v FROM ks.t WHERE v IS NOT NULL AND p IS NOT NULL "
                    "AND c IS NOT NULL PRIMARY KEY (v, p, c)")
    session.execute("CREATE INDEX ON ks.t (v)")
    session.execute("ALTER TABLE ks.t ADD CHANGEFEED updates WITH (FORMAT = 'JSON', MODE = 'NEW_AND_OLD_IMAGES')")


def test_each_touched_row_is_read_once_for_the_cdc_log_a_changefeed_a_view_and_an_index(session, reads, consumers):
    every_consumer(session)
    session.execute("INSERT INTO ks.t (p, c, v) VALUES (1, 1, 10)")
    session.execute("INSERT INTO ks.t (p, c, v) VALUES (1, 2, 20)")
    reads.reset()
    for handed in consumers.values():
        handed.clear()
    session.execute("BEGIN BATCH UPDATE ks.t SET v = 11 WHERE p = 1 AND c = 1; "
                    "UPDATE ks.t SET s = 5 WHERE p = 1; APPLY BATCH")
    assert reads and max(reads.values()) == 1
    assert len(consumers["views"]) == len(consumers["indexes"]) == len(consumers["feeds"]) == 1
    assert consumers["views"][0] is consumers["indexes"][0] is consumers["feeds"][0]
    assert rows(session.execute("SELECT v, c FROM ks.t_by_v WHERE v = 11")) == [(11, 1)]
    assert rows(session.execute("SELECT c FROM ks.t WHERE v = 11")) == [(1,)]
    assert rows(session.execute("SELECT c FROM ks.t WHERE v = 10")) == []


def test_a_partition_deletion_hands_every_consumer_the_rows_it_removes_each_read_once(session, reads, consumers):
    every_consumer(session)
    session.execute("INSERT INTO ks.t (p, c, v, s) VALUES (1, 1, 10, 1)")
    session.execute("INSERT INTO ks.t (p, c, v) VALUES (1, 2, 20)")
    reads.reset()
    session.execute("DELETE FROM ks.t WHERE p = 1")
    assert max(reads.values()) == 1  # each row read at most once before the write and once after it
    assert {k[2:] for k in reads if k[0] == "before"} >= {(b"", True)}  # the static row (the others by a scan)
    assert rows(session.execute("SELECT * FROM ks.t_by_v")) == []
    assert rows(session.execute("SELECT c FROM ks.t WHERE v = 20")) == []


def test_a_table_with_a_view_only_has_its_written_rows_recorded_by_the_merge_not_read_before(session, reads):
    session.execute("CREATE TABLE ks.t (p int, c int, v int, PRIMARY KEY (p, c))")
    session.execute("CREATE MATERIALIZED VIEW ks.mv AS SELECT * FROM ks.t WHERE v IS NOT NULL AND p IS NOT NULL "
                    "AND c IS NOT NULL PRIMARY KEY (v, p, c)")
    session.execute("INSERT INTO ks.t (p, c, v) VALUES (1, 1, 10)")
    session.execute("UPDATE ks.t SET v = 11 WHERE p = 1 AND c = 1")
    assert not reads  # the merge reads each row it writes anyway, and records it before and after
    assert rows(session.execute("SELECT v, p, c FROM ks.mv")) == [(11, 1, 1)]


def test_a_table_without_changefeeds_views_or_indexes_has_nothing_captured(session, reads, monkeypatch):
    session.execute("CREATE TABLE ks.t (p int, c int, v int, PRIMARY KEY (p, c))")
    session.execute("CREATE TABLE ks.other (p int PRIMARY KEY, v int)")
    session.execute("CREATE INDEX ON ks.other (v)")
    captured = []
    real = capture_module.read_before

    def spy(db, mutation, touched):
        out = real(db, mutation, touched)
        captured.append((out, touched.record_after))
        return out

    from logtide.engine import commit
    monkeypatch.setattr(commit, "read_before", spy)
    session.execute("INSERT INTO ks.t (p, c, v) VALUES (1, 1, 10)")
    session.execute("DELETE FROM ks.t WHERE p = 1")
    assert captured == [(None, False), (None, False)]
    assert not reads
    assert session.db.captured_tables() == {session.db.catalog.find_table("ks", "other").store_id}
