"""Read, Write and Edit on real files, with the client's results and error wording.

What client 2.1.328 does, seen in its transcripts (``toolUseResult``, the ``tool_result``
text, ``is_error``) when driven against a stand-in API:

- Paths: a relative ``file_path`` is taken from the current directory and echoed back as
  given (``filePath: "sub/b.py"``).
- Read: ``N\\tline`` numbering; the whole file when no ``offset``/``limit`` (no line
  cap), refused over 256 KB unless ``allow_large``; an empty file and an offset past the
  end answer with a ``<system-reminder>`` warning, not an error. A missing file: ``File
  does not exist. Note: your current working directory is <cwd>.``; a folder:
  ``EISDIR: illegal operation on a directory, read '<path>'`` (errors, not wrapped).
- Write: ``create`` / ``update`` results (``model.builders.write_result``); reading
  the file first is not required (the client did not refuse it in ``-p`` mode).
- Edit: refused (wrapped in ``<tool_use_error>``) when ``old_string`` equals
  ``new_string``, when the file is missing (unless ``old_string`` is empty: that
  creates it), when ``old_string`` is not found, or found more than once without
  ``replace_all``, each in the client's words. Reading the file first is not required,
  but the result says whether the model had it: after a whole Read (or a Write, or when
  the Edit creates it) the text notes that the file state is current; otherwise (never
  read, or last read in part) it does not, and ``contentNotInModelContext`` is set. When
  the file has changed on disk since the model saw it (a command wrote it), the edit is
  made and the result says so (``staleRecovered``); the file is then not in context.
- Resuming: the client rebuilds what the model has seen from the transcript
  (:func:`files_seen`): a whole Read gives the file as read, a Write the text written,
  and an Edit makes the file unknown again (its result, seen on resume, does not count as
  having the file). Seen by running the real client on ``-c`` after each.

Before Write or Edit changes a file, :meth:`Session.before_edit` backs it up as the
client's file-history does (when the session keeps checkpoints).

Beyond what was observed: binary and image files (Read answers an image as an image
block; other binary files are refused), and Edit of a file that is not UTF-8 (refused).
"""

from __future__ import annotations

import base64
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sessiontree.agent.tools.globs import resolve_path
from sessiontree.agent.tools.outcome import ToolError, ToolOutcome
from sessiontree.model.builders.envelope import JsonDict
from sessiontree.model.builders.tools import edit_result, read_result, write_result
from sessiontree.model.records import Record
from sessiontree.session import Session

#: Read refuses a whole file over this many bytes unless ``allow_large`` (the client's).
MAX_READ_BYTES = 256 * 1024

_IMAGE_TYPES = {
    ".png": "image/png",
    ".jpg": "image/jpeg",
    ".jpeg": "image/jpeg",
    ".gif": "image/gif",
    ".webp": "image/webp",
}


@dataclass(frozen=True)
class FileCall:
    """What a file tool needs beside its input: where relative paths start, the session
    to checkpoint in, and the call's id."""

    cwd: Path
    session: Session
    tool_use_id: str
    home_dir: str | None = None
    #: Files whose whole content the model has (read whole, or written), with that
    #: content: the Toolbox's, shared by its calls.
    in_context: dict[Path, str] = field(default_factory=dict)

    def resolve(self, file_path: str) -> Path:
        return resolve_path(self.cwd, file_path, self.home_dir)

    def missing(self) -> str:
        return f"File does not exist. Note: your current working directory is {self.cwd}."

    def before_edit(self, path: Path) -> None:
        if self.session.file_history is not None:
            self.session.before_edit(path, tool_use_id=self.tool_use_id)


def run_read(call: FileCall, tool_input: JsonDict) -> ToolOutcome:
    file_path: str = tool_input["file_path"]
    offset: int | None = tool_input.get("offset")
    limit: int | None = tool_input.get("limit")
    path = call.resolve(file_path)
    if path.is_dir():
        raise ToolError(f"EISDIR: illegal operation on a directory, read '{path}'")
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise ToolError(call.missing()) from None
    except OSError as exc:
        raise ToolError(f"{exc.strerror or exc}: {path}") from None
    image = _IMAGE_TYPES.get(path.suffix.lower())
    if image is not None:
        return _image(data, image)
    whole = offset is None and limit is None
    if whole and len(data) > MAX_READ_BYTES and not tool_input.get("allow_large"):
        raise ToolError(
            f"File content ({round(len(data) / 1024)}KB) exceeds maximum allowed size "
            f"({MAX_READ_BYTES // 1024}KB). Use offset and limit parameters to read specific "
            "portions of the file, or search for specific content instead of reading the "
            "whole file. To read it anyway, up to what still fits in your context, call Read "
            "again with allow_large: true \u2014 only if you genuinely need all of it or the "
            "user asked for the whole file."
        )
    text = _text(data, path)
    if (offset or 1) <= 1 and limit is None:
        call.in_context[path] = text
    else:
        call.in_context.pop(path, None)  # the client: a partial view
    content, result = read_result(file_path, text, offset=offset, limit=limit)
    return ToolOutcome(content, result)


def _image(data: bytes, media_type: str) -> ToolOutcome:
    encoded = base64.b64encode(data).decode("ascii")
    block: JsonDict = {
        "type": "image",
        "source": {"type": "base64", "data": encoded, "media_type": media_type},
    }
    result = {
        "type": "image",
        "file": {"base64": encoded, "type": media_type, "originalSize": len(data)},
    }
    return ToolOutcome([block], result)


def _text(data: bytes, path: Path) -> str:
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        text = None
    if text is None or "\x00" in text:
        kind = path.suffix or "(no extension)"
        raise ToolError(
            f"This tool cannot read binary files. The file appears to be a binary {kind} "
            "file. Please use appropriate tools for binary file analysis."
        )
    return text


