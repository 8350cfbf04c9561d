"""What a config root holds beside the transcripts, for a generated archive: the
``file-history/`` backups its checkpoints name and the ``history.jsonl`` of its prompts.

:func:`bench.generate.write_archive` writes the transcripts only (their bytes are what
the other benches measure, so they stay as they are); :func:`write_extras` adds, from
the transcripts themselves:

- ``file-history/<sessionId>/<backupFileName>``: one backup of 1-12 KB of text for every
  backup a ``file-history-snapshot`` or ``file-history-delta`` of the session names
  (``backupFileName: null``, a file that did not exist, has none);
- ``history.jsonl``: a line per prompt the user typed (``promptSource: typed``), as the
  client writes it, ``{display, pastedContents, timestamp, project, sessionId}``, oldest
  first across every session.

Output is a function of the transcripts (and so of the archive's seed).
"""

from __future__ import annotations

import hashlib
import json
import random
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

KB = 1024
BACKUP_SIZE = (1 * KB, 12 * KB)
#: What a line must hold to be worth decoding: a checkpoint record or a typed prompt.
_WANTED = (b'"file-history-snapshot"', b'"file-history-delta"', b'"promptSource":"typed"')


def code_digest() -> str:
    """Changes whenever what :func:`write_extras` writes could."""
    return hashlib.sha256(Path(__file__).read_bytes()).hexdigest()[:12]


def write_extras(root: Path) -> int:
    """Write ``file-history/`` and ``history.jsonl`` for the transcripts under
    ``root/projects/``; returns the bytes written."""
    written = 0
    prompts: list[tuple[int, str]] = []
    for transcript in sorted(root.glob("projects/*/*.jsonl")):
        backups: set[str] = set()
        for record in _iter_wanted(transcript):
            backups.update(parse_backup_names(record))
            entry = format_history_entry(record)
            if entry is not None:
                prompts.append(entry)
        written += _write_backups(root / "file-history" / transcript.stem, sorted(backups))
    prompts.sort()
    history = "".join(line for _, line in prompts).encode()
    (root / "history.jsonl").write_bytes(history)
    return written + len(history)


def parse_backup_names(record: dict[str, Any]) -> list[str]:
    """The backup files a checkpoint record names (none for other records)."""
    if record.get("type") == "file-history-snapshot":
        tracked = (record.get("snapshot") or {}).get("trackedFileBackups") or {}
        found = [entry.get("backupFileName") for entry in tracked.values()]
    elif record.get("type") == "file-history-delta":
        found = [(record.get("backup") or {}).get("backupFileName")]
    else:
        return []
    return [name for name in found if isinstance(name, str) and name]


def format_history_entry(record: dict[str, Any]) -> tuple[int, str] | None:
    """A typed prompt's ``history.jsonl`` line (with its time in ms, to sort by), or None
    for any other record."""
    if record.get("type") != "user" or record.get("promptSource") != "typed":
        return None
    content = (record.get("message") or {}).get("content")
    if not isinstance(content, str):
        return None
    stamp = record.get("timestamp")
    if not isinstance(stamp, str):
        return None
    ms = int(datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp() * 1000)
    line = {
        "display": content,
        "pastedContents": {},
        "timestamp": ms,
        "project": record.get("cwd", ""),
        "sessionId": record.get("sessionId", ""),
    }
    return ms, json.dumps(line, ensure_ascii=False, separators=(",", ":")) + "\n"


def _iter_wanted(transcript: Path) -> Iterator[dict[str, Any]]:
    with transcript.open("rb") as lines:
        for line in lines:
            if any(marker in line for marker in _WANTED):
                record = json.loads(line)
                if isinstance(record, dict):
                    yield record


def _write_backups(folder: Path, names: list[str]) -> int:
    """A backup of text for each name, its size and bytes drawn from the folder's and
    the name's own seed."""
    written = 0
    for name in names:
        rng = random.Random(f"{folder.name}/{name}")
        size = rng.randint(*BACKUP_SIZE)
        words = [
            f"line {n}: value_{rng.getrandbits(32):08x} = {n * 7 % 101}\n"
            for n in range(size // 30)
        ]
        data = "".join(words).encode()[:size]
        folder.mkdir(parents=True, exist_ok=True)
        (folder / name).write_bytes(data)
        written += len(data)
    return written
