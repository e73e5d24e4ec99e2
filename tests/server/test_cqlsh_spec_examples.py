"""Every example of the CDC spec documents, run by real cqlsh (PyPI) against the CQL server.

``tests/cdc/test_spec_examples.py`` replays the golden transcripts under
``tests/cdc/spec/`` through logtide's own shell in-process; here the same
scripts go through ``cqlsh 127.0.0.1 PORT -f script.cql`` against one server
for the whole module, and the output cqlsh prints for each example's last
statement is compared with the expected block by the same rules (timeuuids
masked, blank lines ignored, ``(N rows)`` compared only when shown, DESCRIBE
examples with ``...`` compared as "the shown lines appear in order").

How the examples are run, to keep the module fast (a cqlsh process costs
0.3-1 s to start and connect):

* One generated script per spec document, not one cqlsh per example (two
  sessions per document, see below).  The documents run one after the other:
  run concurrently they take longer, because every DDL is pushed as a
  SCHEMA_CHANGE event to every cqlsh, whose driver then re-reads that part of
  the schema, and the server's DDL and system_schema reads grow with the
  number of tables.  For the same reason each document's keyspaces are dropped
  at the end of its run.
* Every example gets a fresh keyspace ``exD_N`` (created by the script, then
  ``USE exD_N``) and its statements are rewritten from the literal ``ks.``
  prefix (``ks.t``, ``ks.ut``, ``ks.t_scylla_cdc_log``, ``TYPE ks.ut``; also
  ``USE ks``) to it; unqualified names resolve through the ``USE``.  Output
  that names the keyspace (DESCRIBE) is mapped back to ``ks`` before comparing.
* Output is split with markers: before an example's first statement and before
  its last one the script runs ``SELECT logtide_spec_marker FROM
  spec_markers.m WHERE k = ID``, a one-row select from a tiny table the
  fixture fills in-process.  cqlsh echoes no statement and no comment in
  ``-f`` mode and prints nothing for DDL and writes, but it always prints a
  SELECT's rows, so the marker value (``@@marker:ID@@``, which no example can
  produce) is a line we can find, and its whole block (header, dashes, value,
  ``(1 rows)``) has a fixed shape we check and cut out.  What cqlsh printed
  between an example's "last" marker and the next marker is the output of its
  last statement.
* Errors go to stderr as ``SCRIPT:LINE:message``; every statement is written
  on its own lines followed by a blank line, so the line number (cqlsh reports
  the line after the statement's end) is attributed to the last statement
  starting at or before it.  An error in the last statement becomes part of its
  output (as the in-process shell's does); an error in an earlier statement
  fails the example, and so does anything cqlsh prints for the earlier
  statements (it prints nothing for DDL and writes that succeed; server
  warnings would show there).
* Schema statements run in a first cqlsh session, the rest of each example in a
  second one.  cqlsh formats a SELECT's rows with the driver's schema
  metadata, and after ``CREATE TABLE ... WITH cdc`` that metadata is refreshed
  for the base table only (the target of the SCHEMA_CHANGE result): the log
  table ``t_scylla_cdc_log`` is created implicitly and logtide's server pushes
  no SCHEMA_CHANGE event for it, so in the same session cqlsh refuses to print
  rows from it (``'t_scylla_cdc_log' not found in keyspace ...``, after the
  server ran the SELECT).  ScyllaDB does push a CREATED event for the log
  table, but a script run at full speed races the driver's refresh on it too
  (scheduled after a random delay of up to ``schema_event_refresh_window``,
  2 s).  A second session loads the whole schema when it connects, as a user
  querying the log later would.  The split is after each example's last
  CREATE/ALTER/DROP, so statement order is kept.
* ``-- clock: MICROS`` lines are dropped: the server's clock is the wall clock
  and cqlsh's driver sends client-side timestamps.  See ``WALL_CLOCK`` for the
  examples whose expected output shows clock-derived values.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from logtide.cql import split_statements
from tests.cdc.test_spec_examples import assert_output_matches, load_examples, normalise

from .conftest import KEYSPACE_DDL, run_cqlsh

EXAMPLES = load_examples()
DOCUMENTS = sorted({name.split(":")[0] for name, _, _ in EXAMPLES})

# Examples whose expected output shows a value derived from the clock the
# example set with "-- clock:", i.e. the time of a statement without USING
# TIMESTAMP: through cqlsh that time is the wall clock (the client-side
# timestamp cqlsh's driver sends), and the spec README allows wall-clock
# timestamps an example did not fix to differ.  These are compared with the
# digits of 13-16 digit integers and of cqlsh timestamps replaced by '#'
# (widths, alignment and every other value still compared); all other
# examples must match exactly (their cdc$time timeuuids are masked anyway).
WALL_CLOCK = {
    "001_log_table:writetime_assigned_from_clock",  # writetime(a) of a plain UPDATE
    "001_log_table:cdc_time_equals_writetime",  # writetime(a) of a plain UPDATE
    "001_log_table:cdc_time_tounixtimestamp",  # tounixtimestamp("cdc$time"), milliseconds
    "001_log_table:cdc_time_totimestamp",  # totimestamp("cdc$time"), e.g. 2020-03-23 13:10:40.910000+0000
}
CLOCK_VALUE = re.compile(r"(?<![\d#])\d{13,16}(?![\d#])|\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)?[+-]\d{4}")

MARKER_TABLE = "spec_markers.m"
MARKER_COLUMN = "logtide_spec_marker"
MARKER_VALUE = re.compile(r"@@marker:(\d+)@@")
SCHEMA_STATEMENT = re.compile(r"\s*(CREATE|ALTER|DROP)\b", re.I)
ERROR_LINE = re.compile(r"^(?P<path>.*?):(?P<line>\d+):(?P<msg>.*)$")


@dataclass
class Example:
    doc: str
    name: str  # "doc:name", the test id
    keyspace: str
    schema: list[str]  # statements for the first cqlsh session
    setup: list[str]  # the rest but the last, second session
    last: str
    expected: str


@dataclass
class Outcome:
    """What cqlsh printed for one example."""

    output: str = ""  # stdout of the last statement
    setup_output: str = ""  # stdout of the statements before it (expected: nothing)
    last_errors: list[str] = field(default_factory=list)
    setup_errors: list[str] = field(default_factory=list)  # errors of any earlier statement


def rewrite(statement: str, keyspace: str) -> str:
    """The example's statement with keyspace ``ks`` renamed to ``keyspace``."""
    statement = re.sub(r'(?<![\w$"])(?:ks|"ks")\.(?=[\w"])', keyspace + ".", statement)
    return re.sub(r'\b(USE\s+)(?:ks|"ks")(?![\w"])', r"\g<1>" + keyspace, statement, flags=re.I)


