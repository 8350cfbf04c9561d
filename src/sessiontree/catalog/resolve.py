"""Finding sessions: by id, unique prefix, title or path, across every project."""

from __future__ import annotations

import os
import re
import warnings
from collections.abc import Mapping
from pathlib import Path

from sessiontree.catalog.index import (
    SessionInfo,
    list_sessions,
    read_no_conversation,
    read_session_info,
)
from sessiontree.errors import Ambiguous, NotASession, NotFound
from sessiontree.model.conversation import format_no_conversation
from sessiontree.model.records import is_session_id
from sessiontree.storage.layout import Layout, StrPath

_PREFIX = re.compile(r"[0-9a-fA-F-]{4,36}")


def _no_env(env: Mapping[str, str] | None) -> None:
    """The old third argument, ``env``, from which the listing cache's place was read.
    Deprecated and ignored: the library reads no environment; a caller that wants the
    cache passes ``cache_file`` (the CLI does)."""
    if env is not None:
        warnings.warn(
            "the env argument is ignored (the library reads no environment); "
            "pass cache_file= to use a listing cache",
            DeprecationWarning,
            stacklevel=3,
        )


def find_transcripts(layout: Layout, session_id_prefix: str) -> list[Path]:
    """Top-level transcripts whose session id starts with the prefix, in every project."""
    found: list[Path] = []
    for project_dir in layout.iter_project_dirs():
        for path in layout.iter_transcripts(project_dir):
            if path.stem.startswith(session_id_prefix.lower()):
                found.append(path)
    return sorted(found)


def resolve_session(
    layout: Layout,
    ref: StrPath,
    env: Mapping[str, str] | None = None,
    *,
    cache_file: StrPath | None = None,
) -> Path:
    """The transcript a ``SESSION`` argument names.

    Order: an existing ``.jsonl`` path; a full id; a unique id prefix (4+ characters);
    an exact custom or AI title. Ambiguity raises :class:`Ambiguous`, nothing
    :class:`NotFound`. A path, id or title names a file even when it holds no
    conversation (:func:`check_conversation` tells); a title names a session first.
    ``cache_file``: the listing cache a title lookup may use (:func:`list_sessions`).
    A path is taken as given (a ``~`` in it is the shell's to expand).
    """
    _no_env(env)
    return _resolve(layout, ref, cache_file)


def _resolve(layout: Layout, ref: StrPath, cache_file: StrPath | None) -> Path:
    if not isinstance(ref, str):  # an os.PathLike is a path, never an id or a title
        if Path(ref).is_file():
            return Path(ref)
        raise NotFound("session", os.fspath(ref))
    as_path = Path(ref)
    if ref.endswith(".jsonl") and as_path.is_file():
        return as_path
    if is_session_id(ref):
        exact = [p for p in find_transcripts(layout, ref) if p.stem == ref.lower()]
        if exact:
            return exact[0]
    elif _PREFIX.fullmatch(ref):
        matches = find_transcripts(layout, ref)
        if len(matches) == 1:
            return matches[0]
        if len(matches) > 1:
            raise Ambiguous("session", ref, [p.stem for p in matches])
    every = list_sessions(layout, cache_file=cache_file, include_empty=True)
    titled = [s for s in every if ref in (s.customTitle, s.aiTitle) and not s.noConversation]
    if not titled:  # a title file with no conversation is named so that it can say why
        titled = [s for s in every if ref in (s.customTitle, s.aiTitle)]
    if len({s.sessionId for s in titled}) > 1:
        raise Ambiguous("session", ref, [s.sessionId for s in titled])
    if titled:
        return Path(titled[0].path)
    raise NotFound("session", ref)


def find_sessions(
    layout: Layout,
    query: str,
    env: Mapping[str, str] | None = None,
    *,
    cache_file: StrPath | None = None,
) -> list[SessionInfo]:
    """Sessions whose title, first prompt or cwd contains ``query`` (case-insensitive),
    newest first."""
    _no_env(env)
    found = list_sessions(layout, cache_file=cache_file)
    return [s for s in found if session_matches(s, query)]


def session_matches(info: SessionInfo, query: str) -> bool:
    """True when the title, first prompt or cwd contains ``query`` (case-insensitive)."""
    needle = query.casefold()
    return any(needle in (v or "").casefold() for v in (info.title, info.firstPrompt, info.cwd))


def check_conversation(path: StrPath) -> None:
    """Raise :class:`NotASession` when the transcript holds no conversation to resume
    (the client answers "No conversation found" to ``-r`` on it)."""
    path = Path(path)
    reason = read_no_conversation(path)
    if reason is not None:
        raise NotASession(str(path), reason, format_no_conversation(reason))


def resume_session(
    layout: Layout,
    ref: StrPath,
    env: Mapping[str, str] | None = None,
    *,
    cache_file: StrPath | None = None,
) -> Path:
    """What ``-r REF`` resumes: a ``SESSION`` reference (:func:`resolve_session`), else the
    one session a search over title, first prompt and cwd finds. A file with no
    conversation raises :class:`NotASession`, as the client refuses it.
    ``cache_file``: as for :func:`list_sessions`."""
    _no_env(env)
    try:
        path = _resolve(layout, ref, cache_file)
    except NotFound:
        if not isinstance(ref, str):
            raise
        found = find_sessions(layout, ref, cache_file=cache_file)
        if len(found) > 1:
            raise Ambiguous("session", ref, [s.sessionId for s in found]) from None
        if not found:
            raise
        return Path(found[0].path)
    check_conversation(path)
    return path


def latest_session(layout: Layout, cwd: StrPath) -> Path | None:
    """What ``-c`` continues: the most recently modified session of ``cwd`` (a long path's
    folder is confirmed by the ``cwd`` recorded in the transcript).

    Files that hold no conversation are passed over, as the client passes over them, with
    one exception the client makes too: a 0-byte file (a session just created) is
    continued, its conversation starting empty in that file.
    """
    cwd = os.fspath(cwd)
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
