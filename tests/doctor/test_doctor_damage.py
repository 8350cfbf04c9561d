"""Each damage doctor names, on a real-client fixture damaged by hand, and what the read
faces do with it (they go on; they never raise, drop the record, or list it as normal)."""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from sessiontree.catalog.index import list_sessions
from sessiontree.checkpoints.read import read_checkpoints
from sessiontree.checkpoints.restore import plan_restore
from sessiontree.cli.main import cli
from sessiontree.conversation.transcript import Transcript
from sessiontree.doctor import check_transcript
from sessiontree.model.records import Problem
from sessiontree.storage.layout import Layout
from sessiontree.views.export import iter_json
from tests.conftest import FIXTURES, WILD, copy_writable

BASIC = "0f31836f-46f1-45f6-85ba-7878a822a884"
COMPACT = "a5ca052c-392f-46b5-b4fb-f97672a6248e"
ORIGINAL = (
    FIXTURES / "01-basic" / "claude-home" / "projects" / "-home-dev-01-basic" / f"{BASIC}.jsonl"
)
NEW_KINDS = {
    "too-deep",
    "bad-number",
    "bad-field",
    "missing-parent-key",
    "bad-last-prompt",
    "hostile-path",
    "self-link",
}

Edit = Callable[[list[bytes]], None]
_COPIES = itertools.count()


def damaged(tmp_path: Path, scenario: str, edit: Edit) -> tuple[Path, Path]:
    """(config root, transcript) of a fresh copy of ``scenario`` with ``edit`` applied to
    its main transcript's lines (1-based: ``lines[n - 1]`` is line n)."""
    root = copy_writable(FIXTURES / scenario / "claude-home", tmp_path / f"copy-{next(_COPIES)}")
    path = next(p for p in sorted((root / "projects").glob("*/*.jsonl")))
    lines = path.read_bytes().split(b"\n")[:-1]
    edit(lines)
    path.write_bytes(b"".join(line + b"\n" for line in lines))
    return root, path


def change(number: int, how: Callable[[dict[str, Any]], None]) -> Edit:
    def edit(lines: list[bytes]) -> None:
        record = json.loads(lines[number - 1])
        how(record)
        lines[number - 1] = json.dumps(record, separators=(",", ":")).encode()

    return edit


def doctor(root: Path, path: Path) -> list[Problem]:
    return check_transcript(path, layout=Layout(root))


def kinds_at(problems: list[Problem]) -> set[tuple[str, int | None]]:
    return {(p.kind, p.line) for p in problems}


def cli_run(root: Path, *args: str) -> Any:
    result = CliRunner().invoke(cli, ["--root", str(root), *args])
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    return result


def set_message(content: Any) -> Callable[[dict[str, Any]], None]:
    def how(record: dict[str, Any]) -> None:
        record["message"]["content"] = content

    return how


def test_content_of_non_objects_hides_no_session(tmp_path: Path) -> None:
    # The first prompt is what a listing reads for the title: this crashed `sessions`.
    root, path = damaged(tmp_path, "01-basic", change(6, set_message(["p1", 3, None])))
    assert BASIC in {row.sessionId for row in list_sessions(Layout(root))}
    rows = json.loads(cli_run(root, "sessions", "--all", "--json").stdout)
    assert [r["sessionId"] for r in rows] == [BASIC]
    assert ("bad-field", 6) in kinds_at(doctor(root, path))


def test_fields_of_the_wrong_type(tmp_path: Path) -> None:
    def edit(lines: list[bytes]) -> None:
        change(24, set_message(7))(lines)
        change(22, lambda r: r.pop("message"))(lines)
        change(37, lambda r: r.update(timestamp="yesterday"))(lines)

    root, path = damaged(tmp_path, "01-basic", edit)
    problems = doctor(root, path)
    assert {("bad-field", 24), ("bad-field", 22), ("bad-field", 37)} <= kinds_at(problems)
    details = " ".join(p.detail for p in problems)
    assert "message.content is int" in details and "no message" in details
    transcript = Transcript.open(path)
    assert transcript.context()  # read as absent content, not a crash
    assert {"22", "24"} <= {str(r.line) for r in transcript.active_records()}


def test_a_deleted_parent_key_is_named(tmp_path: Path) -> None:
    whole = Transcript.open(ORIGINAL)
    root, path = damaged(tmp_path, "01-basic", change(36, lambda r: r.pop("parentUuid")))
    cut = Transcript.open(path)
    assert len(cut.context()) < len(whole.context())  # what the damage does, silently
    assert ("missing-parent-key", 36) in kinds_at(doctor(root, path))


