"""Backup retention: the client's rule (newest 100 checkpoints, first backups), planned
from a listing, applied with a re-check of every file, hard links counted honestly."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sessiontree.checkpoints.read import Checkpoint, FileBackup, read_checkpoints
from sessiontree.checkpoints.retention import (
    KEEP_CHECKPOINTS,
    BackupEntry,
    apply_backup_retention,
    build_backup_retention,
    parse_backup_name,
    plan_backup_retention,
    read_backup_listing,
)
from sessiontree.conversation.transcript import Transcript
from sessiontree.doctor import check_store
from sessiontree.errors import Refused
from sessiontree.storage.layout import Layout, backup_name
from tests.conftest import FIXTURES

SESSION = "11111111-2222-3333-4444-555555555555"
NOTES = "/home/dev/15-many-checkpoints/notes.md"


def make_writable(folder: Path) -> None:
    """The fixtures are stored read-only; a copy a test changes must not be (non-root)."""
    for path in [folder, *folder.rglob("*")]:
        if not path.is_symlink():
            path.chmod(path.stat().st_mode | 0o200)


def checkpoint(message_id: str, files: dict[str, tuple[str, int | None]]) -> Checkpoint:
    """A checkpoint listing ``tracking path -> (absolute path, version or None = absent)``."""
    cp = Checkpoint(message_id, None)
    for tracking, (absolute, version) in files.items():
        name = backup_name(absolute, version) if version is not None else None
        cp.files[tracking] = FileBackup(tracking, version or 1, name, None, None)
    return cp


def version_of(path: Path | str) -> int:
    parsed = parse_backup_name(Path(path).name)
    assert parsed is not None, path
    return parsed[1]


def write_backups(layout: Layout, names: list[str], session: str = SESSION) -> Path:
    folder = layout.backup_dir(session)
    folder.mkdir(parents=True, exist_ok=True)
    for name in names:
        (folder / name).write_text(f"content of {name}\n")
    return folder


def many_checkpoints() -> list[Checkpoint]:
    """15-many-checkpoints: 110 prompts with one Edit each, as the client recorded them.

    Prompt 1's checkpoint gets notes.md v1 (the delta before the first edit); prompt k's
    snapshot lists v<k> (the content after edit k-1). v111 is the /exit backup, unnamed.
    """
    cps = [checkpoint("p1", {"notes.md": (NOTES, 1)})]
    cps += [checkpoint(f"p{k}", {"notes.md": (NOTES, k)}) for k in range(2, 111)]
    return cps


def write_many_checkpoints(layout: Layout) -> Path:
    """The transcript of 15-many-checkpoints: 110 prompts, each with a snapshot naming
    notes.md v<k>."""
    project = "/home/dev/15-many-checkpoints"
    transcript = layout.transcript_path(project, SESSION)
    transcript.parent.mkdir(parents=True)
    lines = []
    for k in range(1, 111):
        prompt = f"00000000-0000-4000-8000-{k:012d}"
        entry = {"backupFileName": backup_name(NOTES, k), "version": k, "backupTime": None}
        tracked = {"notes.md": {**entry, "realParentDir": project}}
        snapshot = {"messageId": prompt, "trackedFileBackups": tracked, "timestamp": None}
        lines.append({"type": "file-history-snapshot", "messageId": prompt, "snapshot": snapshot})
        message = {"role": "user", "content": f"edit {k}"}
        lines.append({"type": "user", "uuid": prompt, "parentUuid": None, "message": message})
    transcript.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return transcript


def test_many_checkpoints_keeps_first_newest_hundred_and_exit_backup(tmp_path: Path) -> None:
    layout = Layout(tmp_path / "root")
    folder = write_backups(layout, [backup_name(NOTES, v) for v in range(1, 112)])
    plan = plan_backup_retention(layout, SESSION, many_checkpoints())

    deleted = sorted(version_of(d.path) for d in plan.delete)
    # The client removed v2..v11; it counts its unrecorded /exit snapshot among the 100,
    # so it also dropped v11, which the 100th-newest recorded checkpoint (p11) names.
    # We keep v11: restoring code to p11 still works. See the module docstring.
    assert deleted == list(range(2, 11))
    assert plan.kept["first-backup"] == 1  # v1
    assert plan.kept["newest-checkpoints"] == KEEP_CHECKPOINTS  # v11..v110
    assert plan.kept["newest-backup"] == 1  # v111, the /exit backup no record names
    assert plan.kept_checkpoints == 100 and plan.checkpoints == 110
    assert all(d.reason.startswith("superseded") for d in plan.delete)
    assert plan.bytes_freed == plan.bytes_listed == sum(d.bytes for d in plan.delete)

    result = apply_backup_retention(layout, plan)
    assert result.removed == tuple(d.path for d in plan.delete)
    assert result.bytes_freed == plan.bytes_freed and not result.skipped
    left = sorted(version_of(p) for p in folder.iterdir())
    assert left == [1, *range(11, 112)]
    # Planning again finds nothing more to do.
    assert plan_backup_retention(layout, SESSION, many_checkpoints()).delete == ()


def test_fewer_checkpoints_than_the_cap_delete_nothing_referenced(tmp_path: Path) -> None:
    layout = Layout(tmp_path / "root")
    write_backups(layout, [backup_name(NOTES, v) for v in range(1, 6)])
    cps = [checkpoint(f"p{k}", {"notes.md": (NOTES, k)}) for k in range(1, 5)]
    plan = plan_backup_retention(layout, SESSION, cps)
    assert plan.delete == ()
    assert plan.kept["newest-checkpoints"] == 4 and plan.kept["newest-backup"] == 1


def test_unreferenced_middle_version_is_superseded(tmp_path: Path) -> None:
    """A backup no checkpoint names that is neither first nor newest may go."""
    layout = Layout(tmp_path / "root")
    write_backups(layout, [backup_name(NOTES, v) for v in (1, 2, 3, 4)])
    cps = [checkpoint("p1", {"n": (NOTES, 1)}), checkpoint("p2", {"n": (NOTES, 4)})]
    plan = plan_backup_retention(layout, SESSION, cps, keep_checkpoints=1)
    assert sorted(d.path.name for d in plan.delete) == [
        backup_name(NOTES, 2),
        backup_name(NOTES, 3),
    ]


def test_null_first_version_keeps_the_lowest_on_disk(tmp_path: Path) -> None:
    """A file the agent created has v1 = null (no backup file): its v2 counts as first."""
    layout = Layout(tmp_path / "root")
    write_backups(layout, [backup_name(NOTES, v) for v in (2, 3, 4, 5)])
    cps = [checkpoint(f"p{k}", {"n": (NOTES, k if k > 1 else None)}) for k in range(1, 6)]
    plan = plan_backup_retention(layout, SESSION, cps, keep_checkpoints=1)
    assert sorted(d.path.name for d in plan.delete) == [
        backup_name(NOTES, 3),
        backup_name(NOTES, 4),
    ]
    assert plan.kept["first-backup"] == 1


def test_foreign_names_folders_and_symlinks_are_kept_and_not_followed(tmp_path: Path) -> None:
    layout = Layout(tmp_path / "root")
    folder = write_backups(layout, [backup_name(NOTES, v) for v in (1, 2, 3, 4)])
    outside = tmp_path / "precious.txt"
    outside.write_text("not a backup")
    superseded_name = backup_name(NOTES, 2)
    (folder / superseded_name).unlink()
    (folder / superseded_name).symlink_to(outside)  # named like a backup, is a link
    (folder / "notes.md.orig").write_text("someone's file")
    (folder / (backup_name(NOTES, 3) + ".d")).mkdir()
    cps = [checkpoint("p1", {"n": (NOTES, 1)}), checkpoint("p2", {"n": (NOTES, 4)})]
    plan = plan_backup_retention(layout, SESSION, cps, keep_checkpoints=1)

    assert [d.path.name for d in plan.delete] == [backup_name(NOTES, 3)]
    assert plan.kept["not-a-regular-file"] == 2
    assert plan.kept["not-a-backup"] == 1
    apply_backup_retention(layout, plan)
    assert outside.read_text() == "not a backup"
    assert (folder / superseded_name).is_symlink()


def test_hard_links_free_space_only_with_their_last_link(tmp_path: Path) -> None:
    layout = Layout(tmp_path / "root")
    names = [backup_name(NOTES, v) for v in range(1, 7)]
    folder = write_backups(layout, names)
    # Dedup: v2 and v3 share one inode (both superseded); v4 shares v1's (kept, first).
    (folder / names[2]).unlink()
    os.link(folder / names[1], folder / names[2])
    (folder / names[3]).unlink()
    os.link(folder / names[0], folder / names[3])
    cps = [checkpoint("p1", {"n": (NOTES, 1)}), checkpoint("p6", {"n": (NOTES, 6)})]
    plan = plan_backup_retention(layout, SESSION, cps, keep_checkpoints=1)

    assert sorted(d.path.name for d in plan.delete) == names[1:5]  # v2..v5
    size = len(f"content of {names[1]}\n")
    # v2+v3: one inode, both links go -> freed once. v4: v1 keeps the inode -> nothing.
    # v5: its own inode -> freed.
    assert plan.bytes_listed == 4 * size
    assert plan.bytes_freed == 2 * size
    result = apply_backup_retention(layout, plan)
    assert result.bytes_freed == plan.bytes_freed
    assert len(result.removed) == 4
    assert (folder / names[0]).stat().st_nlink == 1


def test_apply_rechecks_every_file_before_unlinking(tmp_path: Path) -> None:
    layout = Layout(tmp_path / "root")
    names = [backup_name(NOTES, v) for v in range(1, 7)]
    folder = write_backups(layout, names)
    cps = [checkpoint("p1", {"n": (NOTES, 1)}), checkpoint("p6", {"n": (NOTES, 6)})]
    plan = plan_backup_retention(layout, SESSION, cps, keep_checkpoints=1)
    assert len(plan.delete) == 4

    (folder / names[1]).unlink()  # v2: gone already
    (folder / names[2]).write_text("grown since it was planned\n")  # v3: other size
    # v4: replaced by another file of the same size (made first, so a new inode).
    (tmp_path / "same-size").write_text(f"content of {names[3]}\n")
    os.replace(tmp_path / "same-size", folder / names[3])
    (folder / names[4]).unlink()  # v5: a symlink now
    (folder / names[4]).symlink_to(folder / names[0])

    result = apply_backup_retention(layout, plan)
    assert result.removed == ()
    assert result.bytes_freed == 0
    reasons = {p.name: r for p, r in result.skipped}
    assert reasons == {
        names[1]: "already gone",
        names[2]: "changed size since it was planned",
        names[3]: "replaced since it was planned (another inode)",
        names[4]: "no longer a regular file",
    }
    assert sorted(p.name for p in folder.iterdir()) == sorted(n for n in names if n != names[1])


def test_session_folder_swapped_for_a_symlink_is_refused(tmp_path: Path) -> None:
    layout = Layout(tmp_path / "root")
    names = [backup_name(NOTES, v) for v in range(1, 5)]
    folder = write_backups(layout, names)
    cps = [checkpoint("p1", {"n": (NOTES, 1)}), checkpoint("p4", {"n": (NOTES, 4)})]
    plan = plan_backup_retention(layout, SESSION, cps, keep_checkpoints=1)
    assert plan.delete

    elsewhere = tmp_path / "elsewhere"
    folder.rename(elsewhere)
    folder.symlink_to(elsewhere)
    with pytest.raises(Refused):
        apply_backup_retention(layout, plan)
    with pytest.raises(Refused):
        read_backup_listing(layout, SESSION)
    assert sorted(p.name for p in elsewhere.iterdir()) == sorted(names)


@pytest.mark.parametrize("bad", ["..", "../other", "a/b", ""])
def test_session_ids_that_are_not_plain_names_are_refused(tmp_path: Path, bad: str) -> None:
    with pytest.raises(Refused):
        plan_backup_retention(Layout(tmp_path), bad, [])


def test_plan_for_another_folder_is_refused(tmp_path: Path) -> None:
    layout = Layout(tmp_path / "root")
    write_backups(layout, [backup_name(NOTES, v) for v in range(1, 5)])
    cps = [checkpoint("p1", {"n": (NOTES, 1)}), checkpoint("p4", {"n": (NOTES, 4)})]
    plan = plan_backup_retention(layout, SESSION, cps, keep_checkpoints=1)
    with pytest.raises(Refused):
        apply_backup_retention(Layout(tmp_path / "other-root"), plan)


def test_every_fixture_keeps_all_its_backups(tmp_path: Path) -> None:
    """Under 100 checkpoints nothing is superseded; the /exit backups (01 a.txt@v3, 02
    c.txt@v2) are kept as their file's newest backup."""
    for scenario in sorted(p for p in FIXTURES.iterdir() if (p / "claude-home").is_dir()):
        root = tmp_path / scenario.name
        shutil.copytree(scenario / "claude-home", root)
        make_writable(root)
        layout = Layout(root)
        for project in layout.iter_project_dirs():
            for path in layout.iter_transcripts(project):
                if not layout.backup_dir(path.stem).is_dir():
                    continue
                checkpoints = read_checkpoints(Transcript.open(path))
                plan = plan_backup_retention(layout, path.stem, checkpoints)
                assert plan.delete == (), scenario.name
                assert sum(plan.kept.values()) == len(list(plan.folder.iterdir()))


