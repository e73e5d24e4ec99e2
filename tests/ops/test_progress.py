"""Long commands show progress on a terminal and stay quiet when piped (``logtide.progress``)."""

from __future__ import annotations

import io
import os
import pty
import subprocess
import sys
import threading

from logtide.progress import progress

from .test_replay_cli import make_source


def test_progress_is_silent_on_a_pipe_and_counts_when_forced():
    quiet = io.StringIO()
    with progress("scanning ks.t", total=3, stream=quiet) as bar:
        bar.advance(3)
    assert quiet.getvalue() == "" and not bar.enabled
    shown = io.StringIO()
    with progress("scanning ks.t", total=3, unit="rows", enabled=True, stream=shown) as bar:
        bar.advance(2)
        bar.describe("scanning ks.u")
    assert "scanning ks.t" in shown.getvalue() and "2/3" in shown.getvalue()


def run_on_terminal(argv: list[str], timeout: float = 120) -> tuple[subprocess.CompletedProcess, bytes]:
    """Run a logtide command with its standard error on a pseudo-terminal: (result, what the terminal got).

    The bar redraws on every update (``TQDM_MININTERVAL=0``), so what the terminal got does not depend on how
    fast the machine is."""
    leader, follower = pty.openpty()
    shown = bytearray()

    def drain() -> None:
        while True:
            try:
                chunk = os.read(leader, 65536)
            except OSError:
                return
            if not chunk:
                return
            shown.extend(chunk)

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    try:
        done = subprocess.run([sys.executable, "-m", "logtide", *argv], stdout=subprocess.PIPE, stderr=follower,
                              timeout=timeout, env={**os.environ, "TQDM_MININTERVAL": "0"})
    finally:
        os.close(follower)
        reader.join(10)
        os.close(leader)
    return done, bytes(shown)


def test_replay_shows_progress_on_a_terminal(tmp_path):
    make_source(tmp_path)
    done, shown = run_on_terminal(["replay", "ks.t", "--to", "ks.copy", "--data-dir", str(tmp_path)])
    assert done.returncode == 0
    assert b"replaying ks.t" in shown and b"log rows" in shown
    assert done.stdout.decode().startswith("replayed 6 log rows")  # stdout is the same as without a terminal


def test_check_shows_progress_on_a_terminal_and_not_on_a_pipe(tmp_path):
    make_source(tmp_path)
    done, shown = run_on_terminal(["check", "--data-dir", str(tmp_path)])
    assert done.returncode == 0, shown
    assert b"checking" in shown and b"records" in shown
    piped = subprocess.run([sys.executable, "-m", "logtide", "check", "--data-dir", str(tmp_path)],
                           capture_output=True, text=True, timeout=120)
    assert piped.returncode == 0 and piped.stderr == ""
    assert piped.stdout == done.stdout.decode()


def test_a_status_line_shows_only_its_latest_text_and_keeps_it():
    shown = io.StringIO()
    with progress("logtide pipeline lakehouse", enabled=True, stream=shown, counter=False) as bar:
        bar.describe("batch 0: 10 records, lag 20 records")
        bar.describe("batch 1: 10 records, lag 10 records")
    out = shown.getvalue()
    assert "batch 1: 10 records, lag 10 records" in out
    assert "rows" not in out and "it/s" not in out  # no counter, no rate
    assert out.endswith("batch 1: 10 records, lag 10 records\n")  # the last status stays on the terminal
