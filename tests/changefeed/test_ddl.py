"""Changefeed DDL in YDB's syntax through CQL: validation, catalog, DESCRIBE, system table (spec 004)."""

from __future__ import annotations

import pytest

import logtide
from logtide.errors import InvalidRequest, SyntaxException

from .feedutil import add_feed, values


@pytest.fixture
def t(session):
    session.execute("CREATE TABLE t (k int, c int, v text, s int static, PRIMARY KEY (k, c))")
    return session


def test_ydb_ddl_pasted_with_backquoted_names_creates_the_changefeed(t):
    t.execute("ALTER TABLE `t` ADD CHANGEFEED `updates_feed` WITH (FORMAT = 'JSON', MODE = 'UPDATES')")
    t.execute("ALTER TABLE t ADD CHANGEFEED f2 WITH (FORMAT='JSON', MODE='UPDATES', RETENTION_PERIOD = Interval('PT12H'))")
    t.execute("ALTER TABLE t ADD CHANGEFEED f3 WITH (FORMAT='JSON', MODE='UPDATES', VIRTUAL_TIMESTAMPS = TRUE, "
              "BARRIERS_INTERVAL = Interval('PT10S'))")
    t.execute("ALTER TABLE t ADD CHANGEFEED f4 WITH (format='json', mode='updates', resolved_timestamps = Interval('PT1S'))")
    table = t.db.catalog.table("ks", "t")
    assert [f.name for f in table.changefeeds] == ["updates_feed", "f2", "f3", "f4"]
    assert table.changefeeds[1].options.retention_seconds == 12 * 3600
    assert table.changefeeds[2].options.barriers_interval_ms == 10_000
    assert table.changefeeds[3].options.barriers_interval_ms == 1000


@pytest.mark.parametrize("settings, message", [
    ("MODE = 'UPDATES'", "Invalid stream format: 0"),
    ("FORMAT = 'JSON'", "Invalid stream mode: 0"),
    ("MODE = 'FOO', FORMAT = 'JSON'", "Unknown changefeed mode: FOO"),
    ("MODE = 'UPDATES', FORMAT = 'JSON', FOO = 1", "Unknown changefeed setting: FOO"),
    ("MODE = 'UPDATES', FORMAT = 'DEBEZIUM_JSON'", "DEBEZIUM_JSON format incompatible with specified stream mode"),
    ("MODE = 'UPDATES', FORMAT = 'DYNAMODB_STREAMS_JSON'",
     "DYNAMODB_STREAMS_JSON format incompatible with specified stream mode"),
    ("MODE = 'NEW_IMAGE', FORMAT = 'DEBEZIUM_JSON', VIRTUAL_TIMESTAMPS = TRUE",
     "VIRTUAL_TIMESTAMPS incompatible with specified stream format"),
    ("MODE = 'NEW_IMAGE', FORMAT = 'DEBEZIUM_JSON', BARRIERS_INTERVAL = Interval('PT1S')",
     "RESOLVED_TIMESTAMPS incompatible with specified stream format"),
    ("MODE = 'NEW_IMAGE', FORMAT = 'JSON', AWS_REGION = 'eu'", "AWS_REGION option incompatible with specified stream format"),
    ("MODE = 'UPDATES', FORMAT = 'JSON', TOPIC_MIN_ACTIVE_PARTITIONS = 0", "Topic partitions count must be greater than 0"),
    ("MODE = 'UPDATES', FORMAT = 'JSON', TOPIC_MIN_ACTIVE_PARTITIONS = -3", "Topic partitions count must be greater than 0"),
    ("MODE = 'UPDATES', FORMAT = 'JSON', VIRTUAL_TIMESTAMPS = 'yes'", "Literal of Bool type is expected for VIRTUAL_TIMESTAMPS"),
    ("MODE = 'UPDATES', FORMAT = 'JSON', RETENTION_PERIOD = 5", "Literal of Interval type is expected for RETENTION_PERIOD"),
    ("MODE = 'UPDATES', FORMAT = 'JSON', RETENTION_PERIOD = Interval('PT721H')", "longer than the maximum of 30 days"),
    ("MODE = UPDATES, FORMAT = 'JSON'", "Literal of String type is expected for MODE"),
])
def test_every_refused_setting_is_refused_with_ydbs_message_and_changes_nothing(t, settings, message):
    before = t.db.catalog
    with pytest.raises(InvalidRequest, match=message):
        t.execute(f"ALTER TABLE t ADD CHANGEFEED f WITH ({settings})")
    assert t.db.catalog is before


def refused_exactly(t, statement: str, message: str) -> None:
    before = t.db.catalog
    with pytest.raises(InvalidRequest) as e:
        t.execute(statement)
    assert str(e.value) == message
    assert t.db.catalog is before