def _current(path: Path) -> str | None:
    """The file's text now, None when it does not exist."""
    if path.is_dir():
        raise ToolError(f"EISDIR: illegal operation on a directory, open '{path}'")
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise ToolError(f"{exc.strerror or exc}: {path}") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise ToolError(f"Cannot change {path}: it is not UTF-8 text.") from None


def _write(path: Path, text: str) -> None:
    """Write in place (the file keeps its inode, mode and links), making folders."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8", newline="") as handle:
        handle.write(text)


def run_write(call: FileCall, tool_input: JsonDict) -> ToolOutcome:
    file_path: str = tool_input["file_path"]
    content: str = tool_input["content"]
    path = call.resolve(file_path)
    original = _current(path)
    call.before_edit(path)
    _write(path, content)
    call.in_context[path] = content
    text, result = write_result(file_path, content, original=original)
    return ToolOutcome(text, result)


def check_edit(call: FileCall, tool_input: JsonDict) -> str:
    """Refuse an Edit the client refuses before asking for permission; the file's text
    (empty when an empty ``old_string`` creates it)."""
    old: str = tool_input["old_string"]
    new: str = tool_input["new_string"]
    replace_all = bool(tool_input.get("replace_all", False))
    if old == new:
        raise ToolError(
            "No changes to make: old_string and new_string are exactly the same.",
            validation=True,
        )
    path = call.resolve(tool_input["file_path"])
    try:
        original = _current(path)
    except ToolError as exc:
        raise ToolError(exc.message, validation=True) from None
    if original is None:
        if old == "":
            return ""
        raise ToolError(call.missing(), validation=True)
    if old == "":
        if original.strip() == "":
            return original
        raise ToolError("Cannot create new file - file already exists.", validation=True)
    found = original.count(old)
    if found == 0:
        raise ToolError(f"String to replace not found in file.\nString: {old}", validation=True)
    if found > 1 and not replace_all:
        raise ToolError(
            f"Found {found} matches of the string to replace, but replace_all is false. To "
            "replace all occurrences, set replace_all to true. To replace only one "
            "occurrence, please provide more context to uniquely identify the instance.\n"
            f"String: {old}",
            validation=True,
        )
    return original


def run_edit(call: FileCall, tool_input: JsonDict) -> ToolOutcome:
    file_path: str = tool_input["file_path"]
    old: str = tool_input["old_string"]
    new: str = tool_input["new_string"]
    replace_all = bool(tool_input.get("replace_all", False))
    original = check_edit(call, tool_input)
    path = call.resolve(file_path)
    updated = original.replace(old, new, -1 if replace_all and old else 1)
    seen = call.in_context.get(path)
    known = seen is not None or not path.exists()
    stale = seen is not None and seen != original  # changed on disk since it was seen
    call.before_edit(path)
    _write(path, updated)
    if known and not stale:
        call.in_context[path] = updated
    else:
        call.in_context.pop(path, None)
    text, result = edit_result(
        file_path,
        original=original,
        old_string=old,
        new_string=new,
        replace_all=replace_all,
        in_context=known,
        stale=stale,
    )
    return ToolOutcome(text, result)


_REMINDER = re.compile(r"<system-reminder>.*?</system-reminder>", re.S)
_NUMBERED = re.compile(r"^ *\d+\t", re.M)


def files_seen(
    records: Iterable[Record], *, cwd: Path, home_dir: str | None = None
) -> dict[Path, str]:
    """What the model has seen of each file, rebuilt from a conversation's records (in
    path order) as the client rebuilds it on resume: after a whole Read (no ``offset``,
    no ``limit``) the file as read, after a Write the text written; after an Edit the
    file is not known any more. Calls without a result, or whose result is an error,
    count for nothing."""
    calls: dict[str, tuple[str, JsonDict]] = {}
    seen: dict[Path, str] = {}
    for record in records:
        content = record.message.get("content") if record.type in ("user", "assistant") else None
        if not isinstance(content, list):
            continue
        for block in content:
            if not isinstance(block, dict):
                continue
            if block.get("type") == "tool_use" and isinstance(block.get("input"), dict):
                if block.get("name") in ("Read", "Write", "Edit"):
                    calls[str(block.get("id"))] = (block["name"], block["input"])
            elif block.get("type") == "tool_result" and not block.get("is_error"):
                call = calls.pop(str(block.get("tool_use_id")), None)
                if call is None or not isinstance(call[1].get("file_path"), str):
                    continue
                name, tool_input = call
                path = resolve_path(cwd, tool_input["file_path"], home_dir)
                if name == "Read":
                    if tool_input.get("offset") is None and tool_input.get("limit") is None:
                        text = _read_text(record.get("toolUseResult"), block.get("content"))
                        if text is not None:
                            seen[path] = text
                elif name == "Write" and isinstance(tool_input.get("content"), str):
                    seen[path] = tool_input["content"]
                elif name == "Edit":
                    seen.pop(path, None)
    return seen


def _read_text(result: Any, content: Any) -> str | None:
    """The text a Read's result gave the model: its ``toolUseResult``'s, else the
    numbered lines of the tool_result unnumbered (None: not a text read)."""
    if isinstance(result, dict):
        file = result.get("file")
        if result.get("type") != "text" or not isinstance(file, dict):
            return None
        text = file.get("content")
        return text if isinstance(text, str) else None
    if isinstance(content, list):
        texts = [b.get("text") for b in content if isinstance(b, dict) and b.get("type") == "text"]
        content = "".join(t for t in texts if isinstance(t, str)) if len(texts) == 1 else None
    if not isinstance(content, str):
        return None
    return _NUMBERED.sub("", _REMINDER.sub("", content))
