"""What a tool call leaves in a transcript: the text the model sees and ``toolUseResult``."""

from __future__ import annotations

import difflib
import re

from sessiontree.model.builders.envelope import JsonDict

WRITE_CREATED_TEXT = (
    "File created successfully at: {path} (file state is current in your context \u2014 "
    "no need to Read it back)"
)
FILE_UPDATED_TEXT = (
    "The file {path} has been updated successfully. (file state is current in your "
    "context \u2014 no need to Read it back)"
)
REPLACED_ALL_TEXT = (
    "The file {path} has been updated. All occurrences were successfully replaced. (file "
    "state is current in your context \u2014 no need to Read it back)"
)
#: What an Edit's text says, instead of the file state note, when the file had changed on
#: disk since the model last saw it (client 2.1.328, ``staleRecovered``).
STALE_EDIT_NOTE = (
    " (note: the file had been modified on disk since you last read it \u2014 the edit "
    "applied cleanly, but the file contains other changes not in your context. Read it "
    "before edits that depend on surrounding content.)"
)
BASH_NO_OUTPUT_TEXT = "(Bash completed with no output)"
EMPTY_FILE_TEXT = (
    "<system-reminder>Warning: the file exists but the contents are empty.</system-reminder>"
)
SHORTER_THAN_OFFSET_TEXT = (
    "<system-reminder>Warning: the file exists but is shorter than the provided offset "
    "({offset}). The file has {lines} lines.</system-reminder>"
)


NO_NEWLINE_MARK = "\\ No newline at end of file"


def _diff_lines(text: str) -> list[str]:
    """``text`` cut after each ``\\n`` (each piece keeps it), as jsdiff compares lines: a
    last line without its newline differs from the same line with one."""
    return re.findall(r"[^\n]*\n|[^\n]+", text)


def build_structured_patch(old: str, new: str, *, context: int = 3) -> list[JsonDict]:
    """Hunks ``{oldStart, oldLines, newStart, newLines, lines}`` like the client's Edit
    (jsdiff's ``structuredPatch``): starts are 1-based even for an empty range (an Edit
    that fills an empty file: ``oldStart: 1, oldLines: 0``), and where the end of a file
    without a final newline is in a hunk, ``\\ No newline at end of file`` follows its
    last line (seen in client 2.1.328's Edit of such a file)."""
    a, b = _diff_lines(old), _diff_lines(new)
    hunks: list[JsonDict] = []
    matcher = difflib.SequenceMatcher(None, a, b, autojunk=False)
    for group in matcher.get_grouped_opcodes(context):
        i1, i2, j1, j2 = group[0][1], group[-1][2], group[0][3], group[-1][4]
        lines: list[str] = []
        for tag, a1, a2, b1, b2 in group:
            if tag == "equal":
                lines.extend(" " + line.removesuffix("\n") for line in a[a1:a2])
            else:
                lines.extend("-" + line.removesuffix("\n") for line in a[a1:a2])
                lines.extend("+" + line.removesuffix("\n") for line in b[b1:b2])
        if i2 == len(a) and j2 == len(b):  # the end of both files is in this hunk
            last = group[-1]
            trailing = last[2] - last[1] if last[0] == "equal" else 0
            _mark_missing_newlines(lines, i2 - i1, old, new, trailing_context=trailing)
        hunks.append(
            {
                "oldStart": i1 + 1,
                "oldLines": i2 - i1,
                "newStart": j1 + 1,
                "newLines": j2 - j1,
                "lines": lines,
            }
        )
    return hunks


def _mark_missing_newlines(
    lines: list[str], old_lines: int, old: str, new: str, *, trailing_context: int
) -> None:
    """jsdiff's rule for the hunk holding the end of the files."""
    old_eol, new_eol = old.endswith("\n"), new.endswith("\n")
    before_adds = trailing_context == 0 and len(lines) > old_lines
    if not old_eol and before_adds and old:
        lines.insert(old_lines, NO_NEWLINE_MARK)
    if (not old_eol and not before_adds) or not new_eol:
        lines.append(NO_NEWLINE_MARK)


def write_result(
    file_path: str, content: str, *, original: str | None = None
) -> tuple[str, JsonDict]:
    """``(tool_result text, toolUseResult)`` of a Write (``original`` None: file created)."""
    result: JsonDict = {
        "type": "create" if original is None else "update",
        "filePath": file_path,
        "content": content,
        "structuredPatch": [] if original is None else build_structured_patch(original, content),
        "originalFile": original,
        "userModified": False,
    }
    template = WRITE_CREATED_TEXT if original is None else FILE_UPDATED_TEXT
    return template.format(path=file_path), result


