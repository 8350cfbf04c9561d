"""The package's public names are a contract: changing them must be a decision."""

from __future__ import annotations

import sessiontree


def test_all_is_pinned() -> None:
    assert sessiontree.__all__ == [
        "Ambiguous",
        "Checkpoint",
        "DataError",
        "FileBackup",
        "ForkPoint",
        "HistoryEntry",
        "Layout",
        "NotFound",
        "Problem",
        "Record",
        "Refused",
        "Session",
        "SessionInfo",
        "SessionTreeError",
        "Subagent",
        "Transcript",
        "Tree",
        "backup_name",
        "build_context",
        "build_tree",
        "encode_cwd",
        "iter_history",
        "list_sessions",
        "read_checkpoints",
        "resolve_root",
        "resolve_session",
    ]
    for name in sessiontree.__all__:
        assert getattr(sessiontree, name) is not None
