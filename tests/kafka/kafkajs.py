"""KafkaJS (npm ``kafkajs``), the fifth client of the Kafka tests, installed at test time outside the repository.

``node_path()`` installs the pinned release with npm into a cache directory
(``$XDG_CACHE_HOME/logtide-tests``, else ``~/.cache/logtide-tests``) the first
time, and gives the ``node_modules`` to run ``kafkajs_consumer.js`` with;
``require_kafkajs()`` skips a test, saying why, when Node.js or npm is missing or
the npm registry cannot be reached.  Nothing is written into the repository.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

KAFKAJS = "kafkajs@2.2.4"
SCRIPT = Path(__file__).parent / "kafkajs_consumer.js"


def cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "logtide-tests" / KAFKAJS.replace("@", "-")


@functools.cache
def node_path() -> Path | str:
    """The node_modules holding kafkajs, or why there is none (a string)."""
    if shutil.which("node") is None or shutil.which("npm") is None:
        return "Node.js and npm are not installed"
    target = cache_dir()
    if (target / "node_modules" / "kafkajs" / "package.json").exists():
        return target / "node_modules"
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = tempfile.mkdtemp(dir=target.parent)  # installed aside, then moved in whole
    try:
        done = subprocess.run(["npm", "install", "--prefix", tmp, KAFKAJS, "--no-audit", "--no-fund",
                               "--no-package-lock"], capture_output=True, text=True, timeout=300)
        if done.returncode != 0:
            return f"npm could not install {KAFKAJS} (is the npm registry reachable?): {done.stderr.strip()[-300:]}"
        try:
            os.replace(tmp, target)
        except OSError:  # another run installed it meanwhile
            pass
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return target / "node_modules"


def require_kafkajs() -> Path:
    found = node_path()
    if isinstance(found, str):
        pytest.skip(f"KafkaJS tests need {KAFKAJS}: {found}")
    return found
