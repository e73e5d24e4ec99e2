"""Every example of the CDC spec documents, replayed through the shell as a golden transcript.

Each file under ``spec/`` holds examples separated by ``=== name`` lines.  An
example is a CQL script (run through ``logtide.shell.Shell`` on a fresh
database with keyspace ``ks``) and, after ``--- expected``, the text the
documents show for its last statement.  Lines ``-- clock: MICROS`` in a
script set the engine's clock before the next statement.

Comparison follows the spec's README: timeuuids are masked (their random
parts differ from run to run; where an example fixes the time, a unit test
checks it), blank lines the documents inserted for readability are ignored,
and a ``(N rows)`` line is compared only when the document shows one.
"""

from __future__ import annotations

import io
import re
from pathlib import Path

import pytest

import logtide
from logtide.clock import ManualClock
from logtide.shell import Shell

SPEC_DIR = Path(__file__).parent / "spec"
TIMEUUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-1[0-9a-f]{3}-[0-9a-f]{4}-[0-9a-f]{12}")
MASK = "xxxxxxxx-xxxx-1xxx-xxxx-xxxxxxxxxxxx"


def load_examples() -> list[tuple[str, str, str]]:
    out = []
    for path in sorted(SPEC_DIR.glob("*.txt")):
        text = path.read_text()
        for chunk in re.split(r"^=== ", text, flags=re.M)[1:]:
            name, _, body = chunk.partition("\n")
            script, sep, expected = body.partition("--- expected\n")
            assert sep, f"{path.name}: example {name} has no expected block"
            out.append((f"{path.stem}:{name.strip()}", script, expected))
    return out


def normalise(text: str) -> list[str]:
    lines = [TIMEUUID.sub(MASK, line.rstrip()) for line in text.splitlines()]
    return [line for line in lines if line.strip()]


def run_script(tmp_path: Path, script: str) -> str:
    """Run all statements of ``script``; return what the shell printed for the last one."""
    clock = ManualClock(1_500_000_000_000_000)  # before every clock the examples set
    with logtide.open(tmp_path / "data", clock=clock, synchronous="OFF") as db:
        setup = Shell(session_factory=lambda ks: db.session(ks), out=io.StringIO(), err=io.StringIO())
        setup.run_buffer("CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1};")
        pieces: list[str] = []
        current: list[str] = []
        for line in script.splitlines():
            m = re.match(r"--\s*clock:\s*(\d+)", line.strip())
            if m:
                if current:
                    pieces.append("\n".join(current))
                    current = []
                pieces.append(f"@clock {m.group(1)}")
            else:
                current.append(line)
        if current:
            pieces.append("\n".join(current))
        from logtide.cql import split_statements
        statements: list[str] = []
        for piece in pieces:
            if piece.startswith("@clock "):
                statements.append(piece)
            else:
                statements.extend(s.text for s in split_statements(piece))
        out = io.StringIO()
        err = io.StringIO()
        shell = Shell(session_factory=lambda ks: db.session(ks), out=out, err=err)
        last = ""
        for stmt in statements:
            if stmt.startswith("@clock "):
                clock.micros = int(stmt.split()[1])
                continue
            out.seek(0)
            out.truncate()
            err.seek(0)
            err.truncate()
            shell.run_buffer(stmt + ";")
            last = out.getvalue() + err.getvalue()
        return last


EXAMPLES = load_examples()


def assert_output_matches(got: list[str], want: list[str], expected: str) -> None:
    """The comparison rules of the spec README on normalised lines (shared with the cqlsh test)."""
    if not any(re.fullmatch(r"\(\d+ rows\)", line) for line in want):
        got = [line for line in got if not re.fullmatch(r"\(\d+ rows\)", line)]
    if any(line.startswith("CREATE TABLE") for line in want) and "..." in expected:
        # DESCRIBE examples elide lines with "...": the shown lines must appear in order
        shown = [line for line in want if line.strip() != "..."]
        it = iter(line.strip() for line in got)
        missing = [line for line in shown if not any(line.strip() == g for g in it)]
        assert not missing, f"lines not found in order: {missing}\n---\n" + "\n".join(got)
        return
    assert got == want, "\n".join(got)


@pytest.mark.parametrize("name, script, expected", EXAMPLES, ids=[e[0] for e in EXAMPLES])
def test_spec_example(tmp_path, name, script, expected):
    assert_output_matches(normalise(run_script(tmp_path, script)), normalise(expected), expected)


def test_every_spec_document_has_examples():
    docs = {name.split(":")[0] for name, _, _ in EXAMPLES}
    assert docs >= {"001_log_table", "002_advanced_types", "003_basic_operations", "000_images"}
