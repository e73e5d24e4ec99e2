"""Fixtures: a logtide CQL server on a free loopback port (one per module) and driver clusters."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Callable, Iterator

import pytest

import logtide
from logtide.server import BackgroundServer, ServerConfig

KEYSPACE_DDL = "CREATE KEYSPACE {} WITH replication = {{'class': 'SimpleStrategy', 'replication_factor': 1}}"

# The driver warns about protocol downgrades and missing load-balancing policies: noise here.
logging.getLogger("cassandra").setLevel(logging.ERROR)


def cluster(port: int, protocol_version: int | None = None, **kwargs: Any) -> Any:
    """A cassandra-driver Cluster for the server on ``port`` (protocol negotiated unless pinned)."""
    from cassandra.cluster import EXEC_PROFILE_DEFAULT, Cluster, ExecutionProfile
    from cassandra.policies import RoundRobinPolicy

    if protocol_version is not None:
        kwargs["protocol_version"] = protocol_version
    profile = ExecutionProfile(load_balancing_policy=RoundRobinPolicy(), request_timeout=30)
    return Cluster(["127.0.0.1"], port=port, execution_profiles={EXEC_PROFILE_DEFAULT: profile},
                   connect_timeout=10, control_connection_timeout=10, **kwargs)


def wait_for(check: Callable[[], Any], seconds: float = 20.0, what: str = "the metadata did not follow") -> None:
    """Poll ``check`` until it is true (a driver's metadata following a schema event), failing after ``seconds``."""
    deadline = time.monotonic() + seconds
    while not check():
        assert time.monotonic() < deadline, what
        time.sleep(0.05)


def run_cqlsh(port: int, home: Path, *args: str) -> tuple[int, str, str]:
    """``cqlsh 127.0.0.1 PORT ARGS...`` (cqlsh from PyPI, non-interactive): (exit status, stdout, stderr).

    ``home`` is a scratch HOME: cqlsh writes ``~/.cassandra``.
    """
    env = {**os.environ, "HOME": str(home)}
    env.pop("CQLSH_HOST", None)
    env.pop("CQLSH_PORT", None)
    cmd = [sys.executable, "-c", "import sys; from cqlshlib.__main__ import main; sys.exit(main())",
           "127.0.0.1", str(port), *args]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=120, env=env, cwd=home)
    return done.returncode, done.stdout, done.stderr


@pytest.fixture(scope="module")
def server(tmp_path_factory) -> Iterator[BackgroundServer]:
    """A server on an empty database (synchronous=OFF for speed), stopped after the module."""
    db = logtide.open(tmp_path_factory.mktemp("serverdata"), synchronous="OFF")
    srv = BackgroundServer(db, ServerConfig(port=0), close_db=True).start()
    yield srv
    srv.stop()


@pytest.fixture(scope="module")
def port(server) -> int:
    return server.port
