"""Service levels as ScyllaDB has them (docs/server.md "Service levels"): CREATE / ALTER / DROP SERVICE LEVEL with
ScyllaDB's options, checks and messages, the automatic ``driver`` level, ATTACH / DETACH to roles, the LIST
statements, superusers only, kept with the roles across a restart.  The embedded tests use the real AuthManager;
the last ones go through ``logtide serve --auth`` and cassandra-driver."""

from __future__ import annotations

import pytest
from cassandra import InvalidRequest as DriverInvalidRequest
from cassandra import Unauthorized as DriverUnauthorized

import logtide
from logtide import auth
from logtide.errors import InvalidRequest, SyntaxException, Unauthorized

from .authserve import auth_server, logged_in


@pytest.fixture
def db(tmp_path):
    database = logtide.open(tmp_path / "data", synchronous="OFF")
    auth.attach(database, False)
    yield database
    database.close()


def listed(session, query: str) -> list[tuple]:
    return [tuple(r) for r in session.execute(query)]


def test_a_new_database_has_the_driver_service_level(db):
    s = db.session()
    assert listed(s, "LIST SERVICE LEVEL driver") == [("driver", None, "batch", 200)]
    assert listed(s, "LIST SERVICE LEVEL nothere") == []


def test_create_gives_default_shares_and_alter_changes_only_what_it_names(db):
    s = db.session()
    s.execute("CREATE SERVICE LEVEL gold WITH timeout = 2s")
    s.execute("CREATE SERVICE LEVEL IF NOT EXISTS gold WITH shares = 1")  # exists: nothing changes
    [(name, timeout, workload, shares)] = listed(s, "LIST SERVICE LEVEL gold")
    assert (name, workload, shares) == ("gold", None, 1000)
    assert timeout.nanoseconds == 2_000_000_000
    s.execute("ALTER SERVICE LEVEL gold WITH workload_type = 'interactive' AND shares = 500")
    assert listed(s, "LIST SERVICE LEVEL gold")[0][1:] == (timeout, "interactive", 500)
    s.execute("ALTER SERVICE LEVEL gold WITH timeout = null AND workload_type = null")
    assert listed(s, "LIST SERVICE LEVEL gold")[0][1:] == (None, None, 500)
    assert listed(s, "LIST ALL SERVICE LEVELS") == [("driver", None, "batch", 200, "28.57%"),
                                                    ("gold", None, None, 500, "71.43%")]


@pytest.mark.parametrize("query, error, message", [
    ("CREATE SERVICE LEVEL x WITH shares = 0", SyntaxException, r"'SHARES' can only take values of 1-1000 \(given 0\)"),
    ("CREATE SERVICE LEVEL x WITH shares = 1001", SyntaxException, r"given 1001"),
    ("CREATE SERVICE LEVEL x WITH color = 'red'", SyntaxException, "Unknown property 'color'"),
    ("CREATE SERVICE LEVEL x WITH shares = 1 AND shares = 2", SyntaxException,
     "Multiple definition for property 'shares'"),
    ("CREATE SERVICE LEVEL x WITH timeout = 1d", InvalidRequest, "Timeout values cannot be expressed in days/months"),
    ("CREATE SERVICE LEVEL x WITH timeout = 1500us", InvalidRequest,
     "Timeout values must be expressed in millisecond granularity"),
    ("CREATE SERVICE LEVEL x WITH timeout = 'soon'", InvalidRequest, "Unable to convert 'soon' to a duration"),
    ("CREATE SERVICE LEVEL x WITH workload_type = 'olap'", InvalidRequest, "Invalid workload type: olap"),
    ("CREATE SERVICE LEVEL \"$x\"", InvalidRequest, r"Names starting with '\$' are reserved for internal tenants"),
    ("CREATE SERVICE LEVEL default", InvalidRequest,
     "The default service level, default, already exists and cannot be created"),
    ("CREATE SERVICE LEVEL driver", InvalidRequest, "The service level 'driver' already exists."),
    ("ALTER SERVICE LEVEL nothere WITH shares = 1", InvalidRequest, "The service level 'nothere' doesn't exist."),
    ("ALTER SERVICE LEVEL default WITH shares = 1", InvalidRequest, "The default service level, default, cannot be altered"),
    ("DROP SERVICE LEVEL nothere", InvalidRequest, "Service Level nothere doesn't exists."),
    ("DROP SERVICE LEVEL default", InvalidRequest, "The default service level, default, cannot be dropped"),
    ("ATTACH SERVICE LEVEL nothere TO r", InvalidRequest, "Service Level nothere doesn't exists."),
    ("ATTACH SERVICE LEVEL driver TO nobody", InvalidRequest, "Role nobody doesn't exist."),
    ("ATTACH SERVICE LEVEL default TO r", InvalidRequest, "The default service level, default, cannot be attached"),
    ("DETACH SERVICE LEVEL FROM nobody", InvalidRequest, "Role nobody doesn't exist."),
    ("LIST EFFECTIVE SERVICE LEVEL OF r", InvalidRequest, "Role r doesn't have assigned any service level"),
])
def test_bad_service_level_statements_are_refused_with_scylladb_messages_and_change_nothing(db, query, error, message):
    s = db.session()
    s.execute("CREATE ROLE r")
    before = listed(s, "LIST ALL SERVICE LEVELS"), listed(s, "LIST ALL ATTACHED SERVICE LEVELS")
    with pytest.raises(error, match=message):
        s.execute(query)
    assert (listed(s, "LIST ALL SERVICE LEVELS"), listed(s, "LIST ALL ATTACHED SERVICE LEVELS")) == before


