"""The shell commands of README.md and docs/*.md, as the doc-test harness runs them.

Convention (DEVELOPERS.md, "Commands in the docs"):

- Every fenced block whose info string is ``sh`` holds commands that run as
  written; one command per line, a trailing ``\\`` continues it, lines that
  are empty or only a ``# comment`` are skipped.  Output, usage synopses and
  anything else that is not a command go in ```` ```text ```` (or another
  language), which is never run.
- A block runs top to bottom in its own working directory, with
  ``$LOGTIDE_DATA_DIR`` set to a fresh copy of the prepared data directory
  (:data:`PREPARED`), the venv's ``bin`` first on ``PATH`` and an empty
  ``$HOME``.  Each command must exit with status 0.
- ``logtide serve ...`` (a server that runs until stopped) is started with a
  free CQL port, a free metrics port and a free Kafka port (unless the command
  turns Kafka off with ``--kafka-port off``), checked to answer a CQL query, left
  running for the rest of its block (where ``9042``, ``9180`` and ``9092`` then
  mean its ports) and stopped with SIGTERM at the end of the block, which must
  exit 0.
- Placeholders are replaced by :data:`SUBSTITUTIONS` before running.
- A block that cannot run in a test as written has, on the line just above
  its fence, ``<!-- doc-test: skip REASON -->``; the reason is required.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

# placeholder in a doc -> key of the values the harness provides (see test_doc_commands.values)
SUBSTITUTIONS: dict[str, str] = {
    "/var/lib/logtide": "data_dir",  # a data directory: the block's copy of the prepared one
    "/other/dir": "other_dir",  # a second, empty data directory
    ".venv/bin/": "venv_bin",  # the venv the tests run in
}
# replaced only while a `logtide serve` started by the block runs
SERVER_SUBSTITUTIONS: dict[str, str] = {"9042": "cql_port", "9180": "metrics_port", "9092": "kafka_port"}

# the prepared data directory every block starts from (a copy of it)
PREPARED = [
    "CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}",
    "CREATE TABLE ks.t (pk int, ck int, v text, PRIMARY KEY (pk, ck)) "
    "WITH cdc = {'enabled': true, 'preimage': 'full', 'postimage': true}",
    "INSERT INTO ks.t (pk, ck, v) VALUES (0, 1, 'one')",
    "INSERT INTO ks.t (pk, ck, v) VALUES (0, 2, 'two')",
    "UPDATE ks.t SET v = 'uno' WHERE pk = 0 AND ck = 1",
    "DELETE FROM ks.t WHERE pk = 0 AND ck = 2",
]

FENCE = re.compile(r"^\s*(`{3,}|~{3,})\s*([\w+-]*)")
MARKER = re.compile(r"^<!--\s*doc-test:\s*(\w+)\s*(.*?)\s*-->\s*$")


@dataclass(frozen=True)
class Command:
    """One command of a block and the line of the doc it starts on."""

    line: int
    text: str


@dataclass(frozen=True)
class Block:
    """A fenced ``sh`` block: where it is, its commands, and why it is skipped (None: it runs)."""

    doc: str
    line: int
    commands: tuple[Command, ...]
    skip: str | None = None

    @property
    def id(self) -> str:
        return f"{self.doc}:{self.line}"


class DocFormatError(ValueError):
    """A doc breaks the convention (e.g. a skip marker without a reason, an unclosed fence)."""


def _commands(lines: list[tuple[int, str]]) -> tuple[Command, ...]:
    out: list[Command] = []
    pending: list[str] = []
    start = 0
    for number, text in lines:
        if not pending:
            stripped = text.strip()
            if not stripped or stripped.startswith("#"):
                continue
            start = number
        if text.rstrip().endswith("\\"):
            pending.append(text.rstrip()[:-1])
            continue
        pending.append(text)
        out.append(Command(start, " ".join(p.strip() for p in pending)))
        pending = []
    if pending:
        out.append(Command(start, " ".join(p.strip() for p in pending)))
    return tuple(out)


def extract(path: Path, name: str) -> list[Block]:
    """The ``sh`` blocks of one markdown file (``name``: how messages call it, e.g. ``docs/cdc.md``)."""
    lines = path.read_text(encoding="utf-8").splitlines()
    blocks: list[Block] = []
    i = 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        fence, lang, opened = m.group(1), m.group(2), i
        body: list[tuple[int, str]] = []
        i += 1
        while i < len(lines) and not lines[i].strip().startswith(fence):
            body.append((i + 1, lines[i]))
            i += 1
        if i == len(lines):
            raise DocFormatError(f"{name}:{opened + 1}: the code block opened here is never closed")
        i += 1
        if lang != "sh":
            continue
        skip = None
        above = lines[opened - 1].strip() if opened > 0 else ""
        marker = MARKER.match(above)
        if marker:
            if marker.group(1) != "skip":
                raise DocFormatError(f"{name}:{opened}: unknown doc-test marker {marker.group(1)!r} (known: skip)")
            if not marker.group(2):
                raise DocFormatError(f"{name}:{opened}: '<!-- doc-test: skip -->' needs a reason after 'skip'")
            skip = marker.group(2)
        blocks.append(Block(name, opened + 1, _commands(body), skip))
    return blocks


def substitute(text: str, values: dict[str, str], table: dict[str, str]) -> str:
    """``text`` with every placeholder of ``table`` replaced by its value."""
    for placeholder, key in table.items():
        text = text.replace(placeholder, values[key])
    return text


def is_serve(command: str) -> bool:
    """True for a command that starts a server running until stopped (``logtide serve ...``)."""
    return re.match(r"^(\S*/)?logtide\s+serve(\s|$)", command.strip()) is not None