# -- properties -----------------------------------------------------------------------

PATHS = [f"/p/file{i}.txt" for i in range(4)]


@st.composite
def sessions(draw: st.DrawFn) -> tuple[list[Checkpoint], list[BackupEntry], int]:
    """Checkpoints over a few files, the versions on disk, and hard links among them."""
    count = draw(st.integers(1, 12))
    versions = dict.fromkeys(PATHS, 0)
    cps = []
    for k in range(count):
        cp = Checkpoint(f"p{k}", None)
        for path in draw(st.lists(st.sampled_from(PATHS), unique=True, max_size=4)):
            if draw(st.booleans()):
                versions[path] += 1  # a new version; else reuse the current one
            if versions[path] == 0:
                versions[path] = 1
            null = versions[path] == 1 and draw(st.booleans())
            name = None if null else backup_name(path, versions[path])
            cp.files[path] = FileBackup(path, versions[path], name, None, None)
        cps.append(cp)
    listed: list[tuple[str, int, int]] = []  # name, version, inode
    inode = 100
    for path in PATHS:
        top = versions[path] + draw(st.integers(0, 2))  # maybe /exit or in-flight backups
        for version in range(1, top + 1):
            if draw(st.integers(0, 4)) == 0:
                continue  # retention already removed it, or v1 was null
            if not listed or draw(st.booleans()):
                inode += 1  # else: dedup, a hard link to the previous backup's inode
            listed.append((backup_name(path, version), version, inode))
    # Each inode's links: its names here, plus maybe one elsewhere (another session).
    links = {i: sum(1 for _, _, j in listed if j == i) for _, _, i in listed}
    outside = {i: draw(st.integers(0, 1)) for i in links}
    size = {i: 10 + i for i in links}  # one inode, one content, one size
    entries = [
        BackupEntry(name, True, size[i], i, 1, links[i] + outside[i]) for name, _, i in listed
    ]
    keep = draw(st.integers(1, 14))
    return cps, entries, keep


