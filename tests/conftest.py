"""Shared fixtures: a fresh database in a temporary directory, and a session on it."""

from __future__ import annotations

import pytest

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
