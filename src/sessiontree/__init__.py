"""sessiontree: Claude Code's session system in Python, on Claude Code's own on-disk format.

Reading a session::

    from sessiontree import Layout, Transcript, list_sessions, resolve_root

    layout = Layout(resolve_root(None, os.environ))  # $CLAUDE_CONFIG_DIR, else ~/.claude
    for info in list_sessions(layout):  # newest first, from head/tail reads
        transcript = Transcript.open(Path(info.path))  # skeleton scan; records decoded lazily
        transcript.active_path  # root-to-leaf uuids, as the client resumes
        transcript.context()  # the Messages API `messages` the client sends on resume

Writing one (the real client resumes it with the same context)::

    session = Session.create(layout, cwd="/path/to/project")
    session.append_prompt("fix the bug")
    session.append_response([{"type": "text", "text": "Done."}])
    session.end_turn()  # turn_duration + last-prompt, fsynced

The lifecycle: ``Session.continue_latest`` / ``Session.resume`` (``-c`` / ``-r``),
``session.summarize`` / ``compact`` / ``clear``, ``run_session`` (what a live host keeps
beside the transcript), ``plan_cleanup`` / ``apply_cleanup`` (retention, planned first).
"""

from sessiontree.checkpoints import Checkpoint, FileBackup, read_checkpoints
from sessiontree.cleanup import CleanupPlan, CleanupResult, apply_cleanup, plan_cleanup
from sessiontree.errors import Ambiguous, DataError, NotFound, Refused, SessionTreeError
from sessiontree.history import HistoryEntry, iter_history
from sessiontree.index import SessionInfo, list_sessions
from sessiontree.lifecycle.host import RunningSession, run_session
from sessiontree.model.context import build_context
from sessiontree.model.records import Problem, Record
from sessiontree.model.tree import ForkPoint, Tree, build_tree
from sessiontree.session import Session
from sessiontree.storage.layout import Layout, backup_name, encode_cwd, resolve_root
from sessiontree.store import latest_session, resolve_session, resume_session
from sessiontree.summarize import SummarizePlan
from sessiontree.transcript import Subagent, Transcript

__all__ = [
    "Ambiguous",
    "Checkpoint",
    "CleanupPlan",
    "CleanupResult",
    "DataError",
    "FileBackup",
    "ForkPoint",
    "HistoryEntry",
    "Layout",
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
