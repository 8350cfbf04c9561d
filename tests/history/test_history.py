"""``history.jsonl``: every typed prompt, pastes expanded (inline or from paste-cache)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from sessiontree.conversation.transcript import Transcript
from sessiontree.history.log import HistoryEntry, iter_history
from sessiontree.model.builders.history import expand_pastes
from sessiontree.storage.layout import Layout, paste_hash
from tests.conftest import FIXTURES

PASTE_SESSION = "6f1743e6-7638-4fe8-9c46-afe0615d0293"


def write_history(root: Path, entries: list[dict[str, Any] | bytes]) -> Layout:
    layout = Layout(root)
    root.mkdir(parents=True, exist_ok=True)
    with layout.history_path.open("wb") as handle:
        for entry in entries:
            line = entry if isinstance(entry, bytes) else json.dumps(entry).encode()
            handle.write(line + b"\n")
    return layout


def put_paste(layout: Layout, text: str | bytes) -> str:
    data = text.encode("utf-8") if isinstance(text, str) else text
    digest = paste_hash(data.decode("utf-8"))
    layout.paste_cache_dir.mkdir(parents=True, exist_ok=True)
    layout.paste_path(digest).write_bytes(data)
    return digest


def entry(display: str, pasted: dict[str, Any] | None = None, **extra: Any) -> dict[str, Any]:
    return {
        "display": display,
        "pastedContents": pasted or {},
        "timestamp": 1795980140980,
        "project": "/home/dev/p",
        "sessionId": "s1",
        **extra,
    }


def test_fixture_12_paste_is_expanded_from_the_paste_cache(fixture_root) -> None:  # type: ignore[no-untyped-def]
    root: Path = fixture_root("12-big-paste")
    layout = Layout(root)
    paste = (root / "paste-cache" / "50aff5fcc655a735.txt").read_bytes().decode("utf-8")
    assert paste_hash(paste) == "50aff5fcc655a735"  # contentHash = sha256(text)[:16]
    entries = list(iter_history(layout))
    assert [e.display for e in entries] == [
        "please look at this: [Pasted text #1 +39 lines] and reply",
        "short follow-up [[WRITE /home/dev/12-big-paste/a.txt|alpha\\n]]",
        "/exit",
    ]
    first = entries[0]
    assert first.text == f"please look at this: {paste} and reply"
    assert first.text.count("\n") == 39  # "+39 lines"
    assert first.session_id == PASTE_SESSION
    assert first.project == "/home/dev/12-big-paste"
    assert first.timestamp == 1795980140980
    assert [e.text for e in entries[1:]] == [e.display for e in entries[1:]]
    # the same text the client sent: the transcript's first prompt holds the paste
    [path] = (root / "projects").glob(f"*/{PASTE_SESSION}.jsonl")
    transcript = Transcript.open(path)
    prompt = transcript.record(transcript.prompt_uuids()[0])
    assert prompt is not None
    assert paste in prompt.text()
    assert first.as_json() == {
        "display": first.display,
        "text": first.text,
        "timestamp": 1795980140980,
        "project": "/home/dev/12-big-paste",
        "sessionId": PASTE_SESSION,
    }


def test_fixture_12_missing_paste_file_leaves_the_placeholder(fixture_root) -> None:  # type: ignore[no-untyped-def]
    root: Path = fixture_root("12-big-paste")
    (root / "paste-cache" / "50aff5fcc655a735.txt").unlink()
    [first, *_] = iter_history(Layout(root))
    assert (
        first.text == first.display == ("please look at this: [Pasted text #1 +39 lines] and reply")
    )


def test_inline_pastes(tmp_path: Path) -> None:
    layout = write_history(
        tmp_path,
        [
            entry(
                "a [Pasted text #1 +2 lines] b [Pasted text #2] c",
                {
                    "1": {"id": 1, "type": "text", "content": "one\ntwo\nthree"},
                    "2": {"id": 2, "type": "text", "content": "short"},
                },
            )
        ],
    )
    [only] = iter_history(layout)
    assert only.text == "a one\ntwo\nthree b short c"


def test_inline_and_cached_pastes_in_one_prompt(tmp_path: Path) -> None:
    layout = Layout(tmp_path)
    long_text = "\n".join(f"line {i}" for i in range(100))
    digest = put_paste(layout, long_text)
    write_history(
        tmp_path,
        [
            entry(
                "[Pasted text #1] then [Pasted text #2 +99 lines]",
                {
                    "1": {"id": 1, "type": "text", "content": "inline"},
                    "2": {"id": 2, "type": "text", "contentHash": digest},
                },
            )
        ],
    )
    [only] = iter_history(layout)
    assert only.text == f"inline then {long_text}"


def test_placeholders_without_content_stay(tmp_path: Path) -> None:
    layout = write_history(
        tmp_path,
        [
            entry("[Pasted text #3 +5 lines]", {}),  # nothing stored for it
            entry("[Pasted text #1]", {"1": {"id": 1, "type": "text", "contentHash": "0" * 16}}),
            entry("[Image #1]", {"1": {"id": 1, "type": "image", "content": "iVBORw0..."}}),
            entry("[Pasted text #1]", {"1": {"id": 1, "type": "text", "contentHash": 7}}),
        ],
    )
    assert [e.text for e in iter_history(layout)] == [
        "[Pasted text #3 +5 lines]",
        "[Pasted text #1]",
        "[Image #1]",
        "[Pasted text #1]",
    ]


def test_content_hash_cannot_walk_out_of_the_paste_cache(tmp_path: Path) -> None:
    layout = Layout(tmp_path / "root")
    (tmp_path / "secret.txt").write_text("SECRET")
    write_history(
        layout.root,
        [entry("[Pasted text #1]", {"1": {"type": "text", "contentHash": "../../secret"}})],
    )
    layout.paste_cache_dir.mkdir()
    [only] = iter_history(layout)
    assert "SECRET" not in only.text


def test_expanded_text_is_taken_literally() -> None:
    pasted = {1: r"\1 \g<0> [Pasted text #2]", 2: "NOT AGAIN"}
    assert expand_pastes("x [Pasted text #1] y", pasted) == (r"x \1 \g<0> [Pasted text #2] y")


def test_cached_paste_is_expanded_byte_exact(tmp_path: Path) -> None:
    layout = Layout(tmp_path)
    text = "windows line 1\r\nwindows line 2\r\nold mac\rend"
    digest = put_paste(layout, text)
    write_history(
        tmp_path, [entry("see [Pasted text #1 +2 lines]", {"1": {"contentHash": digest}})]
    )
    [only] = iter_history(layout)
    assert only.text == f"see {text}"


def test_project_and_search_filters(tmp_path: Path) -> None:
    layout = write_history(
        tmp_path,
        [
            entry("first in p", project="/home/dev/p"),
            entry("in q", project="/home/dev/q"),
            entry("Second in P", project="/home/dev/p"),
            entry("no project", project=None),
            entry("[Pasted text #1]", {"1": {"type": "text", "content": "NEEDLE inside"}}),
        ],
    )
    in_p = list(iter_history(layout, project="/home/dev/p"))
    assert [e.display for e in in_p] == ["first in p", "Second in P", "[Pasted text #1]"]
    assert list(iter_history(layout, project="/home/dev/p/")) == []  # exact path, not prefix
    assert list(iter_history(layout, project="/home/dev")) == []
    assert [e.display for e in iter_history(layout, search="second")] == ["Second in P"]
    # search looks into the expanded text, case-insensitively
    assert [e.text for e in iter_history(layout, search="needle")] == ["NEEDLE inside"]
    assert [e.display for e in iter_history(layout, project="/home/dev/q", search="in")] == ["in q"]
    assert len(list(iter_history(layout))) == 5


def test_bad_lines_are_skipped_and_types_checked(tmp_path: Path) -> None:
    layout = write_history(
        tmp_path,
        [
            b"{torn",
            b"[1,2]",
            {"display": 5},
            entry("ok", timestamp="yesterday", sessionId=9, project=3),
            b"\x00\x00\x00",
            entry("after"),
        ],
    )
    entries = list(iter_history(layout))
    assert [e.display for e in entries] == ["ok", "after"]
    assert entries[0] == HistoryEntry("ok", "ok", None, None, None)


def test_no_history_file(tmp_path: Path) -> None:
    assert list(iter_history(Layout(tmp_path))) == []


@pytest.mark.parametrize("scenario", ["01-basic", "02-rewind-both", "05-resend-siblings"])
def test_fixture_history_lists_every_submission(scenario: str) -> None:
    root = FIXTURES / scenario / "claude-home"
    lines = (root / "history.jsonl").read_text(encoding="utf-8").splitlines()
    entries = list(iter_history(Layout(root)))
    assert [e.display for e in entries] == [json.loads(line)["display"] for line in lines]
    assert entries[-1].display == "/exit"
    assert all(e.text == e.display for e in entries)


def test_references_as_the_client_finds_them(tmp_path: Path) -> None:
    """The client's reference pattern: every kind of item, trailing dots, N > 0, and only
    a ``text`` item is put in place (an image stays a reference)."""
    layout = write_history(
        tmp_path,
        [
            entry(
                "a [Image #1] b [...Truncated text #2.] c [Pasted text #3 +1 lines...] "
                "d [Pasted text #0] e [\u2726 Team setup guide #4]",
                {
                    "1": {"type": "image", "content": "IMAGE-BYTES"},
                    "2": {"type": "text", "content": "TWO"},
                    "3": {"type": "text", "content": "THREE"},
                    "0": {"type": "text", "content": "ZERO"},
                    "4": {"type": "text", "content": "FOUR"},
                },
            )
        ],
    )
    [only] = iter_history(layout)
    assert only.text == "a [Image #1] b TWO c THREE d [Pasted text #0] e FOUR"


def test_one_history_reader_for_history_doctor_and_retention(tmp_path: Path) -> None:
    from sessiontree.cleanup import read_recent_paste_refs
    from sessiontree.history.log import find_missing_pastes, iter_history_lines

    layout = write_history(
        tmp_path,
        [
            entry("[Pasted text #1]", {"1": {"type": "text", "contentHash": "aaaa0000aaaa0000"}}),
            # a timestamp that is no number: the line still counts (as recent)
            entry("[Pasted text #1]", {"1": {"contentHash": "bbbb0000bbbb0000"}}, timestamp="x"),
            entry("old", {"1": {"contentHash": "cccc0000cccc0000"}}, timestamp=1),
        ],
    )
    lines = list(iter_history_lines(layout))
    assert [line.line for line in lines] == [1, 2, 3]
    assert lines[1].timestamp is None
    assert read_recent_paste_refs(layout, cutoff=1000.0) == {
        "aaaa0000aaaa0000",
        "bbbb0000bbbb0000",
    }
    assert [p.line for p in find_missing_pastes(layout)] == [1, 2, 3]
