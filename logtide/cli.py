"""The ``logtide`` command line: ``logtide <subcommand> ...``.

Subcommands are listed in :func:`subcommands`, each with the ``module:function`` that adds its
parser (with ``set_defaults(run=...)``, the function that runs it); only the module of the
subcommand being run is imported.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from dataclasses import dataclass
from typing import Mapping, NoReturn, Sequence

from .config import add_config_option, integer
from .version import package_version


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
        from logtide.errors import CommandFailure

        raise CommandFailure(str(e)) from None


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
    from logtide.errors import CommandFailure, StorageLocked
    from logtide.server.runtime_file import in_use_advice

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
    try:
        return shell.main(args)
    except StorageLocked as e:
        advice = in_use_advice(ns.data_dir, "give --readonly to read beside it", through_server=True)
        raise CommandFailure(f"{e}: {advice}") from None


@dataclass(frozen=True)
class Subcommand:
    """A subcommand: its name, its line in ``logtide --help``, and ``module:function`` that adds its parser.

    The module is imported only when the subcommand is run (or its own ``--help`` asked for), so that
    ``logtide --version`` and ``logtide --help`` import none of the engine (issue #21, item 17)."""

    name: str
    help: str
    registrar: str

    def register(self, subparsers: "argparse._SubParsersAction", parent: argparse.ArgumentParser) -> None:
        """Import the subcommand's module and add its full parser."""
        import importlib

        module, _, function = self.registrar.partition(":")
        getattr(importlib.import_module(module), function)(_Listed(subparsers, self), parent)

    def placeholder(self, subparsers: "argparse._SubParsersAction") -> None:
        """Add the subcommand by name and help only (it is listed, not run)."""
        subparsers.add_parser(self.name, help=self.help)


class _Listed:
    """The subparsers as a registrar sees them: the subcommand's parser gets its ``--help`` line from the registry."""

    def __init__(self, subparsers: "argparse._SubParsersAction", command: Subcommand) -> None:
        self.subparsers = subparsers
        self.command = command

    def add_parser(self, name: str, **kwargs: object) -> argparse.ArgumentParser:
        if name == self.command.name:
            kwargs.setdefault("help", self.command.help)
        return self.subparsers.add_parser(name, **kwargs)


def subcommands() -> tuple[Subcommand, ...]:
    """The subcommands, in the order ``--help`` lists them."""
    return (
        Subcommand("shell", "interactive CQL shell (cqlsh-compatible output)", "logtide.cli:add_shell"),
        Subcommand("serve", "serve the database over the CQL native protocol (v3, v4, v5) and Kafka",
                   "logtide.server.cli:add_serve"),
        Subcommand("replay", "rebuild a table from its CDC log (delta rows) into another table or data directory",
                   "logtide.cdc.replay_cli:add_replay"),
        Subcommand("status", "the data directory and its running server at a glance", "logtide.status:add_status"),
        Subcommand("cdc", "CDC generations and streams (as in system_distributed)",
                   "logtide.cdc.generations_cli:add_cdc"),
        Subcommand("check", "verify every stored record and the database's structure (like nodetool scrub "
                   "--validate)", "logtide.check_cli:add_check"),
        Subcommand("migrate", "convert a data directory of an older logtide to the current storage format",
                   "logtide.check_cli:add_migrate"),
        Subcommand("topic", "read changefeed topics and manage their consumers (as `ydb topic`)",
                   "logtide.changefeed.cli:add_topic"),
        Subcommand("changefeed", "list and describe changefeeds", "logtide.changefeed.cli:add_changefeed"),
        Subcommand("pipeline", "data pipelines on Apache Spark (needs the spark extra)",
                   "logtide.spark.pipeline_cli:add_pipeline"),
        Subcommand("compile", "compile the write path's hot modules with Cython (needs the compile extra)",
                   "logtide.compile_cli:add_compile"),
    )


class OneLineErrors(argparse.ArgumentParser):
    """An argument parser whose usage errors are one line (``logtide serve: error: ...``), exit status 2."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def chosen_command(argv: Sequence[str]) -> str | None:
    """The subcommand ``argv`` runs: its first word that is not an option (``logtide`` itself takes only
    ``--help`` and ``--version``)."""
    return next((arg for arg in argv if not arg.startswith("-")), None)


def build_parser(environ: Mapping[str, str], argv: Sequence[str] | None = None) -> argparse.ArgumentParser:
    """The ``logtide`` argument parser: every subcommand in full, or, given ``argv``, only the one it runs
    in full and the others by name (importing only what that command needs)."""
    parser = OneLineErrors(
        prog="logtide",
        description="logtide: Cassandra/ScyllaDB-compatible tables with a CDC log, embedded.",
        epilog="Run 'logtide COMMAND --help' for the options of a command.",
    )
    parser.add_argument("--version", action="version", version=f"logtide {package_version()}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    parent = common_options(environ)
    chosen = None if argv is None else chosen_command(argv)
    for command in subcommands():
        if argv is None or command.name == chosen:
            command.register(subparsers, parent)
        else:
            command.placeholder(subparsers)
    return parser


def main(argv: Sequence[str] | None = None, environ: Mapping[str, str] | None = None) -> int:
    """Console entry point; returns the exit status.

    Every failure is one line on stderr naming the problem (``logtide COMMAND [SUBCOMMAND]: error: ...``) and exit
    status 2: logtide's own errors, the operating system's and SQLite's; never a traceback.  A reader
    that goes away (``logtide status | head``) ends the command quietly, as Unix tools do.
    """
    argv = sys.argv[1:] if argv is None else list(argv)
    try:
        parser = build_parser(os.environ if environ is None else environ, argv)
        ns = parser.parse_args(argv)
        try:
            status = ns.run(ns)
        except KeyboardInterrupt:
            return 130
        except Exception as e:  # noqa: BLE001 - the one place that turns failures into a line and status 2
            if isinstance(e, BrokenPipeError):
                raise
            print(f"logtide {command_words(ns, argv)}: error: {failure_line(e, getattr(ns, 'data_dir', None))}",
                  file=sys.stderr)
            return 2
        sys.stdout.flush()  # here, where a closed pipe is still caught, rather than at exit
        return status
    except BrokenPipeError:
        return quiet_broken_pipe()


def command_words(ns: argparse.Namespace, argv: Sequence[str]) -> str:
    """The command as typed, without its options and arguments: ``topic read``, ``cdc streams``, ``pipeline
    lakehouse`` (a subcommand's own subcommands are parsed into ``*_command`` or ``job``)."""
    chosen = {ns.command} | {value for key, value in vars(ns).items()
                             if (key.endswith("_command") or key == "job") and isinstance(value, str)}
    words: list[str] = []
    for arg in argv:
        if arg.startswith("-"):
            continue
        if arg not in chosen or arg in words:
            break
        words.append(arg)
    return " ".join(words) or ns.command


BROKEN_PIPE_STATUS = 141  # 128 + SIGPIPE: what a shell reports for a Unix tool whose reader went away


def quiet_broken_pipe() -> int:
    """The reader of standard output went away: send what is still buffered nowhere, so that Python's own
    flush at exit cannot print an error, and end with ``BROKEN_PIPE_STATUS`` (Python's documented idiom,
    "Note on SIGPIPE" in the ``signal`` module's documentation)."""
    with contextlib.suppress(OSError, ValueError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    return BROKEN_PIPE_STATUS


def failure_line(exc: BaseException, data_dir: str | None) -> str:
    """One line naming the problem behind ``exc``."""
    import sqlite3

    from logtide.errors import CommandFailure, CqlError
    from logtide.failures import describe

    if isinstance(exc, CqlError):
        text = exc.message
    elif isinstance(exc, CommandFailure):
        text = str(exc)
    elif isinstance(exc, sqlite3.Error):
        text = f"data directory {data_dir}: {describe(exc)[1]}"
    elif isinstance(exc, OSError):
        text = describe(exc)[1]
    else:  # a bug: still no traceback for the user, but say what it was
        text = f"internal error ({type(exc).__name__}: {exc}); please report it"
    return " ".join(str(text).split()) or type(exc).__name__


if __name__ == "__main__":
    sys.exit(main())
