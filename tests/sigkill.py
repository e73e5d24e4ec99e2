"""Killing a writer process mid-flight (SIGKILL), for the durability tests of the engine and the changefeeds."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path


def run_and_kill(script: Path, data: Path, arg: int, rng: random.Random) -> int:
    """Run ``script DATA ARG`` (it prints ``ready``, then one acknowledged sequence number per line), SIGKILL it
    after 0.05-0.4 s, and return the largest number it acknowledged (-1 if none)."""
    proc = subprocess.Popen([sys.executable, str(script), str(data), str(arg)], stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
    acked = -1
    deadline = time.monotonic() + rng.uniform(0.05, 0.4)
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            break
        acked = max(acked, int(line))
    os.kill(proc.pid, signal.SIGKILL)
    for line in proc.stdout:  # drain what the writer acknowledged before dying
        acked = max(acked, int(line))
    proc.wait()
    return acked


def write_until_killed(session, statement, params: list, proc: subprocess.Popen, kill_at: int = 1500,
                       acked_first: int = 100) -> list[int]:
    """Send the prepared ``statement`` once per item of ``params`` through a driver ``session``, asynchronously;
    once ``kill_at`` are sent and ``acked_first`` answered (30 s at most), SIGKILL the server ``proc`` with many
    more in flight, and wait for it.  Return, sorted, the positions in ``params`` of the writes acknowledged."""
    import threading

    acknowledged: list[int] = []
    lock = threading.Lock()

    def acked(_, i):
        with lock:
            acknowledged.append(i)

    for i, values in enumerate(params):
        session.execute_async(statement, values).add_callbacks(acked, lambda _: None, callback_args=(i,))
        if i == kill_at:
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline:
                with lock:
                    if len(acknowledged) >= acked_first:
                        break
                time.sleep(0.002)
            proc.send_signal(signal.SIGKILL)
            break
    proc.wait(30)
    with lock:
        return sorted(acknowledged)