def test_attach_detach_and_a_dropped_level_or_role_takes_its_attachments(db):
    s = db.session()
    for r in ("a", "b", "c"):
        s.execute(f"CREATE ROLE {r}")
    s.execute("CREATE SERVICE LEVEL fast WITH timeout = 10ms AND workload_type = 'interactive' AND shares = 800")
    s.execute("CREATE SERVICE LEVEL slow WITH timeout = 5s AND workload_type = 'batch' AND shares = 100")
    s.execute("ATTACH SERVICE LEVEL fast TO a")
    s.execute("ATTACH SERVICE LEVEL slow TO b")
    s.execute("ATTACH SERVICE LEVEL slow TO c")
    s.execute("ATTACH SERVICE LEVEL fast TO c")  # attaching again replaces
    assert listed(s, "LIST ALL ATTACHED SERVICE LEVELS") == [("a", "fast"), ("b", "slow"), ("c", "fast")]
    assert listed(s, "LIST ATTACHED SERVICE LEVEL OF b") == [("b", "slow")]
    s.execute("GRANT b TO a")  # a gets the smallest timeout, the fewest shares, batch over interactive
    assert listed(s, "LIST EFFECTIVE SERVICE LEVEL OF a") == [
        ("workload_type", "slow", "batch"), ("timeout", "fast", "10ms"), ("shares", "slow", "100")]
    s.execute("ALTER SERVICE LEVEL fast WITH timeout = 90s")
    assert listed(s, "LIST EFFECTIVE SERVICE LEVEL OF a")[1] == ("timeout", "slow", "5s")  # a CQL duration's text
    s.execute("CREATE SERVICE LEVEL bare")
    s.execute("ATTACH SERVICE LEVEL bare TO c")  # no timeout: no value; no workload type: 'unspecified'
    assert listed(s, "LIST EFFECTIVE SERVICE LEVEL OF c") == [
        ("workload_type", "bare", "unspecified"), ("timeout", "bare", None), ("shares", "bare", "1000")]
    with pytest.raises(SyntaxException, match="Invalid integer value null for 'shares'"):  # shares cannot be unset
        s.execute("ALTER SERVICE LEVEL bare WITH shares = null")
    s.execute("DETACH SERVICE LEVEL FROM c")
    s.execute("DROP SERVICE LEVEL slow")
    s.execute("DROP ROLE a")
    assert listed(s, "LIST ALL ATTACHED SERVICE LEVELS") == []
    s.execute("DROP SERVICE LEVEL IF EXISTS slow")


def test_at_most_eight_service_levels_besides_driver_as_scylladb_schedules_them(db):
    s = db.session()
    for i in range(8):
        s.execute(f"CREATE SERVICE LEVEL sl{i}")
    with pytest.raises(InvalidRequest, match="Can't create service level - no more scheduling groups exist"):
        s.execute("CREATE SERVICE LEVEL one_more")
    s.execute("DROP SERVICE LEVEL driver")  # its slot is free again
    s.execute("CREATE SERVICE LEVEL one_more")
    assert len(listed(s, "LIST ALL SERVICE LEVELS")) == 9


