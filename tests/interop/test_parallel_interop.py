"""Parallel tool calls written by sessiontree, resumed by the real client.

One response with several ``tool_use`` blocks is written as the client writes it (one
record per block, each result on its own call, finished in any order); the real client
must resume it with every call answered and the context sessiontree computes: plain,
after a compaction, after a rewind, and continued by another turn."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sessiontree.conversation.rewind import apply_rewind, plan_rewind
from sessiontree.conversation.transcript import Transcript
from sessiontree.session.session import Session
from sessiontree.storage.layout import Layout
from tests.interop.realclient import normalize, resume

pytestmark = pytest.mark.interop


def parallel_turn(session: Session, cwd: Path, n: int, order: list[int]) -> list[str]:
    calls = [f"toolu_p{n}_{i}" for i in range(len(order))]
    session.append_prompt(f"prompt {n}: read {len(calls)} files at once")
    session.append_response(
        [
            {"type": "text", "text": f"Reading {len(calls)} files ({n})."},
            *(
                {
                    "type": "tool_use",
                    "id": call,
                    "name": "Read",
                    "input": {"file_path": str(cwd / f"{call}.txt")},
                }
                for call in calls
            ),
        ]
    )
    for i in order:
        session.append_tool_result(calls[i], f"1\tcontents of {calls[i]}")
    session.append_response([{"type": "text", "text": f"Read them all ({n})."}])
    session.end_turn(duration_ms=5)
    return calls


@pytest.mark.parametrize("then", ["nothing", "compact", "rewind", "another turn"])
def test_client_resumes_parallel_calls_with_the_context_sessiontree_computes(
    claude: Path, tmp_path: Path, then: str
) -> None:
    cwd = tmp_path / "work"
    cwd.mkdir()
    root = tmp_path / "root"
    session = Session.create(Layout(root), str(cwd))
    first = parallel_turn(session, cwd, 1, [2, 0, 1])
    second = parallel_turn(session, cwd, 2, [1, 0])
    if then == "compact":
        session.compact("We read five files in two turns.")
        parallel_turn(session, cwd, 3, [0, 2, 1])
    elif then == "rewind":
        transcript = Transcript.open(session.path)
        apply_rewind(session.path, plan_rewind(transcript, transcript.resolve_prompt("-1")))
    elif then == "another turn":
        session.append_prompt("one more")
        session.append_response([{"type": "text", "text": "Sure."}])
        session.end_turn(duration_ms=5)

    ours = Transcript.open(session.path).context()
    theirs = resume(claude, root, session.session_id, cwd)
    assert normalize(ours) == normalize(theirs)
    sent = json.dumps(theirs)
    assert "Tool result missing" not in sent  # every call answered by its own result
    if then == "nothing":
        assert all(call in sent for call in first + second)
    if then == "rewind":
        assert first[0] in sent and second[0] not in sent


@pytest.mark.parametrize(
    ("answered", "then"),
    [
        ([], "nothing"),  # the host stopped right after the response
        (["b"], "nothing"),  # ... after one of two parallel results
        (["b"], "a prompt and a reply"),  # and the session went on without the other
        ([], "a prompt"),
    ],
)
def test_calls_a_stopped_host_never_answered(
    claude: Path, tmp_path: Path, answered: list[str], then: str
) -> None:
    """A call with no result anywhere (the host stopped mid-turn): in the turn the session
    ended in, the client answers it as interrupted (after the results there are) and
    replies "No response requested."; once the session went on, it leaves the call out."""
    cwd = tmp_path / "work"
    cwd.mkdir()
    root = tmp_path / "root"
    session = Session.create(Layout(root), str(cwd))
    session.append_prompt("read two files")
    session.append_response(
        [
            {"type": "text", "text": "Reading."},
            *(
                {"type": "tool_use", "id": f"toolu_{c}", "name": "Read", "input": {"p": c}}
                for c in ("a", "b")
            ),
        ]
    )
    for call in answered:
        session.append_tool_result(f"toolu_{call}", f"1\t{call}")
    session = Session.open(session.path)  # a new host: the calls left are still open
    if then != "nothing":
        session.append_prompt("are you there?")
    if then == "a prompt and a reply":
        session.append_response([{"type": "text", "text": "Yes."}])
        session.end_turn(duration_ms=1)
    ours = Transcript.open(session.path).context()
    theirs = resume(claude, root, session.session_id, cwd)
    assert normalize(ours) == normalize(theirs)
    sent = json.dumps(ours)
    assert ("Tool call interrupted" in sent) is (then == "nothing")
    assert "Tool result missing" not in sent
