"""``DESC SCHEMA WITH INTERNALS`` lists roles, role grants, permissions and service levels after the keyspaces, as
ScyllaDB does (docs/server.md "Roles, permissions and service levels in DESC SCHEMA"), ``AND PASSWORDS`` only for a
superuser, ``CREATE ROLE ... WITH HASHED PASSWORD`` and ``system.roles``; a described schema restores into an empty
database.  ``DESC CLUSTER``, ``system.token_ring`` and ``system_schema.scylla_tables`` go through the server."""

from __future__ import annotations

import pytest
from cassandra import Unauthorized as DriverUnauthorized

import logtide
from logtide import auth
from logtide.errors import Unauthorized
from logtide.scram import ScramError

from .authserve import auth_server, logged_in
from .conftest import KEYSPACE_DDL

SETUP = [
    KEYSPACE_DDL.format('"myKs"'),
    'CREATE TABLE "myKs"."T" (k int PRIMARY KEY, v int)',
    'CREATE TYPE "myKs"."Ty" (v int)',
    """CREATE FUNCTION "myKs"."fN"(a int, b "Ty") RETURNS NULL ON NULL INPUT RETURNS int LANGUAGE lua AS $$ return a $$""",
    "CREATE ROLE andrew WITH PASSWORD = 'a' AND LOGIN = true",
    "CREATE ROLE \"Jane 'the wise'\" WITH SUPERUSER = true",
    "GRANT andrew TO \"Jane 'the wise'\"",
    "GRANT SELECT ON ALL KEYSPACES TO andrew",
    'GRANT MODIFY ON "myKs"."T" TO andrew',
    'GRANT ALTER ON KEYSPACE "myKs" TO andrew',
    "GRANT AUTHORIZE ON ALL ROLES TO andrew",
    "GRANT ALTER ON ROLE andrew TO \"Jane 'the wise'\"",
    'GRANT EXECUTE ON ALL FUNCTIONS IN KEYSPACE "myKs" TO andrew',
    'GRANT DROP ON FUNCTION "myKs"."fN"(int, "Ty") TO andrew',
    "CREATE SERVICE LEVEL \"Gold\" WITH TIMEOUT = 2s AND WORKLOAD_TYPE = 'interactive'",
    "ALTER SERVICE LEVEL driver WITH SHARES = 123",
    'ATTACH SERVICE LEVEL "Gold" TO andrew',
]

EXPECTED_AUTH = [
    ("role", '"Jane \'the wise\'"', "CREATE ROLE \"Jane 'the wise'\" WITH LOGIN = false AND SUPERUSER = true;"),
    ("role", "andrew", "CREATE ROLE andrew WITH LOGIN = true AND SUPERUSER = false;"),
    ("grant_role", "andrew", "GRANT andrew TO \"Jane 'the wise'\";"),
    ("grant_permission", '"Jane \'the wise\'"', "GRANT ALTER ON ROLE andrew TO \"Jane 'the wise'\";"),
    ("grant_permission", "andrew", 'GRANT ALTER ON KEYSPACE "myKs" TO andrew;'),
    ("grant_permission", "andrew", "GRANT AUTHORIZE ON ALL ROLES TO andrew;"),
    ("grant_permission", "andrew", 'GRANT DROP ON FUNCTION "myKs"."fN"(int, "Ty") TO andrew;'),
    ("grant_permission", "andrew", 'GRANT EXECUTE ON ALL FUNCTIONS IN KEYSPACE "myKs" TO andrew;'),
    ("grant_permission", "andrew", 'GRANT MODIFY ON "myKs"."T" TO andrew;'),
    ("grant_permission", "andrew", "GRANT SELECT ON ALL KEYSPACES TO andrew;"),
    ("service_level", "driver", "CREATE SERVICE LEVEL IF NOT EXISTS driver WITH WORKLOAD_TYPE = 'batch' AND SHARES = 123;"),
    ("service_level", "driver", "ALTER SERVICE LEVEL driver WITH WORKLOAD_TYPE = 'batch' AND SHARES = 123;"),
    ("service_level", '"Gold"', "CREATE SERVICE LEVEL \"Gold\" WITH TIMEOUT = 2000ms AND WORKLOAD_TYPE = 'interactive' "
                                "AND SHARES = 1000;"),
    ("service_level_attachment", '"Gold"', 'ATTACH SERVICE LEVEL "Gold" TO andrew;'),
]


def fresh(path):
    db = logtide.open(path, synchronous="OFF")
    auth.attach(db, False)
    return db


def auth_rows(session, query="DESC SCHEMA WITH INTERNALS"):
    return [(r.type, r.name, r.create_statement) for r in session.execute(query) if r.keyspace_name is None]


def test_desc_schema_with_internals_lists_auth_and_service_levels_after_the_keyspaces_in_scylladb_order(tmp_path):
    db = fresh(tmp_path / "d")
    s = db.session()
    for q in SETUP:
        s.execute(q)
    rows = list(s.execute("DESC SCHEMA WITH INTERNALS"))
    firsts = [i for i, r in enumerate(rows) if r.keyspace_name is None]
    assert firsts == list(range(len(rows) - len(EXPECTED_AUTH), len(rows)))
    assert auth_rows(s) == EXPECTED_AUTH
    assert not [r for r in s.execute("DESC SCHEMA") if r.keyspace_name is None]  # only WITH INTERNALS
    db.close()


