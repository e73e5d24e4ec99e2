"""Every CQL type is rendered as cqlsh renders it (through cqlshlib.formatting)."""

from __future__ import annotations

from typing import Any

import pytest

from logtide.format.cqlsh import FormatOptions, ValueFormatter, cqlsh_types, keyspace_meta_shim

from .cases import ADDRESS, INT, PERSON, TEXT, VALUES, T


def render(ctype: Any, value: Any, options: FormatOptions | None = None) -> str:
    return ValueFormatter(options or FormatOptions()).value(value, cqlsh_types([ctype])[0]).strval


@pytest.mark.parametrize("label,ctype,value,expected", VALUES, ids=[v[0] for v in VALUES])
def test_value_rendering(label: str, ctype: Any, value: Any, expected: str) -> None:
    assert render(ctype, value) == expected


def test_expectations_match_cqlsh(cqlsh_reference: dict[str, Any]) -> None:
    """The literal expectations above are what cqlsh's own myformat_value produces."""
    assert cqlsh_reference["values"] == {label: expected for label, _, _, expected in VALUES}


def test_double_precision_is_configurable() -> None:
    options = FormatOptions(double_precision=12)
    assert render(T.NativeType("double"), 3.141592653589793, options) == "3.14159265359"
    assert render(T.NativeType("float"), 3.141592653589793, options) == "3.14159"


def test_udt_shim_lists_nested_types_by_name() -> None:
    shim = keyspace_meta_shim([T.ListType(PERSON, True), INT])
    assert shim.user_types["person"].field_types == ["text", "frozen<address>", "frozen<list<text>>"]
    assert shim.user_types["address"].field_types == ["text", "int"]


def test_unformattable_value_is_shown_as_repr() -> None:
    formatter = ValueFormatter(FormatOptions())
    value = formatter.value(object, cqlsh_types([T.MapType(TEXT, INT, False)])[0])
    assert value.strval == repr(object)
    assert formatter.failures and formatter.failures[0].message().startswith("Failed to format value")


def test_null_user_type_value() -> None:
    assert render(ADDRESS, None) == "null"
