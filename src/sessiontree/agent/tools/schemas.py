"""The tools' names and input schemas, as client 2.1.328 sends them in ``tools``.

Taken from a request of the real client (``claude -p --tools Bash,Read,Edit,Write,Glob,Grep``
against a capturing stand-in of the Messages API, December 2026): each ``input_schema``
is the client's, key for key, but for the inputs sessiontree does not implement, which
are left out so the model is not offered them: Bash's ``run_in_background`` and
``dangerouslyDisableSandbox``, Read's ``pages`` (PDFs). Glob and Grep are sent by that
client only when asked for with ``--tools``: its native build searches through Bash
(embedded ``bfs``/``ugrep``) by default; their schemas are the ones it sends then.

The descriptions are sessiontree's own, short: the client's are part of its prompt.
"""

from __future__ import annotations

from typing import Final

from sessiontree.model.builders.envelope import JsonDict

SCHEMA_DIALECT: Final = "https://json-schema.org/draft/2020-12/schema"

#: The tools in the order the client lists them (alphabetical).
TOOL_NAMES: Final = ("Bash", "Edit", "Glob", "Grep", "Read", "Write")

#: Bash's timeout when none is given, and the most it may ask for (milliseconds).
DEFAULT_TIMEOUT_MS: Final = 120_000
MAX_TIMEOUT_MS: Final = 600_000


def _object(properties: JsonDict, required: list[str]) -> JsonDict:
    return {
        "$schema": SCHEMA_DIALECT,
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": False,
    }


def _prop(kind: str, description: str, **extra: object) -> JsonDict:
    return {"description": description, "type": kind, **extra}


_CONTENT_ONLY = 'Requires output_mode: "content", ignored otherwise.'

INPUT_SCHEMAS: Final[dict[str, JsonDict]] = {
    "Bash": _object(
        {
            "command": _prop("string", "The command to execute"),
            "timeout": _prop(
                "number", "Optional timeout in milliseconds (max 600000 for a foreground command)"
            ),
            "description": _prop(
                "string",
                "Clear, concise description of what this command does in active voice, "
                "5-10 words for simple commands.",
            ),
        },
        ["command"],
    ),
    "Edit": _object(
        {
            "file_path": _prop("string", "The absolute path to the file to modify"),
            "old_string": _prop("string", "The text to replace"),
            "new_string": _prop(
                "string", "The text to replace it with (must be different from old_string)"
            ),
            "replace_all": {
                "description": "Replace all occurrences of old_string (default false)",
                "default": False,
                "type": "boolean",
            },
        },
        ["file_path", "old_string", "new_string"],
    ),
    "Glob": _object(
        {
            "pattern": _prop("string", "The glob pattern to match files against"),
            "path": _prop(
                "string",
                "The directory to search in. If not specified, the current working directory "
                "will be used. IMPORTANT: Omit this field to use the default directory. DO NOT "
                'enter "undefined" or "null" - simply omit it for the default behavior. Must '
                "be a valid directory path if provided.",
            ),
        },
        ["pattern"],
    ),
    "Grep": _object(
        {
            "pattern": _prop(
                "string", "The regular expression pattern to search for in file contents"
            ),
            "path": _prop(
                "string",
                "File or directory to search in (rg PATH). Defaults to current working directory.",
            ),
            "glob": _prop(
                "string",
                'Glob pattern to filter files (e.g. "*.js", "*.{ts,tsx}") - maps to rg --glob',
            ),
            "output_mode": _prop(
                "string",
                'Output mode: "content" shows matching lines (supports -A/-B/-C context, -n '
                'line numbers, head_limit), "files_with_matches" shows file paths (supports '
                'head_limit), "count" shows match counts (supports head_limit). Defaults to '
                '"files_with_matches".',
                enum=["content", "files_with_matches", "count"],
            ),
            "-B": _prop(
                "number", f"Number of lines to show before each match (rg -B). {_CONTENT_ONLY}"
            ),
            "-A": _prop(
                "number", f"Number of lines to show after each match (rg -A). {_CONTENT_ONLY}"
            ),
            "-C": _prop("number", "Alias for context."),
            "context": _prop(
                "number",
                f"Number of lines to show before and after each match (rg -C). {_CONTENT_ONLY}",
            ),
            "-n": _prop(
                "boolean",
                f"Show line numbers in output (rg -n). {_CONTENT_ONLY} Defaults to true.",
            ),
            "-i": _prop("boolean", "Case insensitive search (rg -i)"),
            "-o": _prop(
                "boolean",
                "Print only the matched (non-empty) parts of each matching line, one match "
                f"per output line (rg -o / --only-matching). {_CONTENT_ONLY} Defaults to false.",
            ),
            "type": _prop(
                "string",
                "File type to search (rg --type). Common types: js, py, rust, go, java, etc. "
                "More efficient than include for standard file types.",
            ),
            "head_limit": _prop(
                "number",
                'Limit output to first N lines/entries, equivalent to "| head -N". Works '
                "across all output modes. Defaults to 250 when unspecified. Pass 0 for "
                "unlimited.",
            ),
            "offset": _prop(
                "number",
                'Skip first N lines/entries before applying head_limit, equivalent to "| tail '
                '-n +N | head -N". Works across all output modes. Defaults to 0.',
            ),
            "multiline": _prop(
                "boolean",
                "Enable multiline mode where . matches newlines and patterns can span lines "
                "(rg -U --multiline-dotall). Default: false.",
            ),
        },
        ["pattern"],
    ),
    "Read": _object(
        {
            "file_path": _prop("string", "The absolute path to the file to read"),
            "offset": _prop(
                "integer",
                "The line number to start reading from. Only provide if the file is too "
                "large to read at once",
                minimum=0,
                maximum=9007199254740991,
            ),
            "limit": _prop(
                "integer",
                "The number of lines to read. Only provide if the file is too large to read "
                "at once.",
                exclusiveMinimum=0,
                maximum=9007199254740991,
            ),
            "allow_large": _prop(
                "boolean",
                "Set to true to read a text file, or a line range of one, that is over the "
                "usual size limit. Only use this when you genuinely need all of it.",
            ),
        },
        ["file_path"],
    ),
    "Write": _object(
        {
            "file_path": _prop(
                "string",
                "The absolute path to the file to write (must be absolute, not relative)",
            ),
            "content": _prop("string", "The content to write to the file"),
        },
        ["file_path", "content"],
    ),
}

