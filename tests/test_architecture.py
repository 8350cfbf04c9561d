"""The package layout is the architecture: imports go one way, faces to model.

Every ``sessiontree`` import in every module is read from the source (including imports
inside functions and under ``TYPE_CHECKING``: a cycle that only the type checker sees is
still a cycle for a reader). A module may import its own package and any lower layer;
two packages on the same layer do not import each other.
"""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

import sessiontree
from sessiontree import _compat

SRC = Path(sessiontree.__file__).parent

#: Lowest first. ``docs/ARCHITECTURE.md`` says what each holds.
LAYERS: list[set[str]] = [
    {"errors", "_version"},  # the exceptions every layer raises; the version
    {"model"},  # pure: the format's rules, no I/O
    {"storage"},  # bytes on disk: paths, JSONL, the atomic writer, safe delete
    {"conversation", "history"},  # one transcript; what the user typed
    {"catalog", "checkpoints", "lifecycle"},  # concerns over many files
    {"cleanup", "doctor", "sync"},  # deciding over all of the above; pushing to the store
    {"session"},  # the porcelain
    {"agent", "views"},  # the agent host's engine; shapes for the faces
    {"chat", "demo", "web"},  # the interactive host; a demo store; the web viewer
    {"cli"},  # the command line
    {"__main__"},  # `python -m sessiontree`: the command line
]
RANK = {name: rank for rank, names in enumerate(LAYERS) for name in names}


def unit_of(module: str) -> str:
    """The top-level package (or module) of ``sessiontree.<unit>...``."""
    return module.split(".")[1]


def module_name(path: Path) -> str:
    parts = path.relative_to(SRC.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports_of(path: Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module == "sessiontree":
                found.update(f"sessiontree.{alias.name}" for alias in node.names)
            else:
                found.add(node.module)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    return {name for name in found if name.startswith("sessiontree.")}


MODULES = sorted(
    (module_name(p), p)
    for p in SRC.rglob("*.py")
    if module_name(p) not in ("sessiontree", "sessiontree._compat")
)


def test_every_unit_has_a_layer() -> None:
    units = {unit_of(name) for name, _ in MODULES}
    assert units == set(RANK), "a new package needs a layer (and a line in ARCHITECTURE.md)"


@pytest.mark.parametrize(("name", "path"), MODULES, ids=[name for name, _ in MODULES])
def test_imports_go_down(name: str, path: Path) -> None:
    unit = unit_of(name)
    wrong = [
        imported
        for imported in sorted(imports_of(path))
        if unit_of(imported) != unit and RANK[unit_of(imported)] >= RANK[unit]
    ]
    assert not wrong, f"{name} (layer {RANK[unit]}) imports {wrong}"


def test_no_module_imports_itself_back() -> None:
    """No cycles, inside a package either (``model.tree`` and ``model.resume`` had one)."""
    names = {name for name, _ in MODULES}
    graph = {
        name: {i for i in imports_of(path) if i in names and i != name} for name, path in MODULES
    }
    cycles = [c for c in strongly_connected(graph) if len(c) > 1]
    assert not cycles, f"import cycles: {cycles}"


def strongly_connected(graph: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's strongly connected components, iteratively."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, edges = work[-1]
            advanced = False
            for nxt in edges:
                if nxt not in index:
                    index[nxt] = low[nxt] = len(index)
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(sorted(graph[nxt]))))
                    advanced = True
                    break
                if nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                found.append(sorted(component))
    return found


def test_a_cycle_is_found() -> None:
    assert strongly_connected({"a": {"b"}, "b": {"a"}, "c": {"a"}}) == [["a", "b"], ["c"]]


def test_the_rule_can_fail(tmp_path: Path) -> None:
    upward = tmp_path / "m.py"
    upward.write_text("def f():\n    from sessiontree.cli.main import cli\n")
    assert imports_of(upward) == {"sessiontree.cli.main"}
    assert RANK[unit_of("sessiontree.cli.main")] > RANK["model"]


@pytest.mark.parametrize("old", sorted(_compat.MOVED))
def test_old_import_paths_still_work(old: str) -> None:
    assert importlib.import_module(old) is importlib.import_module(_compat.MOVED[old])


def test_packages_that_replaced_modules_keep_their_names() -> None:
    from sessiontree.checkpoints import Checkpoint, read_checkpoints
    from sessiontree.history import HistoryEntry, iter_history
    from sessiontree.session import RunningSession, Session, run_session
    from sessiontree.views import show_json

    assert Checkpoint.__module__ == "sessiontree.checkpoints.read"
    assert read_checkpoints.__module__ == "sessiontree.checkpoints.read"
    assert HistoryEntry.__module__ == iter_history.__module__ == "sessiontree.history.log"
    assert Session.__module__ == "sessiontree.session.session"
    assert RunningSession.__module__ == run_session.__module__ == "sessiontree.session.host"
    assert show_json.__module__ == "sessiontree.views.shapes"
