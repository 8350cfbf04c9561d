"""``PROMPT`` arguments: numbers count the active path's prompts as ``prompts`` shows them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sessiontree.conversation.transcript import Transcript
from sessiontree.errors import Ambiguous, NotFound, Refused
from sessiontree.views.shapes import prompts_json
from tests.conftest import all_scenarios, scenario_id


@pytest.mark.parametrize("scenario", all_scenarios(), ids=scenario_id)
def test_each_number_prompts_shows_names_its_prompt(scenario: Path) -> None:
    for path in sorted((scenario / "claude-home" / "projects").glob("*/*.jsonl")):
        transcript = Transcript.open(path)
        rows = prompts_json(transcript, set())
        numbered = [r for r in rows if r["number"] is not None]
        assert sorted(r["number"] for r in numbered) == list(range(1, len(numbered) + 1))
        on_path = [u for u in transcript.active_path if u in {r["uuid"] for r in numbered}]
        assert [r["uuid"] for r in sorted(numbered, key=lambda r: r["number"])] == on_path
        for row in rows:
            assert (row["number"] is not None) == row["onActivePath"]
            assert transcript.resolve_prompt(str(row["uuid"])[:13]) == row["uuid"]
        for row in numbered:
            n = row["number"]
            assert transcript.resolve_prompt(str(n)) == row["uuid"]
            assert transcript.resolve_prompt(str(n - len(numbered) - 1)) == row["uuid"]
        for beyond in ("0", str(len(numbered) + 1), str(-len(numbered) - 1)):
            with pytest.raises(NotFound):
                transcript.resolve_prompt(beyond)


def _chain_of_prompts(folder: Path, uuids: list[str]) -> Path:
    """A transcript of prompts only, each the parent of the next."""
    parents = [None, *uuids[:-1]]
    lines = [
        json.dumps(
            {
                "type": "user",
                "uuid": uuid,
                "parentUuid": parent,
                "sessionId": "11111111-0000-4000-8000-000000000000",
                "timestamp": f"2026-01-01T00:00:0{i}Z",
                "message": {"role": "user", "content": f"p{i + 1}"},
            }
        )
        for i, (uuid, parent) in enumerate(zip(uuids, parents, strict=True))
    ]
    path = folder / "11111111-0000-4000-8000-000000000000.jsonl"
    path.write_text("\n".join(lines) + "\n")
    return path


def test_a_number_in_range_is_a_number_and_a_prefix_needs_four(tmp_path: Path) -> None:
    uuids = [
        "1111aaaa-0000-4000-8000-000000000001",
        "2222bbbb-0000-4000-8000-000000000002",
        "2222bbbc-0000-4000-8000-000000000003",
    ]
    transcript = Transcript.open(_chain_of_prompts(tmp_path, uuids))
    assert [transcript.resolve_prompt(n) for n in ("1", "2", "3")] == uuids
    assert [transcript.resolve_prompt(n) for n in ("-3", "-2", "-1")] == uuids
    assert transcript.resolve_prompt("02") == uuids[1]
    for number in ("0", "-0", "4", "-4", "999", "3333", "-1111"):
        with pytest.raises(NotFound, match="no prompt of the 3 on the active path"):
            transcript.resolve_prompt(number)
    assert transcript.resolve_prompt("1111") == uuids[0]  # out of range: a uuid prefix
    with pytest.raises(Ambiguous):
        transcript.resolve_prompt("2222")
    with pytest.raises(Ambiguous):
        transcript.resolve_prompt("2222b")
    assert transcript.resolve_prompt("2222bbbb") == uuids[1]
    assert transcript.resolve_prompt(uuids[2].upper()) == uuids[2]
    for short in ("", "a", "22b", "+2"):
        with pytest.raises(Refused):
            transcript.resolve_prompt(short)
        with pytest.raises(Refused):
            transcript.resolve_prompt(short, any_record=True)
    assert transcript.resolve_prompt("1111a", any_record=True) == uuids[0]
    assert transcript.resolve_prompt("1111", any_record=True) == uuids[0]


def test_a_short_id_of_digits_as_prompts_prints_it_names_its_prompt(tmp_path: Path) -> None:
    uuids = ["aaaa0000-0000-4000-8000-000000000001", "85015099-1e4a-4000-8000-000000000002"]
    path = _chain_of_prompts(tmp_path, uuids)
    transcript = Transcript.open(path)
    short = next(r for r in prompts_json(transcript, set()) if r["uuid"] == uuids[1])["uuid"][:8]
    assert short == "85015099"  # (what `prompts` prints of it)
    assert transcript.resolve_prompt(short) == uuids[1]
    assert transcript.resolve_prompt("8501") == uuids[1]
    assert transcript.resolve_prompt("85015099-") == uuids[1]
    assert transcript.resolve_prompt("2", any_record=True) == uuids[1]
    assert transcript.resolve_prompt(short, any_record=True) == uuids[1]


def test_a_number_in_range_wins_over_a_prefix_of_digits(tmp_path: Path) -> None:
    uuids = [f"{n:08x}-0000-4000-8000-{n:012x}" for n in range(0xA0000000, 0xA0000000 + 1000)]
    uuids[3] = "10001bcd-0000-4000-8000-000000000000"  # (prompt 4; "1000" is prompt 1000)
    transcript = Transcript.open(_chain_of_prompts(tmp_path, uuids))
    assert transcript.resolve_prompt("1000") == uuids[999]
    assert transcript.resolve_prompt("10001") == uuids[3]  # out of range: the prefix
    assert transcript.resolve_prompt("10001bcd") == uuids[3]