DESCRIPTIONS: Final[dict[str, str]] = {
    "Bash": (
        "Runs a bash command in the project and returns its output (stderr merged into "
        "stdout).\n\n- `cd` carries to the next call when the command succeeds and ends inside "
        "the project; outside it the shell goes back to the project folder. Environment "
        "variables and functions do not persist between calls.\n- `timeout` is in "
        "milliseconds: default 120000, at most 600000.\n- Prefer Read, Edit, Write, Glob and "
        "Grep for files: their changes are checkpointed one by one."
    ),
    "Edit": (
        "Replaces an exact string in a file.\n\n- `old_string` must match the file exactly, "
        "indentation included, and be unique in it unless `replace_all` is true.\n- Strip "
        "the line-number prefix that Read adds before matching.\n- An empty `old_string` on a "
        "file that does not exist creates it with `new_string`."
    ),
    "Glob": (
        'Finds files by name pattern ("**/*.py", "src/**/*.ts"); returns paths sorted by '
        "modification time, at most 100."
    ),
    "Grep": (
        "Searches file contents with a regular expression (ripgrep syntax).\n\n- Filter "
        'files with `glob` or `type`.\n- `output_mode`: "files_with_matches" (the default), '
        '"content" (matching lines) or "count".\n- `multiline: true` for patterns that '
        "span lines."
    ),
    "Read": (
        "Reads a file, numbered like `cat -n` (line numbers from 1).\n\n- `file_path` should "
        "be absolute.\n- `offset` and `limit` read part of a large file; files over 256 KB "
        "need them (or `allow_large`)."
    ),
    "Write": ("Writes a file, replacing it when it exists. Prefer Edit for a partial change."),
}


def build_tool_schemas(names: tuple[str, ...] = TOOL_NAMES) -> list[JsonDict]:
    """The ``tools`` of a Messages API request: ``{name, description, input_schema}``."""
    return [
        {"name": name, "description": DESCRIPTIONS[name], "input_schema": INPUT_SCHEMAS[name]}
        for name in names
    ]