def test_with_passwords_adds_the_stored_hash_and_needs_a_superuser(tmp_path):
    db = fresh(tmp_path / "d")
    s = db.session()
    s.execute("CREATE ROLE mike WITH PASSWORD = 'm' AND LOGIN = true")
    s.execute("GRANT ALL ON ALL KEYSPACES TO mike")
    s.execute("CREATE ROLE h WITH HASHED PASSWORD = '$2a$10$it''s a hash'")
    [stored] = [r.salted_hash for r in s.execute("SELECT salted_hash FROM system.roles WHERE role = 'mike'")]
    assert stored.startswith("scrypt$")
    roles = [r[2] for r in auth_rows(s, "DESC SCHEMA WITH INTERNALS AND PASSWORDS") if r[0] == "role"]
    assert roles == ["CREATE ROLE h WITH HASHED PASSWORD = '$2a$10$it''s a hash' AND LOGIN = false AND SUPERUSER = false;",
                     f"CREATE ROLE mike WITH HASHED PASSWORD = '{stored}' AND LOGIN = true AND SUPERUSER = false;"]
    mike = db.session(user="mike")
    with pytest.raises(Unauthorized, match="DESCRIBE SCHEMA WITH INTERNALS AND PASSWORDS can only be issued by a superuser"):
        mike.execute("DESC SCHEMA WITH INTERNALS AND PASSWORDS")
    s.execute("GRANT CREATE ON ALL ROLES TO mike")
    with pytest.raises(Unauthorized, match="Only superusers can create a role with a hashed password."):
        mike.execute("CREATE ROLE other WITH HASHED PASSWORD = 'x'")
    assert len(list(mike.execute("SELECT role FROM system.roles"))) == 2  # a grant on all keyspaces reads it
    s.execute("REVOKE ALL ON ALL KEYSPACES FROM mike")
    with pytest.raises(Unauthorized, match="User mike has no SELECT permission on <table system.roles>"):
        mike.execute("SELECT * FROM system.roles")
    db.close()


def test_a_described_schema_restores_into_an_empty_database(tmp_path):
    db = fresh(tmp_path / "a")
    s = db.session()
    for q in SETUP:
        s.execute(q)
    s.execute("CREATE ROLE r WITH PASSWORD = 'secret' AND LOGIN = true")
    before = [tuple(r) for r in s.execute("DESC SCHEMA WITH INTERNALS AND PASSWORDS")]
    db.close()
    other = fresh(tmp_path / "b")
    o = other.session()
    for _, _, _, statement in before:
        o.execute(statement)
    after = [tuple(r) for r in o.execute("DESC SCHEMA WITH INTERNALS AND PASSWORDS")]
    strip_ids = lambda rows: [r[:3] + (r[3].split(" WITH ID = ")[0],) for r in rows]  # noqa: E731
    assert strip_ids(after) == strip_ids(before)
    assert other.auth.authenticate("r", "secret") == "r"  # the restored hash still checks the password
    with pytest.raises(ScramError, match=r"Role r has no SCRAM-SHA-256 credentials: .*or as a hash \(HASHED PASSWORD\)"):
        other.auth.scram_lookup("r")  # the Kafka endpoint's SCRAM needs the password set again
    other.close()


def test_a_dropped_driver_level_is_described_as_a_drop_before_the_others(tmp_path):
    db = fresh(tmp_path / "d")
    s = db.session()
    s.execute("CREATE SERVICE LEVEL a_first")
    s.execute("DROP SERVICE LEVEL driver")
    assert [r[2] for r in auth_rows(s)] == ["DROP SERVICE LEVEL IF EXISTS driver;",
                                            "CREATE SERVICE LEVEL a_first WITH SHARES = 1000;"]
    db.close()


# -- through `logtide serve --auth` -------------------------------------------------------------


def test_describe_auth_cluster_ring_and_scylla_tables_through_the_server(tmp_path):
    with auth_server(tmp_path) as srv, logged_in(srv) as a:
        a.execute("CREATE ROLE mike WITH PASSWORD = 'm' AND LOGIN = true")
        a.execute(KEYSPACE_DDL.format("ks"))
        a.execute("CREATE TABLE ks.t (k int PRIMARY KEY, v int) WITH cdc = {'enabled': true}")
        described = [(r.keyspace_name, r.type, r.name, r.create_statement)
                     for r in a.execute("DESC SCHEMA WITH INTERNALS") if r.keyspace_name is None]
        # the bootstrap superuser is restored only if missing; its creator grants on what it made are listed
        assert described[0] == (None, "role", "admin", "CREATE ROLE IF NOT EXISTS admin WITH LOGIN = true AND SUPERUSER = true;")
        assert (None, "grant_permission", "admin", "GRANT ALTER ON ROLE mike TO admin;") in described
        assert (None, "grant_permission", "admin", "GRANT SELECT ON ks.t TO admin;") in described
        with logged_in(srv, "mike", "m") as m:
            with pytest.raises(DriverUnauthorized, match="can only be issued by a superuser"):
                m.execute("DESC SCHEMA WITH INTERNALS AND PASSWORDS")

        assert [tuple(r) for r in a.execute("DESC CLUSTER")] == [
            ("logtide", "org.apache.cassandra.dht.Murmur3Partitioner", "org.apache.cassandra.locator.SimpleSnitch")]
        a.execute("USE ks")
        ownership = a.execute("DESC CLUSTER").one().range_ownership
        ring = [(r.end_token, r.endpoint) for r in a.execute(
            "SELECT end_token, endpoint FROM system.token_ring WHERE keyspace_name = 'ks'")]
        assert sorted((end, e) for end, endpoints in ownership.items() for e in endpoints) == sorted(ring)
        tokens = a.execute("SELECT tokens FROM system.local").one().tokens
        assert sorted(ownership) == sorted(tokens) and set(ring) == {(t, "127.0.0.1") for t in tokens}

        cdc = a.execute("SELECT cdc, partitioner FROM system_schema.scylla_tables "
                        "WHERE keyspace_name = 'ks' AND table_name = 't'").one()
        assert (cdc.cdc["enabled"], cdc.partitioner) == ("true", None)
