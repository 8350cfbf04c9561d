"""The memory the client loads at every start: CLAUDE.md files, imports, the memory folder.

(Interface first; filled in on branch chat-tools.)
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path


@dataclass(frozen=True)
class MemoryFile:
    """One file read: where, what kind (``User``, ``Project``, ``Local``, ``AutoMem``), its text."""

    path: Path
    kind: str
    content: str


@dataclass(frozen=True)
class Memory:
    files: list[MemoryFile] = field(default_factory=list)

    def reminder(self) -> str | None:
        """The text the client sends with the first prompt (None: no memory)."""
        return None


def load_memory(*, cwd: Path, home: Path, config_dir: Path) -> Memory:
    return Memory()
