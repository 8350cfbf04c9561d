"""A slash command's records as the client shows them (:func:`command_text`), on the
real clients' records: the 1.0.128 and 2.1.328 fixtures' ``/compact``, ``/clear`` and
``/fork``, the form with arguments the client writes for ``/model``."""

from __future__ import annotations

import json
from pathlib import Path

from sessiontree.model.records import Record
from sessiontree.views.commands import NO_OUTPUT, command_text

FIXTURES = Path(__file__).parents[1] / "fixtures"


def _texts(pattern: str) -> list[str]:
    texts = []
    for path in FIXTURES.glob(pattern):
        for line in path.read_text().splitlines():
            record = Record(json.loads(line))
            if record.type in ("user", "system"):
                texts.append(record.text())
    return texts


def test_the_real_clients_command_records_read_as_lines() -> None:
    old = _texts("claude-code-1.0.128/02-par-task-compact/claude-home/projects/*/*.jsonl")
    new = _texts("claude-code-2.1.328/09-fork/claude-home/projects/*/*.jsonl")
    shown = {command_text(t) for t in old + new} - {None}
    assert "/compact" in shown and "/fork" in shown
    assert "\x1b[2mCompacted (ctrl+o to see full summary)\x1b[22m" in shown
    assert not [s for s in shown if s and "<" in s and "command" in s], shown


def test_arguments_empty_output_and_other_text() -> None:
    typed = (
        "<command-name>/model</command-name>\n            <command-message>model"
        "</command-message>\n            <command-args>sonnet  4</command-args>"
    )
    assert command_text(typed) == "/model sonnet 4"
    assert command_text("<local-command-stdout></local-command-stdout>") == NO_OUTPUT
    assert command_text("<local-command-stderr>oops</local-command-stderr>") == "oops"
    assert command_text("a prompt that mentions <command-name>") is None
    assert command_text("<command-name>unclosed") is None
