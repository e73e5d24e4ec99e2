"""Result output exactly as cqlsh prints it.

Every value goes through ``cqlshlib.formatting.format_by_type`` (the code
cqlsh itself uses); this module only reproduces the layout of
``cqlshlib.cqlshmain.Shell``: ``print_result``, ``print_static_result``,
``print_formatted_result``, ``print_formatted_result_vertically``,
``print_warnings`` and the DESCRIBE printers (``describe_keyspaces``,
``describe_list``, ``describe_element``, ``describe_cluster``).

``tty`` selects cqlsh's interactive layout; ``tty=False`` is what ``cqlsh -e``
and ``cqlsh -f`` print (the layout that differs in its blank lines).
"""

from __future__ import annotations

import cmd
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any, Callable, Iterator, Sequence, TextIO

from cqlshlib.displaying import FormattedValue
from cqlshlib.formatting import CqlType, DateTimeFormat, format_by_type

from logtide.result import ResultSet

# DESCRIBE sub-commands whose results cqlsh prints as lists of names.
DESCRIBE_LIST_KINDS = frozenset({"columnfamilies", "tables", "types", "functions", "aggregates"})


@dataclass(frozen=True)
class FormatOptions:
    """cqlsh's display settings (``[ui]`` section of cqlshrc) with cqlsh 6.2.2's defaults.

    cqlsh 6.2.2 ships ``DEFAULT_FLOAT_PRECISION = 5`` and
    ``DEFAULT_DOUBLE_PRECISION = 5``.  Timestamps are shown in UTC (cqlsh does
    so when neither ``TZ`` nor a cqlshrc timezone is set and ``tzlocal`` is
    not installed).
    """

    float_precision: int = 5
    double_precision: int = 5
    timestamp_format: str = "%Y-%m-%d %H:%M:%S.%f%z"
    date_format: str = "%Y-%m-%d"
    nanotime_format: str = "%H:%M:%S.%N"
    encoding: str = "utf-8"
    page_size: int = 100  # cqlsh's default_page_size: each page is laid out on its own
    display_width: int = 80  # cmd.Cmd.columnize's width for DESCRIBE name lists

    def datetime_format(self) -> DateTimeFormat:
        """The cqlshlib DateTimeFormat for these options (UTC)."""
        return DateTimeFormat(
            timestamp_format=self.timestamp_format,
            date_format=self.date_format,
            nanotime_format=self.nanotime_format,
            timezone=None,
        )


@dataclass
class FormatFailure:
    """A value cqlsh could not format (cqlshmain's FormatError)."""

    value: Any
    error: Exception

    def message(self) -> str:
        return "Failed to format value %r : %s" % (self.value, self.error)


# --------------------------------------------------------------------------
# Types: logtide type objects -> cqlshlib CqlType
# --------------------------------------------------------------------------


def _is_user_type(ctype: Any) -> bool:
    return hasattr(ctype, "field_names") and hasattr(ctype, "field_types")


def _sub_types(ctype: Any) -> Iterator[Any]:
    """The component types of a collection, tuple or user type (duck-typed)."""
    for attr in ("element", "key", "value"):
        sub = getattr(ctype, attr, None)
        if sub is not None and hasattr(sub, "cql"):
            yield sub
    for attr in ("items", "field_types"):
        yield from (t for t in getattr(ctype, attr, None) or () if hasattr(t, "cql"))


def _collect_user_types(ctype: Any, found: dict[str, Any]) -> None:
    if _is_user_type(ctype):
        entry = SimpleNamespace(field_types=[t.cql() for t in ctype.field_types])
        found.setdefault(ctype.name, entry)
        found.setdefault('"%s"' % ctype.name.replace('"', '""'), entry)
    for sub in _sub_types(ctype):
        _collect_user_types(sub, found)


def keyspace_meta_shim(types: Sequence[Any]) -> SimpleNamespace:
    """A stand-in for the driver's KeyspaceMetadata: ``user_types[name].field_types`` as type strings."""
    found: dict[str, Any] = {}
    for ctype in types:
        if ctype is not None:
            _collect_user_types(ctype, found)
    return SimpleNamespace(user_types=found)


def cqlsh_types(types: Sequence[Any]) -> list[CqlType]:
    """cqlshlib CqlType objects for result column types, as cqlsh builds them."""
    ksmeta = keyspace_meta_shim(types)
    return [CqlType(t.cql() if hasattr(t, "cql") else str(t), ksmeta) for t in types]


# --------------------------------------------------------------------------
# Values
# --------------------------------------------------------------------------


