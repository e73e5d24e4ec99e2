"""DESCRIBE of materialized views as ScyllaDB prints them, and their system_schema rows (golden text in
tests/schema/golden/views.cql)."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from logtide.errors import InvalidRequest

GOLDEN = Path(__file__).parent / "golden"
VIEW_ID = uuid.UUID("3f2c9a40-0000-11f1-8000-000000000001")


@pytest.fixture
def s(session):
    session.execute('CREATE TABLE t (p int, c int, v text, "Odd" int, PRIMARY KEY (p, c))')
    session.execute("CREATE MATERIALIZED VIEW by_v AS SELECT * FROM t WHERE v IS NOT NULL AND p IS NOT NULL "
                    "AND c IS NOT NULL PRIMARY KEY (v, p, c) WITH CLUSTERING ORDER BY (p DESC) AND comment = 'v'")
    session.execute(f'CREATE MATERIALIZED VIEW "Sel" AS SELECT p, c, "Odd" FROM t WHERE c IS NOT NULL AND '
                    f'"Odd" IS NOT NULL AND p > 0 PRIMARY KEY ((c, p), "Odd") WITH id = {VIEW_ID} '
                    "AND synchronous_updates = true")
    return session


def test_describe_table_prints_the_table_then_its_views_by_name(s):
    got = [(r.type, r.name, r.create_statement) for r in s.execute("DESCRIBE TABLE t")]
    assert [(kind, name) for kind, name, _ in got] == [("table", "t"), ("view", '"Sel"'), ("view", "by_v")]
    text = "\n".join(stmt for _, _, stmt in got[1:])
    assert text.rstrip("\n") == (GOLDEN / "views.cql").read_text().rstrip("\n")


def test_describe_materialized_view_and_describe_by_name(s):
    one = [r.create_statement for r in s.execute("DESCRIBE MATERIALIZED VIEW by_v")]
    assert one == [r.create_statement for r in s.execute("DESCRIBE by_v")]
    assert one[0].startswith("CREATE MATERIALIZED VIEW ks.by_v AS\n    SELECT *\n    FROM ks.t\n")
    internals = [r.create_statement for r in s.execute('DESCRIBE MATERIALIZED VIEW "Sel" WITH INTERNALS')][0]
    assert f"WITH ID = {VIEW_ID}\nAND CLUSTERING ORDER BY" in internals
    with pytest.raises(InvalidRequest, match="Materialized view 't' not found in keyspace 'ks'"):
        s.execute("DESCRIBE MATERIALIZED VIEW t")
    with pytest.raises(InvalidRequest, match=r"Cannot use DESC TABLE on materialized View. \(Did you mean DESC "
                                             r"MATERIALIZED VIEW\)\?"):
        s.execute("DESCRIBE TABLE by_v")


def test_views_are_not_listed_as_tables(s):
    assert [r.name for r in s.execute("DESCRIBE TABLES")] == ["t"]
    assert [r.table_name for r in s.execute("SELECT table_name FROM system_schema.tables WHERE keyspace_name = 'ks'")] \
        == ["t"]
    assert sorted({r.table_name for r in s.execute("SELECT table_name FROM system_schema.columns "
                                                   "WHERE keyspace_name = 'ks'")}) == ["Sel", "by_v", "t"]


def test_system_schema_views_rows(s):
    got = {r.view_name: r for r in s.execute("SELECT * FROM system_schema.views WHERE keyspace_name = 'ks'")}
    assert sorted(got) == ["Sel", "by_v"]
    base_id = next(iter(s.execute("SELECT id FROM system_schema.tables WHERE keyspace_name = 'ks' "
                                  "AND table_name = 't'"))).id
    sel = got["Sel"]
    assert (sel.base_table_name, sel.base_table_id, sel.include_all_columns, sel.id) == ("t", base_id, False, VIEW_ID)
    assert sel.where_clause == 'c IS NOT null AND "Odd" IS NOT null AND p > 0'
    assert (got["by_v"].include_all_columns, got["by_v"].comment, got["by_v"].cdc) == (True, "v", False)
