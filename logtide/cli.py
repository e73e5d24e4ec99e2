"""The ``logtide`` command line: ``logtide <subcommand> ...``.

Subcommands are listed in :func:`subcommands`; each entry adds its parser
(with ``set_defaults(run=...)``, the function that runs it).  ``serve`` and ``replay`` are
added there when they exist.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Callable, Mapping, NoReturn, Sequence

from .config import add_config_option, integer
from .version import package_version

Runner = Callable[[argparse.Namespace], int]
Registrar = Callable[["argparse._SubParsersAction", argparse.ArgumentParser], argparse.ArgumentParser]


def default_data_dir(environ: Mapping[str, str]) -> str:
    """``$LOGTIDE_DATA_DIR``, else ``$XDG_DATA_HOME/logtide``, else ``~/.local/share/logtide``."""
    if environ.get("LOGTIDE_DATA_DIR"):
        return environ["LOGTIDE_DATA_DIR"]
    if environ.get("XDG_DATA_HOME"):
        return os.path.join(environ["XDG_DATA_HOME"], "logtide")
    return os.path.join(os.path.expanduser("~"), ".local", "share", "logtide")


def topology(ns: argparse.Namespace):
    """The CDC topology given with ``--vnodes``/``--shards`` (None: keep the stored one)."""
    from logtide.cdc.streams import Topology

    vnodes = getattr(ns, "vnodes", None)
    shards = getattr(ns, "shards", None)
    if vnodes is None and shards is None:
        return None
    default = Topology()
    try:
        return Topology(vnodes if vnodes is not None else default.vnodes, shards if shards is not None else default.shards)
    except ValueError as e:
        raise SystemExit(f"logtide: {e}") from None


def common_options(environ: Mapping[str, str]) -> argparse.ArgumentParser:
    """Options every subcommand takes (a parent parser)."""
    parent = argparse.ArgumentParser(add_help=False)
    parent.add_argument("--vnodes", type=integer, metavar="N",
                        help="CDC topology: number of vnode token ranges (default 16); a value different from "
                             "the stored one starts a new CDC generation")
    parent.add_argument("--shards", type=integer, metavar="N",
                        help="CDC topology: shards per vnode range, one stream each (default 2); a value "
                             "different from the stored one starts a new CDC generation")
    parent.add_argument(
        "--data-dir",
        metavar="DIR",
        default=default_data_dir(environ),
        help="directory holding the database (default: $LOGTIDE_DATA_DIR, else "
        "$XDG_DATA_HOME/logtide, else ~/.local/share/logtide; currently %(default)s)",
    )
    add_config_option(parent)
    return parent


def add_shell(subparsers: "argparse._SubParsersAction", parent: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """``logtide shell``."""
    parser = subparsers.add_parser(
        "shell",
        parents=[parent],
        help="interactive CQL shell (cqlsh-compatible output)",
        description="A CQL shell on the database in --data-dir, printing results as cqlsh does. "
        "Interactive on a terminal; with -e, -f or piped input it runs the statements and exits "
        "with status 1 if any failed. Besides CQL it accepts the cqlsh commands CONSISTENCY, "
        "SERIAL CONSISTENCY, EXPAND, PAGING, SOURCE, HELP, CLEAR and EXIT/QUIT.",
    )
    parser.add_argument("-k", "--keyspace", help="keyspace to USE at start")
    source = parser.add_mutually_exclusive_group()
    source.add_argument("-e", "--execute", metavar="STATEMENTS", help="run these statements and exit")
    source.add_argument("-f", "--file", metavar="FILE", help="run the statements of FILE and exit")
    parser.add_argument(
        "--output",
        choices=("table", "json"),
        default="table",
        help="table: cqlsh's layout (default); json: one JSON object per statement (JSON Lines)",
    )
    parser.add_argument(
        "--disable-history",
        action="store_true",
        help="do not read or write the history file ($LOGTIDE_HISTORY, default ~/.logtide_history)",
    )
    parser.add_argument(
        "--readonly",
        action="store_true",
        help="open the data directory read-only (it must exist), even while a server writes to it; "
        "each statement reads a consistent snapshot",
    )
    parser.set_defaults(run=run_shell)
    return parser


def run_shell(ns: argparse.Namespace) -> int:
    from logtide import shell

    args = shell.ShellArgs(
        data_dir=ns.data_dir,
        keyspace=ns.keyspace,
        execute=ns.execute,
        file=ns.file,
        output=ns.output,
        disable_history=ns.disable_history,
        topology=topology(ns),
        readonly=ns.readonly,
    )
    return shell.main(args)


def add_serve(subparsers: "argparse._SubParsersAction", parent: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """``logtide serve``: the CQL native-protocol server (options in ``logtide.server.cli``)."""
    from logtide.server.cli import add_serve as register

    return register(subparsers, parent)


def add_replay(subparsers: "argparse._SubParsersAction", parent: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """``logtide replay``: rebuild a table from its CDC log (options in ``logtide.cdc.replay_cli``)."""
    from logtide.cdc.replay_cli import add_replay as register

    return register(subparsers, parent)


def add_status(subparsers: "argparse._SubParsersAction", parent: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """``logtide status``: the data directory and a running server at a glance (``logtide.status``)."""
    from logtide.status import add_status as register

    return register(subparsers, parent)


def add_cdc(subparsers: "argparse._SubParsersAction", parent: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """``logtide cdc generations|streams``: what CDC consumers read from system_distributed."""
    from logtide.cdc.generations_cli import add_cdc as register

    return register(subparsers, parent)


def subcommands() -> list[Registrar]:
    """The subcommands, in the order ``--help`` lists them."""
    from logtide.changefeed.cli import add_changefeed, add_topic
    from logtide.check_cli import add_check, add_migrate
    from logtide.spark.pipeline_cli import add_pipeline  # ``logtide pipeline``: jobs on Apache Spark

    return [add_shell, add_serve, add_replay, add_status, add_cdc, add_check, add_migrate, add_topic, add_changefeed,
            add_pipeline]


class OneLineErrors(argparse.ArgumentParser):
    """An argument parser whose usage errors are one line (``logtide serve: error: ...``), exit status 2."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def build_parser(environ: Mapping[str, str]) -> argparse.ArgumentParser:
    """The ``logtide`` argument parser."""
    parser = OneLineErrors(
        prog="logtide",
        description="logtide: Cassandra/ScyllaDB-compatible tables with a CDC log, embedded.",
        epilog="Run 'logtide COMMAND --help' for the options of a command.",
    )
    parser.add_argument("--version", action="version", version=f"logtide {package_version()}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    parent = common_options(environ)
    for registrar in subcommands():
        registrar(subparsers, parent)
    return parser


def main(argv: Sequence[str] | None = None, environ: Mapping[str, str] | None = None) -> int:
    """Console entry point; returns the exit status.

    Every failure is one line on stderr naming the problem (``logtide COMMAND: error: ...``) and exit
    status 2: logtide's own errors, the operating system's and SQLite's; never a traceback.
    """
    parser = build_parser(os.environ if environ is None else environ)
    ns = parser.parse_args(argv)
    try:
        return ns.run(ns)
    except KeyboardInterrupt:
        return 130
    except Exception as e:  # noqa: BLE001 - the one place that turns failures into a line and status 2
        print(f"logtide {ns.command}: error: {failure_line(e, getattr(ns, 'data_dir', None))}", file=sys.stderr)
        return 2


def failure_line(exc: BaseException, data_dir: str | None) -> str:
    """One line naming the problem behind ``exc``."""
    import sqlite3

    from logtide.errors import CqlError
    from logtide.failures import describe

    if isinstance(exc, CqlError):
        text = exc.message
    elif isinstance(exc, sqlite3.Error):
        text = f"data directory {data_dir}: {describe(exc)[1]}"
    elif isinstance(exc, OSError):
        text = describe(exc)[1]
    else:  # a bug: still no traceback for the user, but say what it was
        text = f"internal error ({type(exc).__name__}: {exc}); please report it"
    return " ".join(str(text).split()) or type(exc).__name__


if __name__ == "__main__":
    sys.exit(main())
