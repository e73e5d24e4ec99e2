"""``logtide shell``: a cqlsh-compatible shell over the embedded engine.

Batch mode (``-e``, ``-f`` or a non-tty stdin) reproduces ``cqlsh -e`` /
``cqlsh -f`` output byte for byte: the result layout of
``logtide.format.cqlsh``, errors on stderr prefixed with ``NAME:LINE:`` and
worded as cqlsh words them, statements run as soon as the input read so far
ends with a complete statement (cqlsh reads line by line).  Interactive mode
adds readline editing, a persistent history file and cqlsh's prompts.

Statement text is split with ``logtide.cql.split_statements``; the cqlsh
commands that end at a newline (``EXPAND ON``, ``DESCRIBE TABLES`` ...) are
recognised here, as cqlsh's lexer does.
"""

from __future__ import annotations

import cmd
import codecs
import dataclasses
import io
import os
import re
import sys
from dataclasses import dataclass, field
from typing import Any, Callable, Protocol, Sequence, TextIO

from logtide.errors import (AlreadyExists, CqlError, ReadFailure, ReadTimeout, RequestTimeout, SyntaxException,
                            Unprepared)
from logtide.format import jsonl
from logtide.format.cqlsh import FormatOptions, TablePrinter, print_describe, print_warnings
from logtide.result import ResultSet

# cqlsh's my_commands_ending_with_newline: these commands end at a newline as well as at ';'.
NEWLINE_COMMANDS = frozenset(
    {"help", "?", "consistency", "serial", "describe", "desc", "show", "source", "capture", "login",
     "debug", "tracing", "expand", "paging", "exit", "quit", "clear", "cls", "history"}
)
UNSUPPORTED_COMMANDS = frozenset({"show", "capture", "login", "debug", "tracing", "history", "copy", "unicode"})
CONSISTENCY_LEVELS = ("ANY", "ONE", "TWO", "THREE", "QUORUM", "ALL", "LOCAL_QUORUM", "EACH_QUORUM",
                      "SERIAL", "LOCAL_SERIAL", "LOCAL_ONE")
SERIAL_LEVELS = ("SERIAL", "LOCAL_SERIAL")
DEFAULT_PAGE_SIZE = 100
UNPAGED_FETCH_SIZE = 5000  # the driver's default fetch size, used by cqlsh with PAGING OFF
DEFAULT_PROMPT = "logtide> "
KEYSPACE_PROMPT = "logtide:{}> "
CONTINUE_PROMPT = "   ... "
KEYSPACE_CONTINUE_PROMPT = "{}    ... "
EMPTY_LINES_HINT = "Statements are terminated with a ';'.  You can press CTRL-C to cancel an incomplete statement."

HELP_TOPICS = {
    "CONSISTENCY": "CONSISTENCY [level]\n\n  Shows or sets the consistency level (accepted for cqlsh compatibility;\n"
                   "  the embedded engine is a single replica).",
    "SERIAL": "SERIAL CONSISTENCY [level]\n\n  Shows or sets the serial consistency level (SERIAL, LOCAL_SERIAL).",
    "DESCRIBE": "DESCRIBE KEYSPACES | TABLES | TYPES | KEYSPACE <ks> | TABLE <t> | TYPE <ut> | SCHEMA | CLUSTER\n\n"
                "  Shows schema as CQL statements (DESC is a shorthand).",
    "EXPAND": "EXPAND [ON|OFF]\n\n  Enables or disables vertical output of rows.",
    "PAGING": "PAGING [ON|OFF|<page size>]\n\n  Sets the number of rows laid out together (default 100).",
    "SOURCE": "SOURCE '<file>'\n\n  Runs the CQL statements of a file; errors do not stop it.",
    "EXIT": "EXIT | QUIT\n\n  Leaves the shell (so does Ctrl-D).",
    "HELP": "HELP [topic]\n\n  Lists the shell commands, or explains one.",
    "CLEAR": "CLEAR | CLS\n\n  Clears the terminal.",
}

_WORD_RE = re.compile(r'[A-Za-z_][A-Za-z0-9_]*|"(?:[^"]|"")*"|\?|\S+')