@settings(max_examples=300, deadline=None)
@given(sessions())
def test_plan_invariants(case: tuple[list[Checkpoint], list[BackupEntry], int]) -> None:
    cps, entries, keep = case
    plan = build_backup_retention(
        SESSION, Path("/fh") / SESSION, entries, cps, keep_checkpoints=keep
    )
    deleted = {d.path.name for d in plan.delete}
    protected = {
        b.backup_file_name for c in cps[-keep:] for b in c.files.values() if b.backup_file_name
    }
    by_file: dict[str, list[int]] = {}
    for e in entries:
        by_file.setdefault(e.name[:16], []).append(version_of(e.name))

    # Never a backup one of the newest `keep` checkpoints names.
    assert not deleted & protected
    for digest, found in by_file.items():
        # Never a file's first backup on disk, nor its newest.
        assert f"{digest}@v{min(found)}" not in deleted
        assert f"{digest}@v{max(found)}" not in deleted
    # Everything else listed goes: the plan is exactly the complement.
    expected = {
        e.name
        for e in entries
        if e.name not in protected
        and version_of(e.name) not in (min(by_file[e.name[:16]]), max(by_file[e.name[:16]]))
    }
    assert deleted == expected
    assert sum(plan.kept.values()) + len(plan.delete) == len(entries)
    # Freed space: an inode counts once, and only if all its links are deleted.
    freed = 0
    for inode in {e.inode for e in entries}:
        names = [e for e in entries if e.inode == inode]
        if all(e.name in deleted for e in names) and len(names) >= names[0].links:
            freed += names[0].size
    assert plan.bytes_freed == freed <= plan.bytes_listed