class ValueFormatter:
    """Formats values and column names as cqlsh's ``myformat_value`` / ``myformat_colname`` do (no color)."""

    def __init__(self, options: FormatOptions) -> None:
        self.options = options
        self.failures: list[FormatFailure] = []

    def value(self, val: Any, cqltype: CqlType | None) -> FormattedValue:
        """One value; a failure is recorded and shown as ``repr(val)`` like cqlsh."""
        precision = (
            self.options.double_precision
            if cqltype is not None and cqltype.type_name == "double"
            else self.options.float_precision
        )
        try:
            return self._as_formatted(
                format_by_type(
                    val,
                    cqltype=cqltype,
                    encoding=self.options.encoding,
                    colormap=None,
                    addcolor=False,
                    nullval=None,
                    date_time_format=self.options.datetime_format(),
                    float_precision=precision,
                )
            )
        except Exception as exc:  # cqlsh shows any formatting failure the same way
            self.failures.append(FormatFailure(val, exc))
            return FormattedValue(repr(val))

    def name(self, name: str) -> FormattedValue:
        """A column header."""
        return self.value(name, None)

    @staticmethod
    def _as_formatted(val: Any) -> FormattedValue:
        return val if isinstance(val, FormattedValue) else FormattedValue(str(val))


# --------------------------------------------------------------------------
# Layout
# --------------------------------------------------------------------------


def _writeline(out: TextIO, text: str = "") -> None:
    out.write(text + "\n")


def print_formatted_result(
    out: TextIO,
    names: Sequence[FormattedValue],
    values: Sequence[Sequence[FormattedValue]] | None,
    with_header: bool,
    tty: bool,
) -> None:
    """cqlsh's table layout: left-justified header, right-justified values."""
    widths = [n.displaywidth for n in names]
    for row in values or ():
        for num, col in enumerate(row):
            widths[num] = max(widths[num], col.displaywidth)
    if with_header:
        header = " | ".join(hdr.ljust(w) for hdr, w in zip(names, widths))
        _writeline(out, " " + header.rstrip())
        _writeline(out, "-%s-" % "-+-".join("-" * w for w in widths))
    if values is None:
        _writeline(out)
        return
    for row in values:
        _writeline(out, " " + " | ".join(col.rjust(w) for col, w in zip(row, widths)))
    if tty:
        _writeline(out)


def print_formatted_result_vertically(
    out: TextIO,
    names: Sequence[FormattedValue],
    values: Sequence[Sequence[FormattedValue]],
    row_count_offset: int,
) -> None:
    """cqlsh's EXPAND ON layout: one ``@ Row N`` block per row."""
    max_col_width = max(n.displaywidth for n in names)
    max_val_width = max(v.displaywidth for row in values for v in row)
    for i, row in enumerate(values):
        _writeline(out, "@ Row %d" % (row_count_offset + i + 1))
        _writeline(out, "-%s-" % "-+-".join(["-" * max_col_width, "-" * max_val_width]))
        for field_id, value in enumerate(row):
            column = names[field_id].ljust(max_col_width)
            _writeline(out, " " + " | ".join([column, value.ljust(value.displaywidth)]))
        _writeline(out)


@dataclass
class TablePrinter:
    """Prints ResultSets the way cqlsh does; ``tty`` and ``expand`` are cqlsh's modes."""

    options: FormatOptions = field(default_factory=FormatOptions)
    tty: bool = False
    expand: bool = False

    def _format_rows(
        self, result: ResultSet, rows: Sequence[Sequence[Any]], fmt: ValueFormatter
    ) -> list[list[FormattedValue]]:
        names = result.column_names
        types = cqlsh_types(result.column_types)
        formatted = []
        for row in rows:
            by_name = dict(zip(names, row))  # cqlsh reads rows as ordered dicts
            formatted.append(list(map(fmt.value, [by_name[n] for n in names], types)))
        return formatted

    def _print_static(
        self,
        out: TextIO,
        result: ResultSet,
        rows: Sequence[Sequence[Any]],
        with_header: bool,
        fmt: ValueFormatter,
        row_count_offset: int = 0,
    ) -> None:
        """cqlsh's ``print_static_result`` for one page of rows."""
        if not result.column_names:
            return
        names = [fmt.name(n) for n in result.column_names]
        if not rows:
            print_formatted_result(out, names, None, with_header=True, tty=self.tty)
            return
        values = self._format_rows(result, rows, fmt)
        if self.expand:
            print_formatted_result_vertically(out, names, values, row_count_offset)
        else:
            print_formatted_result(out, names, values, with_header, self.tty)

    def pages(self, rows: Sequence[Any]) -> list[Sequence[Any]]:
        """Rows split into the pages cqlsh would fetch (at least one, maybe empty)."""
        size = max(1, self.options.page_size)
        return [rows[i : i + size] for i in range(0, len(rows), size)] or [rows[:0]]

    def print_result(
        self, out: TextIO, result: ResultSet, pause: Callable[[], Any] | None = None
    ) -> None:
        """A SELECT result: cqlsh's ``print_result`` (paged, then ``(N rows)``).

        ``pause`` is called between pages in tty mode (cqlsh's ``---MORE---``).
        """
        fmt = ValueFormatter(self.options)
        _writeline(out)
        num_rows = 0
        for page_no, page in enumerate(self.pages(list(result.rows))):
            if page_no and self.tty and pause is not None:
                out.flush()
                pause()
            with_header = page_no == 0 or self.tty
            self._print_static(out, result, page, with_header, fmt, num_rows)
            num_rows += len(page)
        if not self.tty:
            _writeline(out)
        _writeline(out, "(%d rows)" % num_rows)
        self._print_failures(out, fmt.failures)

    def print_static_result(self, out: TextIO, result: ResultSet) -> None:
        """A non-SELECT result with rows (an LWT's ``[applied]``): blank line then the table."""
        _writeline(out)
        self._print_static(out, result, list(result.rows), True, ValueFormatter(self.options))

    @staticmethod
    def _print_failures(out: TextIO, failures: Sequence[FormatFailure]) -> None:
        for failure in failures[:2]:
            _writeline(out, failure.message())
        if len(failures) > 2:
            _writeline(out, "%d more decoding errors suppressed." % (len(failures) - 2))