class Session(Protocol):
    """What the shell needs from an engine session."""

    keyspace: str | None

    def execute(self, cql: str, params: Any = None) -> ResultSet: ...


SessionFactory = Callable[[str | None], Session]
Splitter = Callable[[str], Sequence[Any]]


# --------------------------------------------------------------------------
# Text helpers
# --------------------------------------------------------------------------


def skip_blanks(text: str, pos: int = 0) -> int:
    """The index of the first character at or after ``pos`` that is not whitespace or a comment."""
    while pos < len(text):
        if text[pos].isspace():
            pos += 1
        elif text.startswith("--", pos) or text.startswith("//", pos):
            end = text.find("\n", pos)
            pos = len(text) if end < 0 else end + 1
        elif text.startswith("/*", pos):
            end = text.find("*/", pos + 2)
            pos = len(text) if end < 0 else end + 2
        else:
            break
    return pos


def words(text: str, count: int) -> list[str]:
    """The first ``count`` words of a statement (comments skipped), fewer if it is shorter."""
    found: list[str] = []
    pos = skip_blanks(text)
    while len(found) < count and pos < len(text):
        match = _WORD_RE.match(text, pos)
        if match is None:
            break
        found.append(match.group(0))
        pos = skip_blanks(text, match.end())
    return found


def first_word(text: str) -> str:
    """The command word of a statement, lower-cased ('' if none)."""
    found = words(text, 1)
    return found[0].lower() if found else ""


def clean_statement(text: str) -> str:
    """A statement as executed and reported: leading comments, blanks and the final ';' removed."""
    body = text[skip_blanks(text):].rstrip()
    while body.endswith(";"):
        body = body[:-1].rstrip()
    return body


@dataclass(frozen=True)
class Piece:
    """One statement of the input and whether its end was seen."""

    text: str
    complete: bool


def statement_pieces(text: str, complete: bool, at_line_end: bool) -> list[Piece]:
    """One splitter statement as cqlsh sees it: a cqlsh command (``EXPAND ON`` ...) ends at a newline."""
    if first_word(text) not in NEWLINE_COMMANDS:
        return [Piece(text, complete)]
    newline = text.find("\n", skip_blanks(text))
    if newline < 0:
        return [Piece(text, complete or at_line_end)]
    head, rest = Piece(text[:newline], True), text[newline + 1 :]
    if not clean_statement(rest):
        return [head]
    return [head] + statement_pieces(rest, complete, at_line_end)


def split_script(text: str, splitter: Splitter) -> list[Piece]:
    """The statements of ``text`` (blank and comment-only pieces dropped)."""
    statements = [s for s in splitter(text) if clean_statement(s.text)]
    ends_with_newline = text.rstrip(" \t\r").endswith("\n")
    pieces: list[Piece] = []
    for index, statement in enumerate(statements):
        at_line_end = ends_with_newline and index == len(statements) - 1
        pieces.extend(statement_pieces(statement.text, statement.complete, at_line_end))
    return pieces


def default_splitter() -> Splitter:
    """``logtide.cql.split_statements`` (imported late: the parser is a separate module)."""
    from logtide.cql import split_statements

    return split_statements


def dequote_string(literal: str) -> str | None:
    """The value of a CQL string literal ``'...'`` or ``$$...$$``; None if it is not one."""
    if len(literal) >= 2 and literal[0] == "'" and literal[-1] == "'":
        return literal[1:-1].replace("''", "'")
    if len(literal) >= 4 and literal.startswith("$$") and literal.endswith("$$"):
        return literal[2:-2]
    return None


# --------------------------------------------------------------------------
# Errors, worded as cqlsh prints them
# --------------------------------------------------------------------------


