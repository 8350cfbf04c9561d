"""What a new user found confusing in the viewer (issue 28): a badge on sessions no client
holds, tree nodes that say only "(user)", a slash command's raw tags and terminal escapes,
and sizes counted otherwise than the CLI counts them. Over the demo store and the
real client's fixtures, through Starlette's TestClient."""

from __future__ import annotations

import html
import json
import re
from pathlib import Path

from starlette.testclient import TestClient

from sessiontree.catalog.index import read_session_info
from sessiontree.cli.output import format_size
from sessiontree.conversation.transcript import Transcript
from sessiontree.demo import DemoSummary
from tests.conftest import copy_writable
from tests.web.conftest import make_client

FIXTURES = Path(__file__).parents[1] / "fixtures"
#: A 1.0.128 client's session with ``/compact`` typed in it: its rows are the tagged
#: ``<command-name>`` and ``<local-command-stdout>`` (holding ``ESC[2m``) user records.
OLD_COMPACT = FIXTURES / "claude-code-1.0.128" / "02-par-task-compact" / "claude-home"
OLD_COMPACT_ID = "d6b8ae6c-beef-4c66-94df-45b0cd852e65"
#: A 2.1.328 client's session after ``/clear``: a meta caveat, the command, and the
#: ``system/local_command`` record of its (empty) output.
CLEARED = FIXTURES / "claude-code-2.1.328-extra" / "10-clear" / "claude-home"
CLEARED_ID = "f4c315df-ec1c-4900-82fc-7ce6881a4509"


def _row(listing: str, session_id: str) -> str:
    return listing.split(f'<tr data-session="{session_id}">')[1].split("</tr>")[0]


def _labels(page: str) -> dict[str, str]:
    """Each tree node's tip and its label, as drawn."""
    found = re.findall(
        r'<a href="[^"]*" class="node-link" data-tip="([0-9a-f-]+)">.*?'
        r'<text class="label"[^>]*>(.*?)</text>',
        page,
        re.S,
    )
    return {tip: html.unescape(label) for tip, label in found}


def test_a_session_no_client_holds_has_no_badge(client: TestClient, demo: DemoSummary) -> None:
    listing = client.get("/").text
    for session in demo.sessions:
        row = _row(listing, session.session_id)
        assert "badge" not in row, row
    assert "idle" not in listing


def test_every_tree_node_says_what_it_holds(client: TestClient, demo: DemoSummary) -> None:
    """A node with no prompt (parallel calls and their results beside the active path, a
    compaction) is named by what it holds: the tool it calls, never a bare record type.
    (The demo's weather session has such a node: a Read call and its result.)"""
    bare = re.compile(r"^(\[\d+\] )?\((user|assistant|system|attachment|record)\)$")
    results = 0
    for session in demo.sessions:
        transcript = Transcript.open(session.path)
        labels = _labels(client.get(f"/s/{session.session_id}").text)
        assert labels
        for tip, label in labels.items():
            assert not bare.match(label), (session.title, label)
            record = transcript.record(tip)
            assert record is not None
            # (a node stands for its tip and the records above it in its run: "[N]")
            count = int(label[1:].split("]")[0]) if label.startswith("[") else 1
            members = transcript.records(transcript.tree.path_to(tip)[-count:])
            if record.is_tool_result and not any(r.is_prompt for r in members):
                ids = {b.get("tool_use_id") for b in record.content if isinstance(b, dict)}
                calls = [
                    b
                    for r in members
                    if r.type == "assistant"
                    for b in r.content
                    if isinstance(b, dict) and b.get("id") in ids
                ]
                assert calls and str(calls[0]["name"]) in label, label
                results += 1
    assert results, "the demo has a node of calls and results without a prompt"


