"""Shared fixtures: a fresh database in a temporary directory, and a session on it.

Before collection, tools the tests drive that live in Debian's packages (``kcat``; Chromium and its
WebDriver for the console's browser tests and Prometheus for the Grafana dashboard's, ``tests/console``) are
installed when missing and the tests run as root (as CI does), so that their tests run
rather than skip; a line on the terminal says so (README, "Running the tests").

The README runs the suite on parallel workers (pytest-xdist, ``-n auto``):
:func:`pytest_xdist_auto_num_workers` picks how many, the installing above is
done once by the controlling process before the workers start, and
:func:`pytest_xdist_make_scheduler` hands out whole test files, and every
test of ``tests/spark`` that uses the shared Spark session to one worker,
first, so the run starts one Spark session (tests/spark/conftest.py) while the
other workers share the rest (the jobs run as commands among them), the files
marked ``long_running`` before the others so that none of them is the run's tail.
"""

from __future__ import annotations

import ast
import os
import shutil
import subprocess
from pathlib import Path
from typing import Callable

import pytest

DEBIAN_TOOLS = {"kcat": "kcat", "chromium": "chromium", "chromedriver": "chromium-driver",
                "prometheus": "prometheus"}  # command -> package


def _apt_install(packages: list[str]) -> bool:
    """``apt-get install`` as root, updating the package lists once if the first try fails; whether it worked."""
    if os.geteuid() != 0 or shutil.which("apt-get") is None:
        return False
    cmd = ["apt-get", "install", "-y", "-qq", "--no-install-recommends", *packages]
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    if subprocess.run(cmd, capture_output=True, env=env).returncode != 0:
        subprocess.run(["apt-get", "update", "-qq"], capture_output=True, env=env)
        return subprocess.run(cmd, capture_output=True, env=env).returncode == 0
    return True


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """``-n auto``: one worker per CPU, at least 3 and at most 4 (each worker starts servers, clients and perhaps
    Spark).  At least 3, because the tests wait on servers, clients and jobs more than they compute: on 2 cores
    and 2 workers the whole suite used the CPU for 19 of its 47 core-minutes."""
    try:
        cpus = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cpus = os.cpu_count() or 1
    return min(4, max(3, cpus))


def scheduling_scope(root: Path) -> Callable[[str], str]:
    """The scheduling scope of a test id: its file, except that the tests of ``tests/spark`` whose functions take
    the ``spark`` fixture are ONE scope, ``tests/spark``: they share a Spark session.  The other tests there (jobs
    run as commands, each with its own Spark, and checks made before Spark starts) stay in their file's scope,
    even in a file whose other tests take the session, so that a command's minutes are not spent on the worker
    that holds the session."""
    takers: dict[str, set[str]] = {}

    def takes_the_spark_session(path: str, function: str) -> bool:
        if path not in takers:
            tree = ast.parse((root / path).read_text())
            takers[path] = {f.name for f in ast.walk(tree) if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))
                            and any(a.arg == "spark" for a in f.args.args)}
        return function in takers[path]

    def scope(nodeid: str) -> str:
        path, _, rest = nodeid.partition("::")
        function = rest.rpartition("::")[2].split("[", 1)[0]
        return "tests/spark" if path.startswith("tests/spark/") and takes_the_spark_session(path, function) else path

    return scope


def long_running_seconds(root: Path) -> Callable[[str], int]:
    """How long a test file runs, in seconds on a quiet 2-core machine, when its module says so with
    ``pytestmark = pytest.mark.long_running(seconds=N)`` (read from the file's ``ast``, as the workers have not
    imported it when the run is scheduled); 0 for the others."""
    seconds: dict[str, int] = {}

    def mark_seconds(node: ast.AST) -> int:
        for call in ast.walk(node):
            if (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute)
                    and call.func.attr == "long_running"):
                return next((int(k.value.value) for k in call.keywords
                             if k.arg == "seconds" and isinstance(k.value, ast.Constant)), 1)
        return 0

    def of(path: str) -> int:
        if path not in seconds:
            tree = ast.parse((root / path).read_text())
            seconds[path] = max([mark_seconds(s.value) for s in tree.body if isinstance(s, ast.Assign)
                                 and any(isinstance(t, ast.Name) and t.id == "pytestmark" for t in s.targets)],
                                default=0)
        return seconds[path]

    return of


def hand_out_order(scopes: dict[str, dict[str, bool]], long_running: Callable[[str], int]) -> list[str]:
    """The order in which scopes are handed out: the shared Spark scope first, then the long-running files,
    longest first (a file of a few tests that runs for minutes would otherwise come last, among the small
    files, and be the run's tail), then the other files, the ones with the most tests first."""
    def key(scope: str) -> tuple[int, int, int]:
        return (scope != "tests/spark", -long_running(scope) if scope != "tests/spark" else 0, -len(scopes[scope]))

    return sorted(scopes, key=key)


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: object) -> object:
    """pytest-xdist's scheduling by scope (:func:`scheduling_scope`): a file's module fixtures and the order of its
    tests hold, as in a run without workers, and one worker holds the Spark session; scopes are handed out in
    :func:`hand_out_order`."""
    from xdist.scheduler import LoadScopeScheduling

    scope = scheduling_scope(config.rootpath)
    long_running = long_running_seconds(config.rootpath)

    class SparkOnOneWorker(LoadScopeScheduling):
        ordered = False

        def _split_scope(self, nodeid: str) -> str:
            return scope(nodeid)

        def _assign_work_unit(self, node: object) -> None:
            if not self.ordered:  # the queue is complete when the first unit is handed out
                self.ordered = True
                queue = dict(self.workqueue)
                self.workqueue.clear()
                self.workqueue.update((name, queue[name]) for name in hand_out_order(queue, long_running))
            super()._assign_work_unit(node)

    return SparkOnOneWorker(config, log)


def pytest_sessionstart(session: pytest.Session) -> None:
    """Install the missing Debian tools, saying so on the terminal (README, next to the test command); only in
    the controlling process when the suite runs on parallel workers."""
    if hasattr(session.config, "workerinput"):
        return
    missing = [pkg for tool, pkg in DEBIAN_TOOLS.items() if shutil.which(tool) is None]
    if not missing:
        return
    say = session.config.pluginmanager.get_plugin("terminalreporter")
    names = ", ".join(missing)
    if os.geteuid() != 0 or shutil.which("apt-get") is None:
        say.write_line(f"tests/conftest.py: {names} not installed and not root with apt-get: the tests that "
                       "drive them skip")
        return
    say.write_line(f"tests/conftest.py: installing Debian's {names} with apt-get (as root; the tests drive them)")
    if not _apt_install(missing):
        say.write_line(f"tests/conftest.py: apt-get could not install {names}: the tests that drive them skip")

import logtide
from logtide.clock import ManualClock


@pytest.fixture
def clock() -> ManualClock:
    """A manual clock starting at 2020-09-13 (1_600_000_000 s)."""
    return ManualClock()


@pytest.fixture
def db(tmp_path, clock):
    database = logtide.open(tmp_path / "data", clock=clock, synchronous="OFF")
    yield database
    database.close()


@pytest.fixture
def session(db):
    s = db.session()
    s.execute("CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}")
    s.execute("USE ks")
    return s


def rows(result) -> list[tuple]:
    """Result rows as plain tuples."""
    return [tuple(r) for r in result]
