"""``doctor`` as a library: every problem in one transcript, or in a whole config root.

:func:`check_transcript` reads the whole file: whether it holds a conversation at all,
the skeleton scan's problems (torn lines, bad JSON, NUL runs, lines nested too deep), the
tree's (duplicate uuids, dangling parents, cycles), a full decode of every line, metadata
included (text that had to be repaired, numbers out of range), and the damage a tolerant
read works around in silence (:mod:`sessiontree.model.damage`, hostile checkpoint
entries, missing backups). :func:`check_store` does that for every transcript of a config
root and adds what lives beside them (stale ``sessions/<pid>.json`` entries, pastes
missing from ``paste-cache/``). Both only read; what they find is data
(:class:`~sessiontree.model.records.Problem`), for a caller to print or act on.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sessiontree.catalog.index import list_sessions, transcript_no_conversation
from sessiontree.checkpoints.read import (
    Checkpoint,
    find_hostile_entries,
    find_missing_backups,
    fold_checkpoints,
)
from sessiontree.checkpoints.retention import pruned_by_client, read_backup_listing
from sessiontree.conversation.transcript import Transcript
from sessiontree.errors import DataError, Refused
from sessiontree.history.log import find_missing_pastes
from sessiontree.lifecycle.live import find_stale_entries
from sessiontree.model.conversation import format_no_conversation
from sessiontree.model.damage import (
    find_hidden_cycles,
    find_last_prompt_damage,
    find_record_damage,
)
from sessiontree.model.records import Problem, Record
from sessiontree.storage.jsonl import read_records
from sessiontree.storage.layout import Layout, StrPath, is_session_file, utf8_name
from sessiontree.storage.unreadable import read_failed

#: Lines decoded at a time: doctor reads every record, but holds only this many.
_BATCH = 2000

_CHECKPOINT_TYPES = ("file-history-snapshot", "file-history-delta")


@dataclass(frozen=True)
class StoreCheck:
    """What :func:`check_store` found: the transcripts it read and every problem."""

    transcripts: tuple[Path, ...]
    problems: tuple[Problem, ...]

    @property
    def ok(self) -> bool:
        """No problem but backups the client pruned itself (reported, not damage)."""
        return all(p.kind == "pruned-backup" for p in self.problems)

    def as_json(self) -> dict[str, Any]:
        """``{ok, problems: [{kind, path, line, detail}]}``, as ``doctor --json`` prints it."""
        return {"ok": self.ok, "problems": [p.as_json() for p in self.problems]}


def check_transcript(
    transcript: StrPath | Transcript, *, layout: Layout | None = None
) -> list[Problem]:
    """Everything wrong with one transcript (and its checkpoint backups), in the order
    found; ``[]`` when nothing is.

    ``transcript``: its path, or the transcript already read. ``layout``: the config
    root whose ``file-history/`` holds the session's backups; by default the root the
    transcript is in (``<root>/projects/<project>/<sessionId>.jsonl``). A transcript
    outside any ``projects/`` folder, without ``layout``, gets no backup check.
    """
    if not isinstance(transcript, Transcript):
        transcript = Transcript.open(Path(transcript))
    if layout is None:
        layout = _layout_of(transcript.path)
    return [*_not_a_session(transcript), *_find_problems(layout, transcript)]


def check_store(
    layout: Layout,
    *,
    cache_file: StrPath | None = None,
    on_progress: Callable[[int, int], None] | None = None,
) -> StoreCheck:
    """Every transcript of the config root (files that hold no conversation included:
    that is a problem too; one that cannot be read is an ``unreadable`` problem), then
    what lives beside them: stale ``sessions/<pid>.json``
    entries and history entries whose paste is missing from ``paste-cache/``.

    ``cache_file``: the listing cache (:func:`~sessiontree.catalog.index.list_sessions`);
    ``on_progress(done, total)`` is called after each transcript.
    """
    problems: list[Problem] = []
    rows = list_sessions(layout, cache_file=cache_file, include_empty=True, problems=problems)
    paths = tuple(Path(r.path) for r in rows)
    for done, path in enumerate(paths, 1):
        try:
            problems.extend(check_transcript(path, layout=layout))
        except (OSError, DataError) as exc:  # gone or unreadable since it was listed
            problems.append(read_failed(path, exc))
        if on_progress is not None:
            on_progress(done, len(paths))
    problems.extend(find_misnamed_transcripts(layout))
    problems.extend(find_stale_entries(layout))
    problems.extend(find_missing_pastes(layout))
    return StoreCheck(paths, tuple(problems))


def find_misnamed_transcripts(layout: Layout) -> list[Problem]:
    """``.jsonl`` files in a project folder whose name is not ``<session id>.jsonl``: the
    client neither lists nor resumes them, and neither does ``sessions`` (a name that
    is not UTF-8 is said so; it is shown with U+FFFD for its stray bytes)."""
    found: list[Problem] = []
    for project_dir in layout.iter_project_dirs():
        try:
            names = sorted(os.listdir(os.fsencode(project_dir)))
        except OSError:
            continue
        for raw in names:
            name = os.fsdecode(raw)
            if not raw.endswith(b".jsonl") or is_session_file(name):
                continue
            path = project_dir / name
            if not path.is_file():
                continue
            try:
                raw.decode("utf-8")
                why = "is not <session id>.jsonl"
            except UnicodeDecodeError:
                why = "is not UTF-8"
            detail = f"its name {why}: the client neither lists nor resumes it"
            found.append(Problem("misnamed-transcript", utf8_name(str(path)), None, detail))
    return found


def _layout_of(path: Path) -> Layout | None:
    project_dir = path.parent
    if project_dir.parent.name != "projects":
        return None
    return Layout(project_dir.parent.parent)


def _not_a_session(transcript: Transcript) -> list[Problem]:
    reason = transcript_no_conversation(transcript)
    if reason is None:
        return []
    detail = (
        f"holds no conversation ({reason}): {format_no_conversation(reason)}; "
        "the client answers 'No conversation found'"
    )
    return [Problem("not-a-session", str(transcript.path), None, detail)]


def _iter_every_record(transcript: Transcript, problems: list[Problem]) -> Iterator[Record]:
    lines = transcript.scan.lines
    for start in range(0, len(lines), _BATCH):
        yield from read_records(transcript.lines_from, lines[start : start + _BATCH], problems)


def _find_problems(layout: Layout | None, transcript: Transcript) -> list[Problem]:
    path = str(transcript.path)
    read_problems: list[Problem] = []
    record_problems: list[Problem] = []
    last_prompts: list[Record] = []
    checkpoint_records: list[Record] = []
    cwds: set[str] = set()
    for record in _iter_every_record(transcript, read_problems):
        kind = record.type
        if kind == "last-prompt":
            last_prompts.append(record)
        elif kind in _CHECKPOINT_TYPES:
            checkpoint_records.append(record)
        elif record.uuid is not None:
            record_problems.extend(find_record_damage(path, (record,)))
            cwd = record.get("cwd")
            if isinstance(cwd, str) and cwd:
                cwds.add(cwd)
    checkpoints = fold_checkpoints(checkpoint_records)
    # A field of the wrong type in the tree fields is the scan's to report, once.
    scanned = {(p.kind, p.line) for p in transcript.scan.problems}
    record_problems = [p for p in record_problems if (p.kind, p.line) not in scanned]
    missing = [] if layout is None else _backup_problems(layout, transcript, checkpoints)
    return [
        *transcript.scan.problems,
        *transcript.tree.problems,
        *find_hidden_cycles(transcript.tree),
        *read_problems,
        *record_problems,
        *find_last_prompt_damage(transcript.tree, last_prompts),
        *find_hostile_entries(checkpoints, path, cwds=cwds),
        *missing,
    ]


def _backup_problems(
    layout: Layout, transcript: Transcript, checkpoints: list[Checkpoint]
) -> list[Problem]:
    """Backups the checkpoints name that are not in ``file-history/<session>/``; or, when
    that folder cannot be listed (a file or a link where the client keeps a folder, no
    permission), that one ``unreadable`` problem: doctor reports it and goes on, and
    does not report each backup it could not look for."""
    session_id = transcript.session_id
    try:
        folder = layout.backup_dir(session_id)
    except Refused:
        return []  # a file not named by a session id (read by its path): no backups
    try:
        listing = read_backup_listing(layout, session_id)
    except (OSError, Refused) as exc:
        why = _unlistable(folder, exc)
        detail = f"{why}: the backups of this session's checkpoints cannot be checked"
        return [Problem("unreadable", str(folder), None, detail)]
    pruned = pruned_by_client(listing, checkpoints)
    return find_missing_backups(
        layout, session_id, checkpoints, str(transcript.path), pruned=pruned
    )


def _unlistable(folder: Path, exc: OSError | Refused) -> str:
    """Why ``folder`` could not be listed, in a few words."""
    try:
        mode = folder.lstat().st_mode
    except OSError:
        mode = 0
    if stat.S_ISLNK(mode):
        return "a symbolic link where a folder belongs (not followed)"
    if mode and not stat.S_ISDIR(mode):
        return "not a folder" + (" (a file)" if stat.S_ISREG(mode) else "")
    return exc.strerror or str(exc) if isinstance(exc, OSError) else str(exc)
