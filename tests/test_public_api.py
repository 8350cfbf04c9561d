"""The package's public names are a contract: changing them must be a decision."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

import sessiontree


def test_all_is_pinned() -> None:
    assert sessiontree.__all__ == [
        "Ambiguous",
        "Checkpoint",
        "CleanupPlan",
        "CleanupResult",
        "ClearPlan",
        "CodeRestorePlan",
        "CompactPlan",
        "Conflict",
        "DataError",
        "FileBackup",
        "FileStep",
        "ForkPoint",
        "HistoryEntry",
        "Layout",
        "NotASession",
        "NotFound",
        "Problem",
        "Record",
        "Refused",
        "RunningSession",
        "Session",
        "SessionInfo",
        "SessionTreeError",
        "StoreCheck",
        "Subagent",
        "SummarizePlan",
        "Transcript",
        "Tree",
        "UndoRecord",
        "apply_cleanup",
        "backup_name",
        "build_context",
        "build_tree",
        "check_store",
        "check_transcript",
        "encode_cwd",
        "iter_history",
        "latest_session",
        "list_sessions",
        "plan_cleanup",
        "plan_restore_code",
        "read_checkpoints",
        "resolve_root",
        "resolve_session",
        "restore_code",
        "resume_session",
        "run_session",
        "undo_code_restore",
    ]


def _type_checking_imports() -> dict[str, str]:
    """Name -> module of the ``if TYPE_CHECKING:`` imports of the package's own names:
    what mypy and editors see (``typing``'s, for the annotations, are none of them)."""
    tree = ast.parse(Path(sessiontree.__file__).read_text())
    [block] = [
        node
        for node in tree.body
        if isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING"
    ]
    return {
        alias.asname or alias.name: str(node.module)
        for node in block.body
        if isinstance(node, ast.ImportFrom) and str(node.module).startswith("sessiontree.")
        for alias in node.names
    }


@pytest.mark.parametrize("name", sessiontree.__all__)
def test_each_public_name_is_the_object_its_module_defines(name: str) -> None:
    """The lazy ``__getattr__`` gives what the static imports promise, under its own name."""
    module = _type_checking_imports()[name]
    value = getattr(sessiontree, name)
    assert value is getattr(importlib.import_module(module), name)
    assert callable(value) and value.__name__ == name  # a class or function, not an alias
    assert name in dir(sessiontree)


def test_the_lazy_table_and_the_static_imports_agree() -> None:
    assert set(_type_checking_imports()) == set(sessiontree.__all__)
    namespace: dict[str, object] = {}
    exec("from sessiontree import *", namespace)
    assert set(namespace) - {"__builtins__"} == set(sessiontree.__all__)
