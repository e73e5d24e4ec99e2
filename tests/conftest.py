"""Shared fixtures: a fresh database in a temporary directory, and a session on it.

Before collection, tools the tests drive that live in Debian's packages (``kcat``) are
installed when missing and the tests run as root (as CI does), so that their tests run
rather than skip.
"""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest

DEBIAN_TOOLS = {"kcat": "kcat"}  # command -> Debian package


def _apt_install(packages: list[str]) -> None:
    """``apt-get install`` as root, updating the package lists once if the first try fails."""
    if os.geteuid() != 0 or shutil.which("apt-get") is None:
        return
    cmd = ["apt-get", "install", "-y", "-qq", "--no-install-recommends", *packages]
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    if subprocess.run(cmd, capture_output=True, env=env).returncode != 0:
        subprocess.run(["apt-get", "update", "-qq"], capture_output=True, env=env)
        subprocess.run(cmd, capture_output=True, env=env)


def pytest_sessionstart(session: pytest.Session) -> None:
    missing = [pkg for tool, pkg in DEBIAN_TOOLS.items() if shutil.which(tool) is None]
    if missing:
        _apt_install(missing)

import logtide
from logtide.clock import ManualClock


@pytest.fixture
def clock() -> ManualClock:
    """A manual clock starting at 2020-09-13 (1_600_000_000 s)."""
    return ManualClock()


@pytest.fixture
def db(tmp_path, clock):
    database = logtide.open(tmp_path / "data", clock=clock, synchronous="OFF")
    yield database
    database.close()


@pytest.fixture
def session(db):
    s = db.session()
    s.execute("CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}")
    s.execute("USE ks")
    return s


def rows(result) -> list[tuple]:
    """Result rows as plain tuples."""
    return [tuple(r) for r in result]
