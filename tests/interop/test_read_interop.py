"""sessiontree's context equals the real client's on resume: on every fixture session, and
on variations of them that exercise each leaf rule sessiontree relies on (model/tree.py)."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from sessiontree.transcript import Transcript
from tests.conftest import FIXTURES
from tests.interop.realclient import normalize, relocate, resume

pytestmark = pytest.mark.interop

Records = list[dict[str, object]]
NULL_UUID = "00000000-0000-0000-0000-000000000000"


def sessions() -> list[tuple[str, str]]:
    found = []
    for scenario in sorted(p for p in FIXTURES.iterdir() if (p / "claude-home").is_dir()):
        for path in sorted((scenario / "claude-home" / "projects").glob("*/*.jsonl")):
            found.append((scenario.name, path.stem))
    return found


def _chain(records: Records) -> Records:
    return [r for r in records if r.get("type") in ("user", "assistant", "system", "attachment")]


def check(
    claude: Path,
    tmp_path: Path,
    scenario: str,
    session_id: str,
    mutate: Callable[[Records], Records],
) -> None:
    """Mutate a private copy of the session, then compare both contexts on resume."""
    root = tmp_path / "root"
    shutil.copytree(FIXTURES / scenario / "claude-home", root)
    cwd = tmp_path / "work"
    relocate(root, json.loads((FIXTURES / scenario / "scenario.json").read_text())["project"], cwd)
    target = next((root / "projects").glob(f"*/{session_id}.jsonl"))
    records = [json.loads(line) for line in target.read_text().splitlines() if line.strip()]
    target.write_text("".join(json.dumps(r) + "\n" for r in mutate(records)))
    ours = Transcript.open(target).context()
    theirs = resume(claude, root, session_id, cwd)
    assert normalize(ours) == normalize(theirs)


@pytest.mark.parametrize(("scenario", "session_id"), sessions())
def test_fixture_session(claude: Path, tmp_path: Path, scenario: str, session_id: str) -> None:
    check(claude, tmp_path, scenario, session_id, lambda records: records)


def no_last_prompt(records: Records) -> Records:
    """No last-prompt: the newest leaf below the record written last."""
    return [r for r in records if r.get("type") != "last-prompt"]


def unknown_records(records: Records) -> Records:
    """Unknown record types anywhere are kept by sessiontree and ignored by both."""
    return [
        {"type": "future-record", "payload": {"x": 1}},
        *records,
        {"type": "another-unknown", "leafUuid": "nope", "uuid": None},
    ]


def prompt_on_old_branch(records: Records) -> Records:
    """A newer prompt hung on an old record loses to a later last-prompt naming a leaf."""
    chain = _chain(records)
    named = [
        r
        for r in records
        if r.get("type") == "last-prompt" and r.get("leafUuid") not in (None, NULL_UUID)
    ]
    first_user = next(r for r in chain if r.get("type") == "user")
    late = {
        **first_user,
        "uuid": "11111111-2222-4333-8444-555555555555",
        "parentUuid": first_user["uuid"],
        "timestamp": "2099-01-01T00:00:00.000Z",
        "message": {"role": "user", "content": "a prompt on an old branch"},
    }
    return [*records, late, *named[-1:]]


def reset_marker_only(records: Records) -> Records:
    """An all-zero marker discards every last-prompt before it."""
    return [*records, {"type": "last-prompt", "leafUuid": NULL_UUID, "explicit": True}]


@pytest.mark.parametrize(
    "mutate",
    [no_last_prompt, unknown_records, prompt_on_old_branch, reset_marker_only],
    ids=lambda f: f.__name__,
)
@pytest.mark.parametrize(
    ("scenario", "session_id"),
    [
        s
        for s in sessions()
        if s[0] in ("02-rewind-both", "05-resend-siblings", "06-compact", "07-summarize-from-here")
    ],
)
def test_leaf_rules(
    claude: Path,
    tmp_path: Path,
    scenario: str,
    session_id: str,
    mutate: Callable[[Records], Records],
) -> None:
    check(claude, tmp_path, scenario, session_id, mutate)


def _records_of(scenario: str) -> list[str]:
    path = next((FIXTURES / scenario / "claude-home" / "projects").glob("*/*.jsonl"))
    uuids = [json.loads(line).get("uuid") for line in path.read_text().splitlines()]
    return [u for u in uuids if u][::3]


@pytest.mark.parametrize(
    ("scenario", "uuid"),
    [(s, u) for s in ("02-rewind-both", "06-compact") for u in _records_of(s)],
    ids=lambda v: str(v)[:8],
)
def test_last_prompt_naming_any_record(
    claude: Path, tmp_path: Path, scenario: str, uuid: str
) -> None:
    """A last-prompt may name any record: on the default path it is stale; elsewhere it
    wins and the client completes that response (blocks and tool results)."""
    session_id = next(s for sc, s in sessions() if sc == scenario)

    def name_it(records: Records) -> Records:
        return [*records, {"type": "last-prompt", "lastPrompt": "x", "leafUuid": uuid}]

    check(claude, tmp_path, scenario, session_id, name_it)
