"""The memory the client loads at every start: CLAUDE.md files, their imports, the
project's auto-memory index.

What client 2.1.328 does, found by running it (``claude -p``, December 2026) in a
project with every kind of memory file against a stand-in API that logs whole request
bodies, and reading the first request and the transcript:

- It sends one ``<system-reminder>`` text block in the first user message (before the
  session context and the prompt), and records it in the transcript as an
  ``attachment`` of type ``instructions`` (``files``: ``{path, type, content}`` each)
  with that text as ``rendered`` and ``renderedRole: "user"``. The text::

      <system-reminder>
      Codebase and user instructions are shown below. Be sure to adhere to these
      instructions. IMPORTANT: These instructions OVERRIDE any default behavior and you
      MUST follow them exactly as written.

      Contents of <path> (<description>):

      <content>

      Contents of …

      <content>
      </system-reminder>

  (the header is one line). Descriptions by type: ``User`` "user's private global
  instructions for all projects", ``Project`` "project instructions, checked into the
  codebase", ``Local`` "user's private project instructions, not checked in",
  ``AutoMem`` "user's auto-memory, persists across conversations".
- The order: ``<config dir>/CLAUDE.md`` (User); then each folder from ``/`` down to the
  working directory: its ``CLAUDE.md``, ``.claude/CLAUDE.md``, ``.claude/rules/*.md``
  (Project) and ``CLAUDE.local.md`` (Local); last the auto-memory index
  ``<config dir>/projects/<project>/memory/MEMORY.md`` (AutoMem; only the index, not the
  notes it points to; ``<project>`` is the encoded working directory — of the git
  repository's root, as the client's documentation says). A ``CLAUDE.md`` in a folder
  below the working directory is not read at start.
- Each file's content is its text with HTML comment blocks removed (a line holding
  only a comment goes with its line break; a comment inside a line stays) and white
  space stripped at both ends; an empty file is left out. ``.claude/rules/`` files come
  in the order the folder lists them (not sorted).
- ``@path`` imports (``@`` at the start or after white space, not inside a code span or
  fenced block) are read after the file that imports them, depth first, with its type:
  relative to that file's folder, ``~/`` from home, or absolute; a missing file is
  skipped. Four levels of imports are followed (``CLAUDE.md`` → a1 → a2 → a3 → a4; a4's
  own imports are not); a file already read is not read again (cycles end). From the
  project's files, an import outside the working directory is not read unless the user
  approved external imports (the client asks; ``allow_external_imports``); from the
  user's files it is.
- The index keeps its first 200 lines (the client's documentation; not seen here).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from sessiontree.model.builders.envelope import JsonDict
from sessiontree.storage.layout import encode_cwd

MemoryKind = Literal["User", "Project", "Local", "AutoMem"]

HEADER = (
    "Codebase and user instructions are shown below. Be sure to adhere to these "
    "instructions. IMPORTANT: These instructions OVERRIDE any default behavior and you MUST "
    "follow them exactly as written."
)
DESCRIPTIONS: dict[str, str] = {
    "User": "user's private global instructions for all projects",
    "Project": "project instructions, checked into the codebase",
    "Local": "user's private project instructions, not checked in",
    "AutoMem": "user's auto-memory, persists across conversations",
}
#: Imports followed from a memory file: four levels (the file itself is level 0).
MAX_IMPORT_DEPTH = 4
#: Lines of the auto-memory index loaded.
INDEX_LINES = 200

_COMMENT_BLOCK = re.compile(r"^[ \t]*<!--.*?-->[ \t]*(?:\n|\Z)", re.MULTILINE | re.DOTALL)
_FENCE = re.compile(r"^[ \t]*(```|~~~).*?^[ \t]*\1[^\n]*$", re.MULTILINE | re.DOTALL)
_CODE_SPAN = re.compile(r"`[^`\n]*`")
_IMPORT = re.compile(r"(?:^|(?<=\s))@((?:\\ |[^\s])+)")


@dataclass(frozen=True)
class MemoryFile:
    """One file read: where, its kind, its content as sent."""

    path: Path
    kind: MemoryKind
    content: str

    def as_json(self) -> JsonDict:
        return {"path": str(self.path), "type": self.kind, "content": self.content}


@dataclass(frozen=True)
class Memory:
    """What was loaded; :meth:`reminder` is the text the client sends, :meth:`attachment`
    the record it keeps (append it with ``Session.append_attachment(memory.attachment(),
    rendered=[memory.reminder()], rendered_role="user")`` before the first prompt's
    other context). ``index`` is the auto-memory folder (it may not exist yet)."""

    files: list[MemoryFile] = field(default_factory=list)
    index: Path | None = None

    def reminder(self) -> str | None:
        """The ``<system-reminder>`` text, None when there is no memory (the client then
        sends none)."""
        if not self.files:
            return None
        parts = [
            f"Contents of {f.path} ({DESCRIPTIONS[f.kind]}):\n\n{f.content}" for f in self.files
        ]
        return f"<system-reminder>\n{HEADER}\n\n" + "\n\n".join(parts) + "\n</system-reminder>"

    def attachment(self) -> JsonDict:
        """The ``instructions`` attachment the client records."""
        return {"type": "instructions", "files": [f.as_json() for f in self.files]}


def clean_memory_text(text: str) -> str:
    """A memory file's text as sent: HTML comment blocks (a comment that starts a line
    and ends one) out, white space stripped; a comment inside a line stays."""
    return _COMMENT_BLOCK.sub("", text).strip()


def find_imports(text: str) -> list[str]:
    """The ``@path`` imports of a memory file's text, in order (not in code)."""
    visible = _CODE_SPAN.sub(" ", _FENCE.sub(" ", text))
    return [m.group(1).replace("\\ ", " ") for m in _IMPORT.finditer(visible)]