def test_a_name_already_used_is_refused_in_a_cql_users_words_with_ydbs_message(t):
    add_feed(t, "t", "f")
    refused_exactly(t, "ALTER TABLE t ADD CHANGEFEED f WITH (MODE = 'UPDATES', FORMAT = 'JSON')",
                    "changefeed 'f' already exists on ks.t (YDB: Check failed: path: 'ks/t/f', error: path exist, "
                    "request accepts it)")


def test_alter_changefeed_set_is_refused_as_ydb_refuses_it_and_says_what_to_do(t):
    add_feed(t, "t", "f")
    refused_exactly(t, "ALTER TABLE t ALTER CHANGEFEED f SET (retention_period = Interval('PT1H'))",
                    "RETENTION_PERIOD alter is not supported (a changefeed's settings are fixed when it is added: "
                    "DROP CHANGEFEED f and ADD it again)")


def test_unknown_changefeed_cannot_be_dropped_or_disabled_and_the_message_names_the_tables_changefeeds(t):
    ydb = "(YDB: Check failed: path: 'ks/t/nope', error: path hasn't been resolved, nearest resolved path: 'ks/t')"
    refused_exactly(t, "ALTER TABLE t DROP CHANGEFEED nope",
                    f"changefeed 'nope' does not exist on ks.t, which has no changefeed {ydb}")
    add_feed(t, "t", "b")
    add_feed(t, "t", "a")
    refused_exactly(t, "ALTER TABLE t ALTER CHANGEFEED nope DISABLE",
                    f"changefeed 'nope' does not exist on ks.t, whose changefeeds are a, b {ydb}")


def test_the_changefeed_limit_names_the_table_and_the_limit(t):
    for n in range(32):
        add_feed(t, "t", f"f{n}")
    refused_exactly(t, "ALTER TABLE t ADD CHANGEFEED one_more WITH (MODE = 'UPDATES', FORMAT = 'JSON')",
                    "cdc streams count has reached maximum value in the table (ks.t already has 32 changefeeds, "
                    "the most a table can have)")


def test_consumer_setting_messages_list_the_valid_settings(t):
    add_feed(t, "t", "f")
    refused_exactly(t, "ALTER TOPIC `ks/t/f` ADD CONSUMER c WITH (colour = 'red')",
                    "Unknown consumer setting: colour (valid settings: important, read_from, supported_codecs)")
    refused_exactly(t, "ALTER TOPIC `ks/t/f` ADD CONSUMER c WITH (important = 1)",
                    "Literal of Bool type is expected for important (got 1; write important = TRUE or FALSE)")


def test_changefeeds_are_refused_on_cdc_log_and_system_tables(t):
    t.execute("CREATE TABLE logged (k int PRIMARY KEY, v int) WITH cdc = {'enabled': true}")
    with pytest.raises(InvalidRequest, match="CDC log table"):
        add_feed(t, "logged_scylla_cdc_log", "f")
    with pytest.raises(InvalidRequest, match="system table"):
        add_feed(t, "system.local", "f")
    with pytest.raises(InvalidRequest, match="unconfigured table"):
        add_feed(t, "missing", "f")


def test_a_column_named_changefeed_is_still_a_column(t):
    t.execute("ALTER TABLE t ADD changefeed int")
    assert t.db.catalog.table("ks", "t").column("changefeed") is not None
    t.execute("ALTER TABLE t DROP changefeed")
    assert t.db.catalog.table("ks", "t").column("changefeed") is None


def test_disable_is_terminal_and_keeps_old_records(t):
    path = add_feed(t, "t", "f")
    t.execute("INSERT INTO t (k, c, v) VALUES (1, 1, 'a')")
    t.execute("ALTER TABLE t ALTER CHANGEFEED f DISABLE")
    t.execute("INSERT INTO t (k, c, v) VALUES (1, 2, 'b')")
    assert [v["key"] for v in values(t.db.changefeeds, path)] == [[1, 1]]
    assert t.db.changefeeds.describe(path).state == "DISABLED"


