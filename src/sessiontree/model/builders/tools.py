"""What a tool call leaves in a transcript: the text the model sees and ``toolUseResult``."""

from __future__ import annotations

import difflib

from sessiontree.model.builders.envelope import JsonDict

WRITE_CREATED_TEXT = (
    "File created successfully at: {path} (file state is current in your context \u2014 "
    "no need to Read it back)"
)
FILE_UPDATED_TEXT = (
    "The file {path} has been updated successfully. (file state is current in your "
    "context \u2014 no need to Read it back)"
)
BASH_NO_OUTPUT_TEXT = "(Bash completed with no output)"


def build_structured_patch(old: str, new: str, *, context: int = 3) -> list[JsonDict]:
    """Hunks ``{oldStart, oldLines, newStart, newLines, lines}`` like the client's Edit."""
    a, b = old.splitlines(), new.splitlines()
    hunks: list[JsonDict] = []
    matcher = difflib.SequenceMatcher(None, a, b, autojunk=False)
    for group in matcher.get_grouped_opcodes(context):
        i1, i2, j1, j2 = group[0][1], group[-1][2], group[0][3], group[-1][4]
        lines: list[str] = []
        for tag, a1, a2, b1, b2 in group:
            if tag == "equal":
                lines.extend(" " + line for line in a[a1:a2])
            else:
                lines.extend("-" + line for line in a[a1:a2])
                lines.extend("+" + line for line in b[b1:b2])
        hunks.append(
            {
                "oldStart": i1 + 1 if i2 > i1 else i1,
                "oldLines": i2 - i1,
                "newStart": j1 + 1 if j2 > j1 else j1,
                "newLines": j2 - j1,
                "lines": lines,
            }
        )
    return hunks


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
    file_path: str, *, original: str, old_string: str, new_string: str, replace_all: bool = False
) -> tuple[str, JsonDict]:
    """``(tool_result text, toolUseResult)`` of an Edit of ``original``."""
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
    return FILE_UPDATED_TEXT.format(path=file_path), result


def read_result(file_path: str, content: str) -> tuple[str, JsonDict]:
    """``(tool_result text, toolUseResult)`` of a whole-file Read (``N\\tline`` numbering)."""
    lines = content.split("\n")
    text = "\n".join(f"{number}\t{line}" for number, line in enumerate(lines, 1))
    result: JsonDict = {
        "type": "text",
        "file": {
            "filePath": file_path,
            "content": content,
            "numLines": len(lines),
            "startLine": 1,
            "totalLines": len(lines),
        },
    }
    return text, result


def bash_result(stdout: str, stderr: str = "") -> tuple[str, JsonDict]:
    """``(tool_result text, toolUseResult)`` of a Bash call that exited normally."""
    result: JsonDict = {
        "stdout": stdout,
        "stderr": stderr,
        "interrupted": False,
        "isImage": False,
        "noOutputExpected": False,
    }
    text = "\n".join(part for part in (stdout, stderr) if part) or BASH_NO_OUTPUT_TEXT
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