def test_last_prompt_naming_what_the_client_never_names(tmp_path: Path) -> None:
    def name(leaf: str) -> Edit:
        return change(66, lambda r: r.update(leafUuid=leaf))

    root, path = damaged(tmp_path, "01-basic", name("0badcafe-0000-4000-8000-000000000000"))
    assert ("bad-last-prompt", 66) in kinds_at(doctor(root, path))

    def sidechain(lines: list[bytes]) -> None:
        change(16, lambda r: r.update(isSidechain=True))(lines)
        name("5aa697f3-a5a9-4bd2-a8ce-bcc1a4f1f4f8")(lines)

    root, path = damaged(tmp_path, "01-basic", sidechain)
    uuid = json.loads(path.read_bytes().split(b"\n")[15])["uuid"]
    lines = path.read_bytes().split(b"\n")[:-1]
    name(uuid)(lines)
    path.write_bytes(b"".join(line + b"\n" for line in lines))
    found = [p for p in doctor(root, path) if p.kind == "bad-last-prompt"]
    assert found and "sidechain" in found[0].detail

    boundary = "1914684b-c314-40a4-9e00-8e0681b173a7"
    root, path = damaged(tmp_path, "06-compact", change(103, lambda r: r.update(leafUuid=boundary)))
    found = [p for p in doctor(root, path) if p.kind == "bad-last-prompt"]
    assert found and "compact_boundary" in found[0].detail


def test_the_client_s_own_last_prompts_are_fine(tmp_path: Path) -> None:
    """It names turn_duration records and attachments (fixtures 01, 13): not damage."""
    for scenario in ("01-basic", "13-big-tool-output"):
        root = FIXTURES / scenario / "claude-home"
        for path in (root / "projects").glob("*/*.jsonl"):
            assert not [p for p in doctor(root, path) if p.kind == "bad-last-prompt"]


def test_a_boundary_that_is_its_own_logical_parent(tmp_path: Path) -> None:
    root, path = damaged(
        tmp_path, "06-compact", change(70, lambda r: r.update(logicalParentUuid=r["uuid"]))
    )
    assert ("self-link", 70) in kinds_at(doctor(root, path))


def test_a_cycle_the_compaction_re_link_hides(tmp_path: Path) -> None:
    tail = "c91e76e7-81c6-4a78-8827-998a453c7099"
    root, path = damaged(tmp_path, "06-compact", change(63, lambda r: r.update(parentUuid=tail)))
    transcript = Transcript.open(path)
    assert transcript.tree.compaction_tail is not None
    assert not [p for p in transcript.tree.problems if p.kind == "cycle"]  # the loaded tree
    found = [p for p in doctor(root, path) if p.kind == "cycle"]
    assert found and "hidden by the compaction re-link" in found[0].detail


def test_invalid_utf8_in_a_metadata_record(tmp_path: Path) -> None:
    def edit(lines: list[bytes]) -> None:
        lines[28] = lines[28].replace(b'"lastPrompt":"', b'"lastPrompt":"\xff\xfe')

    root, path = damaged(tmp_path, "01-basic", edit)
    assert ("bad-utf8", 29) in kinds_at(doctor(root, path))


def test_a_number_out_of_range_keeps_its_record(tmp_path: Path) -> None:
    original = ORIGINAL
    want = Transcript.open(original).context()

    def edit(lines: list[bytes]) -> None:
        lines[26] = b'{"costUSD":1e999,' + lines[26][1:]

    root, path = damaged(tmp_path, "01-basic", edit)
    transcript = Transcript.open(path)
    assert transcript.context() == want  # not dropped from the context
    assert 27 in {r.line for r in transcript.active_records()}
    assert len(list(iter_json(transcript))) == len(list(iter_json(Transcript.open(original))))
    assert ("bad-number", 27) in kinds_at(doctor(root, path))
    shown = cli_run(root, "show", BASIC, "--json")
    assert shown.exit_code == 0


def test_a_line_nested_ten_thousand_deep(tmp_path: Path) -> None:
    def edit(lines: list[bytes]) -> None:
        lines[39] = lines[39][:-1] + b',"x":' + b"[" * 10_000 + b"]" * 10_000 + b"}"

    root, path = damaged(tmp_path, "01-basic", edit)
    assert ("too-deep", 40) in kinds_at(doctor(root, path))
    assert BASIC in {row.sessionId for row in list_sessions(Layout(root))}
    for args in (("context", BASIC, "--json"), ("show", BASIC), ("tree", BASIC)):
        assert cli_run(root, *args).exit_code == 0


HOSTILE = {
    "../../etc/passwd": "1129dc4b8e8aef4f@v1",
    "/etc/passwd": "1129dc4b8e8aef4f@v1",
    "notes.md\nfake.txt  v1  ok@v1": "1129dc4b8e8aef4f@v1",
    "long.txt": "/" + "a" * 400,
    "typed.txt": 7,
}


def add_hostile(lines: list[bytes]) -> None:
    def how(record: dict[str, Any]) -> None:
        tracked = record["snapshot"]["trackedFileBackups"]
        for path, name in HOSTILE.items():
            tracked[path] = {
                "backupFileName": name,
                "version": 1,
                "backupTime": "2026-11-29T00:00:00Z",
            }

    change(5, how)(lines)