def driver_exception(err: CqlError) -> Exception:
    """The exception cassandra-driver raises in cqlsh for an ERROR frame carrying ``err``."""
    from cassandra.protocol import ErrorMessage, error_classes

    info: Any = None
    if isinstance(err, AlreadyExists):
        if not err.keyspace:
            return error_classes[0x2300](0x2300, err.message, None)
        info = {"keyspace": err.keyspace, "table": err.table or None}
    elif isinstance(err, Unprepared):
        info = err.statement_id
    elif isinstance(err, ReadFailure):
        info = {"consistency": err.consistency, "required_responses": err.block_for,
                "received_responses": err.received, "failures": err.failures, "error_code_map": None}
    elif isinstance(err, RequestTimeout):  # USING TIMEOUT: the fields of the protocol's ReadTimeout / WriteTimeout
        from cassandra.policies import WriteType
        info = {"consistency": err.consistency, "required_responses": err.block_for,
                "received_responses": err.received}
        if isinstance(err, ReadTimeout):
            info["data_retrieved"] = err.data_present
        else:
            info["write_type"] = WriteType.name_to_value[getattr(err, "write_type", "SIMPLE")]
    cls = error_classes.get(err.code, ErrorMessage)
    try:
        return cls(err.code, err.message, info).to_exception()
    except (TypeError, KeyError):  # an error class that needs details logtide does not send
        return ErrorMessage(err.code, err.message, info)


def _driver_message(exc: Exception) -> str:
    return exc.message if hasattr(exc, "message") else str(exc)


def cqlsh_error_text(err: CqlError) -> str:
    """cqlsh's ``perform_simple_statement`` wording: ``InvalidRequest: Error from server: code=2200 ...``."""
    exc = driver_exception(err)
    return "%s: %s" % (type(exc).__name__, _driver_message(exc))


def cqlsh_describe_error_text(err: CqlError) -> str:
    """cqlsh's ``do_describe`` wording: only the server's message."""
    return _driver_message(driver_exception(err)).partition("message=")[2].strip('"')


# --------------------------------------------------------------------------
# The shell
# --------------------------------------------------------------------------


@dataclass
class Settings:
    """State changed by shell commands."""

    consistency: str = "ONE"
    serial_consistency: str = "SERIAL"
    expand: bool = False
    paging: bool = True
    page_size: int = DEFAULT_PAGE_SIZE