def test_only_a_superuser_manages_or_lists_service_levels(db):
    root = db.session()
    root.execute("CREATE ROLE mike WITH LOGIN = true AND PASSWORD = 'm'")
    root.execute("GRANT ALL ON ALL KEYSPACES TO mike")
    root.execute("GRANT ALL ON ALL ROLES TO mike")
    mike = db.session(user="mike")
    for query, permission in (("CREATE SERVICE LEVEL x", "CREATE"), ("ALTER SERVICE LEVEL driver WITH shares = 1", "ALTER"),
                              ("DROP SERVICE LEVEL driver", "DROP"), ("ATTACH SERVICE LEVEL driver TO mike", "AUTHORIZE"),
                              ("DETACH SERVICE LEVEL FROM mike", "AUTHORIZE"), ("LIST ALL SERVICE LEVELS", "DESCRIBE"),
                              ("LIST ALL ATTACHED SERVICE LEVELS", "DESCRIBE")):
        with pytest.raises(Unauthorized, match=f"User mike has no {permission} permission on <all service levels> "
                                               "or any of its parents"):
            mike.execute(query)
    assert listed(root, "LIST SERVICE LEVEL driver") == [("driver", None, "batch", 200)]


def test_service_levels_and_attachments_survive_a_restart_and_a_dropped_driver_stays_dropped(tmp_path):
    path = tmp_path / "data"
    db = logtide.open(path, synchronous="OFF")
    auth.attach(db, False)
    s = db.session()
    s.execute("CREATE ROLE r")
    s.execute("CREATE SERVICE LEVEL gold WITH timeout = 250ms")
    s.execute("ATTACH SERVICE LEVEL gold TO r")
    s.execute("DROP SERVICE LEVEL driver")
    db.close()
    db = logtide.open(path, synchronous="OFF")
    auth.attach(db, False)
    s = db.session()
    assert [r[0] for r in s.execute("LIST ALL SERVICE LEVELS")] == ["gold"]
    assert listed(s, "LIST ALL ATTACHED SERVICE LEVELS") == [("r", "gold")]
    db.close()


# -- through `logtide serve --auth` -------------------------------------------------------------


def test_service_levels_through_the_server_and_driver(tmp_path):
    with auth_server(tmp_path) as srv, logged_in(srv) as a:
        a.execute("CREATE ROLE mike WITH PASSWORD = 'm' AND LOGIN = true")
        a.execute("CREATE SERVICE LEVEL 'Gold level' WITH TIMEOUT = 1500ms AND WORKLOAD_TYPE = 'interactive'")
        a.execute("ATTACH SERVICE LEVEL 'Gold level' TO mike")
        row = a.execute("LIST SERVICE LEVEL 'Gold level'").one()
        assert (row.service_level, row.workload_type, row.shares) == ("Gold level", "interactive", 1000)
        assert row.timeout.nanoseconds == 1_500_000_000  # a CQL duration on the wire
        assert [tuple(r) for r in a.execute("LIST ALL ATTACHED SERVICE LEVELS")] == [("mike", "Gold level")]
        with pytest.raises(DriverInvalidRequest, match="The service level 'Gold level' already exists."):
            a.execute("CREATE SERVICE LEVEL 'Gold level'")
        with logged_in(srv, "mike", "m") as m:
            with pytest.raises(DriverUnauthorized, match="User mike has no DESCRIBE permission on <all service levels>"):
                m.execute("LIST ALL SERVICE LEVELS")


def test_service_levels_and_desc_cluster_from_cqlsh(tmp_path):
    """cqlsh (from PyPI) sends the service level statements and DESCRIBE CLUSTER to the server and prints them."""
    from .conftest import run_cqlsh

    with auth_server(tmp_path) as srv:
        home = tmp_path / "home"
        home.mkdir()
        code, out, err = run_cqlsh(srv.port, home, "-u", "admin", "-p", "s3cret", "-e",
                                   "CREATE SERVICE LEVEL gold WITH timeout = 10ms AND shares = 300; "
                                   "LIST ALL SERVICE LEVELS; DESCRIBE CLUSTER")
        assert code == 0, err
        assert "          gold |    10ms |          null |    300 |                                 60.00%" in out
        assert "Cluster: logtide" in out and "Snitch: org.apache.cassandra.locator.SimpleSnitch" in out
