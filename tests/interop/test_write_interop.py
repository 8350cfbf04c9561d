"""What sessiontree writes, the real client reads back as sessiontree does.

A conversation rewind done by sessiontree (one explicit last-prompt line) must make the
real client resume the conversation from just before the chosen prompt."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sessiontree.conversation.rewind import apply_rewind, plan_rewind
from sessiontree.conversation.transcript import Transcript
from tests.conftest import FIXTURES
from tests.interop.realclient import normalize, resume, scenario_copy

pytestmark = pytest.mark.interop

CASES = [
    ("01-basic", "5fcb784a"),  # p2 of a plain session
    ("01-basic", "db0ed167"),  # the first prompt: resumes empty
    ("02-rewind-both", "92d1c3f4"),  # p4, on the branch the client itself rewound to
    ("05-resend-siblings", "a2c2965f"),  # the newest of four re-sends
    ("06-compact", "18f675ba"),  # the prompt after a /compact
    ("07-summarize-from-here", "10303e0f"),  # the prompt after "summarize from here"
    ("14-subagent", "aa7942b6"),  # after a subagent's turn
]


@pytest.mark.parametrize(("scenario", "prompt"), CASES)
def test_client_resumes_from_before_the_rewound_prompt(
    claude: Path, tmp_path: Path, scenario: str, prompt: str
) -> None:
    root, cwd = scenario_copy(FIXTURES, scenario, tmp_path)
    path = next((root / "projects").glob("*/*.jsonl"))
    transcript = Transcript.open(path)
    prompt_uuid = transcript.resolve_prompt(prompt)
    before = normalize(transcript.context())
    apply_rewind(path, plan_rewind(transcript, prompt_uuid))

    ours = Transcript.open(path)
    theirs = resume(claude, root, path.stem, cwd)
    assert normalize(ours.context()) == normalize(theirs)
    rewound_text = transcript.record(prompt_uuid).text()  # type: ignore[union-attr]
    sent = json.dumps(normalize(ours.context()))
    assert rewound_text.strip()[:40] not in sent  # the prompt and what followed are gone
    assert len(normalize(ours.context())) < len(before)


def test_client_resumes_a_session_the_session_api_wrote(claude: Path, tmp_path: Path) -> None:
    from sessiontree.session.session import Session
    from sessiontree.storage.layout import Layout

    cwd = tmp_path / "work"
    cwd.mkdir()
    root = tmp_path / "root"
    session = Session.create(Layout(root), str(cwd))
    for n in (1, 2):
        session.append_prompt(f"prompt {n}: read a file")
        session.append_response(
            [
                {"type": "text", "text": f"Reading ({n})."},
                {
                    "type": "tool_use",
                    "id": f"toolu_0{n}",
                    "name": "Read",
                    "input": {"file_path": str(cwd / "a.txt")},
                },
            ]
        )
        session.append_tool_result(f"toolu_0{n}", "1\talpha")
        session.append_response([{"type": "text", "text": f"Done ({n})."}])
        session.end_turn(duration_ms=5)
    theirs = resume(claude, root, session.session_id, cwd)
    ours = session.transcript().context()
    assert normalize(ours) == normalize(theirs)
    sent = json.dumps(normalize(theirs))
    assert "prompt 1" in sent and "Done (2)." in sent and "toolu_02" in sent


@pytest.mark.parametrize("scenario", ["02-rewind-both", "06-compact", "07-summarize-from-here"])
def test_client_resumes_a_fork_with_the_parents_conversation(
    claude: Path, tmp_path: Path, scenario: str
) -> None:
    from sessiontree.conversation.fork import apply_fork, plan_fork

    root, cwd = scenario_copy(FIXTURES, scenario, tmp_path)
    parent = Transcript.open(next((root / "projects").glob("*/*.jsonl")))
    plan = plan_fork(parent, new_session_id="f0f0f0f0-0000-4000-8000-000000000001")
    apply_fork(plan)
    theirs = resume(claude, root, plan.session_id, cwd)
    assert normalize(Transcript.open(plan.path).context()) == normalize(theirs)
    assert normalize(theirs) == normalize(parent.context())


@pytest.mark.parametrize("scenario", ["01-basic", "02-rewind-both", "06-compact"])
def test_client_resumes_a_compaction_from_the_summary(
    claude: Path, tmp_path: Path, scenario: str
) -> None:
    from sessiontree.session.session import Session

    root, cwd = scenario_copy(FIXTURES, scenario, tmp_path)
    path = next((root / "projects").glob("*/*.jsonl"))
    before = path.read_bytes()
    Session.open(path).compact("SUMMARY-OF-EVERYTHING")
    assert path.read_bytes().startswith(before)  # only appended
    ours = Transcript.open(path).context()
    theirs = resume(claude, root, path.stem, cwd)
    assert normalize(ours) == normalize(theirs)
    sent = normalize(theirs)
    assert "SUMMARY-OF-EVERYTHING" in json.dumps(sent[0])  # the summary, nothing older
    assert sent[1:] in ([], [("assistant", [("text", "No response requested.")])])


SUMMARIZE_CASES = [
    ("01-basic", "-1", "from"),
    ("01-basic", "-2", "up_to"),
    ("02-rewind-both", "-2", "from"),
    ("02-rewind-both", "-1", "up_to"),
    ("06-compact", "-1", "up_to"),  # on top of a /compact with a preserved segment
    ("06-compact", "-1", "from"),
    ("07-summarize-from-here", "-1", "up_to"),  # on top of the client's own summarize
    ("14-subagent", "-1", "from"),
]


@pytest.mark.parametrize(("scenario", "prompt", "direction"), SUMMARIZE_CASES)
def test_client_resumes_a_partial_compaction(
    claude: Path, tmp_path: Path, scenario: str, prompt: str, direction: str
) -> None:
    from sessiontree.session.session import Session

    root, cwd = scenario_copy(FIXTURES, scenario, tmp_path)
    path = next((root / "projects").glob("*/*.jsonl"))
    before = path.read_bytes()
    transcript = Transcript.open(path)
    prompt_uuid = transcript.resolve_prompt(prompt)
    Session.open(path).summarize(prompt_uuid, "SUMMARY-PART", direction=direction)  # type: ignore[arg-type]
    assert path.read_bytes().startswith(before)  # only appended
    ours = Transcript.open(path).context()
    theirs = resume(claude, root, path.stem, cwd)
    assert normalize(ours) == normalize(theirs)
    sent = json.dumps(normalize(theirs))
    assert "SUMMARY-PART" in sent
    prompt_text = transcript.record(prompt_uuid).text().strip()[:40]  # type: ignore[union-attr]
    assert (prompt_text in sent) == (direction == "up_to")  # kept verbatim, or summarized


def test_client_resumes_a_cleared_session_and_the_old_one(claude: Path, tmp_path: Path) -> None:
    from sessiontree.session.session import Session

    root, cwd = scenario_copy(FIXTURES, "01-basic", tmp_path)
    path = next((root / "projects").glob("*/*.jsonl"))
    old_context = normalize(Transcript.open(path).context())
    new = Session.open(path).clear()
    new.append_prompt("after clear")
    new.append_response([{"type": "text", "text": "Fresh start."}])
    new.end_turn()
    assert normalize(resume(claude, root, new.session_id, cwd)) == normalize(
        new.transcript().context()
    )
    assert normalize(resume(claude, root, path.stem, cwd)) == old_context


CONTINUED = ["01-basic", "02-rewind-both", "06-compact", "07-summarize-from-here", "14-subagent"]


@pytest.mark.parametrize("scenario", CONTINUED)
def test_sessiontree_continues_what_the_client_wrote(
    claude: Path, tmp_path: Path, scenario: str
) -> None:
    """The reverse direction: a session the client wrote, continued with ``-c`` by
    sessiontree (a new turn with a tool call), resumes in the client with the client's
    own context plus that turn."""
    from sessiontree.session.session import Session
    from sessiontree.storage.layout import Layout

    root, cwd = scenario_copy(FIXTURES, scenario, tmp_path)
    path = next((root / "projects").glob("*/*.jsonl"))
    client_context = normalize(Transcript.open(path).context())
    session = Session.continue_latest(Layout(root), str(cwd))
    assert session.path == path
    session.append_prompt("continued by sessiontree")
    session.append_response(
        [
            {"type": "text", "text": "Looking."},
            {"type": "tool_use", "id": "toolu_st1", "name": "Read", "input": {"file_path": "x"}},
        ]
    )
    session.append_tool_result("toolu_st1", "1\tx")
    session.append_response([{"type": "text", "text": "Seen it."}])
    session.end_turn()
    theirs = normalize(resume(claude, root, path.stem, cwd))
    assert theirs == normalize(Transcript.open(path).context())
    # what the client had, then the new turn (a trailing "No response requested." goes)
    had = [m for m in client_context if m != ("assistant", [("text", "No response requested.")])]
    assert theirs[: len(had) - 1] == had[:-1]
    assert "continued by sessiontree" in json.dumps(theirs[len(had) - 1 :])
    assert theirs[-1] == ("assistant", [("text", "Seen it.")])


def test_client_resumes_attachments_and_system_records(claude: Path, tmp_path: Path) -> None:
    from sessiontree.session.session import Session
    from sessiontree.storage.layout import Layout

    cwd = tmp_path / "work"
    cwd.mkdir()
    root = tmp_path / "root"
    session = Session.create(Layout(root), str(cwd))
    session.append_prompt("look at notes.md")
    # a type the client does not know: it sends the stored text. Types it knows (file,
    # hook_additional_context, …) it checks against their data, so give those in full.
    session.append_attachment({"type": "host_note"}, rendered=["notes.md holds: hello"])
    session.append_attachment(
        {"type": "date", "date": "2026-11-29"},
        rendered=["<system-reminder>Today is 2026-11-29.</system-reminder>"],
        rendered_role="system",
    )
    session.append_response([{"type": "text", "text": "It says hello."}])
    session.append_system("informational", content="not for the model")
    session.end_turn()
    theirs = resume(claude, root, session.session_id, cwd)
    assert normalize(session.transcript().context()) == normalize(theirs)
    assert "notes.md holds: hello" in json.dumps(normalize(theirs))
    # system-role texts: a system message, or (models without system turns) user text
    assert "Today is 2026-11-29." in json.dumps(theirs)
    assert "not for the model" not in json.dumps(theirs)


def test_client_resumes_pastes_and_spilled_output(claude: Path, tmp_path: Path) -> None:
    from sessiontree.session.session import Session
    from sessiontree.storage.layout import Layout

    cwd = tmp_path / "work"
    cwd.mkdir()
    root = tmp_path / "root"
    session = Session.create(Layout(root), str(cwd), record_history=True)
    paste = "".join(f"pasted line {n}\n" for n in range(80))
    session.append_prompt("look: [Pasted text #1 +80 lines] then run it", pastes={1: paste})
    session.append_response(
        [{"type": "tool_use", "id": "toolu_big", "name": "Bash", "input": {"command": "big"}}]
    )
    session.append_bash_result("toolu_big", "".join(f"output {n:08d}\n" for n in range(4000)))
    session.append_response([{"type": "text", "text": "Saw it."}])
    session.end_turn()
    theirs = resume(claude, root, session.session_id, cwd)
    assert normalize(session.transcript().context()) == normalize(theirs)
    sent = json.dumps(theirs)
    assert "pasted line 79" in sent and "<persisted-output>" in sent


def test_client_resumes_a_rewind_to_the_first_prompt_kept_by_summarize_from(
    claude: Path, tmp_path: Path
) -> None:
    """After "summarize from here" at p2, p1 is the first message after the boundary:
    rewinding to it leaves nothing before it (found by the state machine)."""
    from sessiontree.session.session import Session
    from sessiontree.storage.layout import Layout

    cwd = tmp_path / "work"
    cwd.mkdir()
    root = tmp_path / "root"
    session = Session.create(Layout(root), str(cwd))
    prompts = []
    for n in (1, 2, 3):
        prompts.append(session.append_prompt(f"prompt {n}"))
        session.append_response([{"type": "text", "text": f"answer {n}"}])
        session.end_turn()
    session.summarize(prompts[1], "LATER PART", direction="from")
    transcript = Transcript.open(session.path)
    apply_rewind(session.path, plan_rewind(transcript, prompts[0]))
    ours = Transcript.open(session.path).context()
    assert ours == []
    assert normalize(resume(claude, root, session.session_id, cwd)) == normalize(ours)
    # the next prompt starts the conversation again, as in the client
    again = Session.open(session.path)
    again.append_prompt("fresh start")
    assert normalize(again.transcript().context())[0] == ("user", [("text", "fresh start")])
    assert normalize(resume(claude, root, session.session_id, cwd))[0] == (
        "user",
        [("text", "fresh start")],
    )


def test_a_prompt_after_rewinding_to_the_first_kept_by_summarize_up_to_revives_it(
    claude: Path, tmp_path: Path
) -> None:
    """A client quirk found by the write-API state machine: the first prompt a "summarize
    up to here" kept hangs on the summary, the anchor of the kept segment. A rewind to it
    resumes from the summary, but the next prompt, hung on the summary, is moved below
    the kept segment when the client loads the file, so the rewound prompt comes back.
    sessiontree computes the same context as the client at both points."""
    from sessiontree.session.session import Session
    from sessiontree.storage.layout import Layout

    cwd = tmp_path / "work"
    cwd.mkdir()
    root = tmp_path / "root"
    session = Session.create(Layout(root), str(cwd))
    for n in (1, 2, 3):
        session.append_prompt(f"please do u{n}")
        session.append_response([{"type": "text", "text": f"ok a{n}"}])
        session.end_turn(duration_ms=1)
    prompt = Transcript.open(session.path).resolve_prompt("-2")
    session.summarize(prompt, "summary s4", direction="up_to")
    transcript = Transcript.open(session.path)
    apply_rewind(session.path, plan_rewind(transcript, transcript.resolve_prompt("-2")))
    session = Session.open(session.path)
    ours = normalize(Transcript.open(session.path).context())
    assert ours == normalize(resume(claude, root, session.session_id, cwd))
    assert "please do u2" not in json.dumps(ours)
    session.append_prompt("please do u5")
    session.append_response([{"type": "text", "text": "ok a5"}])
    session.end_turn(duration_ms=1)
    ours = normalize(Transcript.open(session.path).context())
    assert ours == normalize(resume(claude, root, session.session_id, cwd))
    assert "please do u2" in json.dumps(ours) and "please do u5" in json.dumps(ours)
