"""Applying a plan: every item re-checked just before it is deleted, links never
followed, every failure reported (nothing stops halfway without a report)."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable
from pathlib import Path

from sessiontree.cleanup.plan import (
    PASTE_NAME,
    SESSION_KINDS,
    CleanupItem,
    CleanupPlan,
    CleanupResult,
    ItemKind,
    KeptItem,
    read_recent_paste_refs,
    walk_part,
)
from sessiontree.errors import Refused
from sessiontree.lifecycle.live import (
    current_pid_domain,
    live_session_ids,
    read_live_entry,
)
from sessiontree.storage.layout import Layout
from sessiontree.storage.remove import open_folder, remove_file_at, remove_tree_at


def _base(layout: Layout, kind: ItemKind) -> Path:
    return {
        "transcript": layout.projects_dir,
        "session-folder": layout.projects_dir,
        "file-history": layout.file_history_dir,
        "session-env": layout.session_env_dir,
        "paste": layout.paste_cache_dir,
        "live-entry": layout.sessions_dir,
    }[kind]


def _expected_parts(layout: Layout, session_id: str, items: Iterable[CleanupItem]) -> set[Path]:
    """Where a session's parts can be: beside each planned transcript or folder, and in
    file-history/ and session-env/ (a part made after planning shows up here)."""
    places = {layout.backup_dir(session_id), layout.session_env_path(session_id)}
    for item in items:
        if item.kind in ("transcript", "session-folder"):
            places.add(item.path.parent / session_id)
            places.add(item.path.parent / f"{session_id}.jsonl")
    return places


def _recheck_session(
    layout: Layout, session_id: str, items: list[CleanupItem], cutoff: float
) -> str | None:
    """Why a planned session must stay after all, or None: it went live, a part changed,
    or a new part appeared. Judged as a whole, like the plan."""
    if session_id in live_session_ids(layout):
        return "live session (started since the plan)"
    planned = {item.path: item for item in items}
    for path in sorted(_expected_parts(layout, session_id, items) | set(planned)):
        try:
            st = os.lstat(path)
        except FileNotFoundError:
            continue
        item = planned.get(path)
        if item is None:
            return f"changed since the plan: {path} appeared"
        if (st.st_dev, st.st_ino) != (item.device, item.inode) or stat.S_ISLNK(st.st_mode):
            return f"changed since the plan: {path} was replaced"
        walk = walk_part(path, st)
        if walk.link is not None:
            return f"session {session_id} has a symlink ({walk.link}): never followed"
        if walk.newest >= cutoff:
            return f"changed since the plan: {walk.newest_path} was modified"
    return None


class _Failure(Exception):
    """A deletion that could not be done; ``kept`` when nothing was touched."""

    def __init__(self, reason: str, *, kept: bool) -> None:
        super().__init__(reason)
        self.reason = reason
        self.kept = kept


def _delete(
    layout: Layout, item: CleanupItem, cutoff: float, failed: list[tuple[Path, str]]
) -> int:
    """Delete one planned item after checking it is still what was planned; the bytes
    freed. Raises :class:`_Failure`."""
    base = _base(layout, item.kind)
    try:
        parts = item.path.relative_to(base).parts
    except ValueError:
        raise _Failure(f"not under {base}", kept=True) from None
    if not parts or any(p in ("", ".", "..") for p in parts):
        raise _Failure(f"not under {base}", kept=True)
    try:
        parent_fd = open_folder(base, parts[:-1])
    except FileNotFoundError:
        raise _Failure("already gone", kept=True) from None
    except OSError as exc:
        raise _Failure(
            f"cannot open its folder without following links: {exc.strerror}", kept=True
        ) from exc
    name = parts[-1]
    try:
        try:
            st = os.stat(name, dir_fd=parent_fd, follow_symlinks=False)
        except FileNotFoundError:
            raise _Failure("already gone", kept=True) from None
        if (st.st_dev, st.st_ino) != (item.device, item.inode):
            raise _Failure("changed since the plan: replaced", kept=True)
        if stat.S_ISLNK(st.st_mode) or stat.S_ISDIR(st.st_mode) != item.is_dir:
            raise _Failure("changed since the plan: no longer the same kind of file", kept=True)
        if not item.is_dir:
            if st.st_mtime >= cutoff:
                raise _Failure("changed since the plan: modified", kept=True)
            return remove_file_at(parent_fd, name, expect=st)
        before = len(failed)
        freed = remove_tree_at(parent_fd, name, item.path, failed)
        if len(failed) > before:
            raise _Failure("partly deleted (see failures)", kept=False)
        return freed
    except Refused as exc:  # it changed between the check above and the unlink
        raise _Failure(f"changed since the plan: {exc}", kept=True) from exc
    except OSError as exc:
        raise _Failure(exc.strerror or str(exc), kept=False) from exc
    finally:
        os.close(parent_fd)


def apply_cleanup(plan: CleanupPlan) -> CleanupResult:
    """Delete what ``plan`` lists, each session and file re-checked just before it goes.

    Never raises for one item: what could not be deleted is in ``failed``, what the
    re-check kept is in ``kept`` with why.
    """
    layout = plan.layout
    deleted: list[CleanupItem] = []
    kept: list[KeptItem] = list(plan.kept)
    failed: list[tuple[Path, str]] = []
    freed = 0

    def attempt(item: CleanupItem) -> None:
        nonlocal freed
        try:
            freed += _delete(layout, item, plan.cutoff, failed)
        except _Failure as exc:
            if exc.kept:
                kept.append(KeptItem(item.path, exc.reason, item.session_id))
            else:
                failed.append((item.path, exc.reason))
            return
        deleted.append(item)

    by_session: dict[str, list[CleanupItem]] = {}
    for item in plan.delete:
        if item.kind in SESSION_KINDS and item.session_id is not None:
            by_session.setdefault(item.session_id, []).append(item)
    for session_id, items in by_session.items():
        try:
            why = _recheck_session(layout, session_id, items, plan.cutoff)
        except OSError as exc:
            why = f"cannot be re-checked: {exc.strerror or exc}"
        if why is not None:
            kept.extend(KeptItem(i.path, why, session_id) for i in items)
            continue
        # Folders first, the transcript last: a failure part way leaves the session
        # listed (its transcript still there) rather than a transcript without parts.
        for item in sorted(items, key=lambda i: i.kind == "transcript"):
            attempt(item)

    pastes = [i for i in plan.delete if i.kind == "paste"]
    refs = read_recent_paste_refs(layout, plan.cutoff) if pastes else set()
    for item in pastes:
        match = PASTE_NAME.match(item.path.name)
        if refs is None:
            kept.append(KeptItem(item.path, "history.jsonl cannot be read: its pastes are kept"))
        elif match is None or match.group(1) in refs:
            kept.append(KeptItem(item.path, "referenced by recent history"))
        else:
            attempt(item)

    our_domain = current_pid_domain()
    for item in plan.delete:
        if item.kind != "live-entry":
            continue
        try:
            entry = read_live_entry(item.path, our_domain=our_domain)
        except OSError as exc:
            failed.append((item.path, f"cannot be re-checked: {exc.strerror or exc}"))
            continue
        if entry is None:
            kept.append(KeptItem(item.path, "already gone", item.session_id))
        elif not entry.stale:  # read_live_entry judged it just now
            kept.append(KeptItem(item.path, "its process is running now", item.session_id))
        else:
            attempt(item)

    return CleanupResult(
        plan=plan,
        deleted=tuple(deleted),
        kept=tuple(kept),
        failed=tuple(failed),
        bytes_freed=freed,
    )
