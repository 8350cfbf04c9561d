"""A session's file checkpoints: ``/s/{id}/checkpoints`` (a timeline per prompt),
``/diff`` (one file between two checkpoints, or against the file now), and restore and
undo: a preview (GET), then a POST, through the plan the CLI's ``restore`` uses.

The backups are read through :class:`Backups`: the root's ``file-history/``, or, on a
store, the blobs it keeps of them (where the file now is not here: it is on the machine
that synced the session, so a stored session's diffs are between checkpoints)."""

from __future__ import annotations

import difflib
from collections.abc import Callable, Collection
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from sessiontree.checkpoints.code import (
    plan_restore_code,
    plan_undo_code_restore,
    restore_code,
)
from sessiontree.checkpoints.read import (
    Checkpoint,
    FileBackup,
    checkpoints_gone,
    outside_project,
    read_checkpoints,
    tracking_path_damage,
)
from sessiontree.checkpoints.restore import format_diff
from sessiontree.checkpoints.undo import UndoDone, apply_undo
from sessiontree.conversation.transcript import Transcript
from sessiontree.errors import NotFound, Refused
from sessiontree.storage.layout import Layout
from sessiontree.views.html.pages import session_title
from sessiontree.views.shapes import prompts_json
from sessiontree.views.times import local_time
from sessiontree.web.config import ViewerConfig
from sessiontree.web.responses import (
    config_of,
    live_holders,
    open_session,
    page,
    reading,
    refuse_on_store,
)
from sessiontree.web.security import check_write

#: What a diff names the file as it is now.
CURRENT = "current"


@dataclass(frozen=True)
class Moment:
    """One prompt of the timeline, with its checkpoint when it has one."""

    prompt: dict[str, Any]
    when: str
    checkpoint: Checkpoint | None
    gone: bool


@dataclass(frozen=True)
class Backups:
    """A session's file-history backups, wherever they are: ``kept`` as
    :func:`checkpoints_gone` takes it (the root, or the names of those the store keeps),
    and ``read``, a backup's bytes by its file name (None: it is gone).
    ``project_here``: the session's project is on this machine (a stored session's is
    on the machine that synced it), so a diff may read its files as they are now."""

    kept: Layout | Collection[str]
    read: Callable[[str], bytes | None]
    project_here: bool


def backups_of(config: ViewerConfig, transcript: Transcript) -> Backups:
    session_id = transcript.session_id
    if config.store is None:
        layout = config.layout

        def read_file(name: str) -> bytes | None:
            path = layout.backup_path(session_id, name)
            return path.read_bytes() if path.is_file() else None

        return Backups(layout, read_file, project_here=True)
    from sessiontree.storage.store.reads import StoredLines, read_blob, session_backups

    conn, reader = config.store_conn(), transcript.reader
    assert isinstance(reader, StoredLines)
    stored = session_backups(conn, reader.source, session_id)

    def read_stored(name: str) -> bytes | None:
        sha256 = stored.get(name)
        return None if sha256 is None else read_blob(conn, sha256)

    return Backups(set(stored), read_stored, project_here=False)


def build_timeline(config: ViewerConfig, session_id: str) -> dict[str, Any]:
    transcript = open_session(config, session_id)
    checkpoints = read_checkpoints(transcript)
    by_id = {c.message_id: c for c in checkpoints}
    gone = checkpoints_gone(backups_of(config, transcript).kept, transcript.session_id, checkpoints)
    prompts = prompts_json(transcript, set(by_id), gone)
    moments = [
        Moment(p, local_time(p["timestamp"]), by_id.get(p["uuid"]), p["uuid"] in gone)
        for p in prompts
    ]
    files = sorted({path for c in checkpoints for path in c.files})
    return {
        "title": session_title(transcript),
        "session_id": transcript.session_id,
        "cwd": transcript.cwd,
        "moments": moments,
        "files": files,
        "choices": [m for m in moments if m.checkpoint is not None],
    }


async def timeline_page(request: Request) -> Response:
    shown = await run_in_threadpool(
        reading(request, build_timeline), request.path_params["session_id"]
    )
    return page(request, "checkpoints.html", page_title=f"checkpoints: {shown['title']}", **shown)


def _backup(checkpoint: Checkpoint, tracking_path: str) -> FileBackup | None:
    return checkpoint.files.get(tracking_path)


def _content(
    backups: Backups, transcript: Transcript, tracking_path: str, which: str
) -> tuple[bytes | None, str]:
    """The bytes of ``tracking_path`` at checkpoint ``which`` (a prompt's uuid) or now
    (:data:`CURRENT`), and a label; None: the file is absent there."""
    project = Path(transcript.cwd or ".")
    if which == CURRENT:
        if not backups.project_here:
            raise Refused(
                "the file now is on the machine that synced this session, not here: "
                "diff two checkpoints"
            )
        why = tracking_path_damage(tracking_path) or outside_project(tracking_path, [str(project)])
        if why is not None:
            raise Refused(why)
        path = project / tracking_path
        return (path.read_bytes() if path.is_file() else None), "now"
    checkpoint = next((c for c in read_checkpoints(transcript) if c.message_id == which), None)
    if checkpoint is None:
        raise NotFound("checkpoint", which)
    backup = _backup(checkpoint, tracking_path)
    label = f"checkpoint {which[:8]}"
    if backup is None or backup.backup_file_name is None:
        return None, label
    if backup.damage is not None:
        raise Refused(backup.damage)
    data = backups.read(backup.backup_file_name)
    if data is None:
        raise Refused(f"the backup of {tracking_path} at {which[:8]} is gone from file-history/")
    return data, f"{label} (v{backup.version})"


