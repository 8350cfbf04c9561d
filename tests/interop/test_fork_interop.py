"""``sessiontree fork --at``: the real client resumes the fork with what it sends resuming
the parent at that record, every call of a response with several kept with its result.

The parent "at that record" is the parent with an explicit ``last-prompt`` naming it
appended (what a rewind writes), resumed by the client; the fork is resumed by the
client too, and both must equal sessiontree's ``context`` of the fork."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from sessiontree.cli.main import cli
from sessiontree.conversation.transcript import Transcript
from sessiontree.model.builders import build_last_prompt
from sessiontree.storage.jsonl import append_records
from tests.interop.realclient import normalize, resume, scenario_copy

pytestmark = pytest.mark.interop

PAR = Path(__file__).parents[1] / "fixtures" / "claude-code-2.1.328-par"


def fork_at(root: Path, session_id: str, at: str) -> Path:
    result = CliRunner().invoke(
        cli, ["--root", str(root), "fork", session_id, "--at", at, "--json"]
    )
    assert result.exit_code == 0, result.output
    return Path(json.loads(result.stdout)["path"])


def calls_and_results(
    messages: list[tuple[str, list[tuple[str, str]]]],
) -> tuple[set[str], set[str]]:
    items = [item for _, blocks in messages for item in blocks]
    return {i for k, i in items if k == "tool_use"}, {i for k, i in items if k == "tool_result"}


def points(transcript: Transcript) -> dict[str, str]:
    """Records of the active path to fork at: a turn end after parallel calls, and the
    first call of a response with several."""
    tree, path = transcript.tree, transcript.active_path
    records = transcript.records(path)
    first_call = next(
        r.uuid
        for r in records
        if r.type == "assistant" and '"tool_use"' in json.dumps(r.get("message"))
    )
    ends = [tree.parent[u] for u in path if tree.skeleton(u).subtype == "turn_duration"]
    assert first_call is not None and ends[0] is not None
    return {"turn end": ends[0], "first of three calls": first_call}


@pytest.mark.parametrize("point", ["turn end", "first of three calls"])
def test_client_resumes_a_fork_as_the_parent_at_that_record(
    claude: Path, tmp_path: Path, point: str
) -> None:
    root, cwd = scenario_copy(PAR, "17-par-plain", tmp_path)
    parent = next((root / "projects").glob("*/*.jsonl"))
    at = points(Transcript.open(parent))[point]

    rewound = tmp_path / "rewound"  # the parent, resumed at that record
    shutil.copytree(root, rewound)
    moved = rewound / parent.relative_to(root)
    append_records(
        moved,
        [build_last_prompt(parent.stem, last_prompt="", leaf_uuid=at, explicit=True)],
        fsync=False,
    )
    assert Transcript.open(moved).leaf == at
    at_that_record = normalize(resume(claude, rewound, parent.stem, cwd))

    fork = fork_at(root, parent.stem, at)
    theirs = normalize(resume(claude, root, fork.stem, cwd))
    assert normalize(Transcript.open(fork).context()) == theirs
    assert theirs == at_that_record
    calls, results = calls_and_results(theirs)
    assert len(calls) >= 3 and calls <= results


def test_client_resumes_a_fork_at_a_record_a_compaction_summarized(
    claude: Path, tmp_path: Path
) -> None:
    root, cwd = scenario_copy(PAR, "19-par-compact", tmp_path)
    parent = next((root / "projects").glob("*/*.jsonl"))
    tree = Transcript.open(parent).tree
    summarized = [u for u in tree.compacted if tree.skeleton(u).type == "assistant"]
    at = max(summarized, key=lambda u: tree.nodes[u].number)  # p2's answer

    fork = fork_at(root, parent.stem, at)
    theirs = normalize(resume(claude, root, fork.stem, cwd))
    assert normalize(Transcript.open(fork).context()) == theirs
    calls, results = calls_and_results(theirs)
    assert len(calls) == 5 and calls <= results  # p1's three calls, p2's two