def test_drop_changefeed_and_drop_table_remove_the_records(t):
    path = add_feed(t, "t", "f")
    t.execute("INSERT INTO t (k, c, v) VALUES (1, 1, 'a')")
    feed_id = t.db.catalog.table("ks", "t").changefeeds[0].feed_id
    t.execute("ALTER TABLE t DROP CHANGEFEED f")
    with t.db.store.snapshot() as txn:
        assert txn.sql("SELECT COUNT(*) FROM feed_records WHERE feed_id = ?", (feed_id,))[0][0] == 0
    path = add_feed(t, "t", "f")  # the same name again: a new topic with a new feed id
    t.execute("INSERT INTO t (k, c, v) VALUES (1, 1, 'a')")
    new_id = t.db.catalog.table("ks", "t").changefeeds[0].feed_id
    assert new_id != feed_id
    assert t.db.changefeeds.partitions(path)[0].end_offset == 1
    t.db.changefeeds.add_consumer(path, "c")
    t.execute("DROP TABLE t")
    with t.db.store.snapshot() as txn:
        assert txn.sql("SELECT COUNT(*) FROM feed_records")[0][0] == 0
        assert txn.sql("SELECT COUNT(*) FROM feed_consumers")[0][0] == 0
    assert t.db.changefeeds.topics() == []


def test_describe_prints_each_changefeed_and_the_statements_recreate_it(t, tmp_path):
    t.execute("ALTER TABLE t ADD CHANGEFEED a WITH (MODE = 'NEW_IMAGE', FORMAT = 'DYNAMODB_STREAMS_JSON', "
              "AWS_REGION = 'eu-1', TOPIC_MIN_ACTIVE_PARTITIONS = 3)")
    t.execute("ALTER TABLE t ADD CHANGEFEED b WITH (MODE = 'UPDATES', FORMAT = 'JSON', VIRTUAL_TIMESTAMPS = TRUE, "
              "BARRIERS_INTERVAL = Interval('PT10S'), RETENTION_PERIOD = Interval('PT1H'))")
    t.execute("ALTER TABLE t ALTER CHANGEFEED b DISABLE")
    text = t.execute("DESCRIBE TABLE t").one().create_statement
    tail = text[text.index(";") + 1:].strip().splitlines()
    assert tail == [
        "ALTER TABLE ks.t ADD CHANGEFEED a WITH (MODE = 'NEW_IMAGE', FORMAT = 'DYNAMODB_STREAMS_JSON', "
        "AWS_REGION = 'eu-1', RETENTION_PERIOD = Interval('PT24H'), TOPIC_MIN_ACTIVE_PARTITIONS = 3);",
        "ALTER TABLE ks.t ADD CHANGEFEED b WITH (MODE = 'UPDATES', FORMAT = 'JSON', VIRTUAL_TIMESTAMPS = TRUE, "
        "BARRIERS_INTERVAL = Interval('PT10S'), RETENTION_PERIOD = Interval('PT1H'), TOPIC_MIN_ACTIVE_PARTITIONS = 1);",
        "ALTER TABLE ks.t ALTER CHANGEFEED b DISABLE;",
    ]
    with logtide.open(tmp_path / "copy", synchronous="OFF") as other:
        s = other.session()
        s.execute("CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}")
        for stmt in text.split(";\n"):
            if stmt.strip():
                s.execute(stmt.rstrip(";"))
        copy = other.catalog.table("ks", "t")
        orig = t.db.catalog.table("ks", "t")
        assert [(f.name, f.options, f.disabled) for f in copy.changefeeds] == \
               [(f.name, f.options, f.disabled) for f in orig.changefeeds]


def test_changefeeds_survive_reopen(tmp_path):
    with logtide.open(tmp_path / "d", synchronous="OFF") as db:
        s = db.session()
        s.execute("CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}")
        s.execute("CREATE TABLE ks.t (k int PRIMARY KEY, v int)")
        path = add_feed(s, "ks.t", "f")
        s.execute("INSERT INTO ks.t (k, v) VALUES (1, 1)")
    with logtide.open(tmp_path / "d", synchronous="OFF") as db:
        s = db.session()
        s.execute("INSERT INTO ks.t (k, v) VALUES (1, 2)")
        got = values(db.changefeeds, path)
        assert [v["newImage"] for v in got] == [{"v": 1}, {"v": 2}]
        assert [r.offset for r in db.changefeeds.read(path, 0, 0)] == [0, 1]


def test_system_table_lists_every_changefeed(t):
    add_feed(t, "t", "f", extra="INITIAL_SCAN = FALSE, TOPIC_MIN_ACTIVE_PARTITIONS = 2")
    add_feed(t, "t", "g", mode="UPDATES")
    t.execute("ALTER TABLE t ALTER CHANGEFEED g DISABLE")
    rows = list(t.execute("SELECT changefeed_name, topic, mode, format, state, partitions, retention_seconds "
                          "FROM system_logtide.changefeeds WHERE keyspace_name = 'ks'"))
    assert [tuple(r) for r in rows] == [
        ("f", "ks/t/f", "NEW_AND_OLD_IMAGES", "JSON", "ENABLED", 2, 86400),
        ("g", "ks/t/g", "UPDATES", "JSON", "DISABLED", 1, 86400),
    ]
    names = [r.table_name for r in t.execute("SELECT table_name FROM system_schema.tables "
                                             "WHERE keyspace_name = 'system_logtide'")]
    assert names == ["changefeeds"]


