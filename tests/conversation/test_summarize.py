"""Partial compaction ("summarize from / up to here") against what the client wrote.

Fixtures 07 (from p2) and 08 (up to p2) hold the client's records. Cut each transcript
just before the client's boundary, let sessiontree summarize at the same prompt with the
same ids, and the session must read back exactly as the client's own file does; the
records must be the client's, less times, token counts and the summary's prompt id.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from sessiontree.conversation.transcript import Transcript
from sessiontree.errors import Refused
from sessiontree.session.session import Session
from tests.conftest import FIXTURES

EXTRA = FIXTURES.parent / "claude-code-2.1.328-extra"

CASES = {
    "from": (FIXTURES / "07-summarize-from-here", "93baa664"),
    "up_to": (EXTRA / "08-summarize-up-to-here", "f78d2ed8"),
}
# slug: a random name the client gives a session when it first needs one (here: on compaction)
VOLATILE = {"timestamp", "preTokens", "postTokens", "durationMs", "slug"}


def _strip(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _strip(v) for k, v in value.items() if k not in VOLATILE}
    if isinstance(value, list):
        return [_strip(v) for v in value]
    return value


def _client_file(scenario: Path) -> Path:
    return next((scenario / "claude-home" / "projects").glob("*/*.jsonl"))


def _cut(scenario: Path, tmp_path: Path) -> tuple[Path, list[str], list[dict[str, Any]]]:
    """A copy of the transcript up to the client's boundary; the client's own boundary
    and summary records."""
    lines = _client_file(scenario).read_text(encoding="utf-8").splitlines(keepends=True)
    at = next(i for i, line in enumerate(lines) if '"compact_boundary"' in line)
    path = tmp_path / _client_file(scenario).name
    path.write_text("".join(lines[:at]), encoding="utf-8")
    return path, lines, [json.loads(lines[at]), json.loads(lines[at + 1])]


def _ids(*values: str) -> Iterator[str]:
    yield from values


@pytest.mark.parametrize("direction", ["from", "up_to"])
def test_summarize_writes_what_the_client_wrote(tmp_path: Path, direction: str) -> None:
    scenario, prompt = CASES[direction]
    path, lines, (boundary, summary) = _cut(scenario, tmp_path)
    ids = _ids(boundary["uuid"], summary["uuid"], summary["promptId"])
    session = Session.open(path, new_id=lambda: next(ids))
    transcript = Transcript.open(path)
    text = summary["message"]["content"]
    summary_text = text.split("Summary:\n", 1)[1].split("\n\nIf you need", 1)[0]
    plan = session.summarize(
        transcript.resolve_prompt(prompt),
        summary_text,
        direction=direction,  # type: ignore[arg-type]
    )
    # the transcript path named in the text is where the file is; the client's is its own
    ours = [json.loads(line) for line in path.read_text().splitlines()[-2:]]
    ours[1]["message"]["content"] = ours[1]["message"]["content"].replace(
        str(path), text.rsplit(": ", 1)[1]
    )
    assert _strip(ours) == _strip([boundary, summary])
    assert plan.leaf_uuid == session.tip
    # read back, our file has the client's active path and context
    theirs = tmp_path / "theirs.jsonl"
    theirs.write_text("".join(lines[: _line_after(lines)]))
    assert Transcript.open(path).active_path == Transcript.open(theirs).active_path


def _line_after(lines: list[str]) -> int:
    """The client's file through its summary record."""
    return next(i for i, line in enumerate(lines) if '"isCompactSummary":true' in line) + 1


def test_up_to_keeps_the_prompt_and_what_follows_verbatim(tmp_path: Path) -> None:
    scenario, prompt = CASES["up_to"]
    path, _, _ = _cut(scenario, tmp_path)
    before = Transcript.open(path)
    prompt_uuid = before.resolve_prompt(prompt)
    kept = before.active_path[before.active_path.index(prompt_uuid) :]
    Session.open(path).summarize(prompt_uuid, "EARLIER", direction="up_to")
    after = Transcript.open(path)
    assert after.active_path[-len(kept) :] == kept
    texts = [m["content"] for m in after.context()]
    assert "EARLIER" in json.dumps(texts[0])


def test_from_keeps_what_came_before(tmp_path: Path) -> None:
    scenario, prompt = CASES["from"]
    path, _, _ = _cut(scenario, tmp_path)
    before = Transcript.open(path)
    prompt_uuid = before.resolve_prompt(prompt)
    kept = before.active_path[: before.active_path.index(prompt_uuid)]
    session = Session.open(path)
    plan = session.summarize(prompt_uuid, "LATER", direction="from")
    after = Transcript.open(path)
    assert after.active_path[1 : 1 + len(kept)] == kept  # after the boundary
    assert after.active_path[-1] == plan.summary_uuid == session.tip
    # the next prompt continues after the summary
    new = session.append_prompt("next")
    assert Transcript.open(path).active_path[-2:] == [plan.summary_uuid, new]


def test_summarize_refuses_what_is_not_a_prompt_on_the_path(tmp_path: Path) -> None:
    scenario, _ = CASES["up_to"]
    path, _, _ = _cut(scenario, tmp_path)
    transcript = Transcript.open(path)
    session = Session.open(path)
    size = path.stat().st_size
    first = transcript.resolve_prompt("-3")
    with pytest.raises(Refused, match="nothing to summarize"):
        session.summarize(first, "x", direction="up_to")
    with pytest.raises(Refused, match="not a prompt"):
        session.summarize(transcript.active_path[-1], "x", direction="from")
    assert path.stat().st_size == size


def test_clear_starts_a_new_session_like_the_client(tmp_path: Path) -> None:
    source = next((FIXTURES / "01-basic" / "claude-home" / "projects").glob("*/*.jsonl"))
    path = tmp_path / "projects" / "p" / source.name
    path.parent.mkdir(parents=True)
    shutil.copy(source, path)
    before = path.read_bytes()
    old = Session.open(path)
    new = old.clear()
    assert path.read_bytes() == before
    assert new.path.parent == path.parent and new.session_id != old.session_id
    new.append_prompt("p3 after clear")
    context = new.transcript().context()
    assert len(context) == 2  # one user message: caveat, /clear, its output, the prompt
    texts = [b["text"] for b in context[0]["content"] if isinstance(b, dict)]
    assert "/clear" in texts[1] and texts[-1] == "p3 after clear"


def test_cli_summarize(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from sessiontree.cli.main import cli

    scenario, prompt = CASES["up_to"]
    path, _, _ = _cut(scenario, tmp_path)
    size = path.stat().st_size
    runner = CliRunner()
    args = ["summarize", str(path), "--at", prompt, "--up-to", "--summary", "S", "--json"]
    dry = runner.invoke(cli, [*args, "--dry-run"])
    assert dry.exit_code == 0, dry.output
    assert json.loads(dry.output)["dryRun"] is True and path.stat().st_size == size
    done = runner.invoke(cli, args)
    assert done.exit_code == 0, done.output
    result = json.loads(done.output)
    assert result["messagesSummarized"] == 17 and result["direction"] == "up_to"
    assert Transcript.open(path).active_path[1] == result["summaryUuid"]
    missing = runner.invoke(cli, ["summarize", str(path), "--at", prompt, "--summary", "S"])
    assert missing.exit_code == 2 and "--from or --up-to" in missing.output
