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
