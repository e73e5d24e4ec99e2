"""Runs the shared test cases through cqlsh's own code and prints the outputs as JSON.

Usage: ``python tests/shell/cqlsh_reference.py [--write-goldens]``

This drives ``cqlshlib.cqlshmain.Shell`` (cqlsh 6.2.2) itself -- its
``cmdloop``, ``onecmd``, ``print_result``, ``do_describe`` helpers, error
printing -- with a fake driver session whose results and errors are built as
cassandra-driver builds them (driver type classes, ordered-dict rows, pages,
ERROR frames decoded by ``cassandra.protocol``).  Importing cqlshmain creates
``~/.cassandra``: run it with ``HOME`` pointing at a scratch directory.
"""

from __future__ import annotations

import builtins
import cmd
import contextlib
import io
import json
import sys
from collections import OrderedDict
from pathlib import Path
from types import SimpleNamespace
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

import cassandra  # noqa: E402
from cassandra import cqltypes  # noqa: E402
from cassandra.protocol import ErrorMessage, write_int, write_string  # noqa: E402
from cqlshlib import cql3handling, cqlshmain  # noqa: E402
from cqlshlib.formatting import CqlType  # noqa: E402

from logtide.errors import AlreadyExists, CqlError  # noqa: E402
from logtide.result import ResultSet  # noqa: E402
from tests.shell import cases  # noqa: E402

GOLDEN = Path(__file__).resolve().parent / "golden"


# -- driver-side objects ----------------------------------------------------


def driver_type(t: Any) -> Any:
    """The cassandra-driver type class for a logtide type object (what a result's metadata decodes to)."""
    kind = type(t).__name__
    if kind == "NativeType":
        return cqltypes._cqltypes[t.name]
    if kind == "ListType":
        return cqltypes.ListType.apply_parameters([driver_type(t.element)])
    if kind == "SetType":
        return cqltypes.SetType.apply_parameters([driver_type(t.element)])
    if kind == "MapType":
        return cqltypes.MapType.apply_parameters([driver_type(t.key), driver_type(t.value)])
    if kind == "TupleType":
        return cqltypes.TupleType.apply_parameters([driver_type(i) for i in t.items])
    if kind == "UserType":
        return cqltypes.UserType.make_udt_class(t.keyspace, t.name, tuple(t.field_names),
                                                tuple(driver_type(f) for f in t.field_types))
    raise TypeError(kind)


def user_types(t: Any, found: dict[str, Any]) -> None:
    """Driver UserType metadata (field types as schema strings) for every UDT inside ``t``."""
    from cassandra.metadata import UserType

    if type(t).__name__ == "UserType":
        found[t.name] = UserType(t.keyspace, t.name, list(t.field_names), [f.cql() for f in t.field_types])
    for sub in [getattr(t, a, None) for a in ("element", "key", "value")]:
        if sub is not None:
            user_types(sub, found)
    for sub in list(getattr(t, "items", ()) or ()) + list(getattr(t, "field_types", ()) or ()):
        user_types(sub, found)


def keyspace_meta(types: list[Any]) -> Any:
    found: dict[str, Any] = {}
    for t in types:
        user_types(t, found)
    return SimpleNamespace(user_types=found)


class AnyKeyspace(dict):
    """``metadata.keyspaces``: the same metadata for every keyspace name."""

    def __init__(self, meta: Any) -> None:
        super().__init__()
        self.meta = meta

    def get(self, key: Any, default: Any = None) -> Any:
        return self.meta


class PagedResult:
    """A driver ResultSet: ordered-dict rows delivered in pages of ``fetch_size``."""

    def __init__(self, result: ResultSet, fetch_size: int | None) -> None:
        size = fetch_size or 5000
        names = result.column_names
        rows = [OrderedDict(zip(names, r)) for r in result.rows]
        self.column_names = names or None
        self.column_types = [driver_type(t) for t in result.column_types] or None
        self.pages = [rows[i:i + size] for i in range(0, len(rows), size)] or [[]]
        self.page = 0

    @property
    def current_rows(self) -> list:
        return self.pages[self.page]

    @property
    def has_more_pages(self) -> bool:
        return self.page < len(self.pages) - 1

    def fetch_next_page(self) -> None:
        self.page += 1

    def __iter__(self):
        return iter([row for page in self.pages for row in page])

    def __bool__(self) -> bool:
        return bool(self.current_rows)


def frame_exception(err: CqlError) -> Exception:
    """The exception the driver raises for an ERROR frame carrying ``err`` (decoded from bytes)."""
    buf = io.BytesIO()
    write_int(buf, err.code)
    write_string(buf, err.message)
    if isinstance(err, AlreadyExists):
        write_string(buf, err.keyspace)
        write_string(buf, err.table)
    buf.seek(0)
    return ErrorMessage.recv_body(buf, 4).to_exception()


class FakeFuture:
    def __init__(self, outcome: Any, fetch_size: int | None) -> None:
        self.outcome = outcome
        self.fetch_size = fetch_size
        self.is_schema_agreed = True
        self.warnings = outcome.warnings if isinstance(outcome, ResultSet) else None

    def result(self) -> Any:
        if isinstance(self.outcome, CqlError):
            raise frame_exception(self.outcome)
        if not isinstance(self.outcome, ResultSet):
            return PagedResult(ResultSet(), None)
        return PagedResult(self.outcome, self.fetch_size)


class FakeDriverSession:
    def __init__(self, answers: dict[str, Any]) -> None:
        self.answers = answers

    def execute_async(self, statement: Any, trace: bool = False) -> FakeFuture:
        query = statement.query_string.strip().rstrip(";").rstrip()
        answer = self.answers.get(query)
        if answer is None:
            answer = next((v for k, v in self.answers.items() if query.startswith(k)), ResultSet())
        return FakeFuture(answer, statement.fetch_size)