def test_hostile_checkpoint_entries(tmp_path: Path) -> None:
    root, path = damaged(tmp_path, "01-basic", add_hostile)
    hostile = [p for p in doctor(root, path) if p.kind == "hostile-path"]
    assert len(hostile) == len(HOSTILE)  # and no OSError for the 401-character name
    assert not [p for p in doctor(root, path) if p.kind == "missing-backup" and "long" in p.detail]

    result = cli_run(root, "doctor", BASIC)
    assert result.exit_code == 1 and "Traceback" not in result.output

    listed = cli_run(root, "checkpoints", BASIC).stdout
    # A newline in a path does not fake a row.
    assert not [line for line in listed.splitlines() if line.startswith("fake.txt")]
    assert listed.count("damaged, never restored") == len(HOSTILE) - 1
    assert "/etc/passwd  v1  1129dc4b8e8aef4f@v1  (outside the project" in listed
    rows = json.loads(cli_run(root, "checkpoints", BASIC, "--json").stdout)
    damaged_entries = {p for row in rows for p, b in row["files"].items() if "damage" in b}
    assert damaged_entries == set(HOSTILE) - {"/etc/passwd"}  # only doctor knows every cwd

    transcript = Transcript.open(path)
    checkpoints = read_checkpoints(transcript)
    project = tmp_path / "project"
    project.mkdir()
    for allow in (False, True):
        plan = plan_restore(
            Layout(root),
            BASIC,
            project,
            checkpoints,
            checkpoints[0].message_id,
            allow_outside=allow,
        )
        steps = {s.tracking_path: s for s in plan.steps}
        for hostile_path in HOSTILE:
            if hostile_path == "/etc/passwd":
                continue  # outside the project: refused unless --allow-outside (tested there)
            assert steps[hostile_path].action == "skip", hostile_path
            assert "damaged checkpoint entry" in (steps[hostile_path].reason or "")
        if not allow:
            assert steps["/etc/passwd"].action == "skip"


def test_the_fixtures_have_none_of_this_damage(tmp_path: Path) -> None:
    for scenario in sorted(p.name for p in FIXTURES.iterdir() if (p / "claude-home").is_dir()):
        root = FIXTURES / scenario / "claude-home"
        for path in sorted((root / "projects").rglob("*.jsonl")):
            assert doctor(root, path) == [], path


@pytest.mark.skipif(not WILD.is_dir(), reason="the shared wild fixtures are not here")
def test_other_people_s_sessions_have_none_of_this_damage() -> None:
    """Sessions from clients 1.0.24 to 2.1.114: none of the new kinds. (They do have old
    damage: backups not published with them, one parent that is not in its file.)"""
    for home in sorted(WILD.glob("*/claude-home")):
        for path in sorted((home / "projects").rglob("*.jsonl")):
            found = {p.kind for p in doctor(home, path)}
            assert not found & NEW_KINDS, (path, found)


def test_a_tree_field_of_the_wrong_type_keeps_its_record(tmp_path: Path) -> None:
    """``timestamp: 12345`` or ``message: "text"`` no longer drop the record (its children
    used to dangle): the scan reads the field as absent and reports it, once."""

    def edit(lines: list[bytes]) -> None:
        change(37, lambda r: r.update(timestamp=12345))(lines)
        change(38, lambda r: r.update(message="a string", isSidechain="no"))(lines)

    root, path = damaged(tmp_path, "01-basic", edit)
    transcript = Transcript.open(path)
    for number in (37, 38):
        uuid = json.loads(path.read_bytes().split(b"\n")[number - 1])["uuid"]
        assert uuid in transcript.tree.nodes
        assert uuid in transcript.active_path
    assert not [p for p in transcript.tree.problems if p.kind == "dangling-parent"]
    found = [(p.kind, p.line) for p in doctor(root, path) if p.kind == "bad-field"]
    assert sorted(found) == [("bad-field", 37), ("bad-field", 38)]


def test_a_hostile_subagent_edit_is_never_restored(tmp_path: Path) -> None:
    from sessiontree.checkpoints.restore import RestorePlan, SubagentEdit, plan_subagent_edits

    project = tmp_path / "project"
    project.mkdir()
    edits = [
        SubagentEdit("a1", str(project / "nul\x00.txt"), "2026-01-02T00:00:00Z", b"old"),
        SubagentEdit("a1", str(project / "x\nfake.txt"), "2026-01-02T00:00:00Z", None),
        SubagentEdit("a1", f"{project}/../../etc/passwd", "2026-01-02T00:00:00Z", b"root"),
    ]
    for allow in (False, True):
        plan = RestorePlan("s", "p", project)
        plan_subagent_edits(plan, edits, "2026-01-01T00:00:00Z", allow_outside=allow)
        assert [s.action for s in plan.steps] == ["skip"] * 3
        assert all("damaged subagent edit" in (s.reason or "") for s in plan.steps)
