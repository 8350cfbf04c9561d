"""Every path sessiontree reads or writes is computed here and nowhere else.

The layout is Claude Code's own (see docs/FORMAT.md in the shared folder)::

    <root>/projects/<encoded cwd>/<sessionId>.jsonl
    <root>/projects/<encoded cwd>/<sessionId>/tool-results/<id>.txt
    <root>/projects/<encoded cwd>/<sessionId>/subagents/agent-<agentId>.jsonl
    <root>/file-history/<sessionId>/<sha256(abs path)[:16]>@v<N>
    <root>/sessions/<pid>.json, session-env/<sessionId>/, shell-snapshots/, backups/
    <root>/history.jsonl, paste-cache/<hash16>.txt, settings.json
"""

from __future__ import annotations

import os
import re
import struct
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TypeAlias

from sessiontree.errors import Refused
from sessiontree.model.records import Problem, is_session_id
from sessiontree.storage.unreadable import not_a_file, read_failed

#: What every public function that takes a path accepts: ``str`` or ``os.PathLike``.
StrPath: TypeAlias = str | os.PathLike[str]

#: Claude Code cuts encoded project names longer than this and adds a hash suffix.
MAX_ENCODED_LENGTH = 200

_NOT_ALNUM = re.compile(r"[^A-Za-z0-9]")
#: A name that can stand as one folder name under file-history/ or session-env/.
_FOLDER_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,199}")
_ASTRAL = re.compile(r"[\U00010000-\U0010ffff]")  # (the negated BMP class takes 6 ms to compile)


def _sanitize(cwd: str) -> str:
    """Every UTF-16 unit that is not ``[A-Za-z0-9]`` becomes ``-``, as the client's
    JavaScript regex does: a character outside the BMP (two units) becomes ``--``."""
    return _NOT_ALNUM.sub("-", _ASTRAL.sub("--", cwd))


def resolve_root(explicit: StrPath | None, env: Mapping[str, str]) -> Path:
    """The config root: ``--root``, else ``$CLAUDE_CONFIG_DIR``, else ``~/.claude``."""
    if explicit:
        return Path(explicit).expanduser()
    configured = env.get("CLAUDE_CONFIG_DIR", "").strip()
    if configured:
        return Path(configured).expanduser()
    home = env.get("HOME") or str(Path.home())
    return Path(home) / ".claude"


def _java_string_hash(text: str) -> int:
    """``s[0]*31^(n-1) + … + s[n-1]`` over UTF-16 code units, as a signed 32-bit int."""
    h = 0
    for (code,) in struct.iter_unpack("<H", text.encode("utf-16-le")):
        h = (h * 31 + code) & 0xFFFFFFFF
    return h - (1 << 32) if h & 0x80000000 else h


def _base36(n: int) -> str:
    digits = "0123456789abcdefghijklmnopqrstuvwxyz"
    out = ""
    while True:
        n, r = divmod(n, 36)
        out = digits[r] + out
        if n == 0:
            return out


def encode_cwd(cwd: str) -> str:
    """The project folder name for ``cwd``: every non-``[A-Za-z0-9]`` becomes ``-``.

    Names over 200 characters are cut and given a hash suffix. Readers never rely on
    that suffix (see :meth:`Layout.find_project_dirs`): they match the prefix and
    confirm with the ``cwd`` recorded inside the transcript.
    """
    encoded = _sanitize(cwd)
    if len(encoded) <= MAX_ENCODED_LENGTH:
        return encoded
    return f"{encoded[:MAX_ENCODED_LENGTH]}-{_base36(abs(_java_string_hash(cwd)))}"


def backup_name(abs_path: str, version: int) -> str:
    """A checkpoint backup's file name: ``sha256(abs path)[:16]@v<N>`` (checked on fixtures)."""
    import hashlib  # (here: reading a transcript never pays for loading OpenSSL)

    digest = hashlib.sha256(abs_path.encode("utf-8")).hexdigest()[:16]
    return f"{digest}@v{version}"


#: A ``contentHash`` as history names it: hex, so a paste-cache name never walks out.
_PASTE_HASH = re.compile(r"^[0-9a-f]{8,64}$")


def is_paste_hash(value: str) -> bool:
    """True for a ``contentHash`` that can name a ``paste-cache`` file."""
    return _PASTE_HASH.match(value) is not None


