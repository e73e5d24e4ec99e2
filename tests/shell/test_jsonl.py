"""``--output json``: one JSON object per statement."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from logtide.errors import InvalidRequest
from logtide.format import jsonl
from logtide.result import ResultSet
from logtide.shell import ShellArgs, capture

from .cases import INT, TEXT, T
from .fakes import FakeSession, factory, rows_result


def fake_to_json(ctype: Any, value: Any) -> str:
    """Stand-in for types.to_json: JSON of the Python value (sets/lists as arrays)."""
    if isinstance(value, (set, frozenset)):
        value = sorted(value)
    return json.dumps(value)


def real_or_fake_to_json() -> Any:
    try:
        from logtide.schema.types import to_json

        to_json(T.NativeType("int"), 1)
        return to_json
    except Exception:  # types module not implemented yet
        return fake_to_json


def test_rows_record_embeds_json_values() -> None:
    result = rows_result([("pk", INT), ("v", TEXT), ("s", T.SetType(INT, False))], [(1, "a", {2, 1}), (2, None, None)])
    record = jsonl.result_record("SELECT * FROM ks.t", result, real_or_fake_to_json())
    assert record == {"statement": "SELECT * FROM ks.t", "columns": ["pk", "v", "s"],
                      "rows": [[1, "a", [1, 2]], [2, None, None]]}


def test_void_and_error_records() -> None:
    assert jsonl.result_record("USE ks", ResultSet(kind="set_keyspace")) == {"statement": "USE ks"}
    assert jsonl.error_record("x", 0x2000, "bad") == {"statement": "x", "error": {"code": 8192, "message": "bad"}}


def test_json_lines_output_and_status(tmp_path: Path) -> None:
    session = FakeSession({
        "SELECT * FROM ks.t": rows_result([("pk", INT), ("v", TEXT)], [(1, "é")]),
        "SELECT * FROM ks.missing": InvalidRequest("unconfigured table missing"),
    })
    args = ShellArgs(data_dir=str(tmp_path), output="json",
                     execute="SELECT * FROM ks.t;\nINSERT INTO ks.t (pk) VALUES (1);\n"
                             "SELECT * FROM ks.missing; CONSISTENCY QUORUM")
    status, out, err = capture(args, factory(session), to_json=real_or_fake_to_json())
    lines = [json.loads(line) for line in out.splitlines()]
    assert status == 1 and err == ""
    assert lines[0]["statement"] == "SELECT * FROM ks.t" and lines[0]["columns"] == ["pk", "v"]
    assert lines[1] == {"statement": "INSERT INTO ks.t (pk) VALUES (1)"}
    assert lines[2] == {"statement": "SELECT * FROM ks.missing",
                        "error": {"code": 0x2200, "message": "unconfigured table missing"}}
    assert lines[3] == {"statement": "CONSISTENCY QUORUM"}
    assert "é" in out  # not \u-escaped
