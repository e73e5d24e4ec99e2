"""The package's import structure (docs/architecture.md, "Layers"; issue #23): every import arrow points down
the layers or stays in its layer, no circle joins modules of different folders, and a circle inside one folder
is one idea split for size, which each of its modules says in its docstring.

The arrows are read from every module's ``ast``: imports inside functions and under ``TYPE_CHECKING`` count
(a lazy import is still an arrow).  This test is the command that shows the structure:

    .venv/bin/python -m pytest -q tests/test_import_structure.py
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "logtide"

# Bottom to top.  A unit is a folder of the package (``cql/``: every module in logtide/cql/) or one module
# (``session.py``, ``server/running.py``, ``__init__.py``: the package's own); the most specific unit names a
# module's layer.  A command's module (``cli.py``, ``*_cli.py``) belongs to the command line wherever it sits,
# beside the code it drives.
LAYERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("foundation", ("errors.py", "failures.py", "result.py", "version.py", "clock.py", "counters.py", "progress.py",
                    "config.py", "live_config.py", "ratelog.py", "scram.py", "compiled.py", "worker.py")),
    ("cql", ("cql/",)),
    ("schema", ("schema/",)),
    ("values", ("format/", "mutation/cells.py", "mutation/model.py")),
    ("storage", ("storage/",)),
    ("query", ("query/",)),
    ("mutation", ("mutation/", "query/bind.py")),
    ("logs", ("cdc/", "changefeed/")),
    ("auth", ("auth.py", "auth_resources.py", "service_levels.py", "service_level_statements.py")),
    ("engine", ("engine/", "tracing.py")),
    ("session", ("session.py", "__init__.py")),
    ("front ends", ("server/", "kafka/", "console/", "shell.py", "observe.py", "metrics.py")),
    ("spark", ("spark/",)),
    ("commands", ("cli.py", "*_cli.py", "status.py", "__main__.py")),
)
COMMAND = re.compile(r"(^|/|_)cli\.py$")  # cli.py or *_cli.py, in any folder
SPLIT_FOR_SIZE = "one idea split for size"
@dataclass(frozen=True)
class Arrow:
    """``source`` imports ``target`` (both dotted module names) at ``line`` of the source's file."""

    source: str
    target: str
    line: int


def modules() -> dict[str, Path]:
    """Every module of the package by dotted name (a package by its own name, for its ``__init__.py``)."""
    out = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


def _targets(name: str, path: Path, node: ast.Import | ast.ImportFrom, known: dict[str, Path]) -> list[str]:
    """The package's modules an import statement imports (a name imported from a package that is one of its
    modules is that module; any other name is the package itself)."""
    if isinstance(node, ast.Import):
        wanted = [a.name for a in node.names]
    else:
        if node.level:
            package = name if path.name == "__init__.py" else name.rpartition(".")[0]
            for _ in range(node.level - 1):
                package = package.rpartition(".")[0]
            base = f"{package}.{node.module}" if node.module else package
        else:
            base = node.module or ""
        wanted = [f"{base}.{a.name}" if f"{base}.{a.name}" in known else base for a in node.names]
    out = []
    for target in wanted:
        while target and target not in known:  # ``import logtide.x.y`` of a name inside a module
            target = target.rpartition(".")[0]
        if target and target != name:
            out.append(target)
    return out


def arrows(known: dict[str, Path]) -> list[Arrow]:
    """Every import arrow between modules of the package, lazy ones included."""
    out = []
    for name, path in known.items():
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                out.extend(Arrow(name, t, node.lineno) for t in _targets(name, path, node, known))
    return sorted(set(out), key=lambda a: (a.source, a.line, a.target))


def folder(name: str, known: dict[str, Path]) -> str:
    """The folder a module's file is in (``logtide`` for the top-level modules)."""
    return str(known[name].parent.relative_to(ROOT))


