"""A repeated failure is logged once per kind and interval, with a count of the ones left out."""

from __future__ import annotations

import asyncio
import errno
import logging

import logtide
from logtide.ratelog import RateLimitedLog
from logtide.server import ServerConfig
from logtide.server.server import Server


def test_one_line_per_kind_per_interval(caplog):
    now = [0.0]
    rl = RateLimitedLog(logging.getLogger("logtide.test"), interval=60, clock=lambda: now[0])
    with caplog.at_level(logging.WARNING, logger="logtide.test"):
        for _ in range(1000):
            rl.warning("disk full", "write failed: disk full")
        rl.warning("I/O error", "write failed: I/O error")
        now[0] = 61
        rl.warning("disk full", "write failed: disk full")
    lines = [r.getMessage() for r in caplog.records]
    assert lines == ["write failed: disk full", "write failed: I/O error",
                     "write failed: disk full (999 more like this in the last 61 s)"]


def test_accept_failures_for_want_of_descriptors_are_logged_once_without_traceback(tmp_path, caplog):
    """What asyncio reports when accept() fails with EMFILE goes through the server's handler."""
    with logtide.open(tmp_path / "d", synchronous="OFF") as db:
        server = Server(db, ServerConfig(port=0))
        loop = asyncio.new_event_loop()
        try:
            with caplog.at_level(logging.ERROR, logger="logtide.server"):
                for _ in range(100):
                    server._loop_exception(loop, {"message": "socket.accept() out of system resource",
                                                  "exception": OSError(errno.EMFILE, "Too many open files")})
        finally:
            loop.close()
    records = [r for r in caplog.records if r.name == "logtide.server"]
    assert len(records) == 1 and records[0].exc_info is None
    assert "cannot accept new connections: Too many open files" in records[0].getMessage()