def memory_folder(config_dir: Path, cwd: Path) -> Path:
    """``<config dir>/projects/<project>/memory``: the project is the git repository's
    root when the working directory is in one, else the working directory."""
    root = _git_root(cwd) or cwd
    return config_dir / "projects" / encode_cwd(str(root)) / "memory"


def _git_root(cwd: Path) -> Path | None:
    for folder in (cwd, *cwd.parents):
        if (folder / ".git").exists():
            return folder
    return None


class _Loader:
    def __init__(self, cwd: Path, home: Path, allow_external: bool) -> None:
        self.cwd, self.home_dir, self.allow_external = cwd, home, allow_external
        self.files: list[MemoryFile] = []
        self.seen: set[Path] = set()

    def add(self, path: Path, kind: MemoryKind, depth: int = 0) -> None:
        key = Path(os.path.realpath(path))
        if key in self.seen or not path.is_file():
            return
        self.seen.add(key)
        try:
            raw = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            return
        content = clean_memory_text(raw)
        if content:
            self.files.append(MemoryFile(path, kind, content))
        if depth >= MAX_IMPORT_DEPTH:
            return
        for target in find_imports(content):
            imported = self._resolve(target, path.parent)
            if imported is None:
                continue
            if kind != "User" and not self.allow_external and not _under(imported, self.cwd):
                continue  # the client asks before reading a project's external import
            self.add(imported, kind, depth + 1)

    def _resolve(self, target: str, base: Path) -> Path | None:
        if target.startswith("~/"):
            return Path(os.path.normpath(self.home_dir / target[2:]))
        if target.startswith("/"):
            return Path(os.path.normpath(target))
        if not target or target[0] in "@#":
            return None
        return Path(os.path.normpath(base / target))


def _under(path: Path, folder: Path) -> bool:
    return path == folder or path.is_relative_to(folder)


def _rules(folder: Path) -> list[Path]:
    """``.claude/rules/**/*.md`` in the order the folder lists them (the client does not
    sort them: two rules came in the file system's order, not by name)."""
    found: list[Path] = []
    if not folder.is_dir():
        return found
    for root, _dirs, files in os.walk(folder):
        found.extend(Path(root) / name for name in files if name.endswith(".md"))
    return found


def load_memory(
    *, cwd: Path, home: Path, config_dir: Path, allow_external_imports: bool = False
) -> Memory:
    """Every memory file the client reads at start, in its order (see the module)."""
    cwd = Path(os.path.normpath(cwd))
    loader = _Loader(cwd, Path(home), allow_external_imports)
    loader.add(Path(config_dir) / "CLAUDE.md", "User")
    for folder in (*reversed(cwd.parents), cwd):
        loader.add(folder / "CLAUDE.md", "Project")
        loader.add(folder / ".claude" / "CLAUDE.md", "Project")
        for rule in _rules(folder / ".claude" / "rules"):
            loader.add(rule, "Project")
        loader.add(folder / "CLAUDE.local.md", "Local")
    folder = memory_folder(Path(config_dir), cwd)
    index = folder / "MEMORY.md"
    if index.is_file() and Path(os.path.realpath(index)) not in loader.seen:
        try:
            text = index.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            text = ""
        content = "\n".join(clean_memory_text(text).split("\n")[:INDEX_LINES]).strip()
        if content:
            loader.files.append(MemoryFile(index, "AutoMem", content))
    return Memory(loader.files, folder)
