"""Shared helpers of the storage tests: a small database, raw access to its SQLite file, logtide as a subprocess."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from pathlib import Path

import logtide

KS = "CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}"


def make_db(path: Path, rows: int = 10, cdc: bool = False) -> None:
    """ks.t (k int, c int, v text, PRIMARY KEY (k, c)) with ``rows`` rows: k = i % 3, c = i, v = 'value-<i>'."""
    with logtide.open(path) as db:
        s = db.session()
        s.execute(KS)
        s.execute("CREATE TABLE ks.t (k int, c int, v text, PRIMARY KEY (k, c))"
                  + (" WITH cdc = {'enabled': true}" if cdc else ""))
        p = s.prepare("INSERT INTO ks.t (k, c, v) VALUES (?, ?, ?)")
        for i in range(rows):
            s.execute(p, [i % 3, i, f"value-{i}"])


def raw(path: Path) -> sqlite3.Connection:
    """A plain SQLite connection to the data directory's database (for fault injection)."""
    return sqlite3.connect(path / "logtide.db", isolation_level=None)


def run_logtide(*args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    """``logtide ARGS`` in a subprocess."""
    return subprocess.run([sys.executable, "-m", "logtide", *args], capture_output=True, text=True, timeout=timeout)
