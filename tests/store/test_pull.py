"""``pull``: a stored session written where the client looks for it, byte for byte; moved
to another project folder with only the lines that name it changed; fast-forwarded,
never overwritten with less, refused when both sides went on or another machine may
still be writing it."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from sessiontree.cli.main import cli
from sessiontree.lifecycle.live import register_live_session, unregister_live_session
from sessiontree.storage.layout import Layout
from tests.conftest import all_scenarios, copy_writable, scenario_id

SCENARIOS = all_scenarios()


def run(*args: str, code: int = 0, state: Path | None = None) -> str:
    env = {"SESSIONTREE_STATE_DIR": str(state)} if state is not None else {}
    result = CliRunner().invoke(cli, list(args), catch_exceptions=False, env=env)
    assert result.exit_code == code, result.output
    return result.output


def synced(scenario: Path, tmp_path: Path, dsn: str) -> tuple[Path, list[str]]:
    """A private copy of a scenario's root, synced (as machine A); its session ids."""
    root = copy_writable(scenario / "claude-home", tmp_path / "a")
    run("--root", str(root), "--store", dsn, "sync", "--machine", "a", state=tmp_path / "sa")
    rows = json.loads(run("--store", dsn, "sessions", "--all", "--json"))
    return root, sorted(r["sessionId"] for r in rows)


def files_under(folder: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(folder)): p.read_bytes()
        for p in sorted(folder.rglob("*"))
        if p.is_file() and not p.is_symlink()
    }


def moved(value: Any, old: str, new: str) -> Any:
    """``value`` with every string (and key) that is the folder ``old`` or a path under it
    naming the same place under ``new``: what a move promises, and nothing more."""
    if isinstance(value, str):
        return new + value[len(old) :] if value == old or value.startswith(old + "/") else value
    if isinstance(value, list):
        return [moved(v, old, new) for v in value]
    if isinstance(value, dict):
        return {moved(k, old, new): moved(v, old, new) for k, v in value.items()}
    return value


@pytest.mark.parametrize("scenario", SCENARIOS, ids=[scenario_id(s) for s in SCENARIOS])
def test_a_pulled_session_is_its_files_byte_for_byte(
    scenario: Path, tmp_path: Path, store_dsn: str
) -> None:
    a, sessions = synced(scenario, tmp_path, store_dsn)
    assert sessions, "nothing synced: the test would prove nothing"
    b = tmp_path / "b"
    for sid in sessions:
        run("--root", str(b), "--store", store_dsn, "pull", sid, "--force", "--json",
            state=tmp_path / "sb")  # fmt: skip
    here, there = files_under(b), files_under(a)
    assert here, "nothing pulled"
    for rel, data in here.items():
        assert there.get(rel) == data, rel
    for sid in sessions:  # (every transcript, subagent, tool result and backup of each)
        wanted = [r for r in there if sid in r and (r.endswith(".jsonl") or "/tool-results/"
                  in r or r.startswith("file-history/") or r.endswith(".meta.json"))]  # fmt: skip
        assert all(r in here for r in wanted), [r for r in wanted if r not in here]
    transcript = next(b.glob(f"projects/*/{sessions[0]}.jsonl"))
    assert oct(transcript.stat().st_mode & 0o777) == "0o600"


def test_moved_to_another_folder_only_the_lines_naming_it_change(
    tmp_path: Path, store_dsn: str
) -> None:
    scenario = next(s for s in SCENARIOS if s.name == "02-rewind-both")
    a, (sid,) = synced(scenario, tmp_path, store_dsn)
    old = json.loads(scenario.joinpath("scenario.json").read_text())["project"]
    new = tmp_path / "elsewhere" / "proj"
    b = tmp_path / "b"
    report = json.loads(run("--root", str(b), "--store", store_dsn, "pull", sid, "--project",
                            str(new), "--force", "--json", state=tmp_path / "sb"))  # fmt: skip
    pulled = Path(report["path"])
    assert pulled.parent.name == str(new).replace("/", "-").replace("_", "-")
    before = next(a.glob(f"projects/*/{sid}.jsonl")).read_bytes().splitlines(keepends=True)
    after = pulled.read_bytes().splitlines(keepends=True)
    changed = [(x, y) for x, y in zip(before, after, strict=True) if x != y]
    assert len(changed) == report["rewritten"] > 0
    for x, y in changed:
        assert json.loads(y) == moved(json.loads(x), old, str(new))
    ours = json.loads(run("--root", str(b), "context", sid, "--json"))
    theirs = json.loads(run("--root", str(a), "context", sid, "--json"))
    assert ours == moved(theirs, old, str(new)) != theirs


