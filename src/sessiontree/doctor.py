"""``doctor``: every problem in one transcript, from torn lines to hostile checkpoints.

Reads the whole file: the skeleton scan's problems (torn lines, bad JSON, NUL runs, lines
nested too deep), the tree's (duplicate uuids, dangling parents, cycles), a full decode of
every line, metadata included (text that had to be repaired, numbers out of range), and
the damage a tolerant read works around in silence (:mod:`sessiontree.model.damage`,
hostile checkpoint entries, missing backups).
"""

from __future__ import annotations

from collections.abc import Iterator

from sessiontree.checkpoints.read import (
    find_hostile_entries,
    find_missing_backups,
    fold_checkpoints,
)
from sessiontree.conversation.transcript import Transcript
from sessiontree.model.damage import (
    find_hidden_cycles,
    find_last_prompt_damage,
    find_record_damage,
)
from sessiontree.model.records import Problem, Record
from sessiontree.storage.jsonl import read_records
from sessiontree.storage.layout import Layout

#: Lines decoded at a time: doctor reads every record, but holds only this many.
_BATCH = 2000

_CHECKPOINT_TYPES = ("file-history-snapshot", "file-history-delta")


def _iter_every_record(transcript: Transcript, problems: list[Problem]) -> Iterator[Record]:
    lines = transcript.scan.lines
    for start in range(0, len(lines), _BATCH):
        yield from read_records(transcript.path, lines[start : start + _BATCH], problems)


def check_transcript(layout: Layout, transcript: Transcript) -> list[Problem]:
    """Everything wrong with ``transcript`` (and its backups), in the order found."""
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
    return [
        *transcript.scan.problems,
        *transcript.tree.problems,
        *find_hidden_cycles(transcript.tree),
        *read_problems,
        *record_problems,
        *find_last_prompt_damage(transcript.tree, last_prompts),
        *find_hostile_entries(checkpoints, path, cwds=cwds),
        *find_missing_backups(layout, transcript.session_id, checkpoints, path),
    ]
