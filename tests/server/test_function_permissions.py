"""Permissions on user-defined functions and aggregates, and roles granted to roles, as ScyllaDB has them
(docs/compatibility.md "User-defined functions", docs/server.md "Authentication and permissions"): the resources
ALL FUNCTIONS, ALL FUNCTIONS IN KEYSPACE ks and FUNCTION ks.f(types) with the permissions each takes; EXECUTE
to call a function or aggregate (and an aggregate's own functions); CREATE / ALTER / DROP to define one; grants
that go with a dropped function, keyspace or role; permissions inherited through GRANT role TO role.  The
embedded tests use the real AuthManager with sessions of a role; the last ones go through `logtide serve --auth`
and cassandra-driver."""

from __future__ import annotations

import pytest
from cassandra import InvalidRequest as DriverInvalidRequest
from cassandra import Unauthorized as DriverUnauthorized
from cassandra.auth import PlainTextAuthProvider

import logtide
from logtide import auth
from logtide.errors import InvalidRequest, SyntaxException, Unauthorized

from .conftest import KEYSPACE_DDL, cluster
from .serveproc import Serve

PLUS = "CREATE FUNCTION ks.plus (a int) CALLED ON NULL INPUT RETURNS int LANGUAGE lua AS 'return a + 1'"
ACC = "CREATE FUNCTION ks.acc (st int, v int) CALLED ON NULL INPUT RETURNS int LANGUAGE lua AS 'return st + v'"
FIN = "CREATE FUNCTION ks.fin (st int) CALLED ON NULL INPUT RETURNS int LANGUAGE lua AS 'return st * 10'"
TOTAL = "CREATE AGGREGATE ks.total (int) SFUNC acc STYPE int FINALFUNC fin INITCOND 0"


@pytest.fixture
def db(tmp_path):
    database = logtide.open(tmp_path / "data", synchronous="OFF")
    auth.attach(database, False)
    root = database.session()
    root.execute(KEYSPACE_DDL.format("ks"))
    root.execute("CREATE TABLE ks.t (k int PRIMARY KEY, v int)")
    root.execute("INSERT INTO ks.t (k, v) VALUES (1, 1)")
    root.execute("INSERT INTO ks.t (k, v) VALUES (2, 2)")
    for ddl in (PLUS, ACC, FIN, TOTAL):
        root.execute(ddl)
    root.execute("CREATE ROLE mike WITH PASSWORD = 'm' AND LOGIN = true")
    yield database
    database.close()


def perms(db, role: str) -> list[tuple[str, str]]:
    return [(r.resource, r.permission) for r in db.session().execute(f"LIST ALL PERMISSIONS OF {role}")]


def unauthorized(session, query: str) -> str:
    with pytest.raises(Unauthorized) as e:
        session.execute(query)
    return str(e.value)


def test_function_resources_take_their_own_permissions_and_list_as_scylladb_prints_them(db):
    root = db.session()
    root.execute("GRANT ALL ON ALL FUNCTIONS TO mike")
    root.execute("GRANT EXECUTE ON ALL FUNCTIONS IN KEYSPACE ks TO mike")
    root.execute("GRANT ALL PERMISSIONS ON FUNCTION ks.plus(int) TO mike")
    root.execute("GRANT EXECUTE ON FUNCTION ks.total(int) TO mike")
    root.execute("GRANT EXECUTE ON FUNCTION ks.total(int) TO mike")  # granting again changes nothing
    assert perms(db, "mike") == [
        ("<all functions>", p) for p in ("CREATE", "ALTER", "DROP", "AUTHORIZE", "EXECUTE")] + [
        ("<all functions in ks>", "EXECUTE")] + [
        ("<function ks.plus(int)>", p) for p in ("ALTER", "DROP", "AUTHORIZE", "EXECUTE")] + [
        ("<function ks.total(int)>", "EXECUTE")]
    assert [r.resource for r in root.execute("LIST EXECUTE ON FUNCTION ks.plus(int) OF mike")] == [
        "<all functions>", "<all functions in ks>", "<function ks.plus(int)>"]
    root.execute("REVOKE ALL ON ALL FUNCTIONS FROM mike")
    root.execute("REVOKE EXECUTE ON FUNCTION ks.total(int) FROM mike")
    root.execute("REVOKE EXECUTE ON FUNCTION ks.total(int) FROM mike")  # revoking again is no error
    assert ("<function ks.total(int)>", "EXECUTE") not in perms(db, "mike")
    assert ("<all functions>", "EXECUTE") not in perms(db, "mike")