def paste_hash(text: str) -> str:
    """The ``contentHash`` of a pasted text, the stem of its ``paste-cache`` file."""
    import hashlib

    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def utf8_name(text: str) -> str:
    """``text`` as UTF-8 can hold it: a file name read from disk that is not UTF-8 comes
    as lone surrogates (Python's ``surrogateescape``); each byte they stand for is shown
    as U+FFFD, as ``ls`` shows it as ``?``. Other text is returned as it is."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
    return text


def is_session_file(name: str) -> bool:
    """True for ``<uuid>.jsonl``: the only names that are top-level transcripts."""
    stem, dot, suffix = name.rpartition(".")
    return bool(dot) and suffix == "jsonl" and is_session_id(stem)


def session_folder_name(session_id: str) -> str:
    """``session_id`` as the name of its folders (``file-history/<id>/``,
    ``session-env/<id>/``, ``<id>.jsonl``), or :class:`~sessiontree.errors.Refused`.

    This is the defence every path built from an id passes: one plain name (letters,
    digits, ``.``, ``_``, ``-``; no ``..``), so an id read from a file can never name a
    folder elsewhere. Whether a name is an id the client made (a UUID) is another
    question, :func:`~sessiontree.model.records.is_session_id`'s.
    """
    if not _FOLDER_NAME.fullmatch(session_id) or ".." in session_id:
        raise Refused(f"not a session id: {session_id!r}")
    return session_id


def session_dir(transcript: Path) -> Path:
    """``<project>/<sessionId>/``: tool results and subagents beside a transcript."""
    return transcript.with_suffix("")


def tool_results_dir(transcript: Path) -> Path:
    return session_dir(transcript) / "tool-results"


def subagents_dir(transcript: Path) -> Path:
    return session_dir(transcript) / "subagents"


def subagent_meta_path(subagent_transcript: Path) -> Path:
    """``agent-<id>.meta.json`` beside a subagent transcript."""
    return subagent_transcript.with_suffix(".meta.json")


@dataclass(frozen=True)
class Layout:
    """The paths under one config root (``str`` or ``os.PathLike``)."""

    root: Path

    def __init__(self, root: StrPath) -> None:
        object.__setattr__(self, "root", Path(root))

    @property
    def projects_dir(self) -> Path:
        return self.root / "projects"

    @property
    def file_history_dir(self) -> Path:
        return self.root / "file-history"

    @property
    def sessions_dir(self) -> Path:
        return self.root / "sessions"

    @property
    def session_env_dir(self) -> Path:
        return self.root / "session-env"

    @property
    def shell_snapshots_dir(self) -> Path:
        return self.root / "shell-snapshots"

    @property
    def backups_dir(self) -> Path:
        return self.root / "backups"

    @property
    def history_path(self) -> Path:
        return self.root / "history.jsonl"

    @property
    def paste_cache_dir(self) -> Path:
        return self.root / "paste-cache"

    @property
    def settings_path(self) -> Path:
        return self.root / "settings.json"

    def project_dir(self, cwd: str) -> Path:
        """The folder a new session in ``cwd`` is written to."""
        return self.projects_dir / encode_cwd(cwd)

    def transcript_path(self, cwd: str, session_id: str) -> Path:
        return self.project_dir(cwd) / f"{session_folder_name(session_id)}.jsonl"

    def backup_dir(self, session_id: str) -> Path:
        return self.file_history_dir / session_folder_name(session_id)

    def backup_path(self, session_id: str, backup_file_name: str) -> Path:
        return self.backup_dir(session_id) / backup_file_name

    def paste_path(self, content_hash: str) -> Path:
        """``paste-cache/<hash>.txt``. A value that is no hash raises ValueError: history
        is data, and a ``contentHash`` of ``../x`` must not name a file outside the cache
        (readers check :func:`is_paste_hash` first)."""
        if not is_paste_hash(content_hash):
            raise ValueError(f"not a paste hash: {content_hash!r}")
        return self.paste_cache_dir / f"{content_hash}.txt"

    def session_env_path(self, session_id: str) -> Path:
        return self.session_env_dir / session_folder_name(session_id)

    def live_session_path(self, pid: int) -> Path:
        return self.sessions_dir / f"{pid}.json"

    def find_project_dirs(self, cwd: str) -> list[Path]:
        """Project folders that may hold sessions of ``cwd``.

        Exact encoded name first; for long paths, every folder sharing the 200-character
        prefix (the caller confirms with the ``cwd`` inside a transcript).
        """
        encoded = _sanitize(cwd)
        exact = self.projects_dir / encoded
        if len(encoded) <= MAX_ENCODED_LENGTH:
            return [exact] if exact.is_dir() else []
        prefix = encoded[:MAX_ENCODED_LENGTH]
        return sorted(p for p in self.iter_project_dirs() if p.name.startswith(prefix))

    def iter_project_dirs(self) -> Iterator[Path]:
        try:
            entries = list(os.scandir(self.projects_dir))
        except FileNotFoundError:
            return
        for entry in sorted(entries, key=lambda e: e.name):
            if entry.is_dir(follow_symlinks=False):
                yield Path(entry.path)

    def iter_transcripts(
        self, project_dir: Path, problems: list[Problem] | None = None
    ) -> Iterator[Path]:
        """Top-level session transcripts of one project folder (subagents excluded);
        what is named as one but cannot be read is added to ``problems``
        (:meth:`iter_transcript_entries`)."""
        for entry in self.iter_transcript_entries(project_dir, problems):
            yield Path(entry.path)

    def iter_transcript_entries(
        self, project_dir: StrPath, problems: list[Problem] | None = None
    ) -> Iterator[os.DirEntry[str]]:
        """:meth:`iter_transcripts` as directory entries (their ``stat`` is one ``lstat``,
        with no path to parse: what a listing of thousands of files wants). A folder, a
        link or another node named as a transcript, and a project folder that cannot be
        listed, are skipped: each an ``unreadable`` problem added to ``problems``."""
        try:
            entries = list(os.scandir(project_dir))
        except FileNotFoundError:
            return
        except OSError as exc:
            if problems is not None:
                problems.append(read_failed(project_dir, exc))
            return
        for entry in entries:
            if not is_session_file(entry.name):
                continue
            if entry.is_file(follow_symlinks=False):
                yield entry
            elif problems is not None:
                problems.append(not_a_file(entry))
