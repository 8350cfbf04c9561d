"""``sessiontree search`` over the index: its ``--json`` shape, filters, query syntax,
errors, and where the index is kept (never in the config root)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from sessiontree.catalog.search_index import SearchHit
from sessiontree.cli.main import cli
from sessiontree.cli.search import _highlighted
from tests.cli.test_cli import SEARCH_INDEX_KEYS, SEARCH_SCAN_KEYS, run

REWIND = "b06189e0-a90e-451c-aa38-609447827575"


def invoke(root: Path, *args: str, env: dict[str, str] | None = None) -> Result:
    return CliRunner().invoke(cli, ["--root", str(root), "search", *args], env=env)


def hits_of(root: Path, *args: str, env: dict[str, str] | None = None) -> list[dict[str, Any]]:
    result = invoke(root, *args, "--json", env=env)
    assert result.exit_code == 0, result.output
    hits: list[dict[str, Any]] = json.loads(result.stdout)
    return hits


def files_under(folder: Path) -> dict[str, int]:
    return {str(p): p.stat().st_size for p in folder.rglob("*") if p.is_file()}


def test_json_hits_have_every_key_and_their_highlights(rewind: Path) -> None:
    hits = hits_of(rewind, "p1 create", "--all")
    assert hits
    for hit in hits:
        assert set(hit) == SEARCH_SCAN_KEYS | SEARCH_INDEX_KEYS
        marked = {hit["snippet"][a:b].casefold() for a, b in hit["highlights"]}
        assert marked and marked <= {"p1", "create"}
    ranks = [hit["rank"] for hit in hits]
    assert ranks == sorted(ranks)  # best (lowest bm25) first
    prompt = next(h for h in hits if h["kind"] == "prompt")
    assert prompt["project"] == "/home/dev/02-rewind-both"
    assert prompt["projectDir"] == "-home-dev-02-rewind-both"
    assert prompt["path"].endswith(f"{REWIND}.jsonl") and prompt["sessionId"] == REWIND
    assert prompt["timestamp"].endswith("Z") and prompt["role"] == "user"


def test_filters_on_the_command_line(rewind: Path) -> None:
    every = hits_of(rewind, "rewind", "--all")
    tools = hits_of(rewind, "rewind", "--all", "--role", "tool", "--tool", "bash")
    assert tools and {h["toolName"] for h in tools} == {"Bash"}
    assert {h["kind"] for h in tools} <= {"tool_use", "tool_result"}
    off = hits_of(rewind, "rewind", "--all", "--off-path")
    on = hits_of(rewind, "rewind", "--all", "--active-path")
    assert off and not any(h["onActivePath"] for h in off)
    assert on and all(h["onActivePath"] for h in on)
    assert len(off) + len(on) == len(every)
    assert len(hits_of(rewind, "rewind", "--all", "--limit", "2")) == 2
    prompts = hits_of(rewind, "rewind", "--all", "--kind", "prompt")
    assert {h["kind"] for h in prompts} == {"prompt"}
    session = hits_of(rewind, "rewind", "--session", REWIND[:6])  # from no project's folder
    assert len(session) == len(every)
    assert hits_of(rewind, "rewind", "--all", "--since", "2099-01-01") == []
    assert hits_of(rewind, "rewind", "--all", "--until", "2000-01-01") == []
    assert len(hits_of(rewind, "rewind", "--all", "--since", "2000-01-01")) == len(every)
    day = every[0]["timestamp"][:10]  # --until a date takes in that whole day
    assert len(hits_of(rewind, "rewind", "--all", "--until", day)) >= 1
    history = hits_of(rewind, "rewind", "--all", "--history")
    assert {h["source"] for h in history} == {"transcript", "history"}
    assert len(history) > len(every)


def test_plain_text_is_never_fts_syntax(rewind: Path) -> None:
    for text in ('"unclosed', "foo-bar", "a AND (", "NEAR(", "col:umn", "*"):
        result = invoke(rewind, text, "--all", "--json")
        assert result.exit_code == 0, (text, result.output)
    assert hits_of(rewind, "made-by-bash", "--all")


def test_a_bad_fts_query_is_a_usage_error(rewind: Path) -> None:
    assert hits_of(rewind, "p3 AND bash", "--all", "--fts")
    result = invoke(rewind, '"unclosed', "--all", "--fts", "--json")
    assert result.exit_code == 2 and result.stderr == ""
    doc = json.loads(result.stdout)
    assert doc["code"] == "usage" and doc["error"].startswith("not a valid FTS5 query")
    text = invoke(rewind, "p3 AND", "--all", "--fts")
    assert text.exit_code == 2 and text.stdout == ""
    assert text.stderr.startswith("sessiontree: not a valid FTS5 query: 'p3 AND'")
    assert "Traceback" not in text.output


def test_bad_dates_and_options_that_need_the_index(rewind: Path) -> None:
    bad = invoke(rewind, "x", "--all", "--since", "last tuesday")
    assert bad.exit_code == 2 and "is not a date" in bad.stderr
    scan = invoke(rewind, "x", "--all", "--no-index", "--role", "user")
    assert scan.exit_code == 2 and "--no-index does not go with --role" in scan.stderr


def test_text_output_marks_the_path_and_counts(rewind: Path) -> None:
    result = invoke(rewind, "p3 edit and bash", "--all")
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[-1] == f"{len(lines) - 1} hit(s)"
    assert any(line.startswith(f"○ {REWIND[:8]} ") for line in lines)
    assert any(" user: p3 edit and bash [[EDIT /home/dev/" in line for line in lines)
    calls = invoke(rewind, "made-by-bash", "--all", "--tool", "Bash").stdout
    assert " Bash call: echo made-by-bash > " in calls
    limited = invoke(rewind, "edit", "--all", "--limit", "1").stdout.splitlines()
    assert limited[-1] == "1 hit(s) (--limit: there may be more)"


def test_highlights_are_markup_and_text_is_escaped() -> None:
    hit = SearchHit(
        session_id="s", uuid="u", type="user", kind="prompt", role="user", tool_name=None,
        timestamp=None, project=None, project_dir=None, path="p", source="transcript",
        agent_id=None, is_sidechain=False, line=1, offset=0, rank=-1.0,
        snippet="say [red]hi\x1b[0m there", highlights=((4, 11),), on_active_path=True,
    )  # fmt: skip
    # ("[0m" is no markup tag: rich leaves it, and prints it as it is)
    assert _highlighted(hit) == "say [bold yellow]\\[red]hi[/]\\x1b[0m there"


def test_the_index_is_kept_in_the_cache_folder(rewind: Path, isolated_home: Path) -> None:
    before = files_under(rewind)
    first = hits_of(rewind, "p3 edit and bash", "--all")
    (db,) = (isolated_home / ".cache" / "sessiontree").glob("search-*.sqlite")
    assert db.stat().st_size > 0
    assert files_under(rewind) == before  # nothing written in the root
    assert hits_of(rewind, "p3 edit and bash", "--all", "--reindex") == first


def test_a_cache_folder_inside_the_root_is_never_used(rewind: Path) -> None:
    inside = {"SESSIONTREE_CACHE_DIR": str(rewind / "cache")}
    before = files_under(rewind)
    hits = hits_of(rewind, "p3 edit and bash", "--all", env=inside)  # the scan, as before
    assert hits and set(hits[0]) == SEARCH_SCAN_KEYS
    # (the listing cache is written there as it always was: sessions' cache_path)
    made = set(files_under(rewind)) - set(before)
    assert not [name for name in made if "search-" in name or "skeleton-" in name]
    refused = invoke(rewind, "p3", "--all", "--role", "user", env=inside)
    assert refused.exit_code == 1
    assert "the cache folder is inside the config root" in refused.stderr


@pytest.mark.parametrize("flag", ["--active-path", "--off-path"])
def test_path_filters_never_show_history(rewind: Path, flag: str) -> None:
    hits = hits_of(rewind, "rewind", "--all", "--history", flag)
    assert hits and all(h["source"] != "history" for h in hits)


def test_appended_text_is_found_on_the_next_run(rewind: Path) -> None:
    assert hits_of(rewind, "kumquat", "--all") == []
    path = next(rewind.glob("projects/*/*.jsonl"))
    record = {"type": "user", "uuid": "k1", "parentUuid": None, "message": {"content": "kumquat"}}
    with path.open("a") as handle:
        handle.write(json.dumps(record) + "\n")
    os.utime(path)
    assert [h["uuid"] for h in hits_of(rewind, "kumquat", "--all")] == ["k1"]


def test_an_index_that_cannot_be_made_falls_back_to_the_scan(rewind: Path, tmp_path: Path) -> None:
    blocked = tmp_path / "not-a-folder"
    blocked.write_text("a file where the cache folder should be")
    env = {"SESSIONTREE_CACHE_DIR": str(blocked)}
    result = invoke(rewind, "p3 edit and bash", "--all", "--json", env=env)
    assert result.exit_code == 0, result.output
    assert "warning: the search index" in result.stderr and "scanning" in result.stderr
    hits = json.loads(result.stdout)
    assert hits and set(hits[0]) == SEARCH_SCAN_KEYS
    refused = invoke(rewind, "p3", "--all", "--role", "user", "--json", env=env)
    assert refused.exit_code == 1 and json.loads(refused.stdout)["code"] == "data-error"


def test_an_edit_call_hit_shows_its_file_and_change(tmp_path: Path) -> None:
    """The real client writes an Edit's ``replace_all`` first: its snippet read
    ``False /home/dev/…/notes.md original line edited line`` (issue 28). Now the file
    and the change, ``old → new``, and no flag."""
    from tests.conftest import FIXTURES, copy_writable

    source = FIXTURES.parent / "claude-code-2.1.328-extra" / "03-rewind-conversation-only"
    root = copy_writable(source / "claude-home", tmp_path / "root")
    hits = json.loads(run(root, "search", "edited line", "--all", "--json"))
    (call,) = [h for h in hits if h["kind"] == "tool_use"]
    assert call["toolName"] == "Edit"
    path = "/home/dev/03-rewind-conversation-only/notes.md"
    assert call["snippet"] == f"{path} original line → edited line"
    assert f"Edit call: {path} original line → edited line" in run(
        root, "search", "edited line", "--all"
    )
