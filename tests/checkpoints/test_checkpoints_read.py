"""Reading checkpoints: snapshots with their deltas folded in, against the real-client fixtures.

The fixtures show, per prompt, which files were tracked at which version and which backup
files exist; ``truth/restore-<k>/`` shows what "Restore code" to prompt k left on disk,
which a checkpoint (entry at P, else the file's v1) must reproduce for every tracked file.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sessiontree.checkpoints.read import (
    Checkpoint,
    find_missing_backups,
    fold_checkpoints,
    read_checkpoints,
)
from sessiontree.conversation.transcript import Transcript
from sessiontree.model.records import Record
from sessiontree.storage.layout import Layout
from tests.conftest import FIXTURES

SESSIONS = {
    "01-basic": "0f31836f-46f1-45f6-85ba-7878a822a884",
    "02-rewind-both": "b06189e0-a90e-451c-aa38-609447827575",
}


def _open(scenario: str) -> Transcript:
    root = FIXTURES / scenario / "claude-home"
    [path] = (root / "projects").glob(f"*/{SESSIONS[scenario]}.jsonl")
    return Transcript.open(path)


def _summary(checkpoints: list[Checkpoint]) -> list[tuple[str, dict[str, tuple[int, str | None]]]]:
    return [
        (c.message_id[:8], {p: (b.version, b.backup_file_name) for p, b in c.files.items()})
        for c in checkpoints
    ]


def test_01_checkpoint_per_prompt() -> None:
    transcript = _open("01-basic")
    checkpoints = read_checkpoints(transcript)
    assert [c.message_id for c in checkpoints] == transcript.prompt_uuids()
    assert _summary(checkpoints) == [
        ("db0ed167", {"a.txt": (1, None)}),  # created by Write in p1: did not exist
        ("5fcb784a", {"a.txt": (2, "b9c7434c4a8ed1ca@v2"), "notes.md": (1, "1129dc4b8e8aef4f@v1")}),
        ("8d6b6ac3", {"a.txt": (2, "b9c7434c4a8ed1ca@v2"), "notes.md": (2, "1129dc4b8e8aef4f@v2")}),
    ]
    # p3 ran Bash: its second snapshot (same messageId) says so, and is folded into one
    assert [c.has_untracked_changes for c in checkpoints] == [False, False, True]
    snapshots = transcript.metadata("file-history-snapshot")
    assert len(snapshots) == 4
    assert checkpoints[0].timestamp == snapshots[0].get("snapshot")["timestamp"]
    # a reused backup keeps its version and its first backup time
    a_txt = [c.files["a.txt"] for c in checkpoints[1:]]
    assert a_txt[0].backup_time == a_txt[1].backup_time
    assert {b.real_parent_dir for c in checkpoints for b in c.files.values()} == {
        "/home/dev/01-basic"
    }


def test_02_checkpoints_after_rewind() -> None:
    transcript = _open("02-rewind-both")
    checkpoints = read_checkpoints(transcript)
    assert [c.message_id for c in checkpoints] == transcript.prompt_uuids()
    assert _summary(checkpoints) == [
        ("e42339f0", {"a.txt": (1, None)}),
        ("68cc9d25", {"a.txt": (2, "144f74401a9d870e@v2"), "notes.md": (1, "aa3a30f4ac76ce74@v1")}),
        ("aed0d84c", {"a.txt": (2, "144f74401a9d870e@v2"), "notes.md": (2, "aa3a30f4ac76ce74@v2")}),
        # p4, after restoring code to p2: notes.md changed back, so a new version v3
        (
            "92d1c3f4",
            {
                "a.txt": (2, "144f74401a9d870e@v2"),
                "notes.md": (3, "aa3a30f4ac76ce74@v3"),
                "c.txt": (1, None),
            },
        ),
    ]


@pytest.mark.parametrize("scenario", sorted(SESSIONS))
def test_named_backups_exist_and_the_rest_are_exit_backups(scenario: str) -> None:
    transcript = _open(scenario)
    checkpoints = read_checkpoints(transcript)
    layout = Layout(FIXTURES / scenario / "claude-home")
    session = SESSIONS[scenario]
    assert find_missing_backups(layout, session, checkpoints, str(transcript.path)) == []
    named = {b.backup_file_name for c in checkpoints for b in c.files.values()} - {None}
    on_disk = {p.name for p in layout.backup_dir(session).iterdir()}
    assert named <= on_disk
    # /exit writes one backup no record names (FINDINGS §1)
    assert (
        on_disk - named
        == {
            "01-basic": {"b9c7434c4a8ed1ca@v3"},
            "02-rewind-both": {"b0beebaef66d3e3e@v2"},
        }[scenario]
    )


def test_missing_backup_is_reported(tmp_path: Path) -> None:
    transcript = _open("01-basic")
    checkpoints = read_checkpoints(transcript)
    problems = find_missing_backups(Layout(tmp_path), SESSIONS["01-basic"], checkpoints, "x")
    assert sorted(p.detail.split(": ")[1] for p in problems) == sorted(
        [
            "b9c7434c4a8ed1ca@v2 not in file-history",
            "1129dc4b8e8aef4f@v1 not in file-history",
            "1129dc4b8e8aef4f@v2 not in file-history",
        ]
    )
    assert {p.kind for p in problems} == {"missing-backup"}


def _restore_cases() -> list[tuple[str, Path]]:
    return [
        (scenario, folder)
        for scenario in sorted(SESSIONS)
        for folder in sorted((FIXTURES / scenario / "truth").glob("restore-*"))
    ]


@pytest.mark.parametrize(
    ("scenario", "truth"), _restore_cases(), ids=[f"{s}-{t.name}" for s, t in _restore_cases()]
)
def test_checkpoint_contents_are_what_restore_code_left(scenario: str, truth: Path) -> None:
    """For every tracked file: its entry at the prompt, else its v1; None = absent."""
    meta = json.loads((truth / "meta.json").read_text(encoding="utf-8"))
    transcript = _open(scenario)
    checkpoints = read_checkpoints(transcript)
    by_id = {c.message_id: c for c in checkpoints}
    target = by_id[meta["promptUuid"]]
    first: dict[str, str | None] = {}
    for checkpoint in checkpoints:
        for path, backup in checkpoint.files.items():
            if backup.version == 1:
                first.setdefault(path, backup.backup_file_name)
    tracked = {p for c in checkpoints for p in c.files}
    assert tracked == set(first)  # every tracked file has a v1
    backups = Layout(FIXTURES / scenario / "claude-home").backup_dir(SESSIONS[scenario])
    for path in sorted(tracked):
        name = target.files[path].backup_file_name if path in target.files else first[path]
        want = truth / "files" / path
        if name is None:
            assert not want.exists(), path
        else:
            assert (backups / name).read_bytes() == want.read_bytes(), path


# -- folding rules on small inputs ------------------------------------------------------------


def snapshot(message_id: str, files: dict[str, object], **extra: object) -> Record:
    return Record(
        {
            "type": "file-history-snapshot",
            "messageId": message_id,
            "snapshot": {
                "messageId": message_id,
                "trackedFileBackups": files,
                "timestamp": f"t-{message_id}",
                **extra,
            },
        }
    )


def delta(message_id: str, path: str, name: str | None, version: int) -> Record:
    return Record(
        {
            "type": "file-history-delta",
            "snapshotMessageId": message_id,
            "trackingPath": path,
            "backup": {"backupFileName": name, "version": version, "backupTime": "b"},
            "timestamp": f"d-{message_id}",
        }
    )


def entry(name: str | None, version: int) -> dict[str, object]:
    return {"backupFileName": name, "version": version, "backupTime": "b", "realParentDir": "/p"}


def test_fold_deltas_into_the_snapshot_they_name() -> None:
    records = [
        snapshot("p1", {}),
        delta("p1", "a.txt", None, 1),
        snapshot("p2", {"a.txt": entry("h@v2", 2)}),
        delta("p2", "n.md", "n@v1", 1),
        delta("p1", "late.txt", "l@v1", 1),  # a delta for an older prompt still lands there
    ]
    folded = fold_checkpoints(records)
    assert _summary(folded) == [
        ("p1", {"a.txt": (1, None), "late.txt": (1, "l@v1")}),
        ("p2", {"a.txt": (2, "h@v2"), "n.md": (1, "n@v1")}),
    ]
    assert [c.timestamp for c in folded] == ["t-p1", "t-p2"]


def test_fold_delta_without_snapshot_and_bad_records() -> None:
    records = [
        delta("p0", "x", "x@v1", 1),
        Record({"type": "file-history-snapshot", "snapshot": "nope"}),
        Record({"type": "file-history-snapshot", "snapshot": {"trackedFileBackups": {}}}),
        Record({"type": "file-history-delta", "snapshotMessageId": 5, "trackingPath": "x"}),
        snapshot("p1", {"ok": entry("o@v1", 1), "bad": "not a dict"}),
        Record({"type": "user", "uuid": "u"}),
    ]
    folded = fold_checkpoints(records)
    assert _summary(folded) == [("p0", {"x": (1, "x@v1")}), ("p1", {"ok": (1, "o@v1")})]
    assert folded[0].timestamp == "d-p0"


def test_fold_repeated_snapshot_of_one_prompt_is_one_checkpoint() -> None:
    records = [
        snapshot("p1", {"a": entry("a@v1", 1)}),
        snapshot("p1", {"a": entry("a@v2", 2)}, hasUntrackedChanges=True),
    ]
    [checkpoint] = fold_checkpoints(records)
    assert checkpoint.files["a"].version == 2
    assert checkpoint.has_untracked_changes
