"""``logtide serve --auth`` with a bootstrap superuser ``admin`` (password ``s3cret``), and driver sessions of a role
on it, for the tests of roles, permissions and service levels through the real server."""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any, Iterator

from cassandra.auth import PlainTextAuthProvider

from .conftest import cluster
from .serveproc import Serve


@contextlib.contextmanager
def auth_server(tmp_path: Path) -> Iterator[Serve]:
    """The server (data in ``tmp_path/d``), listening, stopped on exit."""
    (tmp_path / "pw").write_text("s3cret\n")
    with Serve("--data-dir", str(tmp_path / "d"), "--synchronous", "OFF", "--auth", "--superuser", "admin",
               "--superuser-password-file", str(tmp_path / "pw")) as srv:
        srv.wait_listening()
        yield srv


@contextlib.contextmanager
def logged_in(srv: Serve, user: str = "admin", password: str = "s3cret") -> Iterator[Any]:
    """A driver session of ``user``, its cluster shut down on exit."""
    c = cluster(srv.port, auth_provider=PlainTextAuthProvider(user, password))
    try:
        yield c.connect()
    finally:
        c.shutdown()
