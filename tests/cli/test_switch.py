"""``sessiontree switch``: another branch becomes the one the client resumes."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from sessiontree.cli.main import cli
from sessiontree.conversation.transcript import Transcript
from sessiontree.lifecycle.live import register_live_session
from sessiontree.storage.layout import Layout

REWIND = "b06189e0-a90e-451c-aa38-609447827575"
P2 = "68cc9d25-76cb-4830-9aed-37d0a46978c6"
P3_END = "960de76f-3382-45aa-a562-e2872eb76511"  # the rewound branch's leaf (p3's turn end)
P3_REPLY = "5140c1e6-358a-4298-b277-92fc2e7f14a3"
P4_END = "e22bcc9a-3a78-4c98-96e5-f9a656ba1e12"
P4_REPLY = "9905a8d3-a528-4b5d-bb36-7e4beb69967c"


def transcript_path(root: Path) -> Path:
    return next((root / "projects").glob("*/*.jsonl"))


def invoke(root: Path, *args: str, code: int = 0) -> tuple[str, str]:
    result = CliRunner().invoke(cli, ["--root", str(root), *args])
    assert result.exit_code == code, result.output
    return result.stdout, result.stderr


def doc_of(root: Path, *args: str) -> dict[str, object]:
    out, _ = invoke(root, *args, "--json")
    doc = json.loads(out)
    assert isinstance(doc, dict)
    return doc


def test_dry_run_says_what_becomes_active_and_changes_nothing(rewind: Path) -> None:
    path = transcript_path(rewind)
    before = path.read_bytes()
    doc = doc_of(rewind, "switch", REWIND, "--to", P3_END[:8], "--dry-run")
    assert path.read_bytes() == before
    assert doc == {
        "sessionId": REWIND,
        "leafUuid": P3_REPLY,  # what the client would resume
        "toUuid": P3_END,
        "branchLeafUuid": P3_END,
        "previousLeafUuid": P4_REPLY,
        "record": {
            "type": "last-prompt",
            "lastPrompt": doc["record"]["lastPrompt"],  # type: ignore[index]
            "leafUuid": P3_END,
            "explicit": True,
            "sessionId": REWIND,
        },
        "dryRun": True,
        "cwd": "/home/dev/02-rewind-both",
    }
    assert str(doc["record"]["lastPrompt"]).startswith("p3 edit and bash")  # type: ignore[index]
    out, _ = invoke(rewind, "switch", REWIND, "--to", P3_END[:8], "--dry-run")
    assert f"would resume from {P3_REPLY[:8]}: Done with 2 steps." in out
    assert "its last prompt: p3 edit and bash" in out
    assert 'would append: {"type":"last-prompt","lastPrompt":"p3 edit' in out
    assert f"then undo with: sessiontree --root {rewind} switch {REWIND} --to {P4_END[:8]}" in out
    assert "claude -r" not in out
    assert path.read_bytes() == before


def test_switch_appends_one_line_and_every_reader_follows(rewind: Path) -> None:
    path = transcript_path(rewind)
    before = path.read_bytes()
    doc = doc_of(rewind, "switch", REWIND, "--to", P3_END[:8])
    after = path.read_bytes()
    assert after.startswith(before) and after.count(b"\n") == before.count(b"\n") + 1
    assert json.loads(after.splitlines()[-1]) == doc["record"]
    assert doc["leafUuid"] == P3_REPLY == Transcript.open(path).leaf  # the resume model agrees
    assert doc["dryRun"] is False
    tree = doc_of(rewind, "tree", REWIND)
    assert tree["leafUuid"] == P3_REPLY and tree["offPathLeaves"] == [P4_END]
    shown = doc_of(rewind, "show", REWIND)
    texts = [m["text"][:2] for m in shown["messages"] if m["role"] == "user"]  # type: ignore[attr-defined]
    assert [t for t in texts if t in ("p1", "p2", "p3", "p4")] == ["p1", "p2", "p3"]
    context = json.dumps(doc_of(rewind, "context", REWIND))
    assert "p3 edit and bash" in context and "p4 after rewind" not in context
    prompts = json.loads(invoke(rewind, "prompts", REWIND, "--json")[0])
    assert [r["onActivePath"] for r in prompts] == [True, True, True, False]


def test_switch_prints_how_to_continue_and_how_to_undo(rewind: Path) -> None:
    out, _ = invoke(rewind, "switch", REWIND, "--to", P2[:8])  # a prompt: its newest leaf
    assert out.startswith(f"{P2[:8]} is not a leaf: its newest leaf is {P3_END[:8]}\n")
    assert f"the client now resumes from {P3_REPLY[:8]}" in out
    assert "appended: {" in out
    undo = f"sessiontree --root {rewind} switch {REWIND} --to {P4_END[:8]}"
    assert f"undo with: {undo}" in out
    assert out.endswith(
        "continue in the client: cd /home/dev/02-rewind-both && "
        f"CLAUDE_CONFIG_DIR={rewind} claude -r {REWIND}\n"
    )
    invoke(rewind, *undo.split()[3:])  # the undo, as printed
    assert Transcript.open(transcript_path(rewind)).leaf == P4_REPLY


def test_switch_back_undoes_a_rewind(rewind: Path) -> None:
    original = doc_of(rewind, "context", REWIND)
    invoke(rewind, "rewind", REWIND, "--to", "-1")
    assert doc_of(rewind, "context", REWIND) != original
    doc = doc_of(rewind, "switch", REWIND, "--to", P4_END[:8])
    assert doc["leafUuid"] == P4_REPLY
    assert doc_of(rewind, "context", REWIND) == original


def test_the_active_branch_is_left_as_it_is(rewind: Path) -> None:
    path = transcript_path(rewind)
    before = path.read_bytes()
    out, _ = invoke(rewind, "switch", REWIND, "--to", P4_REPLY[:8])
    assert f"{P4_REPLY[:8]} is already the leaf the client resumes: nothing to do" in out
    doc = doc_of(rewind, "switch", REWIND, "--to", P4_END)
    assert doc["record"] is None and doc["leafUuid"] == P4_REPLY
    assert path.read_bytes() == before


@pytest.mark.parametrize(
    ("target", "code", "says"),
    [
        ("2", 1, "'2': switch takes a uuid or prefix (4+ characters), not a number"),
        ("-1", 1, "'-1': switch takes a uuid or prefix"),
        ("96d", 1, "'96d' is neither a prompt number"),
        ("123", 1, "'123': switch takes a uuid or prefix (4+ characters), not a number"),
        ("12345678", 1, "'12345678': switch takes a uuid or prefix"),
        ("ffffffff", 1, "no record"),
    ],
)
def test_a_bad_target_is_refused_in_one_line(
    rewind: Path, target: str, code: int, says: str
) -> None:
    path = transcript_path(rewind)
    before = path.read_bytes()
    out, err = invoke(rewind, "switch", REWIND, "--to", target, code=code)
    assert out == "" and err.startswith(f"sessiontree: {says}") and err.count("\n") == 1
    assert path.read_bytes() == before


def test_a_short_id_of_digits_names_its_record(rewind: Path) -> None:
    # The rewound branch's leaf given an id whose short form (as `tree` and `prompts`
    # print it) is all digits: a prefix, not a number.
    path = transcript_path(rewind)
    digits = "96012345" + P3_END[8:]
    path.write_text(path.read_text().replace(P3_END, digits))
    doc = doc_of(rewind, "switch", REWIND, "--to", digits[:8])
    assert doc["toUuid"] == doc["branchLeafUuid"] == digits
    assert doc["leafUuid"] == P3_REPLY


def test_what_a_compaction_summarized_away_is_refused(fixture_root) -> None:  # type: ignore[no-untyped-def]
    root = fixture_root("06-compact")
    (leaf,) = doc_of(root, "tree", "a5ca052c")["offPathLeaves"]  # type: ignore[misc]
    _, err = invoke(root, "switch", "a5ca052c", "--to", leaf[:8], code=1)
    assert "summarized away by a compaction" in err and "fork --at" in err


def test_a_session_a_running_client_holds_is_refused_unless_forced(rewind: Path) -> None:
    path = transcript_path(rewind)
    before = path.read_bytes()
    with subprocess.Popen(["sleep", "60"]) as holder:
        try:
            register_live_session(Layout(rewind), session_id=REWIND, cwd="/w", pid=holder.pid)
            _, err = invoke(rewind, "switch", REWIND, "--to", P3_END[:8], code=1)
            assert f"open in a running process (pid {holder.pid})" in err
            assert path.read_bytes() == before
            invoke(rewind, "switch", REWIND, "--to", P3_END[:8], "--dry-run")
            assert path.read_bytes() == before
            invoke(rewind, "switch", REWIND, "--to", P3_END[:8], "--force")
            assert Transcript.open(path).leaf == P3_REPLY
        finally:
            holder.kill()


def test_tree_and_prompts_show_the_leaves_to_switch_to(rewind: Path) -> None:
    out, _ = invoke(rewind, "tree", REWIND)
    # named by the reply it resumes at (its turn_duration leaf is no line of the tree);
    # --to that reply stands for its newest leaf, that turn's end
    assert f"branches to switch to (switch SESSION --to ID): {P3_REPLY[:8]}\n" in out
    prompts = json.loads(invoke(rewind, "prompts", REWIND, "--json")[0])
    assert [r["branchLeafUuid"] for r in prompts] == [P4_END, P3_END, P3_END, P4_END]
    invoke(rewind, "switch", REWIND, "--to", prompts[1]["branchLeafUuid"][:8])
    out, _ = invoke(rewind, "tree", REWIND)
    assert f"switch SESSION --to ID): {P4_REPLY[:8]}\n" in out