@pytest.mark.parametrize("grant, message", [
    ("GRANT CREATE ON FUNCTION ks.plus(int) TO mike",
     "Resource <function ks.plus(int,)> does not support any of the requested permissions."),
    ("GRANT SELECT ON FUNCTION ks.nothere() TO mike",
     "Resource <function ks.nothere()> does not support any of the requested permissions."),
    ("GRANT MODIFY ON ALL FUNCTIONS TO mike", "Resource <all functions> does not support any of the requested "
                                              "permissions."),
])
def test_permissions_a_function_resource_does_not_take_are_a_syntax_error(db, grant, message):
    with pytest.raises(SyntaxException) as e:
        db.session().execute(grant)
    assert str(e.value) == message


@pytest.mark.parametrize("grant, message", [
    ("GRANT EXECUTE ON ALL FUNCTIONS IN KEYSPACE nope TO mike", "<all functions in nope> doesn't exist."),
    ("GRANT EXECUTE ON FUNCTION nope.f(int, text) TO mike", "<function nope.f(int,text,)> doesn't exist."),
    ("GRANT EXECUTE ON FUNCTION ks.plus(bigint) TO mike", "<function ks.plus(bigint)> doesn't exist."),
    ("GRANT EXECUTE ON FUNCTION system.now() TO mike", "Altering permissions on builtin functions is not supported"),
])
def test_grants_on_missing_functions_are_refused(db, grant, message):
    with pytest.raises(InvalidRequest) as e:
        db.session().execute(grant)
    assert str(e.value) == message
    assert perms(db, "mike") == []


def test_calling_a_function_needs_execute_on_it_or_a_parent(db):
    root, mike = db.session(), db.session(user="mike")
    root.execute("GRANT SELECT ON ks.t TO mike")
    root.execute("GRANT MODIFY ON ks.t TO mike")
    calls = ["SELECT ks.plus(v) FROM ks.t WHERE k = 1",  # a selector
             "SELECT v FROM ks.t WHERE k = ks.plus(0)",  # a term of the WHERE clause
             "INSERT INTO ks.t (k, v) VALUES (3, ks.plus(1))",  # a written value
             "SELECT ks.plus(1)"]  # SELECT without FROM (system.one_row: no grant needed for it)
    for query in calls:
        assert unauthorized(mike, query) == ("User mike has no EXECUTE permission on <function ks.plus(int)> or "
                                             "any of its parents")
    assert root.execute("SELECT v FROM ks.t WHERE k = 3").one() is None  # the refused INSERT wrote nothing
    for resource in ("FUNCTION ks.plus(int)", "ALL FUNCTIONS IN KEYSPACE ks", "ALL FUNCTIONS"):
        root.execute(f"GRANT EXECUTE ON {resource} TO mike")
        for query in calls:
            mike.execute(query)
        root.execute(f"REVOKE EXECUTE ON {resource} FROM mike")
        unauthorized(mike, calls[0])
    assert [r[0] for r in mike.execute("SELECT max(v), count(*), toJson(v) FROM ks.t WHERE k = 1")] == [1]  # native


def test_an_aggregate_needs_execute_on_itself_and_on_its_functions(db):
    root, mike = db.session(), db.session(user="mike")
    root.execute("GRANT SELECT ON ks.t TO mike")
    query = "SELECT ks.total(v) FROM ks.t"
    assert "<function ks.total(int)>" in unauthorized(mike, query)
    root.execute("GRANT EXECUTE ON FUNCTION ks.total(int) TO mike")
    assert "<function ks.acc(int, int)>" in unauthorized(mike, query)
    root.execute("GRANT EXECUTE ON FUNCTION ks.acc(int, int) TO mike")
    assert "<function ks.fin(int)>" in unauthorized(mike, query)
    root.execute("GRANT EXECUTE ON FUNCTION ks.fin(int) TO mike")
    assert mike.execute(query).one()[0] == 30