def print_warnings(out: TextIO, warnings: Sequence[str]) -> None:
    """Server warnings after a statement, as cqlsh prints them."""
    if not warnings:
        return
    _writeline(out)
    _writeline(out, "Warnings :")
    for warning in warnings:
        _writeline(out, warning)
        _writeline(out)


# --------------------------------------------------------------------------
# DESCRIBE
# --------------------------------------------------------------------------


def columnize(out: TextIO, names: list[str], width: int = 80) -> None:
    """Names in columns, with the stdlib code cqlsh uses (``cmd.Cmd.columnize``)."""
    cmd.Cmd(stdout=out).columnize(names, width)


def _rows_as_dicts(result: ResultSet) -> list[dict[str, Any]]:
    names = result.column_names
    return [dict(zip(names, row)) for row in result.rows]


def describe_keyspaces(out: TextIO, result: ResultSet, width: int = 80) -> None:
    """``DESCRIBE KEYSPACES``."""
    _writeline(out)
    columnize(out, [r["name"] for r in _rows_as_dicts(result)], width)
    _writeline(out)


def describe_list(out: TextIO, result: ResultSet, current_keyspace: str | None, width: int = 80) -> None:
    """``DESCRIBE TABLES`` / ``TYPES`` / ``FUNCTIONS`` / ``AGGREGATES``: names grouped by keyspace."""
    groups: list[tuple[str, list[str]]] = []
    for row in _rows_as_dicts(result):
        if not groups or groups[-1][0] != row["keyspace_name"]:
            groups.append((row["keyspace_name"], []))
        groups[-1][1].append(str(row["name"]))
    for keyspace, names in groups:
        _writeline(out)
        if current_keyspace is None:
            _writeline(out, "Keyspace %s" % keyspace)
            _writeline(out, "---------%s" % ("-" * len(keyspace)))
        columnize(out, names, width)
    if groups:
        _writeline(out)


def describe_element(out: TextIO, result: ResultSet) -> None:
    """``DESCRIBE KEYSPACE/TABLE/TYPE/SCHEMA ...``: each create statement between blank lines."""
    for row in _rows_as_dicts(result):
        _writeline(out)
        out.write(row["create_statement"])
        _writeline(out)


def describe_cluster(out: TextIO, result: ResultSet) -> None:
    """``DESCRIBE CLUSTER``."""
    for row in _rows_as_dicts(result):
        _writeline(out, "\nCluster: %s" % row["cluster"])
        _writeline(out, "Partitioner: %s" % row["partitioner"])
        _writeline(out, "Snitch: %s\n" % row["snitch"])
        if "range_ownership" in row:
            _writeline(out, "Range ownership:")
            for token, hosts in list(row["range_ownership"].items()):
                _writeline(out, " %39s  [%s]" % (token, ", ".join(host for host in hosts)))
            _writeline(out)


def print_describe(
    out: TextIO, result: ResultSet, what: str, current_keyspace: str | None, width: int = 80
) -> None:
    """A DESCRIBE result; ``what`` is the word after DESCRIBE, lower-cased (cqlsh's dispatch)."""
    if what in DESCRIBE_LIST_KINDS:
        describe_list(out, result, current_keyspace, width)
    elif what == "keyspaces":
        describe_keyspaces(out, result, width)
    elif what == "cluster":
        describe_cluster(out, result)
    elif what:
        describe_element(out, result)
