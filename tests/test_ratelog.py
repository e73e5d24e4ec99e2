"""A repeated failure is logged once per kind and interval, with a count of the ones left out.

Accept failures for want of descriptors, logged through it by both ports, are checked against a real
server under ``ulimit -n`` (tests/kafka/test_prelogin_limits.py).
"""

from __future__ import annotations

import logging

from logtide.ratelog import RateLimitedLog


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