def edit_result(
    file_path: str,
    *,
    original: str,
    old_string: str,
    new_string: str,
    replace_all: bool = False,
    in_context: bool = True,
    stale: bool = False,
) -> tuple[str, JsonDict]:
    """``(tool_result text, toolUseResult)`` of an Edit of ``original``.

    ``in_context``: the model has the file's whole current content (it read all of it,
    or wrote it). When not (never read, or read in part), the client says less ("has
    been updated successfully." with no note on the file state) and marks the result
    ``contentNotInModelContext``. ``stale``: the model had read the file, but it has
    changed on disk since: the client marks the result ``staleRecovered`` (and not in
    context) and says so (:data:`STALE_EDIT_NOTE`)."""
    count = -1 if replace_all else 1
    updated = original.replace(old_string, new_string, count)
    result: JsonDict = {
        "filePath": file_path,
        "oldString": old_string,
        "newString": new_string,
        "originalFile": original,
        "structuredPatch": build_structured_patch(original, updated),
        "userModified": False,
        "replaceAll": replace_all,
    }
    template = REPLACED_ALL_TEXT if replace_all else FILE_UPDATED_TEXT
    if stale:
        result["staleRecovered"] = True
    if stale or not in_context:
        result["contentNotInModelContext"] = True
        template = template[: template.index(" (file state")]
        template = template if replace_all else template.removesuffix(".") + "."
    if stale:
        template += STALE_EDIT_NOTE
    return template.format(path=file_path), result


def read_result(
    file_path: str, content: str, *, offset: int | None = None, limit: int | None = None
) -> tuple[str, JsonDict]:
    """``(tool_result text, toolUseResult)`` of a Read (``N\\tline`` numbering, as ``cat -n``).

    ``content`` is the whole file; ``offset`` (the first line, 1-based; 0 reads as 1) and
    ``limit`` (how many lines) choose a part, as the client's Read does. Lines are cut at
    ``\\n`` only, so a final newline makes a last, empty, numbered line. An empty file and
    an offset past the end get the client's warnings instead of lines."""
    lines = content.split("\n")
    start = max(offset or 1, 1)
    chosen = lines[start - 1 : None if limit is None else start - 1 + limit]
    text = "\n".join(f"{number}\t{line}" for number, line in enumerate(chosen, start))
    if content == "":
        text = EMPTY_FILE_TEXT
    elif not chosen:
        text = SHORTER_THAN_OFFSET_TEXT.format(offset=offset, lines=len(lines))
    result: JsonDict = {
        "type": "text",
        "file": {
            "filePath": file_path,
            "content": "\n".join(chosen),
            "numLines": len(chosen),
            "startLine": offset if offset and not chosen else start,
            "totalLines": len(lines),
        },
    }
    return text, result


def bash_result(
    stdout: str, stderr: str = "", *, no_output_expected: bool = False
) -> tuple[str, JsonDict]:
    """``(tool_result text, toolUseResult)`` of a Bash call that exited normally.

    The client sends the command's output (stderr merged into it) and then what it adds
    on stderr itself (``\\nShell cwd was reset to …``), one newline between them.
    ``no_output_expected``: the command is one that prints nothing when it works (``cd``,
    ``mkdir``…), as the client marks it."""
    result: JsonDict = {
        "stdout": stdout,
        "stderr": stderr,
        "interrupted": False,
        "isImage": False,
        "noOutputExpected": no_output_expected,
    }
    parts = (stdout, stderr.lstrip("\n"))
    text = "\n".join(part for part in parts if part) or BASH_NO_OUTPUT_TEXT
    return text, result


def build_subagent_meta(
    *,
    agent_type: str,
    description: str,
    tool_use_id: str,
    model: str,
    finished: bool = True,
    background: bool = True,
) -> JsonDict:
    """``subagents/agent-<id>.meta.json`` beside a subagent's sidechain transcript."""
    return {
        "agentType": agent_type,
        "isBuiltIn": True,
        "launchedWithDefaults": True,
        "description": description,
        "toolUseId": tool_use_id,
        "spawnDepth": 1,
        "requestShape": "background" if background else "foreground",
        "requestNonInteractive": True,
        "model": model,
        "pickedEffortModel": model,
        "finished": finished,
    }