@pytest.mark.parametrize("name", ["14-subagent", "06-compact"])
def test_a_pulled_session_synced_back_stores_only_what_it_gained(
    name: str, tmp_path: Path, store_dsn: str
) -> None:
    """Pulled on B into another folder, gone on there, synced from B: the store keeps B's
    new lines only (the head is A's lines, moved), yet reads B's file byte for byte, its
    context is B's, and pulling it back on A fast-forwards A's file with B's line."""
    import psycopg

    from sessiontree.storage.store.reads import current_sources, iter_source_bytes

    scenario = next(s for s in SCENARIOS if s.name == name)
    a, sids = synced(scenario, tmp_path, store_dsn)
    sid = sids[0]
    old = json.loads(scenario.joinpath("scenario.json").read_text())["project"]
    new = tmp_path / "elsewhere" / "proj"
    b = tmp_path / "b"
    run("--root", str(b), "--store", store_dsn, "pull", sid, "--project", str(new), "--force",
        state=tmp_path / "sb")  # fmt: skip
    ours = next(b.glob(f"projects/*/{sid}.jsonl"))
    title = {"type": "custom-title", "customTitle": f"{new}/notes.md", "sessionId": sid}
    gained = json.dumps(title, separators=(",", ":")).encode() + b"\n"
    with ours.open("ab") as out:
        out.write(gained)
    run("--root", str(b), "--store", store_dsn, "sync", "--machine", "b", state=tmp_path / "sb")
    with psycopg.connect(store_dsn) as conn:
        stored = {s.rel_path: s for s in current_sources(conn, kinds=("transcript", "subagent"),
                                                          machine="b")}  # fmt: skip
        assert stored, "B's files are in the store"
        for rel_path, source in stored.items():
            local = (b / rel_path).read_bytes()
            assert b"".join(iter_source_bytes(conn, source.source_id)) == local, rel_path
            (kept,) = conn.execute(
                "SELECT coalesce(sum(length(raw)), 0) FROM sessiontree.line_block"
                " WHERE source_id = %s",
                (source.source_id,),
            ).fetchone()
            assert kept == (len(gained) if rel_path.endswith(f"{sid}.jsonl") else 0), rel_path
    here = json.loads(run("--root", str(b), "context", sid, "--json"))
    there = json.loads(run("--store", store_dsn, "context", sid, "--json"))  # (B grew last)
    assert here == there
    # Search finds the head's records once (A's, where they were written), not B's too.
    found = json.loads(run("--store", store_dsn, "search", word_of(here), "--all", "--json"))
    places = [(h["sessionId"], h["uuid"], h["kind"]) for h in found]
    assert places and len(places) == len(set(places))
    back = json.loads(run("--root", str(a), "--store", store_dsn, "pull", sid, "--machine", "b",
                          "--force", "--json", state=tmp_path / "sa"))  # fmt: skip
    assert back["action"] == "fast-forward"
    theirs = next(a.glob(f"projects/*/{sid}.jsonl"))
    back_home = gained.replace(f'"{new}/'.encode(), f'"{old}/'.encode())
    assert back_home != gained
    assert theirs.read_bytes() == scenario_file(scenario, sid) + back_home


def word_of(context: Any) -> str:
    """The longest word of the first prompt of a context."""
    content = context["messages"][0]["content"]
    text = (
        content
        if isinstance(content, str)
        else " ".join(b.get("text", "") for b in content if isinstance(b, dict))
    )
    return max((w for w in text.split() if w.isalpha()), key=len)


def scenario_file(scenario: Path, sid: str) -> bytes:
    return next((scenario / "claude-home").glob(f"projects/*/{sid}.jsonl")).read_bytes()