def test_defining_functions_needs_create_alter_and_drop_on_function_resources(db):
    root, mike = db.session(), db.session(user="mike")
    minus = "FUNCTION ks.minus (a int) CALLED ON NULL INPUT RETURNS int LANGUAGE lua AS 'return a - 1'"
    assert unauthorized(mike, f"CREATE {minus}") == ("User mike has no CREATE permission on <all functions in ks> "
                                                    "or any of its parents")
    root.execute("GRANT CREATE ON ALL FUNCTIONS IN KEYSPACE ks TO mike")
    mike.execute(f"CREATE {minus}")
    assert perms(db, "mike") == [("<all functions in ks>", "CREATE")]  # no grant to a function's creator
    assert unauthorized(mike, f"CREATE OR REPLACE {minus}") == ("User mike has no ALTER permission on <function "
                                                               "ks.minus(int)> or any of its parents")
    root.execute("GRANT ALTER ON FUNCTION ks.minus(int) TO mike")
    mike.execute(f"CREATE OR REPLACE {minus}")
    agg = "CREATE AGGREGATE ks.mine (int) SFUNC acc STYPE int FINALFUNC fin"
    assert "EXECUTE permission on <function ks.acc(int, int)>" in unauthorized(mike, agg)
    root.execute("GRANT EXECUTE ON FUNCTION ks.acc(int, int) TO mike")
    assert "EXECUTE permission on <function ks.fin(int)>" in unauthorized(mike, agg)
    root.execute("GRANT EXECUTE ON FUNCTION ks.fin(int) TO mike")
    mike.execute(agg)
    assert unauthorized(mike, "DROP FUNCTION ks.minus") == ("User mike has no DROP permission on <function "
                                                           "ks.minus(int)> or any of its parents")
    with pytest.raises(InvalidRequest, match="^User function ks.nothere\\(int\\) doesn't exist$"):
        mike.execute("DROP FUNCTION ks.nothere(int)")  # no function, no permission to check: its own error
    root.execute("GRANT DROP ON FUNCTION ks.minus(int) TO mike")
    mike.execute("DROP FUNCTION ks.minus")
    assert ("<function ks.minus(int)>", "ALTER") not in perms(db, "mike")  # its grants went with it


def test_drops_of_a_function_keyspace_or_role_take_their_grants_with_them(db):
    root = db.session()
    root.execute("GRANT EXECUTE ON FUNCTION ks.plus(int) TO mike")
    root.execute("GRANT EXECUTE ON ALL FUNCTIONS IN KEYSPACE ks TO mike")
    root.execute("DROP FUNCTION ks.plus")
    assert perms(db, "mike") == [("<all functions in ks>", "EXECUTE")]
    root.execute(PLUS)  # the same function again: no grant comes back with it
    assert perms(db, "mike") == [("<all functions in ks>", "EXECUTE")]
    root.execute("GRANT EXECUTE ON FUNCTION ks.plus(int) TO mike")
    root.execute("DROP KEYSPACE ks")
    assert perms(db, "mike") == []
    root.execute("GRANT EXECUTE ON ALL FUNCTIONS TO mike")
    root.execute("DROP ROLE mike")
    root.execute("CREATE ROLE mike")
    assert perms(db, "mike") == []


def test_roles_granted_to_a_role_give_it_their_permissions(db):
    root, mike = db.session(), db.session(user="mike")
    root.execute("CREATE ROLE runner")
    root.execute("CREATE ROLE boss WITH SUPERUSER = true")
    root.execute("GRANT SELECT ON ks.t TO mike")
    root.execute("GRANT EXECUTE ON ALL FUNCTIONS IN KEYSPACE ks TO runner")
    query = "SELECT ks.plus(v) FROM ks.t WHERE k = 1"
    unauthorized(mike, query)
    root.execute("GRANT runner TO mike")
    assert mike.execute(query).one()[0] == 2
    assert [r.role for r in root.execute("LIST ROLES OF mike")] == ["mike", "runner"]
    assert ("runner", "<all functions in ks>", "EXECUTE") in [
        (r.role, r.resource, r.permission) for r in root.execute("LIST ALL PERMISSIONS OF mike")]
    assert [r.role for r in root.execute("LIST ALL PERMISSIONS OF mike NORECURSIVE")] == ["mike"]
    for bad, message in (("GRANT runner TO mike", "mike already includes role runner."),
                         ("GRANT mike TO runner", "mike already includes role runner."),
                         ("GRANT mike TO mike", "mike already includes role mike."),
                         ("GRANT ghost TO mike", "Role ghost doesn't exist."),
                         ("REVOKE boss FROM mike", "mike was not granted role boss, so it cannot be revoked.")):
        with pytest.raises(InvalidRequest) as e:
            root.execute(bad)
        assert str(e.value) == message
    assert unauthorized(mike, "GRANT runner TO mike") == ("User mike has no AUTHORIZE permission on <role runner> "
                                                         "or any of its parents")
    root.execute("REVOKE runner FROM mike")
    unauthorized(mike, query)
    root.execute("GRANT boss TO mike")  # a role granted a superuser role is a superuser
    mike.execute("SELECT ks.total(v) FROM ks.t")
    root.execute("DROP ROLE boss")
    unauthorized(mike, query)


