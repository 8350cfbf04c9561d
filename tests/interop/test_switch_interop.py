"""``sessiontree switch``: the real client resumes the branch switched to.

One explicit ``last-prompt`` naming another branch's leaf, appended by the command as a
user runs it, must make ``claude -r`` send that branch's conversation, the one
sessiontree's ``context`` computes; switching back must undo a rewind or a compaction."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from sessiontree.cli.main import cli
from sessiontree.conversation.transcript import Transcript
from tests.conftest import FIXTURES
from tests.interop.realclient import normalize, resume, scenario_copy

pytestmark = pytest.mark.interop

P3_END = "960de76f"  # 02-rewind-both: the leaf of the branch the client rewound away
P4_END = "e22bcc9a"  # 02-rewind-both: the leaf of the active branch


def sessiontree(root: Path, *args: str) -> str:
    result = CliRunner().invoke(cli, ["--root", str(root), *args])
    assert result.exit_code == 0, result.output
    return result.stdout


CASES = [
    # (scenario, what is done first, --to, a text the resumed conversation must hold)
    ("02-rewind-both", [], P3_END, "p3 edit and bash"),  # to the rewound branch
    ("02-rewind-both", [], "68cc9d25", "p2 read and edit"),  # a prompt: its newest leaf
    ("02-rewind-both", ["rewind", "{sid}", "--to", "-1"], P4_END, "p4 after rewind"),
    ("02-rewind-both", ["compact", "{sid}", "--summary", "S"], P4_END, "p4 after rewind"),
    ("05-resend-siblings", [], "9f2ebe38", "retry me please"),  # the oldest re-send
]


@pytest.mark.parametrize(("scenario", "before", "target", "text"), CASES)
def test_client_resumes_the_branch_switched_to(
    claude: Path, tmp_path: Path, scenario: str, before: list[str], target: str, text: str
) -> None:
    root, cwd = scenario_copy(FIXTURES, scenario, tmp_path)
    path = next((root / "projects").glob("*/*.jsonl"))
    sid = path.stem
    original = Transcript.open(path)
    if before:
        sessiontree(root, *(a.format(sid=sid) for a in before))
        assert normalize(Transcript.open(path).context()) != normalize(original.context())
    switched = json.loads(sessiontree(root, "switch", sid, "--to", target, "--json"))

    ours = Transcript.open(path)
    theirs = resume(claude, root, sid, cwd)
    assert normalize(ours.context()) == normalize(theirs)
    assert text in json.dumps(normalize(theirs))
    assert switched["leafUuid"] == ours.leaf and switched["record"] is not None
    if before:  # switched back: the conversation as it was before the rewind / compact
        assert normalize(theirs) == normalize(original.context())
    else:
        assert ours.leaf != original.leaf
