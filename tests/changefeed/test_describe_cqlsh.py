"""DESCRIBE round trip through the real cqlsh (spec 004, "DESCRIBE TABLE prints each changefeed").

A real ``logtide serve`` on an ephemeral port and cqlsh from PyPI: ``DESCRIBE TABLE`` prints the ``CREATE
TABLE`` and then one ``ALTER TABLE ... ADD CHANGEFEED`` per changefeed (and ``ALTER CHANGEFEED ... DISABLE``
for a disabled one); feeding that text back through ``cqlsh -f`` after a DROP recreates the same changefeeds,
as ``system_logtide.changefeeds`` shows them.  The same holds for ``DESCRIBE KEYSPACE`` and ``DESCRIBE SCHEMA``.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from ..ops.serving import ServeProcess
from ..server.conftest import cluster, run_cqlsh

SCHEMA = """
CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1};
CREATE TYPE ks.addr (street text, num int);
CREATE TABLE ks.t (pk int, ck text, s int STATIC, v int, a frozen<addr>, PRIMARY KEY (pk, ck))
    WITH CLUSTERING ORDER BY (ck DESC) AND cdc = {'enabled': true};
INSERT INTO ks.t (pk, ck, v) VALUES (1, 'a', 1);
ALTER TABLE ks.t ADD CHANGEFEED imgs WITH (MODE = 'NEW_AND_OLD_IMAGES', FORMAT = 'JSON', VIRTUAL_TIMESTAMPS = TRUE,
    RESOLVED_TIMESTAMPS = Interval('PT10S'), SCHEMA_CHANGES = TRUE, RETENTION_PERIOD = Interval('P2DT30M'),
    TOPIC_MIN_ACTIVE_PARTITIONS = 3);
ALTER TABLE ks.t ADD CHANGEFEED "dbz-1.x" WITH (MODE = 'NEW_IMAGE', FORMAT = 'DEBEZIUM_JSON', INITIAL_SCAN = TRUE,
    RETENTION_PERIOD = Interval('PT90M'));
ALTER TABLE ks.t ADD CHANGEFEED Dyn WITH (mode = 'old_image', format = 'DynamoDB_Streams_JSON',
    AWS_REGION = 'it''s-north-1', RETENTION_PERIOD = Interval('PT45S'), TOPIC_MIN_ACTIVE_PARTITIONS = 2);
ALTER TABLE ks.t ADD CHANGEFEED off WITH (MODE = 'UPDATES', FORMAT = 'JSON');
ALTER TABLE ks.t ALTER CHANGEFEED off DISABLE;
"""

FEEDS = """\
ALTER TABLE ks.t ADD CHANGEFEED imgs WITH (MODE = 'NEW_AND_OLD_IMAGES', FORMAT = 'JSON', VIRTUAL_TIMESTAMPS = TRUE, \
BARRIERS_INTERVAL = Interval('PT10S'), SCHEMA_CHANGES = TRUE, RETENTION_PERIOD = Interval('PT2910M'), \
TOPIC_MIN_ACTIVE_PARTITIONS = 3);
ALTER TABLE ks.t ADD CHANGEFEED "dbz-1.x" WITH (MODE = 'NEW_IMAGE', FORMAT = 'DEBEZIUM_JSON', INITIAL_SCAN = TRUE, \
RETENTION_PERIOD = Interval('PT90M'), TOPIC_MIN_ACTIVE_PARTITIONS = 1);
ALTER TABLE ks.t ADD CHANGEFEED dyn WITH (MODE = 'OLD_IMAGE', FORMAT = 'DYNAMODB_STREAMS_JSON', \
AWS_REGION = 'it''s-north-1', RETENTION_PERIOD = Interval('PT45S'), TOPIC_MIN_ACTIVE_PARTITIONS = 2);
ALTER TABLE ks.t ADD CHANGEFEED off WITH (MODE = 'UPDATES', FORMAT = 'JSON', RETENTION_PERIOD = Interval('PT24H'), \
TOPIC_MIN_ACTIVE_PARTITIONS = 1);
ALTER TABLE ks.t ALTER CHANGEFEED off DISABLE;"""

# what identifies a changefeed's definition (feed_id is new on every ADD; scan progress depends on timing)
COMPARED = ("keyspace_name, table_name, changefeed_name, topic, mode, format, state, partitions, virtual_timestamps, "
            "barriers_interval_ms, retention_seconds, initial_scan, aws_region, schema_changes, settings")


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """(port, cqlsh home, driver session) of a real ``logtide serve`` holding SCHEMA."""
    data = tmp_path_factory.mktemp("describe-data")
    home = tmp_path_factory.mktemp("describe-home")
    with ServeProcess.logtide("--data-dir", str(data)) as srv:
        port = srv.wait_listening()
        status, out, err = run_cqlsh(port, home, "-e", SCHEMA.strip())
        assert (status, err) == (0, "")
        c = cluster(port)
        s = c.connect()
        try:
            yield port, home, s
        finally:
            c.shutdown()
            srv.stop()


def _feeds(session) -> list[tuple]:
    """The compared columns of every changefeed, once no initial scan is running any more."""
    deadline = time.monotonic() + 60
    while True:
        rows = [tuple(r) for r in session.execute(f"SELECT {COMPARED} FROM system_logtide.changefeeds")]
        if all("INITIAL_SCAN" not in r for r in rows) or time.monotonic() > deadline:
            return rows
        time.sleep(0.1)


def _cqlsh(port: int, home: Path, *args: str) -> str:
    status, out, err = run_cqlsh(port, home, *args)
    assert (status, err) == (0, ""), err
    return out


def _replay(port: int, home: Path, drop: str, text: str) -> None:
    """DROP something, then feed a DESCRIBE output back through ``cqlsh -f``."""
    _cqlsh(port, home, "-e", drop)
    script = home / "described.cql"
    script.write_text(text)
    _cqlsh(port, home, "-f", str(script))


def test_describe_table_prints_the_create_table_then_each_changefeed(served):
    port, home, _ = served
    out = _cqlsh(port, home, "-e", "DESCRIBE TABLE ks.t")
    assert out.startswith("\nCREATE TABLE ks.t (\n    pk int,\n    ck text,\n    s int STATIC,")
    create, feeds = out.split(";\nALTER TABLE", 1)
    assert "tombstone_gc" in create and "ADD CHANGEFEED" not in create
    # the table has CDC on: as ScyllaDB, its log's properties follow as a second statement
    feeds, log = ("ALTER TABLE" + feeds).split("\n\nALTER TABLE ks.t_scylla_cdc_log WITH ", 1)
    assert feeds == FEEDS + "\n"
    assert log.startswith("bloom_filter_fp_chance = 0.01\n") and log.endswith(";\n\n")


@pytest.mark.parametrize("describe, drop", [
    ("DESCRIBE TABLE ks.t", "DROP TABLE ks.t"),
    ("DESCRIBE KEYSPACE ks", "DROP KEYSPACE ks"),
    ("DESCRIBE SCHEMA", "DROP KEYSPACE ks"),
])
def test_describe_output_fed_back_through_cqlsh_recreates_identical_changefeeds(served, describe, drop):
    port, home, session = served
    before = _feeds(session)
    assert [r[2] for r in before] == ["dbz-1.x", "dyn", "imgs", "off"]
    assert [r[6] for r in before] == ["ENABLED", "ENABLED", "ENABLED", "DISABLED"]
    text = _cqlsh(port, home, "-e", describe)
    assert FEEDS in text
    _replay(port, home, drop, text)
    assert _feeds(session) == before
    assert _cqlsh(port, home, "-e", describe) == text
