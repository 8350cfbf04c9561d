"""sessiontree: Claude Code's session system in Python, on Claude Code's own on-disk format.

Reading a session::

    from sessiontree import Layout, Transcript, list_sessions, resolve_root

    layout = Layout(resolve_root(None, os.environ))  # $CLAUDE_CONFIG_DIR, else ~/.claude
    for info in list_sessions(layout):  # newest first, from head/tail reads (no cache
        transcript = Transcript.open(info.path)  # unless cache_file=); records decoded lazily
        transcript.active_path  # root-to-leaf uuids, as the client resumes
        transcript.context()  # the Messages API `messages` the client sends on resume

Writing one (the real client resumes it with the same context)::

    session = Session.create(layout, cwd="/path/to/project")
    session.append_prompt("fix the bug")
    session.append_response([{"type": "text", "text": "Done."}])
    session.end_turn()  # turn_duration + last-prompt, fsynced

The lifecycle: ``Session.continue_latest`` / ``Session.resume`` (``-c`` / ``-r``),
``session.summarize`` / ``compact`` / ``clear`` (each with its ``plan_*``: what it would
write), ``run_session`` (what a live host keeps beside the transcript), ``plan_cleanup`` /
``apply_cleanup`` (retention, planned first), ``check_transcript`` / ``check_store``
(what ``doctor`` finds, as data); "Restore code": ``plan_restore_code`` / ``restore_code`` /
``undo_code_restore``. Paths may be given as ``str`` or ``os.PathLike``; the library reads
no environment variable (the caller passes the root and any cache file).
"""

from __future__ import annotations

import importlib

from sessiontree import _compat

#: (not ``typing.TYPE_CHECKING``: importing ``typing`` costs as much as the rest of the
#: interpreter's start-up, and ``sessiontree --version`` and a run served by the daemon
#: import nothing else; type checkers take any ``TYPE_CHECKING`` as true)
TYPE_CHECKING = False

_compat.install()

if TYPE_CHECKING:
    from typing import Any

    from sessiontree.catalog.index import SessionInfo, list_sessions
    from sessiontree.catalog.resolve import latest_session, resolve_session, resume_session
    from sessiontree.checkpoints.code import (
        CodeRestorePlan,
        plan_restore_code,
        restore_code,
        undo_code_restore,
    )
    from sessiontree.checkpoints.drift import Conflict
    from sessiontree.checkpoints.read import Checkpoint, FileBackup, read_checkpoints
    from sessiontree.checkpoints.restore import FileStep, UndoRecord
    from sessiontree.cleanup import CleanupPlan, CleanupResult, apply_cleanup, plan_cleanup
    from sessiontree.conversation.summarize import CompactPlan, SummarizePlan
    from sessiontree.conversation.transcript import Subagent, Transcript
    from sessiontree.doctor import StoreCheck, check_store, check_transcript
    from sessiontree.errors import (
        Ambiguous,
        DataError,
        NotASession,
        NotFound,
        Refused,
        SessionTreeError,
    )
    from sessiontree.history.log import HistoryEntry, iter_history
    from sessiontree.model.context import build_context
    from sessiontree.model.records import Problem, Record
    from sessiontree.model.tree import ForkPoint, Tree, build_tree
    from sessiontree.session.host import RunningSession, run_session
    from sessiontree.session.session import ClearPlan, Session
    from sessiontree.storage.layout import Layout, backup_name, encode_cwd, resolve_root

#: Public name -> the module that defines it. Imported on first use (PEP 562), so that
#: ``import sessiontree.errors`` (and ``sessiontree --help``) loads nothing else.
_WHERE = {
    "Ambiguous": "sessiontree.errors",
    "Checkpoint": "sessiontree.checkpoints.read",
    "CleanupPlan": "sessiontree.cleanup",
    "CleanupResult": "sessiontree.cleanup",
    "ClearPlan": "sessiontree.session.session",
    "CodeRestorePlan": "sessiontree.checkpoints.code",
    "CompactPlan": "sessiontree.conversation.summarize",
    "Conflict": "sessiontree.checkpoints.drift",
    "DataError": "sessiontree.errors",
    "FileBackup": "sessiontree.checkpoints.read",
    "FileStep": "sessiontree.checkpoints.restore",
    "ForkPoint": "sessiontree.model.tree",
    "HistoryEntry": "sessiontree.history.log",
    "Layout": "sessiontree.storage.layout",
    "NotASession": "sessiontree.errors",
    "NotFound": "sessiontree.errors",
    "Problem": "sessiontree.model.records",
    "Record": "sessiontree.model.records",
    "Refused": "sessiontree.errors",
    "RunningSession": "sessiontree.session.host",
    "Session": "sessiontree.session.session",
    "SessionInfo": "sessiontree.catalog.index",
    "SessionTreeError": "sessiontree.errors",
    "StoreCheck": "sessiontree.doctor",
    "Subagent": "sessiontree.conversation.transcript",
    "SummarizePlan": "sessiontree.conversation.summarize",
    "Transcript": "sessiontree.conversation.transcript",
    "Tree": "sessiontree.model.tree",
    "UndoRecord": "sessiontree.checkpoints.restore",
    "apply_cleanup": "sessiontree.cleanup",
    "backup_name": "sessiontree.storage.layout",
    "build_context": "sessiontree.model.context",
    "build_tree": "sessiontree.model.tree",
    "check_store": "sessiontree.doctor",
    "check_transcript": "sessiontree.doctor",
    "encode_cwd": "sessiontree.storage.layout",
    "iter_history": "sessiontree.history.log",
    "latest_session": "sessiontree.catalog.resolve",
    "list_sessions": "sessiontree.catalog.index",
    "plan_cleanup": "sessiontree.cleanup",
    "plan_restore_code": "sessiontree.checkpoints.code",
    "read_checkpoints": "sessiontree.checkpoints.read",
    "resolve_root": "sessiontree.storage.layout",
    "resolve_session": "sessiontree.catalog.resolve",
    "restore_code": "sessiontree.checkpoints.code",
    "resume_session": "sessiontree.catalog.resolve",
    "run_session": "sessiontree.session.host",
    "undo_code_restore": "sessiontree.checkpoints.code",
}


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module 'sessiontree' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_WHERE])


__all__ = [
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
