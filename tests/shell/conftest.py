"""Fixtures for the shell tests."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

HERE = Path(__file__).resolve().parent
GOLDEN = HERE / "golden"


@pytest.fixture(scope="session")
def cqlsh_reference(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The shared cases run through cqlsh's own Shell code (in a subprocess with a scratch HOME)."""
    home = tmp_path_factory.mktemp("cqlsh-home")
    env = {**os.environ, "HOME": str(home)}
    env.pop("CQLSH_DEFAULT_TIMESTAMP_FORMAT", None)
    env.pop("TZ", None)
    proc = subprocess.run([sys.executable, str(HERE / "cqlsh_reference.py")], capture_output=True,
                          text=True, env=env, stdin=subprocess.DEVNULL, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def golden(name: str) -> str:
    """A golden file's text."""
    return (GOLDEN / name).read_text(encoding="utf-8")
