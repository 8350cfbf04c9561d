"""The note ``/fork`` leaves in the parent (two ``system/local_command`` rows, then a meta
user row): a session ending there is resumed with the client's placeholder reply, as it
is when the meta row follows the turn directly or a typed prompt (the real client on
``21-rewind-then-fork`` and variants of it), and ``context`` says the same."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from sessiontree.conversation.transcript import Transcript
from tests.interop.realclient import normalize, resume, scenario_copy

pytestmark = pytest.mark.interop

EXTRA = Path(__file__).parents[1] / "fixtures" / "claude-code-2.1.328-extra"
PARENT = "a1603a88-c318-4c58-96a1-5799d02a7730"
NOTE = "c54a3bcd-f85b-4dab-8f71-5c34e57dc08d"  # the meta row "The fork runs as its own…"
PLACEHOLDER = ("assistant", [("text", "No response requested.")])

Rows = list[dict[str, Any]]


def as_written(rows: Rows) -> Rows:
    return rows


def note_right_after_the_turn(rows: Rows) -> Rows:
    """The ``local_command`` rows left out: the meta row hangs on the turn end."""
    kept = [r for r in rows if r.get("subtype") != "local_command"]
    note = next(i for i, r in enumerate(kept) if r.get("uuid") == NOTE)
    commands = [r for r in rows if r.get("subtype") == "local_command"]
    kept[note] = {**kept[note], "parentUuid": commands[0]["parentUuid"]}
    return kept


def note_after_a_typed_prompt(rows: Rows) -> Rows:
    kept = note_right_after_the_turn(rows)
    note = next(i for i, r in enumerate(kept) if r.get("uuid") == NOTE)
    prompt = {
        **{k: v for k, v in kept[note].items() if k != "isMeta"},
        "uuid": "11111111-1111-4111-8111-111111111111",
        "message": {"role": "user", "content": "a typed prompt"},
    }
    kept[note] = {**kept[note], "parentUuid": prompt["uuid"]}
    return [*kept[:note], prompt, *kept[note:]]


@pytest.mark.parametrize("edit", [as_written, note_right_after_the_turn, note_after_a_typed_prompt])
def test_a_session_ending_in_the_fork_note_gets_the_placeholder(
    claude: Path, tmp_path: Path, edit: Callable[[Rows], Rows]
) -> None:
    root, cwd = scenario_copy(EXTRA, "21-rewind-then-fork", tmp_path)
    path = next((root / "projects").glob(f"*/{PARENT}.jsonl"))
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    path.write_text("".join(json.dumps(r) + "\n" for r in edit(rows)))
    theirs = normalize(resume(claude, root, PARENT, cwd))
    assert theirs[-1] == PLACEHOLDER
    assert "The fork runs as its own separate session" in json.dumps(theirs[-2])
    assert normalize(Transcript.open(path).context()) == theirs