@dataclass
class Shell:
    """Runs statements and shell commands and prints what cqlsh would print.

    ``source_name`` and ``lineno`` give the ``NAME:LINE:`` prefix of error
    messages in batch mode (cqlsh's ``show_line_nums``).
    """

    session_factory: SessionFactory
    out: TextIO = field(default_factory=lambda: sys.stdout)
    err: TextIO = field(default_factory=lambda: sys.stderr)
    output: str = "table"
    tty: bool = False
    keyspace: str | None = None
    splitter: Splitter | None = None
    to_json: Callable[[Any, Any], str] | None = None
    options: FormatOptions = field(default_factory=FormatOptions)
    source_name: str = "<stdin>"
    settings: Settings = field(default_factory=Settings)
    session: Session | None = None
    pause: Callable[[], Any] | None = None
    lineno: int = 1
    failed: bool = False
    stopped: bool = False

    def __post_init__(self) -> None:
        if self.session is None:
            self.session = self.session_factory(self.keyspace)
        if self.splitter is None:
            self.splitter = default_splitter()

    # -- output -------------------------------------------------------------

    def printerr(self, text: str) -> None:
        """An error line on stderr (prefixed ``NAME:LINE:`` in batch mode); marks the run failed."""
        self.failed = True
        if not self.tty:
            text = "%s:%d:%s" % (self.source_name, self.lineno, text)
        self.out.flush()
        self.err.write(text + "\n")
        self.err.flush()

    def say(self, text: str) -> None:
        """A message line on stdout (suppressed in JSON mode)."""
        if self.output != "json":
            self.out.write(text + "\n")

    def emit(self, record: dict[str, Any]) -> None:
        """One JSON Lines record."""
        self.out.write(jsonl.dumps(record) + "\n")

    def report_error(self, statement: str, text: str, code: int) -> None:
        """A failed statement or command: a JSON record or a cqlsh error line."""
        if self.output == "json":
            self.failed = True
            self.emit(jsonl.error_record(statement, code, text))
        else:
            self.printerr(text)

    def printer(self) -> TablePrinter:
        """The table printer for the current settings."""
        page_size = self.settings.page_size if self.settings.paging else UNPAGED_FETCH_SIZE
        options = dataclasses.replace(self.options, page_size=page_size)
        return TablePrinter(options=options, tty=self.tty, expand=self.settings.expand)

    # -- running input ------------------------------------------------------

    def run_buffer(self, text: str) -> bool:
        """Runs ``text`` if it ends with a complete statement (then True); False if more input is needed."""
        pieces = split_script(text, self.splitter)
        if pieces and not pieces[-1].complete:
            return False
        for piece in pieces:
            self.run_statement(piece.text)
        self.out.flush()
        return True

    def run_single(self, text: str) -> None:
        """``-e``: cqlsh appends a ';' and runs everything only if the last statement is complete."""
        if not text.endswith(";"):
            text += ";"
        self.run_buffer(text)

    def run_stream(self, stream: TextIO) -> None:
        """``-f`` or piped stdin: read line by line, run statements as their end is read."""
        buffer = ""
        while not self.stopped:
            line = stream.readline()
            if not line:
                self.finish_buffer(buffer)
                return
            self.lineno += 1
            buffer += line
            if self.run_buffer(buffer):
                buffer = ""

    def finish_buffer(self, buffer: str) -> None:
        """End of input: whatever is left must be complete."""
        if buffer.strip() and not self.run_buffer(buffer):
            self.report_error(clean_statement(buffer), "Incomplete statement at end of file", 0x2000)

    # -- statements ---------------------------------------------------------

    def run_statement(self, text: str) -> None:
        """One statement: a shell command or CQL for the engine."""
        statement = clean_statement(text)
        word = first_word(statement)
        if not statement:
            return
        handler = self.commands().get(word)
        if handler is not None:
            handler(statement)
        elif word in UNSUPPORTED_COMMANDS:
            self.report_error(statement, "%s is not supported by the logtide shell." % word.upper(), 0x2000)
        else:
            self.execute_cql(statement, word)

    def execute_cql(self, statement: str, word: str) -> None:
        """Sends a statement to the engine and prints its result."""
        describe = word in ("describe", "desc")
        try:
            result = self.session.execute(statement)
        except CqlError as exc:
            self.report_cql_error(statement, exc, describe)
            return
        except Exception as exc:  # a bug: one line saying so, never a traceback
            self.report_error(statement, f"Internal error in logtide ({type(exc).__name__}: {exc}); please report it",
                              0x0000)
            return
        finally:
            self.keyspace = getattr(self.session, "keyspace", self.keyspace)
        self.print_cql_result(statement, result, describe)

    def report_cql_error(self, statement: str, exc: CqlError, describe: bool) -> None:
        """An engine error, worded as cqlsh words it."""
        if self.output == "json":
            self.report_error(statement, exc.message, exc.code)
        elif describe and isinstance(exc, SyntaxException):
            self.printerr("Improper %s command." % words(statement, 1)[0])
        elif describe:
            self.printerr(cqlsh_describe_error_text(exc))
        else:
            self.printerr(cqlsh_error_text(exc))

    def print_cql_result(self, statement: str, result: ResultSet, describe: bool) -> None:
        """A successful statement's output (cqlsh's perform_simple_statement / do_describe)."""
        if self.output == "json":
            self.emit(jsonl.result_record(statement, result, self.to_json))
            return
        if describe:
            what = (words(statement, 2) + [""])[1].lower()
            print_describe(self.out, result, what, self.keyspace, self.options.display_width)
        elif statement[:6].lower() == "select":
            self.printer().print_result(self.out, result, self.pause)
        elif result.kind == "rows" and result.rows:
            self.printer().print_static_result(self.out, result)
        print_warnings(self.out, result.warnings)

    # -- shell commands -----------------------------------------------------

    def commands(self) -> dict[str, Callable[[str], None]]:
        """Shell commands by command word."""
        return {
            "consistency": self.do_consistency,
            "serial": self.do_serial,
            "expand": self.do_expand,
            "paging": self.do_paging,
            "source": self.do_source,
            "help": self.do_help,
            "?": self.do_help,
            "exit": self.do_exit,
            "quit": self.do_exit,
            "clear": self.do_clear,
            "cls": self.do_clear,
        }

    def improper(self, statement: str) -> None:
        """cqlsh's message for a shell command it cannot parse."""
        self.report_error(statement, "Improper %s command." % words(statement, 1)[0], 0x2000)

    def command_done(self, statement: str) -> None:
        """JSON mode: a record for a shell command that succeeded."""
        if self.output == "json":
            self.emit({"statement": statement})

    def do_consistency(self, statement: str) -> None:
        args = words(statement, 3)[1:]
        if not args:
            self.say("Current consistency level is %s." % self.settings.consistency)
        elif len(args) == 1 and args[0].upper() in CONSISTENCY_LEVELS:
            self.settings.consistency = args[0].upper()
            self.say("Consistency level set to %s." % self.settings.consistency)
        else:
            return self.improper(statement)
        self.command_done(statement)

    def do_serial(self, statement: str) -> None:
        args = words(statement, 4)[1:]
        if not args or args[0].lower() != "consistency" or len(args) > 2:
            return self.improper(statement)
        if len(args) == 1:
            self.say("Current serial consistency level is %s." % self.settings.serial_consistency)
        elif args[1].upper() in SERIAL_LEVELS:
            self.settings.serial_consistency = args[1].upper()
            self.say("Serial consistency level set to %s." % self.settings.serial_consistency)
        else:
            return self.improper(statement)
        self.command_done(statement)

    def on_off_switch(self, name: str, current: bool, state: str | None) -> bool:
        """cqlsh's ON/OFF switch messages; returns the new state."""
        label = {True: "ON", False: "OFF"}
        if state is None:
            self.say("%s is %s" % (name, label[current]))
            return current
        wanted = state.upper() == "ON"
        if wanted == current:
            self.say("%s is already %s" % (name, label[current]))
            return current
        self.say("%s set to %s" % (name, label[wanted]))
        return wanted

    def _switch_arg(self, statement: str, allow_number: bool = False) -> tuple[bool, str | None]:
        args = words(statement, 3)[1:]
        if not args:
            return True, None
        ok = len(args) == 1 and (args[0].upper() in ("ON", "OFF") or (allow_number and args[0].isdigit()))
        return ok, args[0] if ok else None

    def do_expand(self, statement: str) -> None:
        ok, state = self._switch_arg(statement)
        if not ok:
            return self.improper(statement)
        self.settings.expand = self.on_off_switch("EXPAND", self.settings.expand, state)
        self.command_done(statement)

    def do_paging(self, statement: str) -> None:
        ok, value = self._switch_arg(statement, allow_number=True)
        if not ok:
            return self.improper(statement)
        size = None
        if value is not None and value.isdigit():
            self.settings.paging, size = True, int(value)
        else:
            self.settings.paging = self.on_off_switch("PAGING", self.settings.paging, value)
        if self.settings.paging and size is not None:
            self.settings.page_size = size
        if self.settings.paging:
            self.say("Page size: {}".format(self.settings.page_size))
        else:
            self.settings.page_size = DEFAULT_PAGE_SIZE
        self.command_done(statement)

    def do_source(self, statement: str) -> None:
        args = words(statement, 3)[1:]
        literal = statement[statement.lower().index("source") + 6 :].strip()
        fname = dequote_string(literal) if args else None
        if fname is None:
            return self.improper(statement)
        fname = os.path.expanduser(fname)
        try:
            stream = codecs.open(fname, "r", "utf-8-sig")
        except OSError as exc:
            return self.report_error(statement, "Could not open %r: %s" % (fname, exc), 0x2200)
        with stream:
            self.run_subshell(stream, fname)

    def run_subshell(self, stream: TextIO, name: str) -> None:
        """Runs a sourced file in batch mode with its own session, as cqlsh does."""
        sub = Shell(
            self.session_factory, out=self.out, err=self.err, output=self.output, tty=False,
            keyspace=self.keyspace, splitter=self.splitter, to_json=self.to_json,
            options=self.options, source_name=name,
        )  # like cqlsh's subshell: default EXPAND/PAGING/CONSISTENCY
        sub.run_stream(stream)
        self.failed = self.failed or sub.failed

    def do_help(self, statement: str) -> None:
        topics = words(statement, 10)[1:]
        if self.output == "json":
            return self.command_done(statement)
        if not topics:
            return self.print_help_index()
        for topic in topics:
            key = {"QUIT": "EXIT", "CLS": "CLEAR", "DESC": "DESCRIBE"}.get(topic.upper(), topic.upper())
            if key in HELP_TOPICS:
                self.out.write(HELP_TOPICS[key] + "\n")
            else:
                self.printerr("*** No help on %s" % topic)

    def print_help_index(self) -> None:
        """``HELP``: the shell commands, laid out as cqlsh lays out its topics."""
        shell_topics = sorted(set(HELP_TOPICS) | {"QUIT", "CLS", "DESC"})
        cmd.Cmd(stdout=self.out).print_topics("\nDocumented shell commands:", shell_topics, 15, 80)
        self.out.write(
            "Other statements are CQL, run by logtide's embedded engine; end them with ';'.\n"
            "HELP <topic> explains a command.\n\n"
        )

    def do_exit(self, statement: str) -> None:
        if len(words(statement, 2)) > 1:
            return self.improper(statement)
        self.stopped = True

    def do_clear(self, statement: str) -> None:
        if self.output != "json" and self.tty:
            self.out.write("\x1b[H\x1b[2J")
        self.command_done(statement)


