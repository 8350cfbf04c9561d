"""Retention by age: what ``cleanupPeriodDays`` lets go, planned first, applied re-checked.

The client deletes files older than ``cleanupPeriodDays`` (settings.json, default 30)
silently at start (docs/FORMAT.md, "Sessions, history, retention"). sessiontree does the
same job in the open: :func:`plan_cleanup` reads (``lstat`` only, never a full file) and
says what would go and what is old but kept, and why; :func:`apply_cleanup` deletes.

What may go, when older than the cutoff by mtime:

- a **session**, as a whole: ``projects/*/<sid>.jsonl`` with its ``<sid>/`` folder (tool
  results, subagents), ``file-history/<sid>/`` and ``session-env/<sid>/``. A session is
  judged by the newest mtime of any of its files: a session whose transcript is recent
  keeps its old folders, and one with a recent file anywhere is not old;
- a ``paste-cache/<hash>.txt`` that no ``history.jsonl`` entry newer than the cutoff uses;
- a stale ``sessions/<pid>.json`` (dead or reused pid; see
  :mod:`sessiontree.lifecycle.live`), or one that cannot be read.

Kept past the cutoff as the client keeps it: a desktop host's session (entrypoint
``claude-desktop``, ``claude-desktop-3p`` or ``local-agent`` at the head or tail of the
transcript), up to ``desktopSessionCleanupPeriodDays`` if set, until the host releases it
with ``<sid>.desktop-released.json`` (``delete``; ``archive`` after a grace period).

Never: a live session (a registry entry whose process runs); a session a kept fork
depends on (``forkedFrom`` in the head of a kept transcript names it), and so on up its
ancestry; ``history.jsonl``, ``settings.json`` and every other file; anything whose name
is not one of the names above (``projects/*/memory/``, temporary files, …); anything that
is a symlink, and every part of a session that has one — a link is never followed, and a
session is never taken apart.

:func:`apply_cleanup` re-checks every session and file just before deleting it (still
there, the same inode, still old — the whole session again —, not live now), deletes
through folder descriptors opened without following links, and reports what it freed
and what it could not do; it does not stop at the first failure. The config root and its
top folders (``projects/``, ``file-history/``, …) may be symlinks the user made; below
them nothing is followed.
"""

from sessiontree.cleanup.apply import apply_cleanup
from sessiontree.cleanup.plan import (
    DEFAULT_CLEANUP_DAYS,
    CleanupItem,
    CleanupPlan,
    CleanupResult,
    KeptItem,
    plan_cleanup,
    read_cleanup_period_days,
    read_fork_parents,
    read_recent_paste_refs,
)

__all__ = [
    "DEFAULT_CLEANUP_DAYS",
    "CleanupItem",
    "CleanupPlan",
    "CleanupResult",
    "KeptItem",
    "apply_cleanup",
    "plan_cleanup",
    "read_cleanup_period_days",
    "read_fork_parents",
    "read_recent_paste_refs",
]
