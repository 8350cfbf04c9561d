"""Finding sessions: by id, unique prefix, title or path, across every project."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path

from sessiontree.catalog.index import (
    SessionInfo,
    cache_path,
    list_sessions,
    read_no_conversation,
    read_session_info,
)
from sessiontree.errors import Ambiguous, NotASession, NotFound
from sessiontree.model.conversation import format_no_conversation
from sessiontree.storage.layout import Layout

_UUID = re.compile(r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$")
_PREFIX = re.compile(r"^[0-9a-fA-F-]{4,36}$")


def find_transcripts(layout: Layout, session_id_prefix: str) -> list[Path]:
    """Top-level transcripts whose session id starts with the prefix, in every project."""
    found: list[Path] = []
    for project_dir in layout.iter_project_dirs():
        for path in layout.iter_transcripts(project_dir):
            if path.stem.startswith(session_id_prefix.lower()):
                found.append(path)
    return sorted(found)


def resolve_session(layout: Layout, ref: str, env: Mapping[str, str] | None = None) -> Path:
    """The transcript a ``SESSION`` argument names.

    Order: an existing ``.jsonl`` path; a full id; a unique id prefix (4+ characters);
    an exact custom or AI title. Ambiguity raises :class:`Ambiguous`, nothing
    :class:`NotFound`. A path, id or title names a file even when it holds no
    conversation (:func:`check_conversation` tells); a title names a session first.
    """
    as_path = Path(ref).expanduser()
    if ref.endswith(".jsonl") and as_path.is_file():
        return as_path
    if _UUID.match(ref):
        exact = [p for p in find_transcripts(layout, ref) if p.stem == ref.lower()]
        if exact:
            return exact[0]
    elif _PREFIX.match(ref):
        matches = find_transcripts(layout, ref)
        if len(matches) == 1:
            return matches[0]
        if len(matches) > 1:
            raise Ambiguous("session", ref, [p.stem for p in matches])
    every = _all_sessions(layout, env, include_empty=True)
    titled = [s for s in every if ref in (s.customTitle, s.aiTitle) and not s.noConversation]
    if not titled:  # a title file with no conversation is named so that it can say why
        titled = [s for s in every if ref in (s.customTitle, s.aiTitle)]
    if len({s.sessionId for s in titled}) > 1:
        raise Ambiguous("session", ref, [s.sessionId for s in titled])
    if titled:
        return Path(titled[0].path)
    raise NotFound("session", ref)


def _all_sessions(
    layout: Layout, env: Mapping[str, str] | None, *, include_empty: bool = False
) -> list[SessionInfo]:
    environ = os.environ if env is None else env
    cache = cache_path(layout, environ)
    return list_sessions(layout, cache_file=cache, include_empty=include_empty)


def find_sessions(
    layout: Layout, query: str, env: Mapping[str, str] | None = None
) -> list[SessionInfo]:
    """Sessions whose title, first prompt or cwd contains ``query`` (case-insensitive),
    newest first."""
    return [s for s in _all_sessions(layout, env) if session_matches(s, query)]


def session_matches(info: SessionInfo, query: str) -> bool:
    """True when the title, first prompt or cwd contains ``query`` (case-insensitive)."""
    needle = query.casefold()
    return any(needle in (v or "").casefold() for v in (info.title, info.firstPrompt, info.cwd))


def check_conversation(path: Path) -> None:
    """Raise :class:`NotASession` when the transcript holds no conversation to resume
    (the client answers "No conversation found" to ``-r`` on it)."""
    reason = read_no_conversation(path)
    if reason is not None:
        raise NotASession(str(path), reason, format_no_conversation(reason))


def resume_session(layout: Layout, ref: str, env: Mapping[str, str] | None = None) -> Path:
    """What ``-r REF`` resumes: a ``SESSION`` reference (:func:`resolve_session`), else the
    one session a search over title, first prompt and cwd finds. A file with no
    conversation raises :class:`NotASession`, as the client refuses it."""
    try:
        path = resolve_session(layout, ref, env)
    except NotFound:
        found = find_sessions(layout, ref, env)
        if len(found) > 1:
            raise Ambiguous("session", ref, [s.sessionId for s in found]) from None
        if not found:
            raise
        return Path(found[0].path)
    check_conversation(path)
    return path


def latest_session(layout: Layout, cwd: str) -> Path | None:
    """What ``-c`` continues: the most recently modified session of ``cwd`` (a long path's
    folder is confirmed by the ``cwd`` recorded in the transcript).

    Files that hold no conversation are passed over, as the client passes over them, with
    one exception the client makes too: a 0-byte file (a session just created) is
    continued, its conversation starting empty in that file.
    """
    candidates: list[tuple[int, Path, int]] = []
    for project_dir in layout.find_project_dirs(cwd):
        for path in layout.iter_transcripts(project_dir):
            try:
                stat = path.stat()
            except OSError:
                continue
            candidates.append((stat.st_mtime_ns, path, stat.st_size))
    for _, path, size in sorted(candidates, reverse=True):
        try:
            if size > 0 and read_no_conversation(path) is not None:
                continue
        except OSError:
            continue
        if _project_dir_matches(layout, path, cwd):
            return path
    return None


def _project_dir_matches(layout: Layout, path: Path, cwd: str) -> bool:
    """A transcript in the exact folder of ``cwd``, or (long paths, whose folder names are
    cut) one whose recorded ``cwd`` is ``cwd``."""
    if path.parent == layout.project_dir(cwd):
        return True
    return read_session_info(path).cwd == cwd