# --------------------------------------------------------------------------
# Interactive mode
# --------------------------------------------------------------------------


def history_file(environ: dict[str, str]) -> str | None:
    """Where history is kept: ``$LOGTIDE_HISTORY`` (empty disables it), else ``~/.logtide_history``."""
    if "LOGTIDE_HISTORY" in environ:
        return environ["LOGTIDE_HISTORY"] or None
    return os.path.join(os.path.expanduser("~"), ".logtide_history")


@dataclass
class Interactive:
    """The read-eval-print loop on a terminal: prompts, readline history, Ctrl-C/Ctrl-D."""

    shell: Shell
    history_path: str | None = None
    input_fn: Callable[[str], str] = input
    buffer: str = ""
    empty_lines: int = 0
    last_history: str | None = None

    def prompt(self) -> str:
        """cqlsh's prompt logic: keyspace prompt, continuation prompt, hint after 3 empty lines."""
        keyspace = self.shell.keyspace
        if not self.buffer:
            return DEFAULT_PROMPT if keyspace is None else KEYSPACE_PROMPT.format(keyspace)
        if self.empty_lines >= 3:
            self.empty_lines = 0
            return EMPTY_LINES_HINT
        return CONTINUE_PROMPT if keyspace is None else KEYSPACE_CONTINUE_PROMPT.format(" " * len(keyspace))

    def load_history(self) -> Any:
        """Sets up readline and loads the history file; returns the readline module or None."""
        try:
            import readline
        except ImportError:
            return None
        readline.set_history_length(1000)
        if self.history_path and os.path.exists(self.history_path):
            try:
                readline.read_history_file(self.history_path)
            except OSError:
                pass
        return readline

    def save_history(self, readline: Any) -> None:
        if readline is None or not self.history_path:
            return
        try:
            os.makedirs(os.path.dirname(os.path.abspath(self.history_path)), exist_ok=True)
            readline.write_history_file(self.history_path)
        except OSError:
            pass

    def remember_statement(self, readline: Any) -> None:
        """A multi-line statement goes into history as one line (as cqlsh does)."""
        if readline is None:
            return
        joined = self.buffer.replace("\n", " ").rstrip()
        if self.buffer.count("\n") > 1 and joined != self.last_history:
            readline.add_history(joined)
        self.last_history = joined

    def feed(self, line: str, readline: Any) -> None:
        """One line typed by the user."""
        self.buffer += line + "\n"
        if not self.buffer.strip():
            self.buffer = ""
            return
        pieces = split_script(self.buffer, self.shell.splitter)
        if pieces and not pieces[-1].complete:
            self.empty_lines = self.empty_lines + 1 if not line else 0
            return
        self.remember_statement(readline)
        text, self.buffer, self.empty_lines = self.buffer, "", 0
        self.shell.run_buffer(text)

    def loop(self) -> None:
        """Reads lines until EXIT, QUIT or Ctrl-D."""
        readline = self.load_history()
        try:
            while not self.shell.stopped:
                self.step(readline)
        finally:
            self.save_history(readline)

    def step(self, readline: Any) -> None:
        """Reads and handles one line; Ctrl-C drops the pending input."""
        try:
            line = self.input_fn(self.prompt())
            self.feed(line, readline)
        except EOFError:
            self.shell.out.write("\n")
            self.shell.finish_buffer(self.buffer)
            self.shell.stopped = True
        except KeyboardInterrupt:
            self.buffer, self.empty_lines = "", 0
            self.shell.out.write("\n")
        self.shell.out.flush()