def test_fast_forward_ahead_and_diverged(tmp_path: Path, store_dsn: str) -> None:
    scenario = next(s for s in SCENARIOS if s.name == "02-rewind-both")
    a, (sid,) = synced(scenario, tmp_path, store_dsn)
    b = tmp_path / "b"

    def pull(code: int = 0) -> str:
        return run("--root", str(b), "--store", store_dsn, "pull", sid, "--force", "--json",
                   code=code, state=tmp_path / "sb")  # fmt: skip

    def sync_a() -> None:
        run("--root", str(a), "--store", store_dsn, "sync", "--machine", "a",
            state=tmp_path / "sa")  # fmt: skip

    assert json.loads(pull())["action"] == "new"
    assert json.loads(pull())["action"] == "up-to-date"
    theirs = next(a.glob(f"projects/*/{sid}.jsonl"))
    ours = next(b.glob(f"projects/*/{sid}.jsonl"))
    title = {"type": "custom-title", "customTitle": "from A", "sessionId": sid}
    line = json.dumps(title, separators=(",", ":")) + "\n"
    with theirs.open("a") as out:
        out.write(line)
    sync_a()
    assert json.loads(pull())["action"] == "fast-forward"
    assert ours.read_bytes() == theirs.read_bytes()
    with ours.open("a") as out:
        out.write(line.replace("from A", "from B"))
    kept = ours.read_bytes()
    assert json.loads(pull())["action"] == "local-ahead"
    assert ours.read_bytes() == kept
    with theirs.open("a") as out:
        out.write(line.replace("from A", "again from A"))
    sync_a()
    said = json.loads(pull(code=1))
    assert said["code"] == "refused" and "went on both here (" in said["error"]
    assert " and on a:" in said["error"] and "\n" not in said["error"]
    assert ours.read_bytes() == kept
    forked = json.loads(run("--root", str(b), "--store", store_dsn, "pull", sid, "--fork",
                            "--force", "--json", state=tmp_path / "sb"))  # fmt: skip
    assert forked["action"] == "forked" and forked["forkedAs"] not in (None, sid)
    assert ours.read_bytes() == kept
    fork = Path(forked["path"])
    assert fork.parent == ours.parent and fork.stem == forked["forkedAs"]
    rows = {r["sessionId"]: r for r in json.loads(run("--root", str(b), "sessions", "--all",
                                                       "--json"))}  # fmt: skip
    assert rows[fork.stem]["title"].endswith("(Branch)")
    records = [json.loads(line) for line in fork.read_text().splitlines()]
    assert any(r.get("forkedFrom", {}).get("sessionId") == sid for r in records)

    def messages(root: Path, session: str) -> Any:
        return json.loads(run("--root", str(root), "context", session, "--json"))["messages"]

    assert messages(b, fork.stem) == messages(a, sid)


def test_a_session_another_machine_just_synced_is_refused_without_force(
    tmp_path: Path, store_dsn: str
) -> None:
    scenario = next(s for s in SCENARIOS if s.name == "02-rewind-both")
    _, (sid,) = synced(scenario, tmp_path, store_dsn)
    b = tmp_path / "b"
    said = run("--root", str(b), "--store", store_dsn, "pull", sid, code=1, state=tmp_path / "sb")
    assert "may still be writing it" in said and "--force" in said
    assert not list(b.glob("projects/*/*.jsonl"))
    run("--root", str(b), "--store", store_dsn, "pull", sid, "--force", state=tmp_path / "sb")
    assert list(b.glob("projects/*/*.jsonl"))
    os.environ.pop("SESSIONTREE_STATE_DIR", None)


