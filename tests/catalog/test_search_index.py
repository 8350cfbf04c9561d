"""The search index (catalog/search_index.py): what it finds in the real client's
sessions, what an update reads, what it does with changed files, and its filters."""

from __future__ import annotations

import json
import os
import re
import shutil
import sqlite3
import tempfile
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sessiontree.catalog.search_index import (
    RACY_NS,
    Filters,
    IndexStats,
    QuerySyntaxError,
    parse_snippet,
    phrase_query,
    query,
    reset_index,
    update_index,
)
from sessiontree.catalog.search_index.snippets import RowPlace, row_texts
from sessiontree.conversation.transcript import Transcript
from sessiontree.errors import Refused
from sessiontree.model.search_parts import parse_search_parts
from sessiontree.storage.jsonl import append_records
from sessiontree.storage.layout import Layout
from tests.conftest import WILD, needs_wild

REWIND = "b06189e0-a90e-451c-aa38-609447827575"
SUBAGENT = "a771dff3-5078-4c59-bdb9-12a3844ac099"
AGENT = "affb34be16ea94168"


TRANSCRIPTS = Filters(sources=["transcript", "subagent"])


def index(root: Path, db: Path, **options: Any) -> IndexStats:
    return update_index(db, Layout(root), **options)


def transcript_of(root: Path) -> Path:
    return next(root.glob("projects/*/*.jsonl"))


def user(uuid: str, parent: str | None, text: str, when: str = "2026-11-30T10:00:00.000Z"):  # type: ignore[no-untyped-def]
    return {
        "type": "user",
        "uuid": uuid,
        "parentUuid": parent,
        "timestamp": when,
        "isSidechain": False,
        "cwd": "/home/dev/x",
        "message": {"role": "user", "content": text},
    }


def assistant(
    uuid: str,
    parent: str | None,
    blocks: list[dict[str, Any]],
    when: str = "2026-11-30T10:00:01.000Z",
):  # type: ignore[no-untyped-def]
    return {
        "type": "assistant",
        "uuid": uuid,
        "parentUuid": parent,
        "timestamp": when,
        "isSidechain": False,
        "message": {"role": "assistant", "id": f"m-{uuid}", "content": blocks},
    }


def last_uuid(path: Path) -> str:
    lines = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return str(next(r["uuid"] for r in reversed(lines) if r.get("uuid")))


def settle(path: Path) -> None:
    """Make the file's mtime old: as if written long before it is indexed."""
    old = os.stat(path).st_mtime_ns - 10 * RACY_NS
    os.utime(path, ns=(old, old))


# -- what it finds ----------------------------------------------------------------------