def build_examples() -> list[Example]:
    out = []
    for name, script, expected in EXAMPLES:
        doc = name.split(":")[0]
        keyspace = f"ex{DOCUMENTS.index(doc)}_{sum(e.doc == doc for e in out)}"
        text = "\n".join(line for line in script.splitlines() if not re.match(r"--\s*clock:", line.strip()))
        statements = [rewrite(s.text, keyspace) for s in split_statements(text)]
        assert statements, name
        split = max((i + 1 for i, s in enumerate(statements[:-1]) if SCHEMA_STATEMENT.match(s)), default=0)
        out.append(Example(doc, name, keyspace, statements[:split], statements[split:-1], statements[-1], expected))
    return out


ALL = build_examples()


class Script:
    """A generated cqlsh script; remembers which (example, role) each statement's lines belong to."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.starts: list[tuple[int, str | None, str]] = []  # (first line, example name, role)

    def add(self, statement: str, example: str | None = None, role: str = "setup") -> None:
        self.starts.append((len(self.lines) + 1, example, role))
        self.lines.extend((statement.rstrip() + ";").splitlines())
        self.lines.append("")  # so "the line after the statement" is never the next statement's first line

    def owner(self, line: int) -> tuple[str | None, str]:
        found: tuple[str | None, str] = (None, "preamble")
        for start, example, role in self.starts:
            if start > line:
                break
            found = (example, role)
        return found

    def text(self) -> str:
        return "\n".join(self.lines) + "\n"


def marker_select(marker_id: int) -> str:
    return f"SELECT {MARKER_COLUMN} FROM {MARKER_TABLE} WHERE k = {marker_id}"


def split_by_markers(stdout: str) -> dict[int, list[str]]:
    """Marker id -> the lines cqlsh printed after that marker's block, up to the next marker's block."""
    lines = stdout.splitlines()
    found = [i for i, line in enumerate(lines) if MARKER_VALUE.fullmatch(line.strip())]
    for i in found:  # the block of a one-row, one-column select, exactly
        assert lines[i - 2].strip() == MARKER_COLUMN and set(lines[i - 1]) == {"-"}, lines[i - 2:i + 3]
        assert lines[i + 1].strip() == "" and lines[i + 2] == "(1 rows)", lines[i - 2:i + 3]
    segments = {}
    for n, i in enumerate(found):
        end = found[n + 1] - 2 if n + 1 < len(found) else len(lines)
        marker_id = int(MARKER_VALUE.fullmatch(lines[i].strip()).group(1))
        segments[marker_id] = lines[i + 3:end]
    return segments


def run_document(port: int, home: Path, doc: str, examples: list[Example], marker_ids: dict) -> dict[str, Outcome]:
    schema, data = Script(), Script()
    for ex in examples:
        schema.add(KEYSPACE_DDL.format(ex.keyspace), ex.name)
        schema.add(f"USE {ex.keyspace}", ex.name)
        for s in ex.schema:
            schema.add(s, ex.name)
        data.add(marker_select(marker_ids[ex.name, "setup"]))
        data.add(f"USE {ex.keyspace}", ex.name)
        for s in ex.setup:
            data.add(s, ex.name)
        data.add(marker_select(marker_ids[ex.name, "last"]))
        data.add(ex.last, ex.name, "last")
    data.add(marker_select(marker_ids[doc, "end"]))
    for ex in examples:  # keep the schema small for the documents still to run
        data.add(f"DROP KEYSPACE {ex.keyspace}")

    outcomes = {ex.name: Outcome() for ex in examples}
    stray: list[str] = []
    for phase, script in (("schema", schema), ("data", data)):
        path = home / f"{doc}.{phase}.cql"
        path.write_text(script.text())
        status, stdout, stderr = run_cqlsh(port, home, "-f", str(path))
        current: list[str] = stray
        for line in stderr.splitlines():
            m = ERROR_LINE.match(line)
            if m and m.group("path") == str(path):
                example, role = script.owner(int(m.group("line")))
                if example is None:
                    current = stray
                else:
                    current = outcomes[example].last_errors if role == "last" else outcomes[example].setup_errors
                current.append(f"{phase} line {m.group('line')}: {m.group('msg')}")
            else:  # a continuation of the previous error, or something cqlsh printed outside any statement
                current.append(line)
        if phase == "data":
            segments = split_by_markers(stdout)
            for ex in examples:
                outcomes[ex.name].setup_output = "\n".join(segments.get(marker_ids[ex.name, "setup"], ["<no marker>"]))
                outcomes[ex.name].output = "\n".join(segments.get(marker_ids[ex.name, "last"], ["<no marker>"]))
        else:  # cqlsh prints nothing for DDL
            printed = [line for line in stdout.splitlines() if line]
            stray.extend(f"schema session printed: {line}" for line in printed)
    if stray:
        for o in outcomes.values():
            o.setup_errors.extend(stray)
    return outcomes


@pytest.fixture(scope="module")
def cqlsh_outcomes(server, tmp_path_factory) -> dict[str, Outcome]:
    """Every document's examples run through cqlsh, one document after the other: example name -> Outcome."""
    marker_ids: dict = {}
    keys = [(ex.name, role) for ex in ALL for role in ("setup", "last")] + [(doc, "end") for doc in DOCUMENTS]
    s = server.server.db.session()
    s.execute(KEYSPACE_DDL.format("spec_markers"))
    s.execute(f"CREATE TABLE {MARKER_TABLE} (k int PRIMARY KEY, {MARKER_COLUMN} text)")
    for marker_id, key in enumerate(keys):
        marker_ids[key] = marker_id
        s.execute(f"INSERT INTO {MARKER_TABLE} (k, {MARKER_COLUMN}) VALUES ({marker_id}, '@@marker:{marker_id}@@')")
    home = tmp_path_factory.mktemp("cqlsh-spec-home")
    outcomes: dict[str, Outcome] = {}
    for doc in DOCUMENTS:
        outcomes.update(run_document(server.port, home, doc, [ex for ex in ALL if ex.doc == doc], marker_ids))
    return outcomes


