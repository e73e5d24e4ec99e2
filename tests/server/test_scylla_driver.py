"""scylla-driver against the server, from its own virtualenv (it installs the module ``cassandra`` too).

The venv is built once under ``$LOGTIDE_TEST_CACHE`` (default
``$XDG_CACHE_HOME/logtide-tests``, else ``~/.cache/logtide-tests``) with
pip from the configured index, and reused by later runs.  When it cannot be
built (no package index reachable), the test is skipped and says why.
"""

from __future__ import annotations

import fcntl
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

SCYLLA_DRIVER = "scylla-driver==3.29.12"
SMOKE = Path(__file__).with_name("scylla_smoke.py")


def cache_dir() -> Path:
    if os.environ.get("LOGTIDE_TEST_CACHE"):
        return Path(os.environ["LOGTIDE_TEST_CACHE"])
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "logtide-tests"


def scylla_venv() -> Path:
    """The venv's python, built on first use (serialized by a file lock); skips the test if pip fails."""
    tag = f"{SCYLLA_DRIVER.replace('==', '-')}-py{sys.version_info.major}{sys.version_info.minor}"
    venv = cache_dir() / tag
    python = venv / "bin" / "python"
    ready = venv / ".installed"
    venv.parent.mkdir(parents=True, exist_ok=True)
    with open(venv.parent / f"{tag}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not ready.exists():
            steps = [[sys.executable, "-m", "venv", "--clear", str(venv)],
                     [str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check", SCYLLA_DRIVER]]
            for step in steps:
                done = subprocess.run(step, capture_output=True, text=True, timeout=600)
                if done.returncode != 0:
                    pytest.skip(f"cannot build a venv with {SCYLLA_DRIVER}: {done.stderr.strip()[-500:]}")
            ready.write_text(SCYLLA_DRIVER + "\n")
    return python


@pytest.fixture(scope="module")
def scylla_python() -> Path:
    return scylla_venv()


@pytest.mark.parametrize("protocol", [None, 4])
def test_scylla_driver_smoke(scylla_python, port, protocol):
    args = [str(scylla_python), str(SMOKE), str(port)] + ([str(protocol)] if protocol else [])
    done = subprocess.run(args, capture_output=True, text=True, timeout=300, env={**os.environ, "PYTHONPATH": ""})
    assert done.returncode == 0, done.stderr[-3000:]
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert out["driver"].startswith("3.29")
    assert out["protocol"] == (protocol or 5)
    assert out["columns"] == ["ck", "pk", "tags", "v"]
    assert out["row"] == ["v4", ["4", "a"]]
    assert out["pk0"] == 334
    assert out["batch"] == [[1, "batched"], [2, "simple"]]
    assert out["paged_rows"] == out["distinct"] == 1002
    assert out["lwt_in_null"] is True  # a null column is IN a bound list holding None (a null element)
    assert out["release_version"] == "5.0.0"