def layer_of(name: str, known: dict[str, Path]) -> int:
    """The index in LAYERS of a module's layer (KeyError: a module no unit names)."""
    path = known[name].relative_to(PACKAGE).as_posix()
    if COMMAND.search(path):
        return len(LAYERS) - 1
    units = {unit: i for i, (_, members) in enumerate(LAYERS) for unit in members}
    parts = path.split("/")
    for unit in [path] + ["/".join(parts[:n]) + "/" for n in range(len(parts) - 1, 0, -1)]:
        if unit in units:  # the module itself, then its folders from the innermost
            return units[unit]
    raise KeyError(name)


def circles(known: dict[str, Path], found: list[Arrow]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm, iterative)."""
    graph: dict[str, set[str]] = {n: set() for n in known}
    for a in found:
        graph[a.source].add(a.target)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            v, edges = work[-1]
            w = next(edges, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(sorted(graph[w]))))
                elif w in on_stack:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                if len(comp) > 1:
                    out.append(sorted(comp))
    return out


@pytest.fixture(scope="module")
def graph() -> tuple[dict[str, Path], list[Arrow]]:
    known = modules()
    return known, arrows(known)


def _name(layer: int) -> str:
    return LAYERS[layer][0] if layer < len(LAYERS) else "no layer"


def _where(arrow: Arrow, known: dict[str, Path]) -> str:
    return f"{known[arrow.source].relative_to(ROOT)}:{arrow.line}"


def test_every_module_has_a_layer(graph):
    known, _ = graph
    missing = []
    for name in known:
        try:
            layer_of(name, known)
        except KeyError:
            missing.append(name)
    assert missing == [], f"modules in no layer of LAYERS (add their folder or module): {missing}"


def test_no_import_points_up_the_layers(graph):
    known, found = graph
    layer = {}
    for name in known:
        try:
            layer[name] = layer_of(name, known)
        except KeyError:  # test_every_module_has_a_layer names it
            layer[name] = len(LAYERS)
    upward = [f"{_where(a, known)}: {a.source} ({_name(layer[a.source])}) imports {a.target} "
              f"({_name(layer[a.target])}), a higher layer"
              for a in found if layer[a.target] > layer[a.source]]
    assert upward == [], "\n".join(upward)


def test_no_import_circle_joins_modules_of_different_folders(graph):
    known, found = graph
    crossing = []
    for comp in circles(known, found):
        if len({folder(m, known) for m in comp}) > 1:
            inside = [f"{_where(a, known)}: {a.source} -> {a.target}" for a in found
                      if a.source in comp and a.target in comp]
            crossing.append(f"circle of {', '.join(comp)}:\n  " + "\n  ".join(inside))
    assert crossing == [], "\n".join(crossing)


def test_a_circle_inside_a_folder_is_one_idea_split_for_size(graph):
    known, found = graph
    unsaid = []
    for comp in circles(known, found):
        for m in comp:
            doc = ast.get_docstring(ast.parse(known[m].read_text())) or ""
            if SPLIT_FOR_SIZE not in " ".join(doc.split()).lower():
                unsaid.append(f"{m} (in a circle with {', '.join(c for c in comp if c != m)})")
    assert unsaid == [], (f"modules of an import circle whose docstring does not say they are "
                          f"'{SPLIT_FOR_SIZE}': " + "; ".join(unsaid))


def test_only_the_package_imports_the_embedded_api_module(graph):
    """``logtide.session`` is what users call (``logtide.open``): the server, Kafka, auth and the changefeeds get
    what they need from the engine or are given the database and session objects (issue #23)."""
    known, found = graph
    importers = sorted({f"{_where(a, known)}: {a.source}" for a in found
                        if a.target == "logtide.session" and a.source != "logtide"})
    assert importers == [], "\n".join(importers)


def test_the_layer_table_of_the_architecture_doc_is_the_one_checked():
    """docs/architecture.md's "Layers" table lists LAYERS, bottom to top, with the same units."""
    text = (ROOT / "docs" / "architecture.md").read_text().split("\n## Layers\n", 1)[1].split("\n## ", 1)[0]
    rows = re.findall(r"^\| (\d+) \| ([^|]+?) \| ([^|]+?) \|", text, re.M)
    documented = [(int(n), name, tuple(re.findall(r"`([^`]+)`", units))) for n, name, units in rows]
    assert documented == [(i, name, members) for i, (name, members) in enumerate(LAYERS)]