def test_a_plan_reads_the_checkpoints_of_the_transcript(tmp_path: Path) -> None:
    """15-many-checkpoints end to end: 110 snapshots in a transcript, v1..v111 on disk."""
    layout = Layout(tmp_path / "root")
    transcript = write_many_checkpoints(layout)
    folder = write_backups(layout, [backup_name(NOTES, v) for v in range(1, 112)])

    plan = plan_backup_retention(layout, SESSION, read_checkpoints(Transcript.open(transcript)))
    assert sorted(version_of(d.path) for d in plan.delete) == list(range(2, 11))
    assert plan.bytes_freed > 0
    apply_backup_retention(layout, plan)
    assert len(list(folder.iterdir())) == 102


def test_backup_names() -> None:
    assert parse_backup_name("1129dc4b8e8aef4f@v12") == ("1129dc4b8e8aef4f", 12)
    assert parse_backup_name("ab" * 32 + "@v3") == ("ab" * 32, 3)
    for foreign in (
        ".1129dc4b8e8aef4f@v2.x1y2.tmp",  # BackupStore's temporary file
        "1129dc4b8e8aef4f@v2.link",
        "1129DC4B8E8AEF4F@v2",
        "1129dc4b8e8aef4f",
        "../1129dc4b8e8aef4f@v2",
    ):
        assert parse_backup_name(foreign) is None, foreign


def test_doctor_calls_backups_the_client_pruned_pruned_and_others_missing(tmp_path: Path) -> None:
    """15-many-checkpoints after the client pruned v2..v11: doctor says pruned (and the
    store is ok); a backup the rule keeps (one the newest checkpoints name) gone is
    missing."""
    layout = Layout(tmp_path / "root")
    write_many_checkpoints(layout)
    kept = [1, *range(12, 112)]  # as the client left it: v2..v11 pruned
    write_backups(layout, [backup_name(NOTES, v) for v in kept])
    found = check_store(layout)
    kinds = [p.kind for p in found.problems if p.kind.endswith("-backup")]
    assert kinds == ["pruned-backup"] * 10
    assert all(p.kind == "pruned-backup" for p in found.problems) and found.ok
    (layout.backup_dir(SESSION) / backup_name(NOTES, 50)).unlink()  # a newest-100 one
    found = check_store(layout)
    missing = [p.detail for p in found.problems if p.kind == "missing-backup"]
    assert len(missing) == 1 and "v50" in missing[0] and not found.ok
    assert sum(p.kind == "pruned-backup" for p in found.problems) == 10
