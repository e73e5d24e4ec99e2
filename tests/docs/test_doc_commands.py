"""Every command in README.md and docs/*.md runs as written (the convention: tests/docs/doc_commands.py)."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

import logtide

from ..ops.serving import ServeProcess, free_port
from .doc_commands import (PREPARED, SERVER_SUBSTITUTIONS, SUBSTITUTIONS, Block, Command, DocFormatError,
                           extract, is_serve, substitute)

ROOT = Path(__file__).resolve().parents[2]
KAFKA = re.compile(r"Kafka endpoint on \S+:(\d+)")
TIMEOUT = 300


def doc_files() -> list[tuple[Path, str]]:
    files = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    return [(p, str(p.relative_to(ROOT))) for p in files]


def all_blocks() -> list[Block]:
    blocks = []
    for path, name in doc_files():
        blocks.extend(extract(path, name))
    return blocks


@pytest.fixture(scope="module")
def prepared(tmp_path_factory) -> Path:
    """The data directory every block starts from (a copy of it): see doc_commands.PREPARED."""
    path = tmp_path_factory.mktemp("doc-prepared") / "data"
    with logtide.open(path, synchronous="OFF") as db:
        session = db.session()
        for statement in PREPARED:
            session.execute(statement)
    return path


def where(block: Block, line: int, command: str) -> str:
    return f"{block.doc}:{line}: `{command}`"


def run_block(block: Block, prepared: Path, tmp: Path) -> None:
    data_dir, other_dir, work, home = tmp / "data", tmp / "other", tmp / "work", tmp / "home"
    shutil.copytree(prepared, data_dir, ignore=shutil.ignore_patterns("LOCK"))
    for d in (other_dir, work, home):
        d.mkdir()
    venv_bin = str(Path(sys.executable).parent)
    values = {"data_dir": str(data_dir), "other_dir": str(other_dir), "venv_bin": venv_bin + "/"}
    env = {**os.environ, "LOGTIDE_DATA_DIR": str(data_dir), "HOME": str(home),
           "PATH": venv_bin + os.pathsep + os.environ.get("PATH", "")}
    for var in ("XDG_DATA_HOME", "CQLSH_HOST", "CQLSH_PORT"):
        env.pop(var, None)
    servers: list[tuple[ServeProcess, str]] = []
    try:
        for cmd in block.commands:
            text = substitute(cmd.text, values, SUBSTITUTIONS)
            if servers:
                text = substitute(text, values, SERVER_SUBSTITUTIONS)
            if is_serve(text):
                servers.append((start_server(text, env, work, values, block, cmd.line), where(block, cmd.line, cmd.text)))
                continue
            done = subprocess.run(["bash", "-c", text], cwd=work, env=env, stdin=subprocess.DEVNULL,
                                  capture_output=True, text=True, timeout=TIMEOUT)
            if done.returncode != 0:
                pytest.fail(f"{where(block, cmd.line, cmd.text)} exited with status {done.returncode}\n"
                            f"ran: {text}\nstdout:\n{done.stdout}\nstderr:\n{done.stderr}", pytrace=False)
    finally:
        for server, name in reversed(servers):
            status = server.stop()
            if status != 0:
                pytest.fail(f"{name}: the server exited with status {status} on SIGTERM\n{server.output()}",
                            pytrace=False)


def start_server(text: str, env: dict[str, str], work: Path, values: dict[str, str], block: Block,
                 line: int) -> ServeProcess:
    """Start a ``logtide serve`` command on free ports, check it answers CQL, and note its ports."""
    metrics_port = free_port()
    argv = shlex.split(text, comments=True) + ["--port", "0", "--metrics-port", str(metrics_port)]
    kafka_off = re.search(r"--kafka-port[ =]off(\s|$)", text) is not None
    if not kafka_off:
        argv += ["--kafka-port", "auto"]
    server = ServeProcess(argv, env=env, cwd=str(work))
    try:
        port = server.wait_listening(120)
    except AssertionError as e:
        pytest.fail(f"{where(block, line, text)} did not start listening:\n{e}", pytrace=False)
    values["cql_port"], values["metrics_port"] = str(port), str(metrics_port)
    kafka = KAFKA.search(server.output())
    deadline = time.monotonic() + 60
    while kafka is None and not kafka_off and time.monotonic() < deadline and server.proc.poll() is None:
        time.sleep(0.05)  # the Kafka endpoint may log just after the CQL listener
        kafka = KAFKA.search(server.output())
    values["kafka_port"] = kafka.group(1) if kafka else "0"
    if not kafka_off and kafka is None:
        pytest.fail(f"{where(block, line, text)} logged no Kafka endpoint:\n{server.output()}", pytrace=False)
    from ..server.conftest import cluster

    c = cluster(port)
    try:
        assert c.connect().execute("SELECT release_version FROM system.local").one() is not None
    finally:
        c.shutdown()
    return server


BLOCKS = all_blocks()


@pytest.mark.parametrize("block", BLOCKS, ids=[b.id for b in BLOCKS])
def test_doc_command_runs_as_written(block: Block, prepared: Path, tmp_path: Path) -> None:
    if block.skip is not None:
        pytest.skip(f"{block.id}: {block.skip}")
    run_block(block, prepared, tmp_path)


def test_docs_hold_commands_and_follow_the_convention():
    assert sum(len(b.commands) for b in BLOCKS if b.skip is None) >= 5


def test_extraction_joins_continuations_skips_comments_and_reads_markers(tmp_path):
    doc = tmp_path / "x.md"
    doc.write_text("intro\n\n```sh\n# a comment\nlogtide status \\\n  --interval 0   # trailing\n\ncqlsh -e 'x'\n"
                   "```\n\n<!-- doc-test: skip needs Spark -->\n```sh\nspark-submit job.py\n```\n\n```text\n"
                   "logtide serve [--data-dir DIR]\n```\n")
    blocks = extract(doc, "x.md")
    assert [(b.line, b.skip, [(c.line, c.text) for c in b.commands]) for b in blocks] == [
        (3, None, [(5, "logtide status --interval 0   # trailing"), (8, "cqlsh -e 'x'")]),
        (12, "needs Spark", [(13, "spark-submit job.py")]),
    ]


@pytest.mark.parametrize("text, message", [
    ("<!-- doc-test: skip -->\n```sh\nx\n```\n", "x.md:1: '<!-- doc-test: skip -->' needs a reason"),
    ("<!-- doc-test: maybe now -->\n```sh\nx\n```\n", "x.md:1: unknown doc-test marker 'maybe'"),
    ("```sh\nx\n", "x.md:1: the code block opened here is never closed"),
])
def test_convention_mistakes_name_the_doc_and_line(tmp_path, text, message):
    doc = tmp_path / "x.md"
    doc.write_text(text)
    with pytest.raises(DocFormatError, match=message.replace("(", r"\(").replace(")", r"\)")):
        extract(doc, "x.md")


def test_a_failing_command_names_the_doc_line_and_command(tmp_path, prepared):
    block = Block("docs/x.md", 7, (Command(8, "logtide replay ks.nope --to ks.copy"),))
    with pytest.raises(pytest.fail.Exception) as failure:
        run_block(block, prepared, tmp_path)
    assert str(failure.value).startswith("docs/x.md:8: `logtide replay ks.nope --to ks.copy` exited with status 2")


def test_serve_is_started_checked_and_stopped_with_its_ports_substituted(tmp_path, prepared):
    block = Block("docs/x.md", 1, (Command(2, "logtide serve --data-dir /var/lib/logtide  # comment"),
                                   Command(3, "cqlsh 127.0.0.1 9042 -e 'SELECT v FROM ks.t'"),
                                   Command(4, "curl -sf http://127.0.0.1:9180/metrics | grep -q logtide_info")))
    if shutil.which("curl") is None:
        block = Block(block.doc, block.line, block.commands[:2])
    run_block(block, prepared, tmp_path)


def test_serve_gets_a_free_kafka_port_substituted_for_9092_unless_kafka_is_off(tmp_path, prepared):
    from .doc_commands import Command

    if shutil.which("kcat") is None:
        pytest.skip("kcat is not installed")
    block = Block("docs/x.md", 1, (Command(2, "logtide serve"), Command(3, "kcat -b 127.0.0.1:9092 -L -m 30")))
    run_block(block, prepared, tmp_path / "on")
    off = Block("docs/x.md", 1, (Command(2, "logtide serve --kafka-port off"),))  # no Kafka line is awaited
    run_block(off, prepared, tmp_path / "off")
