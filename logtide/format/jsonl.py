"""``--output json``: one JSON object per statement (JSON Lines).

* a result with rows (SELECT, LWT, DESCRIBE):
  ``{"statement": text, "columns": [names], "rows": [[values], ...]}`` where each
  value is Cassandra's ``toJson()`` rendering embedded as a JSON value;
* a statement without rows: ``{"statement": text}``;
* a failed statement: ``{"statement": text, "error": {"code": N, "message": msg}}``.
"""

from __future__ import annotations

import json
from typing import Any, Callable

from logtide.result import ResultSet

ToJson = Callable[[Any, Any], str]


def _default_to_json() -> ToJson:
    from logtide.schema.types import to_json

    return to_json


def json_value(ctype: Any, value: Any, to_json: ToJson) -> Any:
    """A value as a JSON-ready Python object, via ``types.to_json``."""
    if value is None:
        return None
    return json.loads(to_json(ctype, value))


def result_record(statement: str, result: ResultSet | None, to_json: ToJson | None = None) -> dict[str, Any]:
    """The object describing one executed statement."""
    if result is None or result.kind != "rows":
        return {"statement": statement}
    convert = to_json or _default_to_json()
    types = result.column_types
    rows = [[json_value(t, v, convert) for t, v in zip(types, row)] for row in result.rows]
    return {"statement": statement, "columns": result.column_names, "rows": rows}


def error_record(statement: str, code: int, message: str) -> dict[str, Any]:
    """The object describing a failed statement."""
    return {"statement": statement, "error": {"code": code, "message": message}}


def dumps(record: dict[str, Any]) -> str:
    """One JSON Lines line (without the newline); non-ASCII text is kept as is."""
    return json.dumps(record, ensure_ascii=False)