# --------------------------------------------------------------------------
# Entry point
# --------------------------------------------------------------------------


@dataclass
class ShellArgs:
    """The options of ``logtide shell``."""

    data_dir: str
    keyspace: str | None = None
    execute: str | None = None
    file: str | None = None
    output: str = "table"
    disable_history: bool = False
    topology: Any = None  # logtide.cdc.streams.Topology, or None to keep the stored one
    readonly: bool = False  # --readonly: a read-only snapshot reader, allowed beside a running writer


def connect_keyspace(shell: Shell, keyspace: str) -> str | None:
    """``-k``: USE the keyspace as the driver does on connect; an error message on failure."""
    from cassandra.metadata import protect_name

    try:
        shell.session.execute("USE %s" % protect_name(keyspace))
    except CqlError as exc:
        return cqlsh_error_text(exc)
    shell.keyspace = getattr(shell.session, "keyspace", keyspace)
    return None


def open_input(path: str, err: TextIO) -> TextIO | None:
    """The ``-f`` file (a UTF-8 BOM is skipped), or None after printing cqlsh's message."""
    try:
        return codecs.open(path, "r", "utf-8-sig")
    except OSError as exc:
        err.write("Can't open %r: %s\n" % (path, exc))
        return None


def run(args: ShellArgs, session_factory: SessionFactory, stdin: TextIO, out: TextIO, err: TextIO,
        environ: dict[str, str], to_json: Callable[[Any, Any], str] | None = None) -> int:
    """Runs the shell against sessions from ``session_factory``; returns the exit status.

    ``to_json`` replaces ``logtide.schema.types.to_json`` for ``--output json``.
    """
    tty = args.execute is None and args.file is None and stdin.isatty()
    source = None
    if args.file is not None and args.execute is None:
        source = open_input(args.file, err)
        if source is None:
            return 1
    shell = Shell(session_factory, out=out, err=err, output=args.output, tty=tty, to_json=to_json,
                  source_name=args.file if source is not None else getattr(stdin, "name", "<stdin>"))
    if args.keyspace:
        problem = connect_keyspace(shell, args.keyspace)
        if problem is not None:
            err.write("Connection error: %s\n" % problem)
            return 1
    if args.execute is not None:
        shell.run_single(args.execute)
    elif source is not None:
        with source:
            shell.run_stream(source)
    elif tty:
        run_interactive(shell, args, environ)
        return 0
    else:
        shell.run_stream(stdin)
    out.flush()
    return 1 if shell.failed else 0


