"""A real ``logtide serve`` with its metrics port (the console's) and Kafka endpoint on free ports."""

from __future__ import annotations

import json
from contextlib import contextmanager
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

import pytest

from ..ops.serving import ServeProcess, free_port
from ..server.conftest import KEYSPACE_DDL, cluster


@dataclass
class Console:
    """A running server: its CQL port, console base URL, Kafka bootstrap and a driver session."""

    srv: ServeProcess
    port: int
    url: str
    kafka: str
    session: Any = None

    def get(self, path: str, headers: dict[str, str] | None = None) -> tuple[int, dict[str, str], bytes]:
        """GET ``path``: (status, headers, body), errors included."""
        req = urllib.request.Request(self.url + path, headers=headers or {})
        try:
            with urllib.request.urlopen(req, timeout=30) as r:
                return r.status, dict(r.headers), r.read()
        except urllib.error.HTTPError as e:
            return e.code, dict(e.headers), e.read()

    def api(self, name: str, cookie: str | None = None) -> Any:
        status, _, body = self.get("/api/" + name, {"Cookie": cookie} if cookie else None)
        assert status == 200, (status, body)
        return json.loads(body)


def start_console(data_dir: Path, *args: str) -> Console:
    metrics, kafka = free_port(), free_port()
    srv = ServeProcess.logtide("--data-dir", str(data_dir), "--metrics-port", str(metrics), "--kafka-port",
                               str(kafka), *args)
    try:
        port = srv.wait_listening()
    except BaseException:
        srv.__exit__(None, None, None)
        raise
    return Console(srv, port, f"http://127.0.0.1:{metrics}", f"127.0.0.1:{kafka}")


TABLE_DDL = ("CREATE TABLE ks.t (pk int, ck int, v text, PRIMARY KEY (pk, ck)) "
             "WITH cdc = {'enabled': true, 'preimage': true, 'postimage': true}")


@contextmanager
def console_with_feed(data_dir: Path) -> Iterator[Console]:
    """A server with keyspace ``ks``, table ``ks.t`` (CDC with images), changefeed ``ks/t/f`` (JSON) and its
    consumer ``billing``; ``console.session`` is a cassandra-driver session on it."""
    with connected(start_console(data_dir)) as c:
        c.session.execute(TABLE_DDL)
        c.session.execute("ALTER TABLE ks.t ADD CHANGEFEED f WITH (MODE = 'NEW_AND_OLD_IMAGES', FORMAT = 'JSON')")
        c.session.execute('ALTER TOPIC "ks/t/f" ADD CONSUMER billing')
        yield c


@pytest.fixture
def console(tmp_path: Path) -> Iterator[Console]:
    """:func:`console_with_feed` for one test."""
    with console_with_feed(tmp_path / "data") as c:
        yield c


@contextmanager
def connected(c: Console, **driver: Any) -> Iterator[Console]:
    """``c`` with a driver session that made keyspace ``ks``; then the server stopped cleanly, no traceback."""
    with c.srv:
        cl = cluster(c.port, **driver)
        c.session = cl.connect()
        c.session.execute(KEYSPACE_DDL.format("ks"))
        try:
            yield c
        finally:
            cl.shutdown()
            assert c.srv.stop() == 0, c.srv.output()
        assert "Traceback" not in c.srv.output()


@contextmanager
def secured_console(tmp_path: Path) -> Iterator[Console]:
    """A server with --auth (superuser ``admin``/``s3cret``) and keyspace ``ks``; ``session`` is admin's."""
    from cassandra.auth import PlainTextAuthProvider

    (tmp_path / "pw").write_text("s3cret\n")
    c = start_console(tmp_path / "data", "--auth", "--superuser", "admin", "--superuser-password-file",
                      str(tmp_path / "pw"))
    with connected(c, auth_provider=PlainTextAuthProvider("admin", "s3cret")) as c:
        yield c
