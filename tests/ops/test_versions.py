"""Versions: ``logtide --version``, the server's startup line, and the release cqlsh expects."""

from __future__ import annotations

import subprocess
import sys
from importlib import metadata

from logtide.schema.system_schema import NodeInfo


def test_version_option_prints_the_package_version():
    done = subprocess.run([sys.executable, "-m", "logtide", "--version"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0
    assert done.stdout == f"logtide {metadata.version('logtide')}\n"


def test_server_reports_the_cassandra_release_the_installed_cqlsh_was_built_against():
    from cqlshlib.serverversion import version as cqlsh_build

    # cqlsh prints "WARNING: cqlsh was built against X, but this server is Y" on every call when they differ
    assert NodeInfo().release_version == cqlsh_build
