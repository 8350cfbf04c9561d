"""sessiontree's context equals the real client's on resume: on every fixture session, and
on variations of them that exercise each leaf rule sessiontree relies on (model/tree.py)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from sessiontree.conversation.transcript import Transcript
from tests.conftest import FIXTURES
from tests.interop.realclient import normalize, resume, scenario_copy

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
    root, cwd = scenario_copy(FIXTURES, scenario, tmp_path)
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


def _uuid(records: Records, prefix: str) -> str:
    return str(next(r["uuid"] for r in records if str(r.get("uuid", "")).startswith(prefix)))


def move_to_end(*prefixes: str) -> Callable[[Records], Records]:
    """Records written again at the end (as a re-sent copy would be), last-prompts gone."""

    def mutate(records: Records) -> Records:
        kept = no_last_prompt(records)
        for prefix in prefixes:
            uuid = _uuid(kept, prefix)
            moved = next(r for r in kept if r.get("uuid") == uuid)
            kept = [r for r in kept if r is not moved] + [moved]
        return kept

    return mutate


def prompt_under(prefix: str, *, timestamp: str) -> Callable[[Records], Records]:
    """A new prompt under an old record, then a copy of the newest last-prompt."""

    def mutate(records: Records) -> Records:
        first_user = next(r for r in records if r.get("type") == "user")
        named = [
            r
            for r in records
            if r.get("type") == "last-prompt" and r.get("leafUuid") not in (None, NULL_UUID)
        ]
        late = {
            **first_user,
            "uuid": "11111111-2222-4333-8444-555555555555",
            "parentUuid": _uuid(records, prefix),
            "timestamp": timestamp,
            "message": {"role": "user", "content": "LATE"},
        }
        return [*records, late, *named[-1:]]

    return mutate


def branch_then_main(branch_under: str, main_under: str) -> Callable[[Records], Records]:
    """A prompt on a side branch, one on the main line after it, a last-prompt naming
    the side branch: the named leaf wins (also after compaction: it is a leaf prompt)."""

    def mutate(records: Records) -> Records:
        first_user = next(r for r in records if r.get("type") == "user")
        branch = {
            **first_user,
            "uuid": "11111111-2222-4333-8444-555555555555",
            "parentUuid": _uuid(records, branch_under),
            "timestamp": "2026-11-29T20:00:00.000Z",
            "message": {"role": "user", "content": "BRANCH"},
        }
        main = {
            **branch,
            "uuid": "22222222-2222-4333-8444-555555555555",
            "parentUuid": _uuid(records, main_under),
            "timestamp": "2026-11-29T20:00:01.000Z",
            "message": {"role": "user", "content": "MAIN"},
        }
        return [
            *records,
            branch,
            main,
            {"type": "last-prompt", "lastPrompt": "BRANCH", "leafUuid": branch["uuid"]},
        ]

    return mutate


STRUCTURAL: dict[str, tuple[str, Callable[[Records], Records]]] = {
    "old-leaf-written-last": ("02-rewind-both", move_to_end("960de76f")),
    "prompt-with-children-written-last": ("02-rewind-both", move_to_end("68cc9d25")),
    "fork-point-written-last": ("02-rewind-both", move_to_end("68cc9d25", "cd7d3add")),
    "late-prompt-under-compacted-record": (
        "06-compact",
        prompt_under("6c565c94", timestamp="2099-01-01T00:00:00.000Z"),
    ),
    "late-prompt-under-preserved-head": (
        "07-summarize-from-here",
        prompt_under("b92c507b", timestamp="2000-01-01T00:00:00.000Z"),
    ),
    "late-prompt-on-plain-session": (
        "02-rewind-both",
        prompt_under("e42339f0", timestamp="2099-01-01T00:00:00.000Z"),
    ),
    "branch-then-main": ("02-rewind-both", branch_then_main("9905a8d3", "e22bcc9a")),
    "branch-then-main-compacted": ("06-compact", branch_then_main("ea281c02", "0ce5ae28")),
}


@pytest.mark.parametrize("case", list(STRUCTURAL))
def test_structural_variations(claude: Path, tmp_path: Path, case: str) -> None:
    scenario, mutate = STRUCTURAL[case]
    session_id = next(s for sc, s in sessions() if sc == scenario)
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