def test_function_grants_and_role_grants_survive_a_reopen(tmp_path):
    path = tmp_path / "data"
    with logtide.open(path, synchronous="OFF") as db:
        auth.attach(db, False)
        root = db.session()
        root.execute(KEYSPACE_DDL.format("ks"))
        root.execute(PLUS)
        root.execute("CREATE ROLE runner")
        root.execute("CREATE ROLE mike")
        root.execute("GRANT EXECUTE ON FUNCTION ks.plus(int) TO runner")
        root.execute("GRANT runner TO mike")
    with logtide.open(path, synchronous="OFF") as db:
        auth.attach(db, False)
        assert db.auth.has_permission("mike", "EXECUTE", auth.FunctionResource("ks", "plus(int)"))
        assert perms(db, "runner") == [("<function ks.plus(int)>", "EXECUTE")]


def test_system_role_permissions_names_resources_as_scylladb_stores_them(db):
    root = db.session()
    root.execute("CREATE TYPE ks.pt (x int)")
    root.execute("CREATE FUNCTION ks.\"Odd\" (a bigint, p pt) CALLED ON NULL INPUT RETURNS int LANGUAGE lua "
                 "AS 'return 1'")
    root.execute("GRANT EXECUTE ON FUNCTION ks.\"Odd\"(bigint, pt) TO mike")
    root.execute("GRANT ALTER ON ALL FUNCTIONS IN KEYSPACE ks TO mike")
    root.execute("GRANT SELECT ON ks.t TO mike")
    rows = {r.resource: r.permissions for r in root.execute("SELECT * FROM system.role_permissions")}
    udt = ("org.apache.cassandra.db.marshal.FrozenType(org.apache.cassandra.db.marshal.UserType(ks,7074,"
           "78:org.apache.cassandra.db.marshal.Int32Type))")
    assert rows == {"data/ks/t": {"SELECT"}, "functions/ks": {"ALTER"},
                    f"functions/ks/Odd[org.apache.cassandra.db.marshal.LongType^{udt}]": {"EXECUTE"}}
    assert ("<function ks.\"Odd\"(bigint, frozen<pt>)>", "EXECUTE") in perms(db, "mike")


# -- through `logtide serve --auth` -------------------------------------------------------------


def test_execute_is_checked_through_the_server(tmp_path):
    (tmp_path / "pw").write_text("s3cret\n")
    with Serve("--data-dir", str(tmp_path / "d"), "--synchronous", "OFF", "--auth", "--superuser", "admin",
               "--superuser-password-file", str(tmp_path / "pw")) as srv:
        srv.wait_listening()
        admin = cluster(srv.port, auth_provider=PlainTextAuthProvider("admin", "s3cret"))
        a = admin.connect()
        a.execute(KEYSPACE_DDL.format("ks"))
        a.execute("CREATE TABLE ks.t (k int PRIMARY KEY, v int)")
        a.execute("INSERT INTO ks.t (k, v) VALUES (1, 41)")
        a.execute(PLUS)
        a.execute("CREATE ROLE mike WITH PASSWORD = 'm' AND LOGIN = true")
        a.execute("GRANT SELECT ON ks.t TO mike")
        user = cluster(srv.port, auth_provider=PlainTextAuthProvider("mike", "m"))
        m = user.connect()
        prepared = m.prepare("SELECT ks.plus(v) FROM ks.t WHERE k = ?")  # checked when run, not when prepared
        with pytest.raises(DriverUnauthorized, match="User mike has no EXECUTE permission on <function "
                                                     "ks.plus\\(int\\)> or any of its parents"):
            m.execute(prepared, (1,))
        a.execute("GRANT EXECUTE ON FUNCTION ks.plus(int) TO mike")
        assert m.execute(prepared, (1,)).one()[0] == 42
        assert [r.resource for r in a.execute("LIST EXECUTE OF mike")] == ["<function ks.plus(int)>"]
        with pytest.raises(DriverInvalidRequest, match="<function ks.plus\\(text\\)> doesn't exist."):
            a.execute("GRANT EXECUTE ON FUNCTION ks.plus(text) TO mike")
        user.shutdown()
        admin.shutdown()