def test_a_session_a_client_held_open_elsewhere_is_refused_without_force(
    tmp_path: Path, store_dsn: str
) -> None:
    """Machine A's registry says a client holds the session: its sync tells the store,
    and a pull on B asks (refuses without a terminal) whenever A last synced; once A
    syncs with the client gone, only the recent-sync rule is left."""
    scenario = next(s for s in SCENARIOS if s.name == "02-rewind-both")
    a, (sid,) = synced(scenario, tmp_path, store_dsn)
    register_live_session(Layout(a), session_id=sid, cwd=str(a))
    run("--root", str(a), "--store", store_dsn, "sync", "--machine", "a", state=tmp_path / "sa")
    b = tmp_path / "b"
    said = run("--root", str(b), "--store", store_dsn, "pull", sid, code=1, state=tmp_path / "sb")
    assert f"a client on a held {sid} open when it last synced (just now)" in said
    assert "--force" in said
    assert not list(b.glob("projects/*/*.jsonl"))
    assert unregister_live_session(Layout(a), os.getpid(), session_id=sid)
    run("--root", str(a), "--store", store_dsn, "sync", "--machine", "a", state=tmp_path / "sa")
    said = run("--root", str(b), "--store", store_dsn, "pull", sid, code=1, state=tmp_path / "sb")
    assert "held" not in said and "synced" in said and "may still be writing it" in said
    run("--root", str(b), "--store", store_dsn, "pull", sid, "--force", state=tmp_path / "sb")
    assert list(b.glob("projects/*/*.jsonl"))


def test_all_and_a_project_with_their_history_each_once(tmp_path: Path, store_dsn: str) -> None:
    demo = tmp_path / "demo"
    run("demo", "--root", str(demo))
    run("--root", str(demo), "--store", store_dsn, "sync", "--machine", "a", state=tmp_path / "sa")
    rows = json.loads(run("--store", store_dsn, "sessions", "--all", "--json"))
    b = tmp_path / "b"

    def pull(*args: str) -> dict[str, Any]:
        out = run("--root", str(b), "--store", store_dsn, "pull", *args, "--force", "--json",
                  state=tmp_path / "sb")  # fmt: skip
        return dict(json.loads(out))

    one = rows[0]
    same = sorted(r["sessionId"] for r in rows if r["cwd"] == one["cwd"])
    first = pull("--project-of", one["sessionId"])
    assert sorted(p["sessionId"] for p in first["sessions"]) == same
    everything = pull("--all")
    assert sorted(p["sessionId"] for p in everything["sessions"]) == sorted(
        r["sessionId"] for r in rows
    )
    assert not everything["skipped"]
    assert {p["action"] for p in everything["sessions"] if p["sessionId"] in same} == {"up-to-date"}
    typed = [ln for ln in (demo / "history.jsonl").read_bytes().splitlines() if ln.strip()]
    ours = [ln for ln in (b / "history.jsonl").read_bytes().splitlines() if ln.strip()]
    assert sorted(ours) == sorted(typed)
    assert first["history"] + everything["history"] == len(typed) > 0
    again = pull("--all")
    assert again["history"] == 0
    assert {p["action"] for p in again["sessions"]} == {"up-to-date"}
    for row in rows:
        sid = row["sessionId"]
        assert run("--root", str(b), "context", sid, "--json") == run(
            "--root", str(demo), "context", sid, "--json"
        )


def test_a_subagent_that_went_on_here_is_never_written_over(tmp_path: Path, store_dsn: str) -> None:
    scenario = next(s for s in SCENARIOS if s.name == "14-subagent")
    a, sessions = synced(scenario, tmp_path, store_dsn)
    b = tmp_path / "b"

    def pull(sid: str) -> dict[str, Any]:
        return dict(json.loads(run("--root", str(b), "--store", store_dsn, "pull", sid,
                                   "--force", "--json", state=tmp_path / "sb")))  # fmt: skip

    for sid in sessions:
        pull(sid)
    (sub,) = b.glob("projects/*/*/subagents/agent-*.jsonl")
    sid = sub.parent.parent.name
    with sub.open("a") as out:
        out.write('{"type":"user","uuid":"went-on-here","parentUuid":null}\n')
    kept = sub.read_bytes()
    (theirs,) = a.glob(f"projects/*/{sid}.jsonl")
    with theirs.open("a") as out:
        title = {"type": "custom-title", "customTitle": "from A", "sessionId": sid}
        out.write(json.dumps(title, separators=(",", ":")) + "\n")
    run("--root", str(a), "--store", store_dsn, "sync", "--machine", "a", state=tmp_path / "sa")
    assert pull(sid)["action"] == "fast-forward"
    assert sub.read_bytes() == kept
