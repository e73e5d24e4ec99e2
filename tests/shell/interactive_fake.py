"""``logtide shell`` in interactive mode over a fake engine session, for the pty tests."""

from __future__ import annotations

import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from logtide.errors import InvalidRequest  # noqa: E402
from logtide.shell import ShellArgs, run  # noqa: E402
from tests.shell.cases import INT  # noqa: E402
from tests.shell.fakes import FakeSession, factory, rows_result, use_keyspace  # noqa: E402


def main() -> int:
    session = FakeSession({
        "SELECT * FROM ks.missing": InvalidRequest("unconfigured table missing"),
        "SELECT": rows_result([("pk", INT)], [(1,)]),
        "USE": use_keyspace,
    })
    return run(ShellArgs(data_dir="fake"), factory(session), sys.stdin, sys.stdout, sys.stderr, dict(os.environ))


if __name__ == "__main__":
    sys.exit(main())