# -- the cqlsh shell, minus its connection ----------------------------------


class RefShell(cqlshmain.Shell):
    """cqlsh's Shell with a fake connection; everything else is cqlsh's code."""

    def __init__(self, stdin: Any, out: Any, tty: bool, answers: dict[str, Any], ksmeta: Any,
                 single_statement: str | None = None) -> None:
        cmd.Cmd.__init__(self, stdout=out)
        self.conn = SimpleNamespace(metadata=SimpleNamespace(keyspaces=AnyKeyspace(ksmeta)),
                                    refresh_schema_metadata=lambda *a: None)
        self.owns_connection = False
        self.session = FakeDriverSession(answers)
        self.username = None
        self.tty, self.color, self.stdin, self.query_out = tty, False, stdin, out
        self.display_nanotime_format = cqlshmain.DEFAULT_NANOTIME_FORMAT
        self.display_timestamp_format = cqlshmain.DEFAULT_TIMESTAMP_FORMAT
        self.display_date_format = cqlshmain.DEFAULT_DATE_FORMAT
        self.display_float_precision = cqlshmain.DEFAULT_FLOAT_PRECISION
        self.display_double_precision = cqlshmain.DEFAULT_DOUBLE_PRECISION
        self.display_timezone = None
        self.output_codec = __import__("codecs").lookup("utf-8")
        self.encoding = "utf-8"
        self.connection_versions = {"build": "5.0.0", "cql": "3.4.5"}
        self.current_keyspace = None
        self.tracing_enabled = False
        self.expand_enabled = False
        self.page_size = self.default_page_size
        self.statement = io.StringIO()
        self.lineno = 1
        self.prompt = ""
        self.show_line_nums = not tty
        self.consistency_level = cassandra.ConsistencyLevel.ONE
        self.serial_consistency_level = cassandra.ConsistencyLevel.SERIAL
        self.empty_lines = 0
        self.statement_error = False
        self.single_statement = single_statement
        self.is_subshell = False
        self.decoding_errors = []
        self.lastcmd = ""

    def parse_for_select_meta(self, query_string: str) -> Any:
        return None  # table metadata only colours column names

    def parse_for_update_meta(self, query_string: str) -> Any:
        return None


@contextlib.contextmanager
def captured(out: io.StringIO, err: io.StringIO):
    real_input = builtins.input
    builtins.input = lambda prompt="": out.write(prompt) and ""
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            yield
    finally:
        builtins.input = real_input


# -- the three kinds of cases -----------------------------------------------


def reference_values() -> dict[str, str]:
    out: dict[str, str] = {}
    shell = RefShell(io.StringIO(), io.StringIO(), False, {}, None)
    for label, ctype, value, _ in cases.VALUES:
        cqltype = CqlType(cqltypes.cql_typename(driver_type(ctype)), keyspace_meta([ctype]))
        out[label] = shell.myformat_value(value, cqltype).strval
    return out


def reference_layout(case: cases.LayoutCase) -> str:
    out, err = io.StringIO(), io.StringIO()
    shell = RefShell(io.StringIO(), out, case.tty, {}, keyspace_meta(case.result.column_types))
    shell.expand_enabled = case.expand
    shell.current_keyspace = case.current_keyspace
    result = PagedResult(case.result, case.page_size)
    with captured(out, err):
        if case.how == "select":
            shell.print_result(result, None)
        elif case.how == "lwt":
            shell.writeresult("")
            shell.print_static_result(result, None, with_header=True, tty=shell.tty)
        else:  # cqlsh's do_describe dispatch
            what = case.how.split(":", 1)[1]
            if what in ("columnfamilies", "tables", "types", "functions", "aggregates"):
                shell.describe_list(result)
            elif what == "keyspaces":
                shell.describe_keyspaces(result)
            elif what == "cluster":
                shell.describe_cluster(result)
            else:
                shell.describe_element(result)
    return out.getvalue() + err.getvalue()


def reference_script(case: cases.ScriptCase) -> dict[str, Any]:
    out, err = io.StringIO(), io.StringIO()
    types = [c.type for r in case.answers.values() if isinstance(r, ResultSet) for c in r.columns]
    single = None
    if case.mode == "e":
        single = case.script if case.script.endswith(";") else case.script + ";"
    stdin = io.StringIO("" if case.mode == "e" else case.script)
    stdin.name = "script.cql" if case.mode == "f" else "<stdin>"
    shell = RefShell(stdin, out, False, case.answers, keyspace_meta(types), single)
    with captured(out, err):
        shell.cmdloop()
    return {"out": out.getvalue(), "err": err.getvalue(), "status": 2 if shell.statement_error else 0}


def main() -> None:
    cqlshmain.setup_cqlruleset(cql3handling)
    cqlshmain.setup_cqldocs(cql3handling)
    report = {
        "values": reference_values(),
        "layouts": {name: reference_layout(c) for name, c in cases.layout_cases().items()},
        "scripts": {name: reference_script(c) for name, c in cases.script_cases().items()},
    }
    if "--write-goldens" in sys.argv:
        for name, text in report["layouts"].items():
            (GOLDEN / ("layout_%s.txt" % name)).write_text(text, encoding="utf-8")
        for name, run in report["scripts"].items():
            (GOLDEN / ("script_%s.out" % name)).write_text(run["out"], encoding="utf-8")
            (GOLDEN / ("script_%s.err" % name)).write_text(run["err"], encoding="utf-8")
    json.dump(report, sys.stdout, ensure_ascii=False)


if __name__ == "__main__":
    main()