def test_topic_consumer_ddl(t):
    path = add_feed(t, "t", "f")
    t.execute('ALTER TOPIC "ks/t/f" ADD CONSUMER c1')
    t.execute("ALTER TOPIC `ks/t/f` ADD CONSUMER c2 WITH (important = true, read_from = 1600000000)")
    cons = {c.name: c for c in t.db.changefeeds.consumers(path)}
    assert cons["c1"].important is False and cons["c2"].important is True
    assert cons["c2"].read_from_ms == 1_600_000_000_000
    with pytest.raises(InvalidRequest, match="already exists"):
        t.execute('ALTER TOPIC "ks/t/f" ADD CONSUMER c1')
    with pytest.raises(InvalidRequest, match="Unknown consumer setting: bogus"):
        t.execute('ALTER TOPIC "ks/t/f" ADD CONSUMER c3 WITH (bogus = 1)')
    with pytest.raises(InvalidRequest, match="does not exist"):
        t.execute('ALTER TOPIC "ks/t/nope" ADD CONSUMER c3')
    t.execute('ALTER TOPIC "ks/t/f" DROP CONSUMER c1')
    assert [c.name for c in t.db.changefeeds.consumers(path)] == ["c2"]
    with pytest.raises(InvalidRequest, match="does not exist"):
        t.execute('ALTER TOPIC "ks/t/f" DROP CONSUMER c1')


def test_malformed_changefeed_ddl_is_a_syntax_error(t):
    with pytest.raises(SyntaxException):
        t.execute("ALTER TABLE t ADD CHANGEFEED f WITH (MODE = 'UPDATES'")


def test_add_changefeed_without_settings_says_how_to_add_one_and_changes_nothing(t):
    # without WITH it reads as a column named changefeed of type f (the word is not reserved), f is no type
    with pytest.raises(InvalidRequest, match=r"^Unknown type ks\.f \(to add a changefeed, give its settings: "
                                             r"ADD CHANGEFEED name WITH \(MODE = 'UPDATES', FORMAT = 'JSON'\)\)$"):
        t.execute("ALTER TABLE t ADD CHANGEFEED f")
    table = t.db.catalog.table("ks", "t")
    assert not table.changefeeds and [c.name for c in table.columns] == ["k", "c", "s", "v"]
    t.execute("ALTER TABLE t ADD changefeed int")  # still a column when the type is one
    assert "changefeed" in [c.name for c in t.db.catalog.table("ks", "t").columns]


def test_changefeed_and_consumer_ddl_need_alter_permission_on_the_table():
    from logtide.auth import DataResource, required_permissions
    from logtide.cql import parse
    for q in ("ALTER TABLE t ADD CHANGEFEED f WITH (MODE = 'UPDATES', FORMAT = 'JSON')",
              "ALTER TABLE t DROP CHANGEFEED f", "ALTER TABLE t ALTER CHANGEFEED f DISABLE",
              'ALTER TOPIC "ks/t/f" ADD CONSUMER c', 'ALTER TOPIC "ks/t/f" DROP CONSUMER c'):
        assert required_permissions(parse(q).statement, "ks") == [("ALTER", DataResource("ks", "t"))], q


def test_changefeed_ddl_errors_read_in_a_cql_shell_as_a_cql_users_sentence_with_ydbs_words(t):
    from logtide import shell

    add_feed(t, "t", "updates")
    status, out, err = shell.capture(
        shell.ShellArgs(data_dir="unused", keyspace="ks", execute=(
            "ALTER TABLE t ADD CHANGEFEED updates WITH (MODE = 'UPDATES', FORMAT = 'JSON'); "
            "ALTER TABLE t ADD CHANGEFEED x WITH (MODE = 'NEW_IMAGES', FORMAT = 'JSON');")),
        lambda keyspace: t.db.session(keyspace=keyspace))
    assert (status, out) == (1, "")
    assert err == (
        '<stdin>:1:InvalidRequest: Error from server: code=2200 [Invalid query] message="changefeed \'updates\' '
        "already exists on ks.t (YDB: Check failed: path: 'ks/t/updates', error: path exist, request accepts it)\"\n"
        '<stdin>:1:InvalidRequest: Error from server: code=2200 [Invalid query] message="Unknown changefeed mode: '
        'NEW_IMAGES (valid modes: KEYS_ONLY, UPDATES, NEW_IMAGE, OLD_IMAGE, NEW_AND_OLD_IMAGES)"\n')