def test_off_path_hits_are_found_and_marked(fixture_root, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    root = fixture_root("02-rewind-both")
    db = tmp_path / "index.sqlite"
    index(root, db)
    rewound = query(db, "p3 edit and bash", filters=Filters(kinds=["prompt"]))
    assert [h.session_id for h in rewound] == [REWIND]
    assert not rewound[0].on_active_path
    kept = query(db, "p4 after rewind", filters=Filters(kinds=["prompt"]))
    assert len(kept) == 1 and kept[0].on_active_path
    # only off the path / only on it
    off = query(db, "edit", on_active_path=False)
    on = query(db, "edit", on_active_path=True)
    assert off and all(not h.on_active_path for h in off)
    assert on and all(h.on_active_path for h in on)
    every = query(db, "edit")
    assert len(off) + len(on) == len([h for h in every if h.source != "history"])
    assert any(h.source == "history" for h in every)  # on no path: in neither


def test_compacted_away_text_is_found(fixture_root, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    root = fixture_root("06-compact")
    db = tmp_path / "index.sqlite"
    index(root, db)
    before = query(db, "p2 read and edit", filters=Filters(kinds=["prompt"]))
    assert len(before) == 1 and not before[0].on_active_path
    summary = query(db, "continued from a previous conversation")
    assert summary and summary[0].kind == "summary" and summary[0].role == "system"
    assert summary[0].on_active_path


def test_subagent_transcripts_are_searched(fixture_root, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    root = fixture_root("14-subagent")
    db = tmp_path / "index.sqlite"
    index(root, db)
    hits = query(db, "sub.txt", filters=Filters(sources=["subagent"]))
    assert hits
    for hit in hits:
        assert (hit.source, hit.agent_id, hit.session_id) == ("subagent", AGENT, SUBAGENT)
        assert hit.is_sidechain and hit.path.endswith(f"subagents/agent-{AGENT}.jsonl")
    assert {"Write"} <= {h.tool_name for h in hits if h.role == "tool"}
    main = query(db, "sub.txt", filters=Filters(sources=["transcript"]))
    assert main and all(h.source == "transcript" and not h.is_sidechain for h in main)


def test_history_entries_are_searched(fixture_root, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    root = fixture_root("02-rewind-both")
    db = tmp_path / "index.sqlite"
    index(root, db, history=False)
    assert query(db, "after rewind", filters=Filters(sources=["history"])) == []
    index(root, db)
    hits = query(db, "after rewind", filters=Filters(sources=["history"]))
    assert [h.snippet for h in hits] == [
        "p4 after rewind [[WRITE /home/dev/02-rewind-both/c.txt|cee\\n]]"
    ]
    for hit in hits:
        assert (hit.kind, hit.role, hit.uuid, hit.on_active_path) == (
            "history",
            "user",
            None,
            False,
        )
        assert hit.project == "/home/dev/02-rewind-both"
        assert hit.project_dir == "-home-dev-02-rewind-both"
        assert hit.timestamp is not None and hit.timestamp.endswith("Z")
    scoped = Filters(sources=["history"], project_dirs=[root / "projects" / "-home-dev-elsewhere"])
    assert query(db, "after rewind", filters=scoped) == []


def test_tool_calls_and_results_carry_the_tool_name(fixture_root, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    root = fixture_root("02-rewind-both")
    db = tmp_path / "index.sqlite"
    index(root, db)
    hits = query(db, "made-by-bash", filters=Filters(tools=["bash"]))  # any case
    assert {h.kind for h in hits} <= {"tool_use", "tool_result"} and hits
    assert {h.tool_name for h in hits} == {"Bash"}
    every = query(db, "rewind", filters=Filters(roles=["tool"]))
    assert {"Write", "Edit", "Bash"} <= {h.tool_name for h in every}
    assert all(h.tool_name for h in every)


def test_thinking_is_marked_and_snippets_highlight_the_match(fixture_root, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    root = fixture_root("01-basic")
    path = transcript_of(root)
    db = tmp_path / "index.sqlite"
    thought = {"type": "thinking", "thinking": "pondering the zebras quietly", "signature": "s"}
    append_records(path, [assistant("t1", last_uuid(path), [thought])])
    index(root, db)
    (hit,) = query(db, "zebras")
    assert (hit.kind, hit.role, hit.uuid) == ("thinking", "assistant", "t1")
    assert [hit.snippet[a:b] for a, b in hit.highlights] == ["zebras"]
    assert query(db, "zebras", filters=Filters(kinds=["text"])) == []


# -- incremental ------------------------------------------------------------------------


def test_an_append_is_read_alone(fixture_root, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    root = fixture_root("02-rewind-both")
    path = transcript_of(root)
    db = tmp_path / "index.sqlite"
    first = index(root, db)
    assert first.bytes_read == path.stat().st_size + (root / "history.jsonl").stat().st_size
    for count in (1, 5):  # two sizes: what is read follows what was appended
        before = path.stat().st_size
        parent = last_uuid(path)
        records = []
        for i in range(count):
            records.append(user(f"n{count}-{i}", parent, f"appended words number {count} {i}"))
            parent = records[-1]["uuid"]
        append_records(path, records)
        stats = index(root, db, history=False)
        assert stats.bytes_read == path.stat().st_size - before
        assert stats.lines_decoded == count and stats.rows_added == count
        assert stats.rebuilt == 0
        assert len(query(db, f"appended words number {count}")) == count
    again = index(root, db, history=False)
    assert (again.bytes_read, again.lines_decoded, again.rows_added) == (0, 0, 0)


def test_a_settled_unchanged_file_is_not_opened(fixture_root, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    root = fixture_root("01-basic")
    settle(transcript_of(root))
    settle(root / "history.jsonl")
    db = tmp_path / "index.sqlite"
    index(root, db)
    again = index(root, db)
    assert (again.files, again.indexed, again.bytes_read) == (2, 0, 0)


def test_the_active_path_is_computed_at_query_time(fixture_root, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """A new leaf appended after indexing moves the active path: the hits say so."""
    root = fixture_root("02-rewind-both")
    path = transcript_of(root)
    db = tmp_path / "index.sqlite"
    index(root, db)
    (p3,) = query(db, "p3 edit and bash", filters=Filters(kinds=["prompt"]))
    assert not p3.on_active_path
    (off_leaf,) = Transcript.open(path).off_path_leaves()  # the rewound branch's end
    bookmark = {"type": "last-prompt", "lastPrompt": "on", "leafUuid": "back-on-p3"}
    append_records(path, [user("back-on-p3", off_leaf, "going on from the rewound branch")])
    append_records(path, [{**bookmark, "sessionId": REWIND}])
    (moved,) = query(db, "p3 edit and bash", filters=Filters(kinds=["prompt"]))
    assert moved.on_active_path  # not re-indexed: computed now


def test_a_truncated_file_is_indexed_again_whole(fixture_root, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    root = fixture_root("02-rewind-both")
    path = transcript_of(root)
    db = tmp_path / "index.sqlite"
    index(root, db)
    data = path.read_bytes()
    cut = data.index(b"\n", len(data) // 3) + 1
    path.write_bytes(data[:cut])  # shorter, in place
    stats = index(root, db, history=False)
    assert stats.rebuilt == 1 and stats.bytes_read == cut
    assert query(db, "p4 after rewind", filters=TRANSCRIPTS) == []
    assert dump(db) == dump(fresh(root, tmp_path))


def test_a_file_rewritten_past_its_old_size_is_indexed_again(fixture_root, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    root = fixture_root("01-basic")
    path = transcript_of(root)
    db = tmp_path / "index.sqlite"
    index(root, db)
    data = path.read_bytes()
    with path.open("r+b") as handle:  # same inode, same head, the bytes before the end changed
        handle.truncate(len(data) // 2)
        handle.seek(0, os.SEEK_END)
        handle.write(b"\n" + json.dumps(user("z1", None, "rewritten in place")).encode() * 1)
        handle.write(b"\n" + data)
    stats = index(root, db, history=False)
    assert stats.rebuilt == 1
    assert query(db, "rewritten in place")
    assert dump(db) == dump(fresh(root, tmp_path))


def test_a_replaced_file_is_indexed_again(fixture_root, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    root = fixture_root("01-basic")
    path = transcript_of(root)
    db = tmp_path / "index.sqlite"
    index(root, db)
    twin = path.with_suffix(".new")
    twin.write_text(path.read_text() + json.dumps(user("r1", None, "a replaced file")) + "\n")
    os.replace(twin, path)
    stats = index(root, db, history=False)
    assert stats.rebuilt == 1
    assert len(query(db, "a replaced file")) == 1
    assert dump(db) == dump(fresh(root, tmp_path))


def test_a_deleted_file_loses_its_rows(fixture_root, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    root = fixture_root("14-subagent")
    db = tmp_path / "index.sqlite"
    index(root, db)
    assert query(db, "sub.txt", filters=Filters(sources=["subagent"]))
    shutil.rmtree(next(root.glob("projects/*/*/subagents")))
    stats = index(root, db)
    assert stats.removed == 1
    assert query(db, "sub.txt", filters=Filters(sources=["subagent"])) == []
    transcript_of(root).unlink()
    assert index(root, db).removed == 1
    assert query(db, "sub.txt", filters=TRANSCRIPTS) == []
    assert query(db, "sub.txt")  # history.jsonl still has it


def test_the_index_keeps_no_copy_of_the_text(fixture_root, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """Only the words' index is stored; a snippet reads the text from the transcript."""
    root = fixture_root("01-basic")
    db = tmp_path / "index.sqlite"
    index(root, db)
    with sqlite3.connect(db) as conn:
        tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master")}
        assert "texts_content" not in tables
        assert conn.execute("SELECT count(*) FROM entries").fetchone()[0] > 0
    hits = query(db, "create")
    assert hits and all("create" in h.snippet.lower() for h in hits)


def test_the_words_of_a_replaced_file_are_dead_and_never_found(
    fixture_root, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    """A replaced file's old rows stay in the words' index (no text to remove them with),
    matched by no entry: never a hit, and their ids are never given to new rows."""
    root = fixture_root("01-basic")
    path = transcript_of(root)
    append_records(path, [user("z1", last_uuid(path), "zebra crossing")])
    db = tmp_path / "index.sqlite"
    index(root, db, history=False)
    assert [h.uuid for h in query(db, "zebra")] == ["z1"] and query(db, "create")
    with sqlite3.connect(db) as conn:
        (top,) = conn.execute("SELECT max(id) FROM entries").fetchone()
    twin = path.with_suffix(".new")
    twin.write_text(json.dumps(user("g1", None, "giraffe neck")) + "\n")
    os.replace(twin, path)
    stats = index(root, db, history=False)
    assert stats.rebuilt == 1 and not stats.renewed
    assert query(db, "zebra") == [] and query(db, "zebra", limit=5) == []
    assert query(db, "create") == []  # the old file's words, all of them
    assert query(db, "create", limit=1) == []
    [giraffe] = query(db, "giraffe")
    assert giraffe.uuid == "g1" and giraffe.snippet == "giraffe neck"
    with sqlite3.connect(db) as conn:
        (low,) = conn.execute("SELECT min(id) FROM entries").fetchone()
        dead = conn.execute("SELECT value FROM meta WHERE key = 'dead_rows'").fetchone()[0]
    assert low > top  # a new row inherits no dead row's words
    assert int(dead) > 0


def test_many_dead_rows_make_the_next_update_build_the_index_anew(
    fixture_root, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:  # type: ignore[no-untyped-def]
    from sessiontree.catalog.search_index import database

    monkeypatch.setattr(database, "DEAD_FLOOR", 2)
    root = fixture_root("02-rewind-both")
    path = transcript_of(root)
    db = tmp_path / "index.sqlite"
    index(root, db)
    data = path.read_bytes()
    path.write_bytes(data[: data.index(b"\n", len(data) // 3) + 1])
    assert not index(root, db).renewed  # the truncation makes the dead rows
    again = index(root, db)  # and the next update renews
    assert again.renewed and again.indexed == again.files
    with sqlite3.connect(db) as conn:
        assert conn.execute("SELECT value FROM meta WHERE key = 'dead_rows'").fetchone() == ("0",)
    assert dump(db) == dump(fresh(root, tmp_path))
    assert not index(root, db).renewed


def test_a_hit_whose_line_changed_since_it_was_indexed_has_no_snippet(
    fixture_root, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    """A query on an index not brought up to date reads the line the hit names: another
    record there gives an empty snippet, never that record's text."""
    root = fixture_root("01-basic")
    path = transcript_of(root)
    append_records(path, [user("k1", last_uuid(path), "kiwi fruit")])
    db = tmp_path / "index.sqlite"
    index(root, db, history=False)
    data = path.read_bytes()
    last = data.rstrip(b"\n").rsplit(b"\n", 1)[-1]
    other = json.dumps(user("x1", None, "other words entirely")).encode()
    path.write_bytes(data.replace(last, other.ljust(len(last))))  # same offset, same length
    [hit] = query(db, "kiwi")
    assert hit.uuid == "k1" and hit.snippet == "" and hit.highlights == ()
    path.unlink()
    assert query(db, "kiwi")[0].snippet == ""  # gone: no snippet, no error


def test_a_torn_last_line_waits_until_it_is_whole(fixture_root, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    root = fixture_root("01-basic")
    path = transcript_of(root)
    db = tmp_path / "index.sqlite"
    index(root, db)
    line = json.dumps(user("torn1", last_uuid(path), "half written words")).encode() + b"\n"
    with path.open("ab") as handle:
        handle.write(line[:40])
    torn = index(root, db, history=False)
    assert torn.lines_decoded == 0 and torn.problems == 0  # a torn line is no problem yet
    assert query(db, "half written words") == []
    with path.open("ab") as handle:
        handle.write(line[40:])
    whole = index(root, db, history=False)
    assert whole.lines_decoded == 1 and whole.bytes_read == len(line)
    assert [h.uuid for h in query(db, "half written words")] == ["torn1"]


def test_bad_and_huge_lines_are_skipped_and_counted(fixture_root, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    root = fixture_root("01-basic")
    path = transcript_of(root)
    db = tmp_path / "index.sqlite"
    parent = last_uuid(path)
    with path.open("ab") as handle:
        handle.write(b"{not json at all\n")
        handle.write(b"\xff\xfe garbage bytes\n")
        handle.write(json.dumps(user("ok1", parent, "survivor after damage")).encode() + b"\n")
    longest = max(len(line) for line in path.read_bytes().splitlines())
    assert longest < 20_000
    with path.open("ab") as handle:
        handle.write(json.dumps(user("big", parent, "enormous " + "x" * 30_000)).encode() + b"\n")
    stats = index(root, db, max_line_bytes=20_000)
    assert stats.problems == 2 and stats.skipped_lines == 1
    assert [h.uuid for h in query(db, "survivor after damage")] == ["ok1"]
    assert query(db, "enormous") == []


def test_a_corrupt_index_is_made_again(fixture_root, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    root = fixture_root("01-basic")
    db = tmp_path / "index.sqlite"
    db.write_bytes(b"this is not a database" * 100)
    index(root, db)
    assert query(db, "p1 create")


def test_reset_empties_the_index(fixture_root, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    root = fixture_root("01-basic")
    db = tmp_path / "index.sqlite"
    index(root, db)
    reset_index(db)
    assert query(db, "p1 create") == []
    assert index(root, db).rebuilt == 0 and query(db, "p1 create")


# -- filters and queries ----------------------------------------------------------------


def test_filters(fixture_root, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    root = fixture_root("02-rewind-both")
    path = transcript_of(root)
    parent = last_uuid(path)
    append_records(
        path,
        [
            user("d1", parent, "dated marmot one", "2026-10-01T12:00:00.000Z"),
            user("d2", "d1", "dated marmot two", "2026-11-15T12:00:00.000Z"),
            assistant(
                "d3", "d2", [{"type": "text", "text": "dated marmot three"}], "2026-12-01T00:00:00Z"
            ),
        ],
    )
    other = root / "projects" / "-home-dev-other"
    other.mkdir()
    twin = "11111111-2222-4333-8444-555555555555"
    shutil.copy(path, other / f"{twin}.jsonl")
    db = tmp_path / "index.sqlite"
    index(root, db)

    def uuids(**options: Any) -> list[str | None]:
        hits = query(db, "dated marmot", filters=Filters(**options))
        return sorted(h.uuid for h in hits if h.session_id == REWIND)

    assert uuids() == ["d1", "d2", "d3"]
    assert len(query(db, "dated marmot")) == 6  # both copies
    assert {
        h.session_id for h in query(db, "dated marmot", filters=Filters(session_ids=[twin]))
    } == {twin}
    assert {
        h.project_dir for h in query(db, "dated marmot", filters=Filters(project_dirs=[other]))
    } == {"-home-dev-other"}
    assert uuids(roles=["assistant"]) == ["d3"]
    assert uuids(roles=["user", "assistant"]) == ["d1", "d2", "d3"]
    assert uuids(kinds=["prompt"]) == ["d1", "d2"]
    assert uuids(since=datetime(2026, 11, 1, tzinfo=UTC)) == ["d2", "d3"]
    assert uuids(until=datetime(2026, 11, 15, 12, tzinfo=UTC)) == ["d1"]  # exclusive
    assert uuids(
        since=datetime(2026, 11, 1, tzinfo=UTC).timestamp(), until=datetime(2026, 12, 1, tzinfo=UTC)
    ) == ["d2"]
    assert uuids(tools=["Bash"]) == []
    assert uuids(roles=[]) == []
    assert len(query(db, "dated marmot", limit=2)) == 2
    assert len(query(db, "dated marmot", on_active_path=True, limit=4)) == 4


def test_hits_come_best_first(fixture_root, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    root = fixture_root("01-basic")
    path = transcript_of(root)
    parent = last_uuid(path)
    append_records(
        path,
        [
            user("r1", parent, "kiwi " + "filler words here " * 40),
            user("r2", "r1", "kiwi kiwi kiwi"),
        ],
    )
    db = tmp_path / "index.sqlite"
    index(root, db)
    hits = query(db, "kiwi")
    assert [h.uuid for h in hits] == ["r2", "r1"]
    assert hits[0].rank < hits[1].rank  # bm25: lower is better


def test_a_first_page_of_text_found_everywhere_is_ranked_among_its_newest_matches(
    fixture_root, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:  # type: ignore[no-untyped-def]
    from sessiontree.catalog.search_index import querying

    monkeypatch.setattr(querying, "RANK_WINDOW", 4)
    root = fixture_root("01-basic")
    path = transcript_of(root)
    parent = last_uuid(path)
    # the best match (most "kiwi", shortest) is the oldest; then ten newer, weaker ones
    rows = [user("old-best", parent, "kiwi kiwi kiwi")]
    for n in range(10):
        rows.append(user(f"new-{n}", rows[-1]["uuid"], f"kiwi {n} " + "filler words " * 30))
    rows.append(user("tool-ish", rows[-1]["uuid"], "kiwi in a reply"))
    append_records(path, rows)
    db = tmp_path / "index.sqlite"
    index(root, db)
    everything = query(db, "kiwi")  # no limit: every match ranked
    assert everything[0].uuid == "old-best" and len(everything) == 12
    page = query(db, "kiwi", limit=3)  # ranked among the newest 4 matches
    newest = {"new-8", "new-9", "tool-ish", "new-7"}
    assert {h.uuid for h in page} <= newest and len(page) == 3
    assert [h.rank for h in page] == sorted(h.rank for h in page)
    assert query(db, "kiwi", limit=20)[0].uuid == "old-best"  # the window cannot fill it
    # a filter that leaves the window short of the page: every match ranked
    only = query(db, "kiwi", limit=2, filters=Filters(session_ids=[path.stem]), on_active_path=True)
    assert len(only) == 2


def test_every_hit_gets_its_own_snippet(
    fixture_root, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:  # type: ignore[no-untyped-def]
    """Snippets are cut from each hit's own line, read again at its offset, a batch of
    hits at a time: each hit gets the snippet of its own row, in every batch, whatever
    rows without the text lie between."""
    from sessiontree.catalog.search_index import snippets

    monkeypatch.setattr(snippets, "BATCH", 3)
    root = fixture_root("01-basic")
    path = transcript_of(root)
    rows = [user("first", last_uuid(path), "nothing here")]
    for n in range(8):
        rows.append(user(f"k{n}", rows[-1]["uuid"], f"kiwi number{n}"))
        rows.append(user(f"gap{n}", rows[-1]["uuid"], f"banana {n}"))
    append_records(path, rows)
    db = tmp_path / "index.sqlite"
    index(root, db)
    hits = query(db, "kiwi")
    assert sorted(h.uuid or "" for h in hits) == [f"k{n}" for n in range(8)]
    for hit in hits:
        assert hit.snippet == f"kiwi number{(hit.uuid or '')[1:]}"
        assert [hit.snippet[a:b] for a, b in hit.highlights] == ["kiwi"]
    assert [h.snippet for h in query(db, "kiwi", limit=2)] == [h.snippet for h in hits[:2]]


def test_plain_words_are_phrases_and_fts_syntax_is_checked(fixture_root, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    root = fixture_root("02-rewind-both")
    path = transcript_of(root)
    text = 'the quokka wombat numbat and "quoted" text'
    append_records(path, [user("q1", last_uuid(path), text)])
    db = tmp_path / "index.sqlite"
    index(root, db)
    assert [h.uuid for h in query(db, "quokka-wombat")] == ["q1"]
    assert query(db, "wombat-quokka") == []  # a phrase: in this order
    assert [h.uuid for h in query(db, '"quoted')] == ["q1"]  # a stray quote is text
    assert query(db, "quokka NOT wombat") == []  # NOT is a word here: not in the text
    assert [h.uuid for h in query(db, "quokka NOT qux", fts=True)] == ["q1"]
    assert {h.uuid for h in query(db, "numbat OR rewind", fts=True)} >= {"q1"}
    assert [h.uuid for h in query(db, "quo*", fts=True)] == ["q1"]
    for bad in ('"unclosed', "foo AND", "(foo", "nosuchcolumn:foo", "NEAR(foo"):
        with pytest.raises(QuerySyntaxError):
            query(db, bad, fts=True)
    with pytest.raises(Refused):
        query(db, "   ")
    assert phrase_query('a "b" c-d') == '"a"* """b"""* "c-d"*'
    # a plain word is the start of a word, as people type it; not the middle of one
    assert [h.uuid for h in query(db, "quok")] == ["q1"]
    assert [h.uuid for h in query(db, "quokka-wom")] == ["q1"]
    assert query(db, "okka") == []


def test_parse_snippet_cuts_around_the_first_match() -> None:
    text, ranges = parse_snippet("one \x02two\x03  three\n\tfour \x02five\x03")
    assert text == "one two three four five"
    assert [text[a:b] for a, b in ranges] == ["two", "five"]
    long = "x " * 400 + "\x02needle\x03" + " y" * 400
    cut, [(a, b)] = parse_snippet(long)
    assert len(cut) <= 302 and cut.startswith("…") and cut.endswith("…")
    assert cut[a:b] == "needle"


def test_the_index_file_is_private(fixture_root, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    root = fixture_root("01-basic")
    db = tmp_path / "cache" / "index.sqlite"
    index(root, db)
    assert db.stat().st_mode & 0o777 == 0o600
    assert (tmp_path / "cache").stat().st_mode & 0o777 == 0o700
    with sqlite3.connect(db) as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


# -- the property: incremental answers as a fresh build ---------------------------------


def dump(db: Path) -> list[tuple[Any, ...]]:
    """Every row of the index as what it says (ids left out), with its text read again
    where the row says it is (the index keeps none), sorted."""
    with sqlite3.connect(db) as conn:
        rows = conn.execute(
            "SELECT e.id, f.path, f.source, e.uuid, e.type, e.kind, e.role, e.tool_name, "
            "e.timestamp, e.line, e.offset, e.length, e.part, e.sidechain "
            "FROM entries e JOIN files f ON f.id = e.file_id"
        ).fetchall()
    places = [
        RowPlace(r[0], r[1], r[2] == "history", r[3], r[9], r[10], r[11], r[12]) for r in rows
    ]
    texts = row_texts(places)
    return sorted(((*r[1:], texts.get(r[0])) for r in rows), key=repr)


def fresh(root: Path, tmp_path: Path) -> Path:
    db = Path(tempfile.mkdtemp(dir=tmp_path)) / "fresh.sqlite"
    index(root, db)
    return db


WORDS = st.sampled_from(["alpha", "beta", "gamma", "delta", "eps", "zeta", "eta"])


def _record(n: int, parent: str | None, words: list[str], kind: str) -> dict[str, Any]:
    text = " ".join(words)
    if kind == "user":
        return user(f"u{n}", parent, text)
    if kind == "tool":
        call = {"type": "tool_use", "id": f"c{n}", "name": "Bash", "input": {"command": text}}
        return assistant(f"u{n}", parent, [call])
    return assistant(f"u{n}", parent, [{"type": "text", "text": text}])


OPERATIONS = st.lists(
    st.one_of(
        st.tuples(
            st.just("append"),
            st.lists(
                st.tuples(
                    st.lists(WORDS, min_size=1, max_size=4),
                    st.sampled_from(["user", "assistant", "tool"]),
                ),
                min_size=1,
                max_size=4,
            ),
        ),
        st.tuples(st.just("torn"), st.integers(1, 30)),
        st.tuples(st.just("truncate"), st.floats(0, 1)),
        st.tuples(st.just("replace"), st.just(None)),
        st.tuples(st.just("garbage"), st.just(None)),
        st.tuples(st.just("update"), st.just(None)),
    ),
    min_size=1,
    max_size=8,
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(OPERATIONS)
def test_incremental_answers_as_a_fresh_build(operations: list[tuple[str, Any]]) -> None:
    check_incremental(operations)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(OPERATIONS)
def test_an_index_built_anew_for_its_dead_rows_answers_as_a_fresh_build(
    operations: list[tuple[str, Any]],
) -> None:
    """The same, with any dead row making the next update build the index anew."""
    from sessiontree.catalog.search_index import database

    floor, share = database.DEAD_FLOOR, database.DEAD_SHARE
    database.DEAD_FLOOR, database.DEAD_SHARE = 1, 0.0
    try:
        check_incremental(operations)
    finally:
        database.DEAD_FLOOR, database.DEAD_SHARE = floor, share


def check_incremental(operations: list[tuple[str, Any]]) -> None:
    with tempfile.TemporaryDirectory() as folder:
        base = Path(folder)
        root = base / "root"
        path = root / "projects" / "-p" / "12345678-1234-4234-8234-123456789abc.jsonl"
        path.parent.mkdir(parents=True)
        path.write_bytes(b"")
        db = base / "incremental.sqlite"
        counter = 0
        parent: str | None = None
        index(root, db)
        for operation, argument in operations:
            data = path.read_bytes()
            if operation == "append":
                records = []
                for words, kind in argument:
                    counter += 1
                    records.append(_record(counter, parent, words, kind))
                    parent = records[-1]["uuid"]
                append_records(path, records)
            elif operation == "torn":
                counter += 1
                line = json.dumps(_record(counter, parent, ["torn", "eta"], "user")).encode()
                with path.open("ab") as handle:
                    handle.write(line[: min(argument, len(line) - 1)])
            elif operation == "truncate":
                os.truncate(path, int(len(data) * argument))
            elif operation == "replace":
                twin = path.with_suffix(".tmp")
                twin.write_bytes(data.replace(b"alpha", b"omega"))
                os.replace(twin, path)
            elif operation == "garbage":
                with path.open("ab") as handle:
                    handle.write(b"\n{bad json\n")
            else:
                index(root, db)
        index(root, db)
        assert dump(db) == dump(fresh(root, base))
        for word in ("alpha", "omega", "eta", "torn"):
            got = [(h.uuid, h.kind, h.line, h.snippet) for h in query(db, word)]
            want = [(h.uuid, h.kind, h.line, h.snippet) for h in query(fresh(root, base), word)]
            assert sorted(got, key=repr) == sorted(want, key=repr)
            assert all(h.snippet for h in query(db, word, limit=3))


# -- other people's sessions, in place --------------------------------------------------


def _wild_roots() -> list[str]:
    if not WILD.is_dir():
        return []
    return sorted(p.name for p in WILD.iterdir() if (p / "claude-home" / "projects").is_dir())


@needs_wild
@pytest.mark.parametrize("scenario", _wild_roots())
def test_other_peoples_sessions_are_indexed_and_found(scenario: str, tmp_path: Path) -> None:
    """Each transcript's typed prompts are found by their rarest-looking word, on the
    record they are in; an update after that reads nothing."""
    root = WILD / scenario / "claude-home"
    db = tmp_path / "index.sqlite"
    stats = index(root, db)
    assert stats.rows_added > 0
    checked = 0
    for path in sorted(root.glob("projects/*/*.jsonl")):
        for line in path.read_text(errors="replace").splitlines():
            try:
                record = json.loads(line)
            except ValueError:
                continue
            parts = parse_search_parts(record) if isinstance(record, dict) else []
            prompt = next((p for p in parts if p.kind == "prompt"), None)
            words = re.findall(r"[A-Za-z]{5,}", prompt.text) if prompt else []
            if not words:
                continue
            word = max(words, key=len)
            hits = query(db, word, filters=Filters(session_ids=[path.stem], kinds=["prompt"]))
            assert record["uuid"] in {h.uuid for h in hits}, (path.name, word)
            checked += 1
            break
    assert checked
    assert index(root, db).bytes_read == 0


def test_two_updates_at_once_index_each_line_once(fixture_root, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """Two processes updating the same index (here: threads, each its own connection)
    wait for each other's transactions and index every line once."""
    import threading

    root = fixture_root("14-subagent")
    db = tmp_path / "index.sqlite"
    index(root, db)
    path = transcript_of(root)
    append_records(path, [user(f"c{i}", None, f"concurrent words {i}") for i in range(50)])
    errors: list[BaseException] = []

    def work() -> None:
        try:
            index(root, db)
        except BaseException as exc:  # (reported below, in the test's thread)
            errors.append(exc)

    threads = [threading.Thread(target=work) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert len(query(db, "concurrent words", filters=TRANSCRIPTS)) == 50
    assert dump(db) == dump(fresh(root, tmp_path))


def test_an_update_reads_the_appended_bytes_not_the_file(
    fixture_root,  # type: ignore[no-untyped-def]
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Every byte read from disk counted (os.pread: the scan, the decode, the checks of
    the file's head and of the bytes before the old end): after a small append to a big
    transcript, what is read is that append (twice: scanned, then decoded) and the two
    checked ranges (and the new end's), not the file."""
    from sessiontree.storage.skeleton_cache import CHECK_BYTES

    root = fixture_root("01-basic")
    path = transcript_of(root)
    parent = last_uuid(path)
    filler = [user(f"f{i}", parent, "filler text " * 200) for i in range(1500)]
    append_records(path, filler)
    db = tmp_path / "index.sqlite"
    index(root, db, history=False)
    before = path.stat().st_size
    append_records(path, [user("late1", parent, "late words"), user("late2", "late1", "more")])
    appended = path.stat().st_size - before
    read = 0
    real_pread = os.pread

    def counting(fd: int, length: int, offset: int) -> bytes:
        nonlocal read
        data = real_pread(fd, length, offset)
        read += len(data)
        return data

    monkeypatch.setattr(os, "pread", counting)
    stats = index(root, db, history=False)
    monkeypatch.undo()
    assert stats.lines_decoded == 2 and stats.bytes_read == appended
    # checked: the head and the bytes before the old end; marked: those before the new end
    assert read <= 2 * appended + 3 * CHECK_BYTES
    assert before > 5 * (2 * appended + 3 * CHECK_BYTES)  # a file far bigger than that
    assert [h.uuid for h in query(db, "late words")] == ["late1"]


def test_a_file_read_again_settles_once_time_has_passed(
    fixture_root,  # type: ignore[no-untyped-def]
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A file appended to just before an update is checked by its bytes on the next
    one; once an update has read it well after its last write, its stat alone says it is
    unchanged (it is not opened)."""
    import time

    root = fixture_root("01-basic")
    path = transcript_of(root)
    db = tmp_path / "index.sqlite"
    index(root, db, history=False)
    append_records(path, [user("s1", last_uuid(path), "settling words")])
    assert index(root, db, history=False).indexed == 1  # just written: racy
    assert index(root, db, history=False).indexed == 1  # still within RACY_NS of its mtime
    real = time.time_ns
    monkeypatch.setattr(time, "time_ns", lambda: real() + 3 * RACY_NS)  # later
    assert index(root, db, history=False).indexed == 1  # read once more, well after
    assert index(root, db, history=False).indexed == 0  # settled: not opened


def test_progress_counts_the_bytes_read(fixture_root, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    root = fixture_root("14-subagent")
    db = tmp_path / "index.sqlite"
    files = [
        transcript_of(root),
        root / "history.jsonl",
        *root.glob("projects/*/*/subagents/*.jsonl"),
    ]
    sizes = {p.stat().st_size for p in files}
    calls: list[tuple[int, int]] = []
    index(root, db, progress=lambda done, total: calls.append((done, total)))
    total = sum(p.stat().st_size for p in files)
    # after each of the 3 files (the transcript, its subagent, history.jsonl): all of them
    assert [t for _, t in calls] == [total] * 3 and calls[-1] == (total, total)
    assert {
        b - a for a, b in zip([0, *[d for d, _ in calls]], [d for d, _ in calls], strict=False)
    } <= sizes
    for path in files:
        settle(path)
    calls.clear()
    index(root, db, progress=lambda done, total: calls.append((done, total)))
    index(root, db, progress=lambda done, total: calls.append((done, total)))
    # the mtimes moved: each read once more (nothing new in it); then settled, none opened
    assert calls == [(0, 0)] * 3
    before = transcript_of(root).stat().st_size
    append_records(transcript_of(root), [user("s1", last_uuid(transcript_of(root)), "more words")])
    index(root, db, history=False, progress=lambda done, total: calls.append((done, total)))
    grown = transcript_of(root).stat().st_size - before
    assert calls[-1] == (grown, grown), "an append: its bytes, not the file's"


def test_progress_moves_within_a_big_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """One big transcript: the bar moves while it is read, not only at its end."""
    from sessiontree.catalog.search_index import updating

    monkeypatch.setattr(updating, "PROGRESS_BYTES", 4096)
    root = tmp_path / "root"
    folder = root / "projects" / "-tmp-big"
    folder.mkdir(parents=True)
    path = folder / "0c0ffee0-0000-4000-8000-000000000001.jsonl"
    records, parent = [], None
    for i in range(400):
        uuid = f"00000000-0000-4000-8000-{i:012d}"
        records.append(user(uuid, parent, f"words {i} " * 20))
        parent = uuid
    append_records(path, records)
    calls: list[tuple[int, int]] = []
    index(root, tmp_path / "index.sqlite", progress=lambda d, t: calls.append((d, t)))
    size = path.stat().st_size
    assert len(calls) > 10 and calls[-1] == (size, size)
    assert [d for d, _ in calls] == sorted(d for d, _ in calls) and all(t == size for _, t in calls)