def run_interactive(shell: Shell, args: ShellArgs, environ: dict[str, str]) -> None:
    """Interactive mode: banner, then the loop."""
    if args.output != "json":
        shell.out.write("logtide shell on %s\nUse HELP for help.\n" % args.data_dir)
    shell.pause = lambda: input("---MORE---")
    path = None if args.disable_history else history_file(environ)
    Interactive(shell, history_path=path).loop()


def main(args: ShellArgs, environ: dict[str, str] | None = None) -> int:
    """``logtide shell``: opens the data directory and runs the shell on the process's stdio."""
    import logtide

    environ = dict(os.environ if environ is None else environ)
    with logtide.open(args.data_dir, topology=args.topology, readonly=args.readonly) as db:
        status = run(args, lambda keyspace: db.session(keyspace=keyspace), sys.stdin, sys.stdout,
                     sys.stderr, environ)
        if not args.readonly:
            finish_builds(db, sys.stderr)
            finish_initial_scans(db, sys.stderr)
        return status


def finish_builds(db: Any, err: TextIO, enabled: bool | None = None) -> None:
    """Before the shell closes the database: run the builds of materialized views and secondary indexes still in
    progress (one just created over existing rows, or one an earlier writer left) to their end, with a progress
    bar on a terminal, so that they are built when the shell has exited.  Ctrl-C leaves the rest to the next
    process that opens the directory for writing, and says so."""
    from logtide.progress import progress

    builds = db.view_builds
    first = min(builds.building(), default=None)
    if first is None:
        return
    try:
        with progress(f"building {builds.describe(first)}", total=None, unit="partitions", enabled=enabled,
                      stream=err) as bar:
            def advanced(sid: int, built: int) -> None:
                bar.describe(f"building {builds.describe(sid)}")
                bar.advance(builds.chunk)
            builds.finish(advanced)
    except KeyboardInterrupt:
        for sid in sorted(builds.building()):
            err.write(f"logtide shell: the build of {builds.describe(sid)} stopped (Ctrl-C); it goes on when the "
                      f"data directory is next opened for writing (logtide serve, logtide shell)\n")
        err.flush()


