"""What the test suite does to the machine is said on the terminal: a missing Debian tool (kcat) is installed
as root with apt-get, or named with its tests skipped (tests/conftest.py; README, next to the test command)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_a_missing_debian_tool_is_named_on_the_terminal(tmp_path):
    bin_dir = tmp_path / "bin"  # an empty PATH: no kcat, no apt-get
    bin_dir.mkdir()
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "tests/test_ratelog.py"], cwd=ROOT,
                          capture_output=True, text=True, timeout=300, env={**os.environ, "PATH": str(bin_dir)})
    assert done.returncode == 0, done.stdout[-2000:]
    assert done.stdout.splitlines()[0] == ("tests/conftest.py: kcat, chromium, chromium-driver, prometheus not "
                                           "installed and not root with apt-get: the tests that drive them skip")


def test_spark_tests_sharing_the_session_are_one_scope_and_jobs_run_as_commands_are_their_own_even_beside_them():
    from tests.conftest import scheduling_scope

    scope = scheduling_scope(ROOT)
    cdc = "tests/spark/test_cdc_source.py::test_bad_cdc_options_get_clear_errors"
    lakehouse = "tests/spark/test_lakehouse.py::test_delta_replica_equals_the_table_after_each_micro_batch[UPDATES]"
    assert scope(cdc) == scope(lakehouse) == "tests/spark"
    assert scope("tests/spark/test_lakehouse_command.py::test_x") == "tests/spark/test_lakehouse_command.py"
    # a command's test in a file whose other tests take the session runs beside it, not on the session's worker
    status = "tests/spark/test_replicate_status.py::"
    assert scope(status + "test_each_micro_batch_shows_the_log_rows_still_to_copy") == "tests/spark"
    assert (scope(status + "test_the_command_shows_spark_starting_then_the_status_and_says_caught_up")
            == "tests/spark/test_replicate_status.py")
    assert scope("tests/spark/test_replicate.py::test_x") == "tests/spark/test_replicate.py"
    assert scope("tests/server/test_cli.py::test_x") == "tests/server/test_cli.py"


def test_long_running_files_are_handed_out_right_after_the_spark_session_longest_first():
    from tests.conftest import hand_out_order, long_running_seconds

    seconds = long_running_seconds(ROOT)
    assert seconds("tests/spark/test_replicate.py") > seconds("tests/spark/test_lakehouse_command.py") > 0
    assert seconds("tests/server/test_cli.py") == 0
    scopes = {"tests/server/test_cli.py": dict.fromkeys("abcdefg", False),
              "tests/spark/test_replicate.py": {"x": False},
              "tests/spark": dict.fromkeys("ab", False),
              "tests/test_ratelog.py": dict.fromkeys("abc", False),
              "tests/spark/test_lakehouse_command.py": dict.fromkeys("xy", False)}
    assert hand_out_order(scopes, seconds) == ["tests/spark", "tests/spark/test_replicate.py",
                                               "tests/spark/test_lakehouse_command.py", "tests/server/test_cli.py",
                                               "tests/test_ratelog.py"]