def test_an_empty_user_record_is_not_a_bare_node(tmp_path: Path) -> None:
    """A user record with nothing in it (as an interrupted client leaves), on a branch of
    its own: its node says it is empty."""
    root = copy_writable(CLEARED, tmp_path / "root")
    path = next((root / "projects").rglob(f"{CLEARED_ID}.jsonl"))
    transcript = Transcript.open(path)
    fork = transcript.active_path[len(transcript.active_path) // 2]
    above = transcript.record(fork)
    assert above is not None
    empty = dict(above.raw, type="user", uuid="0e0e0e0e-0000-4000-8000-000000000001")
    empty.update(parentUuid=fork, message={"role": "user", "content": ""})
    empty.pop("isMeta", None)
    with path.open("rb+") as out:  # (before the last record: the active leaf stays)
        lines = out.read().splitlines(keepends=True)
        out.seek(0)
        out.writelines([*lines[:-1], json.dumps(empty).encode() + b"\n", lines[-1]])
    with make_client(root) as client:
        labels = _labels(client.get(f"/s/{CLEARED_ID}").text)
    assert "(empty message)" in labels[str(empty["uuid"])]


def test_slash_commands_read_as_lines_and_escapes_show(tmp_path: Path) -> None:
    root = copy_writable(OLD_COMPACT, tmp_path / "root")
    raw = next((root / "projects").rglob(f"{OLD_COMPACT_ID}.jsonl")).read_text()
    assert "<command-name>" in raw and "\\u001b[2m" in raw  # (what the client wrote)
    with make_client(root) as client:
        page = client.get(f"/s/{OLD_COMPACT_ID}").text
        tree = client.get(f"/s/{OLD_COMPACT_ID}/tree").text
    for shown in (page, tree):
        assert "\x1b" not in shown
        assert "&lt;command-name&gt;" not in shown
        assert "&lt;local-command-stdout&gt;" not in shown
        assert "&lt;command-message&gt;" not in shown
    text = html.unescape(re.sub(r"<[^>]+>", " ", page))
    assert "/compact" in text
    # the output line as the client printed it, its escapes visible
    assert "\\x1b[2mCompacted (ctrl+o to see full summary)\\x1b[22m" in text


def test_a_local_command_record_reads_as_its_output(tmp_path: Path) -> None:
    root = copy_writable(CLEARED, tmp_path / "root")
    with make_client(root) as client:
        page = client.get(f"/s/{CLEARED_ID}").text
    assert "&lt;local-command-stdout&gt;" not in page
    assert "&lt;command-name&gt;" not in page
    text = html.unescape(re.sub(r"<[^>]+>", " ", page))
    assert "/clear" in text and "(no output)" in text


def test_sizes_are_counted_as_the_cli_counts_them(client: TestClient, demo: DemoSummary) -> None:
    """One rule for a size: the CLI's (1024 bytes to a KB)."""
    listing = client.get("/").text
    for session in demo.sessions:
        size = read_session_info(session.path).sizeBytes
        cells = re.findall(r'<td class="num">([^<]*)</td>', _row(listing, session.session_id))
        assert cells[0] == format_size(size), (cells, size)
        page = client.get(f"/s/{session.session_id}").text
        assert f" · {format_size(size)} · " in page
    assert not re.search(r"\d kB", listing)


def test_a_title_holding_escapes_shows_them(tmp_path: Path) -> None:
    """A custom title with ESC and a bidi override (a pasted log's): escapes on the
    listing, the session page and in its tab's title."""
    root = copy_writable(CLEARED, tmp_path / "root")
    path = next((root / "projects").rglob(f"{CLEARED_ID}.jsonl"))
    title = "\x1b]0;owned\x07 build \u202eevil"
    record = {"type": "custom-title", "customTitle": title, "sessionId": CLEARED_ID}
    with path.open("a") as out:
        out.write(json.dumps(record) + "\n")
    with make_client(root) as client:
        listing = client.get("/").text
        page = client.get(f"/s/{CLEARED_ID}").text
    for shown in (listing, page):
        assert "\x1b" not in shown and "\u202e" not in shown and "\x07" not in shown
        assert html.escape("\\x1b]0;owned\\x07 build \\u202eevil", quote=False) in shown


def test_checkpoints_and_switch_show_a_prompts_escapes(demo: DemoSummary) -> None:
    """A prompt holding a colour code (pasted from a terminal): its checkpoints and the
    switch preview of a branch show the code escaped."""
    from sessiontree.conversation.rewind import switchable_leaves

    rewinds = demo.session("rewinds")
    transcript = Transcript.open(rewinds.path)
    leaf = switchable_leaves(transcript)[0]
    above = transcript.record(leaf)
    assert above is not None
    lines = rewinds.path.read_text().splitlines(keepends=True)
    coloured = []
    for line in lines:
        record = json.loads(line)
        if record.get("type") == "user" and isinstance(record["message"]["content"], str):
            record["message"]["content"] = "\x1b[31m" + record["message"]["content"]
            line = json.dumps(record) + "\n"
        coloured.append(line)
    rewinds.path.write_text("".join(coloured))
    with make_client(demo.root) as client:
        checkpoints = client.get(f"/s/{rewinds.session_id}/checkpoints").text
        preview = client.get(f"/s/{rewinds.session_id}/switch", params={"to": leaf}).text
    for shown in (checkpoints, preview):
        assert "\x1b" not in shown
        assert "\\x1b[31m" in shown