def unified_diff(before: bytes | None, after: bytes | None, name: str, a: str, b: str) -> str:
    """A unified diff of two versions of a file (None: absent); binary ones named."""
    old, new = before or b"", after or b""
    if b"\x00" in old or b"\x00" in new:
        return f"binary file {name} differs\n" if old != new else ""
    try:
        old_text, new_text = old.decode(), new.decode()
    except UnicodeDecodeError:
        return f"binary file {name} differs\n" if old != new else ""
    return "".join(
        difflib.unified_diff(
            old_text.splitlines(keepends=True),
            new_text.splitlines(keepends=True),
            fromfile=f"{name} ({a}{'' if before is not None else ', absent'})",
            tofile=f"{name} ({b}{'' if after is not None else ', absent'})",
        )
    )


def build_diff(
    config: ViewerConfig, session_id: str, tracking_path: str, a: str, b: str
) -> dict[str, Any]:
    transcript = open_session(config, session_id)
    if not tracking_path:
        raise Refused("name a file to diff")
    if not any(tracking_path in c.files for c in read_checkpoints(transcript)):
        # (only a file the session's checkpoints track: no other file is read)
        raise NotFound("tracked file", tracking_path)
    backups = backups_of(config, transcript)
    before, a_label = _content(backups, transcript, tracking_path, a)
    after, b_label = _content(backups, transcript, tracking_path, b)
    return {
        "title": session_title(transcript),
        "session_id": transcript.session_id,
        "file": tracking_path,
        "a_label": a_label,
        "b_label": b_label,
        "diff": unified_diff(before, after, tracking_path, a_label, b_label),
    }


async def diff_page(request: Request) -> Response:
    q = request.query_params
    shown = await run_in_threadpool(
        reading(request, build_diff),
        request.path_params["session_id"],
        q.get("file", ""),
        q.get("a", ""),
        q.get("b", CURRENT),
    )
    return page(request, "diff.html", page_title=f"diff: {shown['file']}", **shown)


def _refuse_if_live(config: ViewerConfig, session_id: str) -> None:
    holders = live_holders(config, session_id)
    if holders:
        raise Refused(
            f"session {session_id} is open in a running process (pid "
            f"{', '.join(map(str, holders))}); it may be editing these files: close it first"
        )


def build_restore_preview(config: ViewerConfig, session_id: str, prompt: str) -> dict[str, Any]:
    refuse_on_store(config)
    transcript = open_session(config, session_id)
    plan = plan_restore_code(config.layout, transcript, prompt)
    steps = [
        (step, format_diff(step) if step.action in ("restore", "delete") else "")
        for step in plan.steps
    ]
    return {
        "title": session_title(transcript),
        "session_id": transcript.session_id,
        "plan": plan,
        "steps": steps,
        "live": live_holders(config, session_id),
    }


async def restore_preview(request: Request) -> Response:
    shown = await run_in_threadpool(
        build_restore_preview,
        config_of(request),
        request.path_params["session_id"],
        request.query_params.get("prompt", ""),
    )
    return page(request, "restore.html", page_title="restore code", **shown)


def apply_restore_to(config: ViewerConfig, session_id: str, prompt: str) -> dict[str, Any]:
    refuse_on_store(config)
    _refuse_if_live(config, session_id)
    transcript = open_session(config, session_id)
    plan = plan_restore_code(config.layout, transcript, prompt)
    record = restore_code(plan)
    return {
        "session_id": transcript.session_id,
        "code": plan.as_json(),
        "folder": str(record.folder) if record is not None else None,
    }


async def restore_apply(request: Request) -> Response:
    config = config_of(request)
    form = await check_write(request, config.token)
    done = await run_in_threadpool(
        apply_restore_to, config, request.path_params["session_id"], form.get("prompt", "")
    )
    return page(request, "restored.html", page_title="code restored", **done)


def build_undo_preview(config: ViewerConfig, session_id: str) -> dict[str, Any]:
    refuse_on_store(config)
    transcript = open_session(config, session_id)
    plan = plan_undo_code_restore(config.layout, transcript)
    return {
        "session_id": transcript.session_id,
        "folder": str(plan.restore.folder),
        "restore": plan.restore,
        "later_undone": plan.later_undone,
        "steps": [(step, step.diff()) for step in plan.steps],
        "conflicts": plan.conflicts,
    }


async def undo_preview(request: Request) -> Response:
    shown = await run_in_threadpool(
        build_undo_preview, config_of(request), request.path_params["session_id"]
    )
    return page(request, "undo.html", page_title="undo restore", **shown)


def apply_undo_to(config: ViewerConfig, session_id: str) -> UndoDone:
    refuse_on_store(config)
    _refuse_if_live(config, session_id)
    transcript = open_session(config, session_id)
    return apply_undo(plan_undo_code_restore(config.layout, transcript))


async def undo_apply(request: Request) -> Response:
    config = config_of(request)
    await check_write(request, config.token)
    session_id = request.path_params["session_id"]
    done = await run_in_threadpool(apply_undo_to, config, session_id)
    return page(request, "undone.html", page_title="restore undone", session_id=session_id,
                undone=done.undone, kept=done.kept)  # fmt: skip


routes = [
    Route("/s/{session_id}/checkpoints", timeline_page, name="checkpoints"),
    Route("/s/{session_id}/diff", diff_page, name="diff"),
    Route("/s/{session_id}/restore", restore_preview, methods=["GET"], name="restore_preview"),
    Route("/s/{session_id}/restore", restore_apply, methods=["POST"], name="restore"),
    Route("/s/{session_id}/undo", undo_preview, methods=["GET"], name="undo_preview"),
    Route("/s/{session_id}/undo", undo_apply, methods=["POST"], name="undo"),
]