def mask_clock(lines: list[str]) -> list[str]:
    return [CLOCK_VALUE.sub(lambda m: re.sub(r"\d", "#", m.group()), line) for line in lines]


@pytest.mark.parametrize("example", ALL, ids=[ex.name for ex in ALL])
def test_cqlsh_spec_example(cqlsh_outcomes, example):
    outcome = cqlsh_outcomes[example.name]
    assert not outcome.setup_errors, "statements before the last one failed:\n" + "\n".join(outcome.setup_errors)
    assert not outcome.setup_output.strip(), "statements before the last one printed:\n" + outcome.setup_output
    # DESCRIBE names the example's keyspace: map it back to "ks" (as whole word, then "." or "'")
    output = re.sub(rf"\b{example.keyspace}(?=[.'])", "ks", outcome.output)
    got = normalise("\n".join([output, *outcome.last_errors]))
    want = normalise(example.expected)
    if example.name in WALL_CLOCK:
        got, want = mask_clock(got), mask_clock(want)
    assert_output_matches(got, want, example.expected)


def test_wall_clock_examples_exist():
    names = {ex.name for ex in ALL}
    assert WALL_CLOCK <= names
    assert set(DOCUMENTS) >= {"000_images", "001_log_table", "002_advanced_types", "003_basic_operations"}


def test_keyspace_rewrite():
    assert rewrite("CREATE TYPE ks.ut (a int)", "ex1_2") == "CREATE TYPE ex1_2.ut (a int)"
    assert rewrite('SELECT "cdc$time" FROM ks.t_scylla_cdc_log', "e") == 'SELECT "cdc$time" FROM e.t_scylla_cdc_log'
    assert rewrite("CREATE TABLE ks.t (v ut) WITH cdc = {'enabled': true}", "e") == \
        "CREATE TABLE e.t (v ut) WITH cdc = {'enabled': true}"
    assert rewrite("use ks", "e") == "use e" and rewrite('USE "ks"', "e") == "USE e"
    assert rewrite("SELECT * FROM picks.t WHERE marks.x = 1", "e") == "SELECT * FROM picks.t WHERE marks.x = 1"
