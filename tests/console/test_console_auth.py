"""With --auth the console asks for a CQL role's password and shows only what the role may SELECT."""

from __future__ import annotations

import json
import time
import urllib.parse

import pytest

from logtide.console.access import MAX_SESSIONS, Sessions

from .conftest import secured_console
from .test_console_http import request


@pytest.fixture
def secured(tmp_path):
    with secured_console(tmp_path) as c:
        s = c.session
        for name in ("open", "secret"):
            s.execute(f"CREATE TABLE ks.{name} (pk int PRIMARY KEY, v text) WITH cdc = {{'enabled': true}}")
            s.execute(f"ALTER TABLE ks.{name} ADD CHANGEFEED f WITH (MODE = 'UPDATES', FORMAT = 'JSON')")
            s.execute(f'ALTER TOPIC "ks/{name}/f" ADD CONSUMER app')
            s.execute(f"INSERT INTO ks.{name} (pk, v) VALUES (1, 'x')")
        s.execute("CREATE ROLE reader WITH PASSWORD = 'pw' AND LOGIN = true")
        s.execute("GRANT SELECT ON ks.open TO reader")
        s.execute("GRANT SELECT ON ks.open_scylla_cdc_log TO reader")
        yield c


def login(c, user: str, password: str, origin: str | None = None) -> tuple[int, dict, bytes]:
    headers = {"Content-Type": "application/x-www-form-urlencoded"}
    if origin:
        headers["Origin"] = origin
    return request(c, "POST", "/login", urllib.parse.urlencode({"username": user, "password": password}).encode(),
                   headers)


def cookie_of(headers: dict) -> str:
    return headers["Set-Cookie"].split(";")[0]


def test_the_api_asks_for_a_login_and_metrics_do_not(secured):
    status, _, body = secured.get("/api/tables")
    assert status == 401 and json.loads(body) == {"error": "log in first", "login": True}
    assert json.loads(secured.get("/api/session")[2]) == {"auth": True, "role": None, "logged_in": False}
    assert secured.get("/metrics")[0] == 200
    assert secured.get("/")[0] == 200  # the page, which shows the login form


def test_a_login_sets_an_http_only_strict_cookie_and_logout_ends_it(secured):
    status, headers, body = login(secured, "reader", "pw")
    assert status == 200 and json.loads(body) == {"role": "reader"}
    attributes = [a.strip() for a in headers["Set-Cookie"].split(";")]
    assert {"HttpOnly", "SameSite=Strict", "Path=/"} <= set(attributes)
    cookie = cookie_of(headers)
    assert secured.api("session", cookie) == {"auth": True, "role": "reader", "logged_in": True}
    status, headers, _ = request(secured, "POST", "/logout", b"", {"Cookie": cookie})
    assert status == 200 and "Max-Age=0" in headers["Set-Cookie"]
    assert secured.get("/api/tables", {"Cookie": cookie})[0] == 401


def test_a_role_sees_only_the_tables_it_may_select(secured):
    cookie = cookie_of(login(secured, "reader", "pw")[1])
    assert [t["table"] for t in secured.api("tables", cookie)["tables"]] == ["open"]
    assert [f["path"] for f in secured.api("changefeeds", cookie)["changefeeds"]] == ["ks/open/f"]
    assert [c["changefeed"] for c in secured.api("consumers", cookie)["consumers"]] == ["ks/open/f"]
    for path in ("/api/table?ks=ks&table=secret", "/api/changefeed?path=ks/secret/f",
                 "/api/records?path=ks/secret/f", "/api/log?ks=ks&table=secret"):
        status, _, body = secured.get(path, {"Cookie": cookie})
        assert status == 404, path
        assert b"secret" in body and b"Unauthorized" not in body
    assert secured.api("records?path=ks/open/f&from=offset&value=0", cookie)["records"][0]["value"]["key"] == [1]
    assert secured.api("log?ks=ks&table=open", cookie)["entries"][0]["key"] == [1]
    admin = cookie_of(login(secured, "admin", "s3cret")[1])
    assert [t["table"] for t in secured.api("tables", admin)["tables"]] == ["open", "secret"]
    secured.session.execute("REVOKE SELECT ON ks.open FROM reader")  # takes effect at the next request
    assert secured.api("tables", cookie)["tables"] == []


def test_wrong_passwords_are_refused_alike_and_slowed_down_as_on_the_cql_port(secured):
    status, _, body = login(secured, "reader", "nope")
    assert status == 401 and b"incorrect" in body
    status, _, body2 = login(secured, "nobody", "nope")
    assert status == 401 and b"incorrect" in body2
    started = time.monotonic()
    for _ in range(4):
        assert login(secured, "reader", "nope")[0] == 401
    assert time.monotonic() - started >= 0.1 + 0.2 + 0.4  # the LoginGuard's growing waits after failures
    assert login(secured, "reader", "", None)[0] == 400
    assert login(secured, "reader", "pw", origin="http://evil.example")[0] == 403
    assert secured.get("/api/tables", {"Cookie": "logtide_console=forged"})[0] == 401


def test_sessions_expire_when_idle_or_old_and_are_bounded():
    now = [0.0]
    sessions = Sessions(idle_seconds=10, max_age_seconds=100, clock=lambda: now[0])
    token = sessions.start("reader")
    now[0] = 9
    assert sessions.role(token) == "reader"
    now[0] = 18
    assert sessions.role(token) == "reader"  # used at 9: idle for 9 s only
    now[0] = 29
    assert sessions.role(token) is None
    old = sessions.start("reader")
    for t in range(0, 101, 9):
        now[0] = 29 + t
        assert sessions.role(old) == ("reader" if t < 100 else None)
    first = sessions.start("a")
    for _ in range(MAX_SESSIONS):
        sessions.start("b")
    assert len(sessions) == MAX_SESSIONS and sessions.role(first) is None
