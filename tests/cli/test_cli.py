"""The CLI contract (docs/CLI.md): every read command, its --json shape, its exit codes."""

from __future__ import annotations

import importlib
import json
import os
import pkgutil
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import click
import pytest
from click.testing import CliRunner

import sessiontree.cli
from sessiontree.cli.main import COMMANDS, cli, main
from tests.conftest import FIXTURES

BASIC = "0f31836f-46f1-45f6-85ba-7878a822a884"
REWIND = "b06189e0-a90e-451c-aa38-609447827575"


def run(root: Path, *args: str, code: int = 0) -> str:
    result = CliRunner().invoke(cli, ["--root", str(root), *args], catch_exceptions=False)
    assert result.exit_code == code, result.output
    return result.output


def run_json(root: Path, *args: str) -> object:
    return json.loads(run(root, *args, "--json"))


def test_every_command_has_help() -> None:
    for name in COMMANDS:
        result = CliRunner().invoke(cli, [name, "--help"])
        assert result.exit_code == 0, name
        assert "Usage:" in result.output
        assert len(result.output.splitlines()) > 3, name


def test_help_stays_light() -> None:
    code = (
        "import sys; from sessiontree.cli.main import cli; "
        "heavy = [m for m in ('rich', 'sessiontree.cli.read', 'sessiontree.demo', "
        "'sessiontree.session.session', 'sessiontree.conversation.transcript', "
        "'sessiontree.cleanup', "
        "'sessiontree.lifecycle', 'sessiontree.web', 'sessiontree.views.html', 'starlette', "
        "'uvicorn', 'jinja2', 'markdown_it', 'msgspec', 'hashlib', "
        "'sessiontree.storage.layout', 'sessiontree.model.records') "
        "if m in sys.modules]; "
        "print(','.join(heavy))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""


def test_version_is_answered_before_click_as_click_answers_it() -> None:
    """``sessiontree --version`` (the console script's entry) prints what the click group's
    ``--version`` prints, without importing click or the commands."""
    code = (
        "import sys; sys.argv = ['sessiontree', '--version']; "
        "from sessiontree.cli.entry import main; main(); "
        "print('LOADED:' + ','.join(m for m in ('click', 'sessiontree.cli.main') "
        "if m in sys.modules))"
    )
    fast = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    version, loaded = fast.stdout.splitlines()
    assert loaded == "LOADED:"
    assert version + "\n" == CliRunner().invoke(cli, ["--version"], prog_name="sessiontree").output
    # anything else is the group's
    code = (
        "import sys; sys.argv = ['sessiontree', '--help']; "
        "from sessiontree.cli.entry import main; main()"
    )
    full = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert full.returncode == 0 and "Usage: sessiontree" in full.stdout


_CONTEXT_PROBE = """
import sys
from sessiontree.cli.main import main
try:
    main(["--root", sys.argv[1], "context", sys.argv[2], "--json"])
except SystemExit as exc:
    assert exc.code in (0, None), exc.code
heavy = ("rich", "sessiontree.doctor", "sessiontree.catalog.search", "sessiontree.history",
         "sessiontree.cleanup", "sessiontree.views.terminal",
         # a transcript named by its path: no OpenSSL
         "hashlib")
print("HEAVY:" + ",".join(m for m in heavy if m in sys.modules), file=sys.stderr)
"""


def test_context_json_loads_only_what_it_needs(basic: Path) -> None:
    """The command people pipe the most loads no renderer and no other command's code."""
    session = next(basic.glob("projects/*/*.jsonl"))
    out = subprocess.run(
        [sys.executable, "-c", _CONTEXT_PROBE, str(basic), str(session)],
        capture_output=True,
        text=True,
        check=True,
    )
    assert json.loads(out.stdout)["messages"]
    assert out.stderr.strip().splitlines()[-1] == "HEAVY:"


_LISTING_PROBE = """
import sys
from sessiontree.cli.main import main
try:
    main(["--root", sys.argv[1], *sys.argv[2:]])
except SystemExit as exc:
    assert exc.code in (0, None), exc.code
heavy = ("rich", "sessiontree.views.shapes", "sessiontree.model.builders.chain",
         "sessiontree.model.builders.tools", "sessiontree.doctor", "sessiontree.cleanup",
         "json", "psycopg")
print("HEAVY:" + ",".join(m for m in heavy if m in sys.modules), file=sys.stderr)
"""


@pytest.mark.parametrize(
    "args",
    [
        ["sessions", "--all", "--json"],
        ["search", "hello", "--all", "--json"],
    ],
    ids=["sessions", "search"],
)
def test_listing_and_search_json_load_no_renderer(
    basic: Path, tmp_path: Path, args: list[str]
) -> None:
    """What scripts run most (and what the peers are timed against, issue 29) starts
    light: no rich, no record builders but history's, no stdlib json, no store driver."""
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache")}
    out = subprocess.run(
        [sys.executable, "-c", _LISTING_PROBE, str(basic), *args],
        capture_output=True,
        text=True,
        check=True,
        env=env,
    )
    assert isinstance(json.loads(out.stdout), list)
    assert out.stderr.strip().splitlines()[-1] == "HEAVY:"


_HELP_PROBE = """
import sys
from sessiontree.cli.main import main
try:
    main(["--help"])
except SystemExit as exc:
    assert exc.code == 0, exc.code
loaded = [m for m in sys.modules if m.startswith("sessiontree.cli.")]
loaded.remove("sessiontree.cli.main")
print("LOADED:" + ",".join(sorted(loaded)))
"""


def test_help_lists_every_command_on_one_line_without_importing_any() -> None:
    """``sessiontree --help`` as a user runs it: each command once, on one line, with the
    help line from the table, and no command module imported to print it."""
    env = {**os.environ, "COLUMNS": "80"}
    out = subprocess.run(
        [sys.executable, "-c", _HELP_PROBE], capture_output=True, text=True, check=True, env=env
    ).stdout
    text, loaded = out.rsplit("LOADED:", 1)
    assert loaded.strip() == ""
    section = text.split("\nCommands:\n", 1)[1].rstrip("\n").splitlines()
    rows = [line.split(maxsplit=1) for line in section]
    assert all(line.startswith("  ") and not line.startswith("   ") for line in section), section
    assert [name for name, _help in rows] == sorted(COMMANDS)
    for name, one_line in rows:
        assert one_line == COMMANDS[name][1], name


def _cli_commands() -> dict[str, click.Command]:
    """Every click command defined in a ``sessiontree.cli`` module, by its name (a
    group's own subcommands are the group's, not the tool's)."""
    found: dict[str, click.Command] = {}
    inner: set[int] = set()
    for info in pkgutil.walk_packages(sessiontree.cli.__path__, "sessiontree.cli."):
        module = importlib.import_module(info.name)
        for value in vars(module).values():
            if (
                isinstance(value, click.Command)
                and value.callback is not None
                and value.callback.__module__ == module.__name__
                and (module.__name__ != "sessiontree.cli.main")
            ):
                assert value.name is not None
                found[value.name] = value
                if isinstance(value, click.Group):
                    inner.update(id(sub) for sub in value.commands.values())
    return {name: command for name, command in found.items() if id(command) not in inner}


def test_the_help_table_names_each_command_and_its_own_help_works() -> None:
    commands = _cli_commands()
    assert set(commands) == set(COMMANDS)  # none left out of `sessiontree --help`
    for name, (target, one_line) in COMMANDS.items():
        module_name, attribute = target.split(":")
        command = getattr(importlib.import_module(module_name), attribute)
        assert command is commands[name], f"{name} points at {command.name}"
        assert one_line and "\n" not in one_line and one_line.endswith("."), name
        assert command.help, f"{name} has no help of its own"
        result = CliRunner().invoke(cli, [name, "--help"], catch_exceptions=False)
        assert result.exit_code == 0, name
        assert result.output.startswith(f"Usage: cli {name} "), name
        first = " ".join(command.help.split("\n\n")[0].split())
        assert first in " ".join(result.output.split()), name


def test_sessions_all_json_shape(basic: Path) -> None:
    rows = run_json(basic, "sessions", "--all")
    assert isinstance(rows, list) and len(rows) == 1
    row = rows[0]
    assert list(row) == [
        "sessionId",
        "cwd",
        "projectDir",
        "path",
        "title",
        "firstPrompt",
        "startedAt",
        "updatedAt",
        "messageCount",
        "sizeBytes",
        "live",
    ]
    assert row["sessionId"] == BASIC
    assert row["cwd"] == "/home/dev/01-basic"
    assert row["title"].startswith("p1 create a")
    assert row["messageCount"] == 34  # the client's count at the last turn end
    assert row["sizeBytes"] == Path(row["path"]).stat().st_size


def test_sessions_by_project_scope(basic: Path) -> None:
    assert run_json(basic, "sessions", "--project", "/home/dev/01-basic") != []
    assert run_json(basic, "sessions", "--project", "/elsewhere") == []


def test_sessions_cache_sees_appends(basic: Path) -> None:
    first = run_json(basic, "sessions", "--all")[0]  # type: ignore[index]
    path = Path(first["path"])
    with path.open("a") as handle:
        handle.write(
            json.dumps({"type": "custom-title", "customTitle": "Renamed", "sessionId": BASIC})
            + "\n"
        )
    again = run_json(basic, "sessions", "--all")[0]  # type: ignore[index]
    assert again["title"] == "Renamed"
    assert again["messageCount"] == first["messageCount"]
    assert again["sizeBytes"] > first["sizeBytes"]


def test_session_reference_forms(basic: Path) -> None:
    path = next((basic / "projects").glob("*/*.jsonl"))
    for ref in (BASIC, BASIC[:8], str(path)):
        assert run_json(basic, "context", ref)["sessionId"] == BASIC  # type: ignore[index]
    with path.open("a") as handle:
        handle.write(
            json.dumps({"type": "custom-title", "customTitle": "my work", "sessionId": BASIC})
            + "\n"
        )
    assert run_json(basic, "context", "my work")["sessionId"] == BASIC  # type: ignore[index]


def test_ambiguous_prefix_exits_2(basic: Path) -> None:
    project = next((basic / "projects").iterdir())
    src = project / f"{BASIC}.jsonl"
    twin = BASIC[:4] + "ffff" + BASIC[8:]
    shutil.copy(src, project / f"{twin}.jsonl")
    result = CliRunner().invoke(cli, ["--root", str(basic), "show", BASIC[:4]])
    assert result.exit_code == 2
    assert BASIC in result.output and twin in result.output


def test_not_found_is_one_line_exit_1(basic: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["--root", str(basic), "show", "deadbeef"])
    assert exit_info.value.code == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "deadbeef" in err and "Traceback" not in err


def test_show_json_active_path(rewind: Path) -> None:
    doc = run_json(rewind, "show", REWIND)
    assert isinstance(doc, dict)
    texts = [m["text"] for m in doc["messages"] if m["type"] == "user"]
    assert any(t.startswith("p1") for t in texts) and any(t.startswith("p4") for t in texts)
    assert not any(t.startswith("p2") for t in texts)  # rewound away
    assert set(doc["messages"][0]) == {"uuid", "type", "role", "text", "timestamp"}


def test_show_all_branches_includes_rewound(rewind: Path) -> None:
    doc = run_json(rewind, "show", REWIND, "--all-branches")
    assert isinstance(doc, dict)
    off = [m for m in doc["messages"] if not m["onActivePath"]]
    assert any(m["text"].startswith("p2") for m in off)
    assert doc["forkPoints"][0]["uuid"].startswith("cd7d3add")
    human = run(rewind, "show", REWIND, "--all-branches")
    assert "○" in human and "●" in human and "p2 read and edit" in human


def test_tree_json_shape(rewind: Path) -> None:
    doc = run_json(rewind, "tree", REWIND)
    assert isinstance(doc, dict)
    assert set(doc) == {
        "sessionId",
        "leafUuid",
        "activePath",
        "nodes",
        "forkPoints",
        "offPathLeaves",
        "subagents",
    }
    # the leaf is the last prompt or reply on the path; the turn end after it follows
    kinds = {n["uuid"]: n["type"] for n in doc["nodes"]}
    on_path_messages = [u for u in doc["activePath"] if kinds[u] in ("user", "assistant")]
    assert doc["leafUuid"] in doc["activePath"]
    assert on_path_messages[-1] == doc["leafUuid"] == "9905a8d3-a528-4b5d-bb36-7e4beb69967c"
    assert doc["activePath"][-1] == "e22bcc9a-3a78-4c98-96e5-f9a656ba1e12"  # p4's turn end
    node = doc["nodes"][0]
    assert set(node) == {
        "uuid",
        "parentUuid",
        "logicalParentUuid",
        "type",
        "subtype",
        "isSidechain",
        "onActivePath",
        "text",
    }
    on_path = {n["uuid"] for n in doc["nodes"] if n["onActivePath"]}
    assert on_path == set(doc["activePath"])
    assert doc["forkPoints"] == [
        {
            "uuid": "cd7d3add-c783-4038-a2ec-0e7e2285237e",
            "children": [
                "68cc9d25-76cb-4830-9aed-37d0a46978c6",
                "92d1c3f4-05c0-4d88-acb4-c66b8ab2f637",
            ],
        }
    ]
    assert [u[:8] for u in doc["offPathLeaves"]] == ["960de76f"]  # p3's turn end, rewound
    assert doc["subagents"] == []


def test_context_json_matches_truth(rewind: Path) -> None:
    truth = json.loads(
        (FIXTURES / "02-rewind-both" / "truth" / f"resume-{REWIND}.json").read_text()
    )
    doc = run_json(rewind, "context", REWIND)
    assert isinstance(doc, dict)
    assert [m["role"] for m in doc["messages"]] == [m["role"] for m in truth["messages"]][:-2]


def test_read_commands_cache_the_skeleton_outside_the_root_and_read_the_same(
    rewind: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SESSIONTREE_CACHE_DIR", str(tmp_path / "st-cache"))
    (path,) = (rewind / "projects").rglob(f"{REWIND}.jsonl")
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    run(rewind, "tree", REWIND, "--json")  # cached: the first half, torn mid-line
    assert list((tmp_path / "st-cache").glob("skeleton-*.msgpack"))
    path.write_bytes(data)  # grown back
    for command in ("context", "show", "tree", "prompts"):
        warm = run(rewind, command, REWIND, "--json")
        monkeypatch.setenv("SESSIONTREE_CACHE_DIR", str(rewind / "inside-the-root"))
        cold = run(rewind, command, REWIND, "--json")  # a cache inside the root is unused
        monkeypatch.setenv("SESSIONTREE_CACHE_DIR", str(tmp_path / "st-cache"))
        assert warm == cold, command
    assert not (rewind / "inside-the-root").exists()


def test_no_cache_is_written_in_a_cache_folder_inside_the_root(
    rewind: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Listing, search and resolving a session write their caches only outside the root:
    one that points inside it (a mistaken $SESSIONTREE_CACHE_DIR) is left unused."""
    monkeypatch.setenv("SESSIONTREE_CACHE_DIR", str(rewind / "inside-the-root"))
    for args in (["sessions", "--all"], ["search", "the", "--all"], ["context", REWIND[:8]]):
        run(rewind, *args, "--json")
    assert not (rewind / "inside-the-root").exists()


COMPACTED = "a5ca052c-392f-46b5-b4fb-f97672a6248e"


@pytest.mark.parametrize(
    "command",
    [("context", "--json"), ("show", "--json"), ("export", "--format", "md", "-o", "-")],
    ids=["context", "show", "export-md"],
)
def test_a_compacted_sessions_active_path_is_read_from_its_tail_and_says_the_same(
    fixture_root: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, command: tuple[str, ...]
) -> None:
    """``context``, ``show`` and ``export --format md`` (of the active path) read a
    compacted session's tail, cold and after an append, and print what a whole read
    prints."""
    root: Path = fixture_root("06-compact")
    (path,) = (root / "projects").rglob(f"{COMPACTED}.jsonl")
    cache = tmp_path / "st-cache"
    monkeypatch.setenv("SESSIONTREE_CACHE_DIR", str(cache))
    first = run(root, command[0], COMPACTED, *command[1:])  # cold: caches the tail alone
    (written,) = cache.glob("skeleton-*.msgpack")
    tail_only = written.stat().st_size
    last = json.loads(path.read_bytes().splitlines()[-1])
    turn = {
        "type": "user",
        "uuid": "6b0f3f5e-0000-4000-8000-000000000001",
        "parentUuid": last.get("uuid"),
        "timestamp": "2099-01-01T00:00:00.000Z",
        "sessionId": COMPACTED,
        "message": {"role": "user", "content": "one more thing"},
    }
    with path.open("ab") as handle:
        handle.write(json.dumps(turn).encode() + b"\n")
    warm = run(root, command[0], COMPACTED, *command[1:])  # warm: the tail and the new line
    assert written.stat().st_size == tail_only  # (a whole read would have cached the head)
    monkeypatch.setenv("SESSIONTREE_CACHE_DIR", str(root / "inside-the-root"))
    whole = run(root, command[0], COMPACTED, *command[1:])  # no cache: the whole file
    assert warm == whole != first
    assert "one more thing" in warm
    monkeypatch.setenv("SESSIONTREE_CACHE_DIR", str(cache))
    run(root, "tree", COMPACTED, "--json")  # a whole read caches the head too
    assert written.stat().st_size > tail_only


def test_prompts_json(rewind: Path) -> None:
    rows = run_json(rewind, "prompts", REWIND)
    assert isinstance(rows, list)
    assert [r["text"][:2] for r in rows] == ["p1", "p2", "p3", "p4"]
    assert [r["onActivePath"] for r in rows] == [True, False, False, True]
    assert all(r["checkpoint"] for r in rows)
    assert set(rows[0]) == {
        "uuid",
        "text",
        "timestamp",
        "onActivePath",
        "checkpoint",
        "compacted",
        "number",
        "checkpointGone",
        "branchLeafUuid",
        "sessionId",
    }
    assert not any(r["compacted"] for r in rows)
    assert not any(r["checkpointGone"] for r in rows)
    assert [r["number"] for r in rows] == [1, None, None, 2]  # the active path's, in order


def _rewind_dry_run(root: Path, prompt: str) -> str:
    doc = run_json(root, "rewind", REWIND, "--to", prompt, "--dry-run")
    assert isinstance(doc, dict)
    return str(doc["promptUuid"])


def test_prompt_numbers_count_the_active_path(rewind: Path) -> None:
    rows = run_json(rewind, "prompts", REWIND)
    assert isinstance(rows, list)
    p1, p2, p3, p4 = (str(r["uuid"]) for r in rows)  # p2, p3: rewound away
    assert _rewind_dry_run(rewind, "2") == p4  # the 2nd of the active path, not p2
    assert _rewind_dry_run(rewind, "1") == _rewind_dry_run(rewind, "-2") == p1
    assert _rewind_dry_run(rewind, "-1") == p4
    assert _rewind_dry_run(rewind, p2[:4]) == p2  # a uuid prefix of 4+ still names any
    assert _rewind_dry_run(rewind, p3.upper()) == p3
    human = run(rewind, "prompts", REWIND)
    assert [line.split()[:2] for line in human.splitlines()[1:5]] == [
        ["1", "●"],
        ["○", p2[:8]],
        ["○", p3[:8]],
        ["2", "●"],
    ]


@pytest.mark.parametrize(
    ("prompt", "says"),
    [
        ("0", "no prompt of the 2 on the active path"),
        ("99", "no prompt of the 2 on the active path"),
        ("-3", "no prompt of the 2 on the active path"),
        ("9", "no prompt of the 2 on the active path"),  # not p4's uuid (92d1c3f4)
        pytest.param("1" * 5000, "no prompt of the 2 on the active path", id="5000-digits"),
        ("68c", "'68c' is neither a prompt number"),  # p2's uuid, too short a prefix
        ("x", "'x' is neither a prompt number"),
    ],
)
def test_a_prompt_out_of_range_or_too_short_is_refused_in_one_line(
    rewind: Path, prompt: str, says: str
) -> None:
    path = next((rewind / "projects").glob("*/*.jsonl"))
    before = path.read_bytes()
    result = CliRunner().invoke(cli, ["--root", str(rewind), "rewind", REWIND, "--to", prompt])
    assert result.exit_code == 1, result.output
    assert result.stdout == ""
    assert result.stderr.startswith(f"sessiontree: {says}")
    assert result.stderr.count("\n") == 1
    assert path.read_bytes() == before


def test_checkpoints_json_folds_deltas(rewind: Path) -> None:
    rows = run_json(rewind, "checkpoints", REWIND)
    assert isinstance(rows, list)
    first = rows[0]
    assert first["messageId"].startswith("e42339f0")
    assert first["files"] == {"a.txt": {"version": 1, "backupFileName": None}}
    last = rows[-1]
    assert last["files"]["c.txt"] == {"version": 1, "backupFileName": None}
    assert last["files"]["notes.md"]["version"] == 3


def test_history_expands_paste(fixture_root) -> None:  # type: ignore[no-untyped-def]
    root = fixture_root("12-big-paste")
    rows = run_json(root, "history", "--search", "quick brown")
    assert isinstance(rows, list) and len(rows) == 1
    assert "[Pasted text #1" in rows[0]["display"]
    assert rows[0]["text"].count("pasted line") == 40
    assert set(rows[0]) == {"display", "text", "timestamp", "project", "sessionId", "time"}


def test_search_finds_rewound_branch(rewind: Path) -> None:
    hits = run_json(rewind, "search", "p3 edit and bash", "--all")
    assert isinstance(hits, list) and hits
    assert all(not h["onActivePath"] for h in hits if h["type"] == "user")
    # The index's hit: every key the scan gives, and what the index adds (docs/CLI.md).
    assert set(hits[0]) == SEARCH_SCAN_KEYS | SEARCH_INDEX_KEYS
    scanned = run_json(rewind, "search", "p3 edit and bash", "--all", "--no-index")
    assert isinstance(scanned, list) and scanned
    assert set(scanned[0]) == SEARCH_SCAN_KEYS
    assert {h["uuid"] for h in scanned} <= {h["uuid"] for h in hits}


SEARCH_SCAN_KEYS = {"sessionId", "uuid", "type", "onActivePath", "snippet"}
SEARCH_INDEX_KEYS = {
    "highlights", "rank", "kind", "role", "toolName", "timestamp", "project", "projectDir",
    "path", "source", "agentId", "isSidechain", "line", "offset",
}  # fmt: skip


def test_doctor_reports_problems(basic: Path) -> None:
    assert run_json(basic, "doctor") == {"ok": True, "problems": []}
    path = next((basic / "projects").glob("*/*.jsonl"))
    with path.open("ab") as handle:
        handle.write(b'{"type":"user","uuid":"x","parentUuid":"nowhere"}\n{"torn": ')
    for backup in (basic / "file-history").rglob("*@v2"):
        backup.unlink()
    result = CliRunner().invoke(cli, ["--root", str(basic), "doctor", BASIC, "--json"])
    assert result.exit_code == 1
    doc = json.loads(result.output)
    kinds = {p["kind"] for p in doc["problems"]}
    assert {"torn-line", "dangling-parent", "missing-backup"} <= kinds
    assert doc["ok"] is False


def test_export_formats(rewind: Path, tmp_path: Path) -> None:
    md = run(rewind, "export", REWIND, "--format", "md", "-o", "-")
    assert md.startswith(f"# Session {REWIND}") and "p4 after rewind" in md
    assert "p2 read and edit" not in md
    doc = json.loads(run(rewind, "export", REWIND, "--format", "json", "-o", "-"))
    lines = next((rewind / "projects").glob("*/*.jsonl")).read_text().splitlines()
    assert doc["records"] == [json.loads(line) for line in lines]
    target = tmp_path / "out.html"
    run(rewind, "export", REWIND, "--format", "html", "-o", str(target))
    assert "<h1>" in target.read_text()
    run(rewind, "export", REWIND, "--format", "html", "-o", str(target), code=1)
    run(rewind, "export", REWIND, "--format", "html", "-o", str(target), "--force")


def test_end_to_end_subprocess(basic: Path) -> None:
    exe = Path(sys.executable).with_name("sessiontree")
    out = subprocess.run(
        [str(exe), "--root", str(basic), "context", BASIC[:6], "--json"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert json.loads(out.stdout)["sessionId"] == BASIC
    bad = subprocess.run(
        [str(exe), "--root", str(basic), "tree", "zzzz-not-there"], capture_output=True, text=True
    )
    assert bad.returncode == 1 and "Traceback" not in bad.stderr


def test_prompts_mark_compacted_and_skip_command_records(fixture_root) -> None:  # type: ignore[no-untyped-def]
    root = fixture_root("06-compact")
    rows = run_json(root, "prompts", "a5ca052c")
    assert isinstance(rows, list)
    assert [r["text"][:2] for r in rows] == ["p1", "p2", "p3", "p4"]  # no /compact records
    assert [r["compacted"] for r in rows] == [True, True, True, False]
    assert [r["onActivePath"] for r in rows] == [False, False, False, True]


def test_a_damaged_transcript_gets_one_warning_line_with_a_runnable_doctor_hint(
    basic: Path,
) -> None:
    (path,) = (basic / "projects").rglob(f"{BASIC}.jsonl")
    with path.open("ab") as handle:
        handle.write(b'{"type":"user","uuid":"torn')  # a write cut short
    for command in (["show"], ["show", "--json"], ["tree", "--json"], ["context", "--json"]):
        result = CliRunner().invoke(cli, ["--root", str(basic), *command, BASIC])
        assert result.exit_code == 0, result.output
        warnings = result.stderr.splitlines()
        assert len(warnings) == 1, result.stderr
        assert warnings[0].startswith("sessiontree: warning: 1 problem(s)")
        assert "(torn-line)" in warnings[0]
        assert warnings[0].endswith(f"see: sessiontree --root {basic} doctor {BASIC}")
        if "--json" in command:
            json.loads(result.stdout)  # stdout stays one JSON document


def test_a_sound_transcript_gets_no_warning(basic: Path) -> None:
    result = CliRunner().invoke(cli, ["--root", str(basic), "show", BASIC])
    assert result.exit_code == 0 and result.stderr == ""


def test_tree_shows_records_on_a_parent_loop_and_a_self_parented_leaf(tmp_path: Path) -> None:
    root = tmp_path / "root"
    project = root / "projects" / "-p"
    project.mkdir(parents=True)
    sid = "1c9f0c3e-7a5b-4d2e-9f1a-2b3c4d5e6f70"

    def turn(uuid: str, parent: str | None, kind: str, text: str) -> dict[str, object]:
        role = "user" if kind == "user" else "assistant"
        return {
            "type": kind,
            "uuid": uuid,
            "parentUuid": parent,
            "sessionId": sid,
            "timestamp": "2026-01-01T00:00:00.000Z",
            "message": {"role": role, "content": [{"type": "text", "text": text}]},
        }

    records = [
        turn("aaaa0001-0000-4000-8000-000000000000", None, "user", "start"),
        turn("bbbb0002-0000-4000-8000-000000000000", "cccc0003-0000-4000-8000-000000000000",
             "user", "loop one"),
        turn("cccc0003-0000-4000-8000-000000000000", "bbbb0002-0000-4000-8000-000000000000",
             "assistant", "loop two"),
        turn("dddd0004-0000-4000-8000-000000000000", "dddd0004-0000-4000-8000-000000000000",
             "user", "on itself"),
    ]  # fmt: skip
    (project / f"{sid}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    result = CliRunner().invoke(cli, ["--root", str(root), "tree", sid])
    assert result.exit_code == 0, result.output
    for text in ("start", "loop one", "loop two", "on itself"):
        assert text in result.stdout
    assert result.stdout.count("its parents loop") == 2  # the loop and the self-parented one
    assert "warning" in result.stderr and "cycle" in result.stderr


def test_a_folder_inside_a_project_counts_as_the_project(basic: Path) -> None:
    inside = "/home/dev/01-basic/src/deeper"
    rows = run_json(basic, "sessions", "--project", inside)
    assert isinstance(rows, list) and [r["sessionId"] for r in rows] == [BASIC]
    hits = run_json(basic, "search", "p1 create", "--project", inside)
    assert isinstance(hits, list) and hits


def test_no_hits_in_the_project_says_so_and_suggests_all(basic: Path) -> None:
    out = run(basic, "search", "zqxj nowhere", "--project", "/home/dev/01-basic")
    assert "0 hits in /home/dev/01-basic (1 session(s) of this project)" in out
    assert f"try: sessiontree --root {basic} search 'zqxj nowhere' --all" in out
    elsewhere = run(basic, "search", "zqxj nowhere", "--project", "/nowhere/else")
    assert "(no session of this project)" in elsewhere
    assert run(basic, "search", "zqxj nowhere", "--all").strip().endswith("0 hit(s)")


def test_sessions_marks_a_session_a_running_client_holds(basic: Path) -> None:
    from sessiontree.lifecycle.live import live_session
    from sessiontree.storage.layout import Layout

    rows = run_json(basic, "sessions", "--all")
    assert isinstance(rows, list) and rows[0]["live"] is False
    assert "▶" not in run(basic, "sessions", "--all")
    with live_session(Layout(basic), session_id=BASIC, cwd="/home/dev/01-basic"):
        rows = run_json(basic, "sessions", "--all")
        assert isinstance(rows, list) and rows[0]["live"] is True
        text = CliRunner().invoke(cli, ["--root", str(basic), "sessions", "--all"]).output
        assert f"{BASIC[:8]} ▶" in text and "open in a running client" in text


def test_tree_draws_each_branch_under_a_connector(rewind: Path) -> None:
    out = CliRunner().invoke(cli, ["--root", str(rewind), "tree", REWIND], terminal_width=200)
    lines = out.stdout.splitlines()
    fork = next(i for i, line in enumerate(lines) if "⑂ 2 branches" in line)
    assert lines[fork + 1].startswith("├─ ○ 68cc9d25")  # the rewound branch first
    assert lines[fork + 2].startswith("│  ○ 702621bb")  # its records hang under │
    last = next(i for i, line in enumerate(lines) if line.startswith("└─ "))
    assert lines[last].startswith("└─ ● 92d1c3f4")  # the active branch
    assert lines[last + 1].startswith("   ● 41618a8f")


def test_prompts_say_a_checkpoint_whose_backups_are_gone(rewind: Path) -> None:
    (folder,) = (rewind / "file-history").glob(f"{REWIND}*")
    for backup in folder.iterdir():
        if backup.name.endswith("@v1"):
            backup.unlink()
    rows = run_json(rewind, "prompts", REWIND)
    assert isinstance(rows, list) and any(r["checkpointGone"] for r in rows)
    text = CliRunner().invoke(cli, ["--root", str(rewind), "prompts", REWIND], terminal_width=200)
    assert " gone " in text.stdout and "pruned that checkpoint's backups" in text.stdout


def test_writes_say_how_to_continue_in_the_client_and_dry_runs_speak_plainly(
    rewind: Path,
) -> None:
    hint = f"continue in the client: cd /home/dev/02-rewind-both && CLAUDE_CONFIG_DIR={rewind}"
    looked = run(rewind, "rewind", REWIND, "--to", "2", "--dry-run")
    assert "would rewind to before prompt 92d1c3f4 (p4 after rewind" in looked
    assert "the old branch stays in the file" in looked and "continue in the client" not in looked
    forked = run(rewind, "fork", REWIND, "--at", "2", "--dry-run")
    assert "up to and including 92d1c3f4 (p4 after rewind" in forked
    assert "its id is drawn when it is written" in forked
    for args in (
        ["fork", REWIND],
        ["rewind", REWIND, "--to", "2"],
        ["summarize", REWIND, "--at", "1", "--from", "--summary", "S"],
    ):
        out = run(rewind, *args)
        assert hint in out, args
        assert "claude -r " in out.splitlines()[-1]


def test_version_is_the_installed_packages() -> None:
    from importlib import metadata

    result = CliRunner().invoke(cli, ["--version"], prog_name="sessiontree")
    assert result.exit_code == 0
    assert result.output == f"sessiontree, version {metadata.version('sessiontree')}\n"
