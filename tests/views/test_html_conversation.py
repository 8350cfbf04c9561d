"""Who each record of the conversation is shown as: only what a person typed is "you"."""

from __future__ import annotations

from typing import Any

import pytest

from sessiontree.model.records import Record
from sessiontree.views.html.conversation import build_item


def _user(content: Any, **extra: Any) -> Record:
    return Record(
        {"type": "user", "uuid": "u1", "message": {"role": "user", "content": content}, **extra}
    )


@pytest.mark.parametrize(
    ("record", "role", "heading"),
    [
        (_user("fix the bug"), "user", "you"),
        (_user([{"type": "text", "text": "typed, in blocks"}]), "user", "you"),
        (_user("fix it", origin={"kind": "human"}), "user", "you"),
        (
            _user(
                "<local-command-caveat>Caveat: the messages below...</local-command-caveat>",
                isMeta=True,
            ),
            "client",
            "added by the client",
        ),
        (
            _user("Caveat: an older client's untagged caveat", isMeta=True),
            "client",
            "added by the client",
        ),
        (_user("<command-name>/cost</command-name>"), "command", "slash command"),
        (
            _user("<local-command-stdout>Total cost: $0</local-command-stdout>"),
            "command",
            "command output",
        ),
        (
            _user("a task finished", origin={"kind": "task-notification"}),
            "client",
            "sent by task-notification",
        ),
        (
            _user([{"type": "tool_result", "tool_use_id": "t1", "content": "ok"}]),
            "tool",
            "result",
        ),
        (
            _user("summary of before", isCompactSummary=True),
            "summary",
            "what the compaction summarized",
        ),
    ],
)
def test_headings(record: Record, role: str, heading: str) -> None:
    item = build_item(record)
    assert (item.role, item.heading) == (role, heading)