def finish_initial_scans(db: Any, err: TextIO, enabled: bool | None = None) -> None:
    """Before the shell closes the database: run the initial scans of changefeeds still in progress (one just
    added with ``INITIAL_SCAN = TRUE``, or one an earlier writer left) to their end, with a progress bar on a
    terminal, so that the topic holds the table's rows when the shell has exited.  Ctrl-C leaves the rest of
    the scan to the next process that opens the directory for writing, and says so."""
    from logtide.schema.changefeeds import topic_path
    from logtide.progress import progress

    scanning = db.feeds.scanning()
    if not scanning:
        return
    done = {f.feed_id: pos.scanned for _, f, pos in scanning}
    remaining = sum(max(pos.total - pos.scanned, 0) for _, _, pos in scanning)
    first = scanning[0]
    try:
        with progress(f"initial scan {topic_path(first[0].keyspace, first[0].name, first[1].name)}",
                      total=remaining, unit="partitions", enabled=enabled, stream=err) as bar:
            def advanced(table: Any, feed: Any, pos: Any) -> None:
                bar.describe(f"initial scan {topic_path(table.keyspace, table.name, feed.name)}")
                bar.advance(max(pos.scanned - done.get(feed.feed_id, 0), 0))
                done[feed.feed_id] = pos.scanned
            db.feeds.finish_scans(advanced)
    except KeyboardInterrupt:
        for table, feed, pos in db.feeds.scanning():
            err.write(f"logtide shell: initial scan of {topic_path(table.keyspace, table.name, feed.name)} "
                      f"stopped at {pos.scanned} of {pos.total} partitions (Ctrl-C); it goes on when the data "
                      f"directory is next opened for writing (logtide serve, logtide shell)\n")
        err.flush()


class _NamedStringIO(io.StringIO):
    """An in-memory stdin with the name cqlsh prints in error lines."""

    name = "<stdin>"


def capture(args: ShellArgs, session_factory: SessionFactory, stdin_text: str = "",
            to_json: Callable[[Any, Any], str] | None = None) -> tuple[int, str, str]:
    """Runs the shell in batch mode on in-memory streams: (status, stdout, stderr). For tests and tools."""
    stdin = _NamedStringIO(stdin_text)
    out, err = io.StringIO(), io.StringIO()
    status = run(args, session_factory, stdin, out, err, {}, to_json)
    return status, out.getvalue(), err.getvalue()
