"""Result layouts are byte-identical to cqlsh's (goldens produced by cqlsh_reference.py)."""

from __future__ import annotations

import io
from typing import Any

import pytest

from logtide.format.cqlsh import FormatOptions, TablePrinter, print_describe

from .cases import LayoutCase, layout_cases
from .conftest import golden

CASES = layout_cases()


def render(case: LayoutCase) -> str:
    out = io.StringIO()
    printer = TablePrinter(FormatOptions(page_size=case.page_size), tty=case.tty, expand=case.expand)
    if case.how == "select":
        printer.print_result(out, case.result, pause=lambda: out.write("---MORE---"))
    elif case.how == "lwt":
        printer.print_static_result(out, case.result)
    else:
        print_describe(out, case.result, case.how.split(":", 1)[1], case.current_keyspace)
    return out.getvalue()


@pytest.mark.parametrize("name", sorted(CASES))
def test_layout_matches_golden(name: str) -> None:
    assert render(CASES[name]) == golden("layout_%s.txt" % name)


@pytest.mark.parametrize("name", sorted(CASES))
def test_layout_matches_live_cqlsh(name: str, cqlsh_reference: dict[str, Any]) -> None:
    assert render(CASES[name]) == cqlsh_reference["layouts"][name]


def test_select_layout_reads_as_documented() -> None:
    """Spot check of the non-tty layout: blank line, header, separator, rows, blank line, count."""
    assert render(CASES["basic"]) == (
        "\n"
        " pk | ck | v1 | v2\n"
        "----+----+----+------\n"
        "  0 |  0 |  0 | null\n"
        "\n"
        "(1 rows)\n"
    )


def test_empty_result_has_two_blank_lines_in_batch_mode() -> None:
    assert render(CASES["empty"]) == "\n pk | long_column_name\n----+------------------\n\n\n(0 rows)\n"
