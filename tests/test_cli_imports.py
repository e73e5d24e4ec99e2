"""Each command imports only what it needs (issue #21, item 17): ``logtide --version`` and ``logtide --help``
load none of the engine, the drivers or Spark, and a command loads no other command's machinery.  Structural
checks of ``sys.modules`` in a fresh interpreter, not timings."""

from __future__ import annotations

import subprocess
import sys

import pytest

# run ``logtide ARGS`` in a fresh interpreter, then list the modules it imported on stderr
PROBE = """
import sys
from logtide.cli import main
try:
    main(sys.argv[1:])
except SystemExit:
    pass
sys.stdout.flush()
print("MODULES", " ".join(sorted(sys.modules)), file=sys.stderr)
"""

ENGINE = ("logtide.session", "logtide.engine", "logtide.storage", "logtide.schema", "logtide.cql", "logtide.query",
          "logtide.mutation", "logtide.cdc", "logtide.changefeed", "logtide.server", "logtide.kafka", "logtide.spark", "logtide.observe")
LIBRARIES = ("cassandra", "cqlshlib", "pyspark", "pyarrow", "msgspec", "sqlite3", "prometheus_client", "tqdm",
             "confluent_kafka", "deltalake", "asyncio", "ssl", "importlib.metadata")


def imported(*args: str) -> set[str]:
    done = subprocess.run([sys.executable, "-c", PROBE, *args], capture_output=True, text=True, timeout=120,
                          stdin=subprocess.DEVNULL)
    line = next(line for line in done.stderr.splitlines() if line.startswith("MODULES "))
    return set(line.split()[1:])


def loaded(modules: set[str], prefixes: tuple[str, ...]) -> list[str]:
    return sorted(m for m in modules if any(m == p or m.startswith(p + ".") for p in prefixes))


@pytest.mark.parametrize("args", [["--version"], ["--help"], ["no-such-command"]])
def test_version_and_help_import_neither_the_engine_nor_any_driver_nor_spark(args):
    modules = imported(*args)
    assert loaded(modules, ENGINE + LIBRARIES) == []
    assert loaded(modules, ("logtide",)) == ["logtide", "logtide.cli", "logtide.compiled", "logtide.config",
                                             "logtide.version"]


def test_import_logtide_defers_the_engine_until_it_is_used():
    code = ("import sys, logtide; assert 'logtide.session' not in sys.modules; "
            "assert callable(logtide.open) and 'logtide.session' in sys.modules; print(logtide.__version__)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    from logtide.version import __version__
    assert done.stdout.strip() == __version__


@pytest.mark.parametrize("args, unwanted", [
    (["status", "--help"], ("logtide.spark", "logtide.kafka", "logtide.server.server", "pyspark", "asyncio")),
    (["topic", "read", "--help"], ("logtide.spark", "logtide.kafka", "logtide.server", "pyspark")),
    (["cdc", "generations", "--help"], ("logtide.spark", "logtide.kafka", "logtide.server", "pyspark", "sqlite3")),
    (["check", "--help"], ("logtide.spark", "logtide.kafka", "logtide.server", "pyspark", "logtide.session")),
    (["serve", "--help"], ("logtide.spark", "logtide.kafka", "logtide.session", "pyspark", "cassandra")),
    (["pipeline", "--help"], ("pyspark", "logtide.session", "logtide.kafka", "logtide.server", "cassandra")),
    (["compile", "--help"], ("Cython", "setuptools", "logtide.session", "cassandra", "pyspark")),
])
def test_a_command_imports_only_its_own_machinery(args, unwanted):
    assert loaded(imported(*args), unwanted) == []
