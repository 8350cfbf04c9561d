"""The package's public names are a contract: changing them must be a decision."""

from __future__ import annotations

import sessiontree


def test_all_is_pinned() -> None:
    assert sessiontree.__all__ == [
        "Ambiguous",
        "Checkpoint",
        "CleanupPlan",
        "CleanupResult",
        "DataError",
        "FileBackup",
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
        "Subagent",
        "SummarizePlan",
        "Transcript",
        "Tree",
        "apply_cleanup",
        "backup_name",
        "build_context",
        "build_tree",
        "encode_cwd",
        "iter_history",
        "latest_session",
        "list_sessions",
        "plan_cleanup",
        "read_checkpoints",
        "resolve_root",
        "resolve_session",
        "resume_session",
        "run_session",
    ]
    for name in sessiontree.__all__:
        assert getattr(sessiontree, name) is not None
