"""Pure builders for records in Claude Code's own shape (as client 2.1.328 writes them).

Every function here returns a fresh ``dict`` with the format's camelCase keys *in the
order the real client writes them* (checked against the fixtures record by record, see
``tests/model/test_builders.py``). Nothing here reads a clock, draws a random id or touches a
file: callers pass uuids, message ids and timestamps in (``format_timestamp`` turns a
``datetime`` into the format's ISO-with-milliseconds string).

Who calls what, in the order the client writes a turn::

    build_snapshot(prompt uuid)          file-history-snapshot, before the prompt
    build_user_prompt(...)               the typed prompt (root: parent_uuid=None)
    build_attachment(...)                context the client injects (first prompt etc.)
    build_assistant_blocks(...)          one record per content block of one response
    build_snapshot_delta(...)            a file's first backup, before its tool result
    build_tool_result(...)               the user record carrying a tool_result block
    build_turn_duration(...)             end of turn; the next prompt hangs on it
    build_last_prompt(...)               resume bookmark (``build_rewind_marker`` on rewind)

Compaction is ``build_compact_boundary`` + ``build_compact_summary``; a ``/branch`` copy
is ``build_fork_records``; ``history.jsonl`` lines are ``build_history_entry``.

Modules, one concern each (import from here, not from them): ``envelope`` (the fields
every chain record carries, time stamps), ``chain`` (the records of a turn),
``compaction``, ``metadata`` (bookmarks, titles, checkpoints, forks), ``history``
(``history.jsonl`` and pastes), ``tools`` (tool results).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from sessiontree.model.builders.chain import (
        RenderedRole,
        build_assistant_blocks,
        build_attachment,
        build_local_command,
        build_system,
        build_task_notification,
        build_tool_result,
        build_turn_duration,
        build_usage,
        build_user_prompt,
        build_user_text,
        date_attachment,
        environment_attachment,
        format_command,
        text_block,
        tool_use_block,
    )
    from sessiontree.model.builders.compaction import (
        COMPACT_BOUNDARY_TEXT,
        LOCAL_COMMAND_CAVEAT,
        PreservedSegment,
        build_compact_boundary,
        build_compact_summary,
        format_compact_summary,
    )
    from sessiontree.model.builders.envelope import (
        CLIENT_VERSION,
        Envelope,
        JsonDict,
        epoch_ms,
        format_timestamp,
    )
    from sessiontree.model.builders.history import (
        INLINE_PASTE_LIMIT,
        build_history_entry,
        build_pasted_text,
        expand_pastes,
        is_large_paste,
        paste_placeholder,
    )
    from sessiontree.model.builders.metadata import (
        LAST_PROMPT_LIMIT,
        Backup,
        build_ai_title,
        build_custom_title,
        build_fork_records,
        build_last_prompt,
        build_queue_operation,
        build_rewind_marker,
        build_snapshot,
        build_snapshot_delta,
        fork_title,
        format_last_prompt,
    )
    from sessiontree.model.builders.tools import (
        BASH_NO_OUTPUT_TEXT,
        FILE_UPDATED_TEXT,
        WRITE_CREATED_TEXT,
        bash_result,
        build_structured_patch,
        build_subagent_meta,
        edit_result,
        read_result,
        write_result,
    )

#: Where the names of ``__all__`` are defined, looked in in this order. Each module is
#: imported on the first use of one of its names (PEP 562): a reader that needs one
#: builder (search indexing ``history.jsonl``) does not load the others.
_MODULES = ("envelope", "history", "chain", "compaction", "metadata", "tools")


def __getattr__(name: str) -> Any:
    if name in __all__:
        for module_name in _MODULES:
            module = importlib.import_module(f"{__name__}.{module_name}")
            if name in vars(module):
                value = vars(module)[name]
                globals()[name] = value
                return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "BASH_NO_OUTPUT_TEXT",
    "CLIENT_VERSION",
    "COMPACT_BOUNDARY_TEXT",
    "FILE_UPDATED_TEXT",
    "INLINE_PASTE_LIMIT",
    "LAST_PROMPT_LIMIT",
    "LOCAL_COMMAND_CAVEAT",
    "WRITE_CREATED_TEXT",
    "Backup",
    "Envelope",
    "JsonDict",
    "PreservedSegment",
    "RenderedRole",
    "bash_result",
    "build_ai_title",
    "build_assistant_blocks",
    "build_attachment",
    "build_compact_boundary",
    "build_compact_summary",
    "build_custom_title",
    "build_fork_records",
    "build_history_entry",
    "build_last_prompt",
    "build_local_command",
    "build_pasted_text",
    "build_queue_operation",
    "build_rewind_marker",
    "build_snapshot",
    "build_snapshot_delta",
    "build_structured_patch",
    "build_subagent_meta",
    "build_system",
    "build_task_notification",
    "build_tool_result",
    "build_turn_duration",
    "build_usage",
    "build_user_prompt",
    "build_user_text",
    "date_attachment",
    "edit_result",
    "environment_attachment",
    "epoch_ms",
    "expand_pastes",
    "fork_title",
    "format_command",
    "format_compact_summary",
    "format_last_prompt",
    "format_timestamp",
    "is_large_paste",
    "paste_placeholder",
    "read_result",
    "text_block",
    "tool_use_block",
    "write_result",
]
