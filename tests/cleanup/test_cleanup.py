"""Age-based retention: what goes, what stays and why, the re-check, and the CLI."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
from click.testing import CliRunner

from sessiontree.cleanup import (
    DEFAULT_CLEANUP_DAYS,
    CleanupPlan,
    apply_cleanup,
    plan_cleanup,
    read_fork_parents,
)
from sessiontree.cli.main import cli
from sessiontree.lifecycle.live import register_live_session
from sessiontree.storage.layout import Layout

DAY = 86_400
NOW = time.time()
OLD = NOW - 60 * DAY
RECENT = NOW - 1 * DAY
PROJECT = "-home-dev-proj"


def sid() -> str:
    return str(uuid.uuid4())


def age(path: Path, when: float) -> None:
    """Set the mtime of ``path`` and everything under it (links themselves, not targets)."""
    if path.is_dir() and not path.is_symlink():
        for child in path.iterdir():
            age(child, when)
    os.utime(path, (when, when), follow_symlinks=False)


def write_session(
    root: Path,
    session_id: str,
    *,
    when: float,
    forked_from: str | None = None,
    project: str = PROJECT,
) -> dict[str, Path]:
    """A session with every part: transcript, tool results, subagent, backups, env."""
    folder = root / "projects" / project
    folder.mkdir(parents=True, exist_ok=True)
    transcript = folder / f"{session_id}.jsonl"
    records: list[dict[str, object]] = [
        {"type": "mode", "mode": "normal", "sessionId": session_id},
        {
            "type": "user",
            "uuid": str(uuid.uuid4()),
            "parentUuid": None,
            "sessionId": session_id,
            "message": {"role": "user", "content": "hello"},
        },
    ]
    if forked_from is not None:
        for record in records[1:]:
            record["forkedFrom"] = {"sessionId": forked_from, "messageUuid": record["uuid"]}
    transcript.write_text("".join(json.dumps(r) + "\n" for r in records))
    extra = folder / session_id
    (extra / "tool-results").mkdir(parents=True)
    (extra / "tool-results" / "toolu_1.txt").write_text("x" * 5000)
    (extra / "subagents").mkdir()
    (extra / "subagents" / "agent-a1.jsonl").write_text("{}\n")
    backups = root / "file-history" / session_id
    backups.mkdir(parents=True)
    (backups / "0123456789abcdef@v1").write_text("backup")
    env = root / "session-env" / session_id
    env.mkdir(parents=True)
    (env / "hook-0.sh").write_text("export A=1\n")
    parts = {"transcript": transcript, "folder": extra, "backups": backups, "env": env}
    for part in parts.values():
        age(part, when)
    return parts


def paths(plan: CleanupPlan) -> set[Path]:
    return {item.path for item in plan.delete}


def reasons(plan: CleanupPlan) -> dict[Path, str]:
    return {kept.path: kept.reason for kept in plan.kept}


def dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


@pytest.fixture
def root(tmp_path: Path) -> Path:
    folder = tmp_path / "root"
    folder.mkdir()
    return folder


# -- what goes and what stays ------------------------------------------------------------


def test_old_session_goes_whole_and_recent_one_is_untouched(root: Path) -> None:
    old, new = sid(), sid()
    old_parts = write_session(root, old, when=OLD)
    new_parts = write_session(root, new, when=RECENT)
    plan = plan_cleanup(Layout(root), now=NOW)
    assert plan.days == DEFAULT_CLEANUP_DAYS
    assert paths(plan) == set(old_parts.values())
    assert {i.kind for i in plan.delete} == {
        "transcript",
        "session-folder",
        "file-history",
        "session-env",
    }
    assert all(i.session_id == old for i in plan.delete)
    assert plan.bytes_planned >= 5000
    assert plan.kept == ()  # the recent session is not old: not listed at all

    result = apply_cleanup(plan)
    assert result.failed == ()
    assert {i.path for i in result.deleted} == set(old_parts.values())
    assert result.bytes_freed == plan.bytes_planned
    assert not any(p.exists() for p in old_parts.values())
    assert all(p.exists() for p in new_parts.values())
    assert (root / "projects" / PROJECT).is_dir()  # the project folder itself stays


def test_plan_changes_nothing(root: Path) -> None:
    parts = write_session(root, sid(), when=OLD)
    plan = plan_cleanup(Layout(root), now=NOW)
    assert plan.delete
    assert all(p.exists() for p in parts.values())


def test_live_session_is_kept_with_its_reason(root: Path) -> None:
    session_id = sid()
    parts = write_session(root, session_id, when=OLD)
    register_live_session(Layout(root), session_id=session_id, cwd="/home/dev/proj")
    plan = plan_cleanup(Layout(root), now=NOW)
    assert plan.delete == ()
    why = reasons(plan)
    for part in parts.values():
        assert why[part] == f"live session (pid {os.getpid()})"
    assert apply_cleanup(plan).deleted == ()
    assert all(p.exists() for p in parts.values())


def test_stale_registry_entry_goes_and_a_running_ones_stays(root: Path) -> None:
    layout = Layout(root)
    session_id = sid()
    register_live_session(layout, session_id=session_id, cwd="/w")
    dead = dead_pid()
    stale = layout.live_session_path(dead)
    stale.write_text(json.dumps({"pid": dead, "sessionId": sid(), "status": "idle"}))
    broken = layout.live_session_path(4_000_001)
    broken.write_text("{torn")
    key = layout.sessions_dir / f"{dead}.abcdef.key"
    key.write_text("{}")
    mine = layout.live_session_path(os.getpid())
    for path in (stale, broken, key, mine):
        age(path, OLD)
    plan = plan_cleanup(layout, now=NOW)
    assert paths(plan) == {stale, broken}
    assert {i.kind for i in plan.delete} == {"live-entry"}
    assert reasons(plan)[mine] == f"process {os.getpid()} is running"
    apply_cleanup(plan)
    assert not stale.exists() and not broken.exists()
    assert mine.exists() and key.exists()


def test_recent_stale_entry_is_not_old_enough(root: Path) -> None:
    layout = Layout(root)
    layout.sessions_dir.mkdir()
    dead = dead_pid()
    layout.live_session_path(dead).write_text(json.dumps({"pid": dead, "sessionId": sid()}))
    assert plan_cleanup(layout, now=NOW).delete == ()


def test_fork_parents_are_kept_up_the_ancestry(root: Path) -> None:
    grandparent, parent, child, loner = sid(), sid(), sid(), sid()
    kept_parts = write_session(root, grandparent, when=OLD)
    kept_parts |= {
        f"p-{k}": v
        for k, v in write_session(root, parent, when=OLD, forked_from=grandparent).items()
    }
    child_parts = write_session(root, child, when=RECENT, forked_from=parent)
    loner_parts = write_session(root, loner, when=OLD)
    assert read_fork_parents(child_parts["transcript"]) == {parent}
    plan = plan_cleanup(Layout(root), now=NOW)
    assert paths(plan) == set(loner_parts.values())
    why = reasons(plan)
    assert why[kept_parts["transcript"]] == f"fork parent of {parent}"
    assert why[kept_parts["p-transcript"]] == f"fork parent of {child}"
    assert why[kept_parts["p-backups"]] == f"fork parent of {child}"


def test_old_fork_of_an_old_parent_goes_with_it(root: Path) -> None:
    parent, child = sid(), sid()
    parts = write_session(root, parent, when=OLD)
    parts |= {
        f"c-{k}": v for k, v in write_session(root, child, when=OLD, forked_from=parent).items()
    }
    assert paths(plan_cleanup(Layout(root), now=NOW)) == set(parts.values())


def test_fork_found_after_a_long_head(root: Path) -> None:
    parent, child = sid(), sid()
    write_session(root, parent, when=OLD)
    parts = write_session(root, child, when=RECENT, forked_from=parent)
    body = parts["transcript"].read_text()
    padding = json.dumps({"type": "attachment-ish", "blob": "y" * 100_000}) + "\n"
    parts["transcript"].write_text(padding + body)
    assert read_fork_parents(parts["transcript"]) == {parent}
    assert plan_cleanup(Layout(root), now=NOW).delete == ()


def test_a_session_is_judged_by_its_newest_part(root: Path) -> None:
    in_use, touched = sid(), sid()
    a = write_session(root, in_use, when=OLD)
    age(a["transcript"], RECENT)  # resumed yesterday: its old folders stay
    b = write_session(root, touched, when=OLD)
    age(b["backups"] / "0123456789abcdef@v1", RECENT)  # a file deep inside is recent
    plan = plan_cleanup(Layout(root), now=NOW)
    assert plan.delete == ()
    why = reasons(plan)
    assert why[a["backups"]].startswith(f"session {in_use} is in use")
    assert why[a["env"]].startswith(f"session {in_use} is in use")
    assert a["transcript"] not in why  # recent: not old, so not "kept"
    assert why[b["transcript"]].startswith(f"session {touched} has a recent file")
    assert "0123456789abcdef@v1" in why[b["transcript"]]


def test_orphan_parts_without_a_transcript_go_when_old(root: Path) -> None:
    orphan = sid()
    backups = root / "file-history" / orphan
    backups.mkdir(parents=True)
    (backups / "0123456789abcdef@v1").write_text("b")
    age(backups, OLD)
    assert paths(plan_cleanup(Layout(root), now=NOW)) == {backups}


def test_pastes_used_by_recent_history_are_kept(root: Path) -> None:
    cache = root / "paste-cache"
    cache.mkdir()
    used, stale_ref, unused, fresh = (
        "aaaaaaaaaaaaaaaa",
        "bbbbbbbbbbbbbbbb",
        "cccccccccccccccc",
        "dddddddddddddddd",
    )
    for name in (used, stale_ref, unused, fresh):
        (cache / f"{name}.txt").write_text("pasted " * 300)
    for name in (used, stale_ref, unused):
        age(cache / f"{name}.txt", OLD)
    (cache / "notes.txt").write_text("not a paste name")
    age(cache / "notes.txt", OLD)

    def entry(content_hash: str, when: float) -> str:
        pasted = {"1": {"id": 1, "type": "text", "contentHash": content_hash}}
        return json.dumps(
            {
                "display": "[Pasted text #1 +39 lines]",
                "pastedContents": pasted,
                "timestamp": int(when * 1000),
                "project": "/home/dev/proj",
                "sessionId": sid(),
            }
        )

    history = root / "history.jsonl"
    history.write_text(f"{entry(stale_ref, OLD)}\n{entry(used, RECENT)}\n")
    age(history, OLD)
    plan = plan_cleanup(Layout(root), now=NOW)
    assert paths(plan) == {cache / f"{stale_ref}.txt", cache / f"{unused}.txt"}
    assert {i.kind for i in plan.delete} == {"paste"}
    assert reasons(plan)[cache / f"{used}.txt"] == "referenced by recent history"
    apply_cleanup(plan)
    assert sorted(p.name for p in cache.iterdir()) == sorted(
        [f"{used}.txt", f"{fresh}.txt", "notes.txt"]
    )
    assert history.exists()


def test_never_history_settings_or_foreign_names(root: Path) -> None:
    write_session(root, sid(), when=OLD)
    keep = [
        root / "history.jsonl",
        root / "settings.json",
        root / "projects" / PROJECT / "memory" / "MEMORY.md",
        root / "projects" / PROJECT / "notes.jsonl",
        root / "projects" / PROJECT / "not-a-session",
        root / "file-history" / "not-a-session-id" / "x@v1",
        root / "session-env" / "whatever" / "hook.sh",
        root / "shell-snapshots" / "snapshot-bash-1-x.sh",
        root / "backups" / ".claude.json.backup.1",
    ]
    for path in keep:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("{}")
        age(path, OLD)
        age(path.parent, OLD)
    plan = plan_cleanup(Layout(root), now=NOW)
    apply_cleanup(plan)
    assert all(p.exists() for p in keep)
    assert not list((root / "projects" / PROJECT).glob("*-*-*-*-*.jsonl"))  # the session went


def test_symlinks_are_never_followed_nor_deleted(root: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    precious = outside / "precious.txt"
    precious.write_text("do not delete")
    target_dir = outside / "dir"
    target_dir.mkdir()
    (target_dir / "inner.txt").write_text("inner")
    age(outside, OLD)

    inside_link = sid()  # a symlink inside an otherwise old session's backups
    a = write_session(root, inside_link, when=OLD)
    (a["backups"] / "0123456789abcdef@v2").symlink_to(precious)
    age(a["backups"], OLD)
    linked_part = sid()  # the session-env folder itself is a link
    b = write_session(root, linked_part, when=OLD)
    subprocess.run(["rm", "-r", str(b["env"])], check=True)
    b["env"].symlink_to(target_dir)
    os.utime(b["env"], (OLD, OLD), follow_symlinks=False)
    paste = root / "paste-cache" / "eeeeeeeeeeeeeeee.txt"
    paste.parent.mkdir()
    paste.symlink_to(precious)
    os.utime(paste, (OLD, OLD), follow_symlinks=False)
    project_link = root / "projects" / "-linked-project"
    project_link.symlink_to(outside)
    os.utime(project_link, (OLD, OLD), follow_symlinks=False)

    plan = plan_cleanup(Layout(root), now=NOW)
    assert plan.delete == ()
    why = reasons(plan)
    assert "symlink" in why[a["transcript"]]
    assert why[b["env"]].startswith("symlink")
    assert "symlink" in why[b["transcript"]]
    assert why[paste].startswith("symlink")
    assert why[project_link].startswith("symlink")
    apply_cleanup(plan)
    assert precious.read_text() == "do not delete"
    assert (target_dir / "inner.txt").exists()
    assert paste.is_symlink() and b["env"].is_symlink()
    assert all(p.exists() for p in a.values())


def test_settings_cleanup_period_days_is_honoured(root: Path) -> None:
    ten_days = write_session(root, sid(), when=NOW - 10 * DAY)
    sixty_days = write_session(root, sid(), when=OLD)
    layout = Layout(root)
    settings = root / "settings.json"

    settings.write_text(json.dumps({"cleanupPeriodDays": 90}))
    plan = plan_cleanup(layout, now=NOW)
    assert (plan.days, plan.days_source, plan.delete) == (90, "settings.json", ())

    settings.write_text(json.dumps({"cleanupPeriodDays": 7, "model": "x"}))
    plan = plan_cleanup(layout, now=NOW)
    assert plan.days == 7
    assert paths(plan) == set(ten_days.values()) | set(sixty_days.values())

    for bad in ('{"cleanupPeriodDays": 0}', '{"cleanupPeriodDays": "7"}', "{torn", "[]"):
        settings.write_text(bad)
        plan = plan_cleanup(layout, now=NOW)
        assert (plan.days, plan.days_source) == (30, "default")
        assert paths(plan) == set(sixty_days.values())

    plan = plan_cleanup(layout, days=5, now=NOW)  # --days wins over settings
    assert (plan.days, plan.days_source) == (5, "--days")
    with pytest.raises(ValueError):
        plan_cleanup(layout, days=0, now=NOW)


# -- apply re-checks ---------------------------------------------------------------------


def test_apply_keeps_a_session_touched_after_the_plan(root: Path) -> None:
    touched, untouched = sid(), sid()
    a = write_session(root, touched, when=OLD)
    b = write_session(root, untouched, when=OLD)
    plan = plan_cleanup(Layout(root), now=NOW)
    assert paths(plan) == set(a.values()) | set(b.values())
    with a["transcript"].open("a") as handle:  # the user resumed it meanwhile
        handle.write("{}\n")
    result = apply_cleanup(plan)
    assert {i.path for i in result.deleted} == set(b.values())
    assert all(p.exists() for p in a.values())  # the whole session stays, not just the file
    why = {k.path: k.reason for k in result.kept}
    assert why[a["backups"]].startswith("changed since the plan")


def test_apply_keeps_a_session_that_went_live_or_grew_a_part(root: Path) -> None:
    went_live, grew = sid(), sid()
    a = write_session(root, went_live, when=OLD)
    b = write_session(root, grew, when=OLD)
    (b["env"]).rename(b["env"].with_name("moved-away"))
    layout = Layout(root)
    plan = plan_cleanup(layout, now=NOW)
    register_live_session(layout, session_id=went_live, cwd="/w")
    b["env"].mkdir()  # the session started again and wrote its env
    result = apply_cleanup(plan)
    assert result.deleted == ()
    why = {k.path: k.reason for k in result.kept}
    assert why[a["transcript"]].startswith("live session")
    assert why[b["transcript"]] == f"changed since the plan: {b['env']} appeared"
    assert all(p.exists() for p in (*a.values(), b["transcript"]))


def test_apply_skips_a_paste_that_history_now_uses(root: Path) -> None:
    paste = root / "paste-cache" / "aaaaaaaaaaaaaaaa.txt"
    paste.parent.mkdir()
    paste.write_text("big")
    age(paste, OLD)
    plan = plan_cleanup(Layout(root), now=NOW)
    assert paths(plan) == {paste}
    entry = {"display": "x", "pastedContents": {"1": {"contentHash": "aaaaaaaaaaaaaaaa"}}}
    (root / "history.jsonl").write_text(json.dumps(entry | {"timestamp": int(NOW * 1000)}))
    result = apply_cleanup(plan)
    assert result.deleted == () and paste.exists()


def test_apply_reports_failures_and_goes_on(root: Path) -> None:
    if os.geteuid() == 0:
        pytest.skip("root can delete from a read-only folder")
    a = write_session(root, sid(), when=OLD)
    b = write_session(root, sid(), when=OLD)
    plan = plan_cleanup(Layout(root), now=NOW)
    locked = a["folder"] / "tool-results"
    locked.chmod(0o500)
    try:
        result = apply_cleanup(plan)
    finally:
        locked.chmod(0o700)
    assert result.failed
    assert all(not p.exists() for p in b.values())


def test_apply_tolerates_files_vanishing_after_the_plan(root: Path) -> None:
    """A file removed between plan and apply (by the client's own cleanup) is no error."""
    a = write_session(root, sid(), when=OLD)
    plan = plan_cleanup(Layout(root), now=NOW)
    a["env"].joinpath("hook-0.sh").unlink()
    os.utime(a["env"], (OLD, OLD))
    result = apply_cleanup(plan)
    assert {i.path for i in result.deleted} == set(a.values())


# -- speed -------------------------------------------------------------------------------


def test_desktop_sessions_are_exempt_as_the_client_exempts_them(root: Path) -> None:
    """The client keeps sessions of desktop hosts past cleanupPeriodDays, up to
    desktopSessionCleanupPeriodDays, until the host releases them with a marker."""
    desktop, plain = sid(), sid()
    parts = write_session(root, desktop, when=OLD)
    plain_parts = write_session(root, plain, when=OLD)
    transcript = parts["transcript"]
    with transcript.open("a") as handle:
        handle.write(json.dumps({"type": "user", "entrypoint": "claude-desktop"}) + "\n")
    age(transcript, OLD)
    layout = Layout(root)
    plan = plan_cleanup(layout, now=NOW)
    assert paths(plan) == set(plain_parts.values())
    assert "desktop session (claude-desktop)" in reasons(plan)[transcript]

    settings = root / "settings.json"
    settings.write_text(json.dumps({"desktopSessionCleanupPeriodDays": 90}))
    assert paths(plan_cleanup(layout, now=NOW)) == set(plain_parts.values())  # 60 d < 90 d
    settings.write_text(json.dumps({"desktopSessionCleanupPeriodDays": 45}))
    assert transcript in paths(plan_cleanup(layout, now=NOW))  # the ceiling bounds it
    settings.unlink()

    marker = transcript.with_name(f"{desktop}.desktop-released.json")
    marker.write_text(json.dumps({"reason": "archive"}))
    assert "grace period" in reasons(plan_cleanup(layout, now=NOW))[transcript]
    age(marker, OLD)
    assert transcript in paths(plan_cleanup(layout, now=NOW))  # grace over
    marker.write_text(json.dumps({"reason": "delete"}))
    assert transcript in paths(plan_cleanup(layout, now=NOW))
    assert marker not in paths(plan_cleanup(layout, now=NOW))  # not a name we delete


# -- the CLI -----------------------------------------------------------------------------


def run(root: Path, *args: str, code: int = 0, stdin: str | None = None) -> str:
    result = CliRunner().invoke(cli, ["--root", str(root), "cleanup", *args], input=stdin)
    assert result.exit_code == code, result.output
    return result.output


def test_cli_dry_run_changes_nothing(root: Path) -> None:
    old = write_session(root, sid(), when=OLD)
    doc = json.loads(run(root, "--dry-run", "--json"))
    assert doc["dryRun"] is True
    assert {d["path"] for d in doc["deleted"]} == {str(p) for p in old.values()}
    assert set(doc["deleted"][0]) == {"path", "kind", "sessionId", "bytes"}
    assert doc["kept"] == []
    assert doc["bytesFreed"] > 0
    assert all(p.exists() for p in old.values())
    human = run(root, "--dry-run")
    assert "to delete: 4 item(s), 1 session(s)" in human
    assert all(p.exists() for p in old.values())


def test_cli_yes_applies_and_reports_kept(root: Path) -> None:
    old, live = sid(), sid()
    old_parts = write_session(root, old, when=OLD)
    live_parts = write_session(root, live, when=OLD)
    register_live_session(Layout(root), session_id=live, cwd="/w")
    doc = json.loads(run(root, "--yes", "--json"))
    assert doc["dryRun"] is False
    assert {d["path"] for d in doc["deleted"]} == {str(p) for p in old_parts.values()}
    assert {d["sessionId"] for d in doc["deleted"]} == {old}
    assert {k["path"]: k["reason"] for k in doc["kept"]} == {
        str(p): f"live session (pid {os.getpid()})" for p in live_parts.values()
    }
    assert all(set(k) == {"path", "reason"} for k in doc["kept"])
    assert doc["failed"] == []
    assert doc["bytesFreed"] > 0
    assert not any(p.exists() for p in old_parts.values())
    assert all(p.exists() for p in live_parts.values())


def test_cli_refuses_without_yes_when_not_interactive(root: Path) -> None:
    old = write_session(root, sid(), when=OLD)
    result = CliRunner().invoke(cli, ["--root", str(root), "cleanup", "--json"])
    assert result.exit_code == 1
    error = json.loads(result.stdout)  # under --json, the error is JSON on stdout
    assert error["code"] == "refused" and "\n" not in error["error"]
    assert "--yes" in error["error"] and "--dry-run" in error["error"]
    result = CliRunner().invoke(cli, ["--root", str(root), "cleanup"])
    assert result.exit_code == 1 and result.stdout == ""
    assert len(result.stderr.splitlines()) == 1 and "--yes" in result.stderr
    assert all(p.exists() for p in old.values())


def test_cli_asks_when_interactive(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("sessiontree.cli.cleanup._interactive", lambda: True)
    old = write_session(root, sid(), when=OLD)
    run(root, stdin="n\n", code=1)  # declined: click's Abort
    assert all(p.exists() for p in old.values())
    out = run(root, stdin="y\n")
    assert "deleted 4 item(s)" in out
    assert not any(p.exists() for p in old.values())


def test_cli_days_option_and_usage_errors(root: Path) -> None:
    write_session(root, sid(), when=NOW - 10 * DAY)
    assert json.loads(run(root, "--dry-run", "--json"))["deleted"] == []
    doc = json.loads(run(root, "--days", "7", "--dry-run", "--json"))
    assert len(doc["deleted"]) == 4 and doc["days"] == 7
    run(root, "--days", "0", "--dry-run", code=2)
    run(root, "--dry-run", "--yes", code=2)


def test_cli_help_names_what_it_never_touches() -> None:
    out = CliRunner().invoke(cli, ["cleanup", "--help"]).output
    for words in ("live session", "fork", "history.jsonl", "settings.json", "symlinks"):
        assert words in out
