"""Every page of the viewer over the demo store, through Starlette's TestClient: what it
shows comes from the engine (the same functions the CLI calls), and writes happen only
through a POST with the token."""

from __future__ import annotations

import json
import os
import re
import threading
import time
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from sessiontree.catalog.usage_files import read_usage
from sessiontree.checkpoints.read import read_checkpoints
from sessiontree.conversation.rewind import switchable_leaves
from sessiontree.conversation.transcript import Transcript
from sessiontree.demo import DemoSummary
from sessiontree.storage.layout import Layout
from sessiontree.views.shapes import is_shown
from sessiontree.web import sessions
from tests.conftest import lay_out
from tests.web.conftest import TOKEN, make_client


def uuids_shown(html: str) -> list[str]:
    return re.findall(r'<article class="item [a-z]+" id="r-([0-9a-f-]+)"', html)


def test_the_sessions_page_lists_every_demo_session_by_project(
    client: TestClient, demo: DemoSummary
) -> None:
    page = client.get("/")
    assert page.status_code == 200
    listed = re.findall(r'<tr data-session="([0-9a-f-]+)">', page.text)
    # the listing leaves out what the client would not list (none of the demo's)
    assert sorted(listed) == sorted(s.session_id for s in demo.sessions)
    for s in demo.sessions:
        assert f">{s.title}</a>" in page.text.replace("&#39;", "'")
    rewinds = demo.session("rewinds")
    row = page.text.split(f'<tr data-session="{rewinds.session_id}">')[1].split("</tr>")[0]
    transcript = Transcript.open(rewinds.path)
    cells = re.findall(r'<td class="num">([^<]*)</td>', row)
    # size, messages, prompts, branches (1 + the branches `switch` can go to)
    assert cells[2:] == [
        str(len(transcript.numbered_prompts())),
        str(1 + len(switchable_leaves(transcript))),
    ]
    assert "badge" not in row  # (no client holds it: no state shown)


def test_the_sessions_filter_keeps_the_matching_titles(
    client: TestClient, demo: DemoSummary
) -> None:
    page = client.get("/", params={"filter": "weather"})
    listed = re.findall(r'<tr data-session="([0-9a-f-]+)">', page.text)
    assert listed == [demo.session("rewinds").session_id]
    assert 'id="empty"' in client.get("/", params={"filter": "no such thing"}).text


def test_the_session_page_shows_the_active_path_and_the_tree(
    client: TestClient, demo: DemoSummary
) -> None:
    rewinds = demo.session("rewinds")
    transcript = Transcript.open(rewinds.path)
    page = client.get(f"/s/{rewinds.session_id}")
    assert page.status_code == 200
    expected = [r.uuid for r in transcript.active_records() if is_shown(r)]
    assert uuids_shown(page.text) == expected
    assert f"<title>{rewinds.title}</title>" in page.text
    # every branch one click away: each off-path leaf's branch is linked from the graph
    links = set(re.findall(r'href="/s/[0-9a-f-]+\?leaf=([0-9a-f-]+)"', page.text))
    assert set(switchable_leaves(transcript)) <= links
    assert 'id="rewound"' not in page.text


def test_a_rewound_branch_is_one_click_away(client: TestClient, demo: DemoSummary) -> None:
    rewinds = demo.session("rewinds")
    transcript = Transcript.open(rewinds.path)
    leaf = switchable_leaves(transcript)[0]
    page = client.get(f"/s/{rewinds.session_id}", params={"leaf": leaf})
    assert 'id="rewound"' in page.text
    path = transcript.tree.branch_path(leaf)  # (the parallel calls of its first answer too)
    assert uuids_shown(page.text) == [r.uuid for r in transcript.records(path) if is_shown(r)]
    assert f'href="/s/{rewinds.session_id}/switch?to={leaf}"' in page.text
    assert 'class="node selected' in page.text or "selected" in page.text


def test_switch_previews_then_switches_with_the_token_and_offers_the_way_back(
    client: TestClient, demo: DemoSummary
) -> None:
    rewinds = demo.session("rewinds")
    before = rewinds.path.read_bytes()
    transcript = Transcript.open(rewinds.path)
    leaf = switchable_leaves(transcript)[0]
    preview = client.get(f"/s/{rewinds.session_id}/switch", params={"to": leaf})
    assert preview.status_code == 200 and 'id="confirm-switch"' in preview.text
    assert rewinds.path.read_bytes() == before, "a preview changes nothing"
    line = json.loads(
        re.search(r'<pre id="line">(.*?)</pre>', preview.text).group(1).replace("&#34;", '"')
    )  # type: ignore[union-attr]
    assert line["leafUuid"] == leaf and line["type"] == "last-prompt"

    done = client.post(f"/s/{rewinds.session_id}/switch", data={"token": TOKEN, "to": leaf})
    assert done.status_code == 303
    after = Transcript.open(rewinds.path)
    assert after.tree.resolve_leaf() in after.tree.path_to(leaf)
    assert rewinds.path.read_bytes().startswith(before), "only appended"
    page = client.get(done.headers["location"])
    assert 'id="switched"' in page.text
    back = re.search(r'href="(/s/[^"]+/switch\?to=[0-9a-f-]+)" id="switch-back"', page.text)
    assert back is not None
    undo = client.get(back.group(1))
    to = re.search(r'name="to" value="([0-9a-f-]+)"', undo.text).group(1)  # type: ignore[union-attr]
    client.post(f"/s/{rewinds.session_id}/switch", data={"token": TOKEN, "to": to})
    assert Transcript.open(rewinds.path).leaf == transcript.leaf, "switching back undoes it"


def test_paging_shows_a_first_screen_and_the_rest_on_demand(tmp_path: Path) -> None:
    root = tmp_path / "root"
    session = "0c0ffee0-0000-4000-8000-000000000001"
    folder = root / "projects" / "-w"
    folder.mkdir(parents=True)
    records = []
    for i in range(150):
        kind = "user" if i % 2 == 0 else "assistant"
        records.append(
            {
                "type": kind, "uuid": f"00000000-0000-4000-8000-{i:012d}",
                "parentUuid": records[-1]["uuid"] if records else None, "isSidechain": False,
                "sessionId": session, "cwd": "/w",
                "timestamp": f"2026-12-01T10:{i // 60:02d}:{i % 60:02d}.000Z",
                "message": {"role": kind, "content": f"message number {i}"},
            }
        )  # fmt: skip
    (folder / f"{session}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    with make_client(root) as client:
        first = client.get(f"/s/{session}")
        shown = uuids_shown(first.text)
        assert shown == [r["uuid"] for r in records[:60]]
        more = re.search(r'data-fragment="([^"]+)"', first.text).group(1).replace("&amp;", "&")  # type: ignore[union-attr]
        second = client.get(more)
        assert uuids_shown(second.text) == [r["uuid"] for r in records[60:120]]
        third = client.get(
            re.search(r'data-fragment="([^"]+)"', second.text).group(1).replace("&amp;", "&")
        )  # type: ignore[union-attr]
        assert uuids_shown(third.text) == [r["uuid"] for r in records[120:]]
        assert "data-fragment" not in third.text
        # a search hit deep in the session opens the page that holds it
        deep = client.get(f"/s/{session}", params={"at": records[130]["uuid"]})
        assert records[130]["uuid"] in uuids_shown(deep.text)
        assert "earlier records" in deep.text


def test_a_compaction_boundary_is_shown_with_what_it_summarized(
    client: TestClient, demo: DemoSummary
) -> None:
    compacted = demo.session("compacted")
    page = client.get(f"/s/{compacted.session_id}")
    assert 'class="item boundary"' in page.text
    assert 'class="item summary"' in page.text and "what the compaction summarized" in page.text
    # the boundary is a node of its own in the graph
    assert 'class="node on kept' in page.text


def test_search_finds_text_on_rewound_branches_too(client: TestClient, demo: DemoSummary) -> None:
    page = client.get("/search", params={"q": "kelvin"})
    assert page.status_code == 200
    hits = re.findall(r'<li class="hit"><span>(.)</span> <a href="/s/([0-9a-f-]+)\?at=', page.text)
    assert hits and {sid for _, sid in hits} == {demo.session("rewinds").session_id}
    assert "○" in {mark for mark, _ in hits}, "a rewound branch's hit"
    assert "0 hits" in client.get("/search", params={"q": "zzzz-nothing"}).text


@pytest.mark.parametrize("indexed", [True, False], ids=["index", "scan"])
def test_search_through_the_index_or_the_scan(
    demo: DemoSummary, tmp_path: Path, indexed: bool
) -> None:
    """With a search index the page searches it (updated first: what was appended since
    is found; the match marked); without one, or with one it cannot use, it scans."""
    options = {"search_index": tmp_path / "cache" / "search.sqlite"} if indexed else {}
    with make_client(demo.root, **options) as viewer:
        page = viewer.get("/search", params={"q": "kelvin"})
        assert page.status_code == 200
        assert "○" in page.text  # the rewound branch's hit
        if indexed:
            assert "<mark>" in page.text.lower()
            assert (tmp_path / "cache" / "search.sqlite").is_file()
        transcript = Path(demo.session("rewinds").path)
        last = json.loads(transcript.read_bytes().splitlines()[-1])
        with transcript.open("a") as out:
            out.write(
                json.dumps(
                    {
                        "type": "user",
                        "uuid": "77777777-0000-4000-8000-000000000001",
                        "parentUuid": last.get("uuid"),
                        "sessionId": last.get("sessionId"),
                        "timestamp": "2099-01-01T00:00:00.000Z",
                        "message": {"role": "user", "content": "what about <b>rankine</b> units"},
                    }
                )
                + "\n"
            )
        page = viewer.get("/search", params={"q": "rankine"})
        assert "77777777" in page.text and "<b>rankine" not in page.text
    if indexed:  # an index it cannot open: scanned past
        (tmp_path / "cache" / "search.sqlite").unlink()
        (tmp_path / "cache" / "search.sqlite").mkdir()
        with make_client(demo.root, **options) as viewer:
            assert "77777777" in viewer.get("/search", params={"q": "rankine"}).text


def test_checkpoints_diff_restore_and_undo(client: TestClient, demo: DemoSummary) -> None:
    rewinds = demo.session("rewinds")
    sid = rewinds.session_id
    project = Path(rewinds.cwd)
    files_before = {p: p.read_bytes() for p in project.rglob("*") if p.is_file()}
    timeline = client.get(f"/s/{sid}/checkpoints")
    assert timeline.status_code == 200
    checkpoints = read_checkpoints(Transcript.open(rewinds.path))
    listed = re.findall(r'<li class="(?:on)?" data-prompt="([0-9a-f-]+)">', timeline.text)
    assert {c.message_id for c in checkpoints} <= set(listed)

    first = checkpoints[0].message_id
    diff = client.get(f"/s/{sid}/diff", params={"file": "weather.py", "a": first, "b": "current"})
    assert diff.status_code == 200 and '<pre class="diff">' in diff.text
    assert '<span class="add">' in diff.text or '<span class="del">' in diff.text

    preview = client.get(f"/s/{sid}/restore", params={"prompt": first})
    assert preview.status_code == 200 and 'id="confirm-restore"' in preview.text
    assert {p: p.read_bytes() for p in project.rglob("*") if p.is_file()} == files_before

    refused = client.post(f"/s/{sid}/restore", data={"prompt": first})
    assert refused.status_code == 403
    done = client.post(f"/s/{sid}/restore", data={"token": TOKEN, "prompt": first})
    assert done.status_code == 200 and 'id="restored"' in done.text
    assert {p: p.read_bytes() for p in project.rglob("*") if p.is_file()} != files_before
    assert 'id="offer-undo"' in done.text

    undo = client.get(f"/s/{sid}/undo")
    assert 'id="confirm-undo"' in undo.text
    assert f"Undo the restore of session {sid[:8]} to prompt" in undo.text  # which one
    undone = client.post(f"/s/{sid}/undo", data={"token": TOKEN})
    assert undone.status_code == 200 and 'id="undone"' in undone.text
    assert {p: p.read_bytes() for p in project.rglob("*") if p.is_file()} == files_before
    ours = re.search(r"saved in <code>([^<]+)</code>", done.text).group(1)  # type: ignore[union-attr]
    again = client.get(f"/s/{sid}/undo")  # (the demo's own restore, if any, is next)
    assert ours not in again.text
    assert again.status_code == 409 or 'id="confirm-undo"' in again.text


@pytest.mark.parametrize("by", ["day", "session", "project", "model"])
def test_usage_counts_as_the_usage_command(client: TestClient, demo: DemoSummary, by: str) -> None:
    page = client.get("/usage", params={"by": by})
    assert page.status_code == 200
    report = read_usage(Layout(demo.root), by=by, tz=None)  # type: ignore[arg-type]
    rows = re.findall(
        r"<tr class=\"(?:total)?\"><td>(.*?)</td>\s*<td class=\"num\">([\d,]+)</td>", page.text
    )
    keys = [re.sub(r"<[^>]+>", "", k) for k, _ in rows]
    assert keys == [r.key for r in report.rows] + ["total"]
    assert [int(n.replace(",", "")) for _, n in rows] == [
        r.input_tokens for r in (*report.rows, report.total)
    ]
    assert len(re.findall(r'<rect class="bar"', page.text)) == len(report.rows)


def test_usage_refuses_an_unknown_grouping(client: TestClient) -> None:
    assert client.get("/usage", params={"by": "week"}).status_code == 409


def test_export_html_is_served_as_a_download(client: TestClient, demo: DemoSummary) -> None:
    rewinds = demo.session("rewinds")
    got = client.get(f"/s/{rewinds.session_id}/export.html")
    assert got.status_code == 200
    assert "attachment" in got.headers["content-disposition"]
    assert f"<title>{rewinds.title}</title>" in got.text and "<script" not in got.text


def test_static_files_ship_in_the_package(client: TestClient) -> None:
    assert "svg.tree" in client.get("/static/viewer.css").text
    assert "EventSource" in client.get("/static/viewer.js").text
    assert client.get("/static/../config.py").status_code == 404


def test_unknown_sessions_are_404_pages(client: TestClient) -> None:
    for url in ("/s/not-a-session", "/s/00000000-0000-4000-8000-000000000000",
                "/s/..%2f..%2fetc%2fpasswd/checkpoints"):  # fmt: skip
        got = client.get(url)
        assert got.status_code == 404, url
        assert "Traceback" not in got.text


def test_a_followed_session_gets_what_is_appended(demo: DemoSummary) -> None:
    rewinds = demo.session("rewinds")
    transcript = Transcript.open(rewinds.path)
    leaf = transcript.active_path[-1]  # the record the client appends after
    with make_client(demo.root) as client:
        page = client.get(f"/s/{rewinds.session_id}", params={"follow": "1"})
    src = re.search(r'data-live-src="([^"]+)"', page.text).group(1).replace("&amp;", "&")  # type: ignore[union-attr]
    new = {
        "type": "user", "uuid": "11111111-2222-4333-8444-555555555555", "parentUuid": leaf,
        "isSidechain": False, "sessionId": rewinds.session_id, "cwd": rewinds.cwd,
        "timestamp": "2026-12-01T12:00:00.000Z",
        "message": {"role": "user", "content": "a prompt written while we watch"},
    }  # fmt: skip

    def append() -> None:
        time.sleep(0.3)
        with rewinds.path.open("a") as out:
            out.write(json.dumps(new) + "\n")

    writer = threading.Thread(target=append)
    writer.start()
    # (TestClient reads a response whole: the stream is made to end after a second)
    with make_client(demo.root, follow_seconds=1.0) as follower:
        events = follower.get(src)
    writer.join()
    assert events.headers["content-type"].startswith("text/event-stream")
    sent = [json.loads(line[6:]) for line in events.text.splitlines() if line.startswith("data: ")]
    assert len(sent) == 1, "one event: the record appended"
    data = sent[0]
    assert f"id: {new['uuid']}" in events.text
    assert data["last"] == new["uuid"]
    assert "a prompt written while we watch" in data["html"]
    assert f'id="r-{new["uuid"]}"' in data["html"]


def test_a_reconnection_gets_what_came_while_it_was_away(demo: DemoSummary) -> None:
    rewinds = demo.session("rewinds")
    transcript = Transcript.open(rewinds.path)
    path = transcript.active_path
    with make_client(demo.root, follow_seconds=0.3) as client:
        events = client.get(f"/s/{rewinds.session_id}/events", headers={"last-event-id": path[-3]})
    sent = [json.loads(line[6:]) for line in events.text.splitlines() if line.startswith("data: ")]
    assert [d["last"] for d in sent] == [path[-1]]


def test_a_big_tree_is_drawn_after_the_first_screen(
    client: TestClient, demo: DemoSummary, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Past INLINE_GRAPH_RECORDS records, the page comes without the tree and says where
    to fetch it; the fragment draws the same tree the page would have held."""
    rewinds = demo.session("rewinds")
    inline = client.get(f"/s/{rewinds.session_id}").text
    monkeypatch.setattr("sessiontree.web.session.INLINE_GRAPH_RECORDS", 10)
    page = client.get(f"/s/{rewinds.session_id}").text
    assert "<svg" not in page
    src = re.search(r'data-tree-src="([^"]+)"', page).group(1).replace("&amp;", "&")  # type: ignore[union-attr]
    tree = client.get(src).text
    drawn = re.search(r"<svg.*</svg>", inline, re.S).group(0)  # type: ignore[union-attr]
    assert tree.strip() == drawn.strip()
    assert uuids_shown(page) == uuids_shown(inline)


def test_a_session_a_running_client_holds_is_shown_live_and_not_written(
    client: TestClient, demo: DemoSummary
) -> None:
    from sessiontree.lifecycle.live import register_live_session

    rewinds = demo.session("rewinds")
    # (held by another running process: this one's own entry does not hold it)
    register_live_session(
        Layout(demo.root), session_id=rewinds.session_id, cwd=rewinds.cwd, pid=os.getppid()
    )
    listing = client.get("/").text
    row = listing.split(f'<tr data-session="{rewinds.session_id}">')[1].split("</tr>")[0]
    assert 'class="badge live">live' in row
    page = client.get(f"/s/{rewinds.session_id}").text
    assert 'class="badge live"' in page
    leaf = switchable_leaves(Transcript.open(rewinds.path))[0]
    preview = client.get(f"/s/{rewinds.session_id}/switch", params={"to": leaf}).text
    assert "confirm-switch" not in preview and "running process" in preview
    before = rewinds.path.read_bytes()
    refused = client.post(f"/s/{rewinds.session_id}/switch", data={"token": TOKEN, "to": leaf})
    assert refused.status_code == 409 and "running process" in refused.text
    assert rewinds.path.read_bytes() == before
    prompt = Transcript.open(rewinds.path).numbered_prompts()[0]
    refused = client.post(
        f"/s/{rewinds.session_id}/restore", data={"token": TOKEN, "prompt": prompt}
    )
    assert refused.status_code == 409


def test_the_boundary_links_to_the_conversation_it_summarized(
    client: TestClient, demo: DemoSummary
) -> None:
    compacted = demo.session("compacted")
    transcript = Transcript.open(compacted.path)
    boundary = next(r for r in transcript.active_records() if r.subtype == "compact_boundary")
    page = client.get(f"/s/{compacted.session_id}").text
    target = re.search(r'<p class="summarized"><a href="\?leaf=([0-9a-f-]+)"', page).group(1)  # type: ignore[union-attr]
    assert target in transcript.tree.compacted or target not in transcript.active_path
    summarized = client.get(f"/s/{compacted.session_id}?leaf={target}")
    assert 'id="rewound"' in summarized.text
    shown = uuids_shown(summarized.text)
    assert boundary.uuid not in shown and len(shown) > 3
    assert not set(shown) & set(transcript.active_path[1:]) - set(transcript.tree.preserved)


def test_a_diff_reads_only_files_the_checkpoints_track(
    client: TestClient, demo: DemoSummary
) -> None:
    rewinds = demo.session("rewinds")
    (Path(rewinds.cwd) / "private.txt").write_text("not tracked\n")
    for name in ("private.txt", "../../etc/passwd", "/etc/passwd"):
        got = client.get(
            f"/s/{rewinds.session_id}/diff", params={"file": name, "a": "current", "b": "current"}
        )
        assert got.status_code == 404 and "not tracked" not in got.text, name


def test_every_page_of_every_demo_session_answers(client: TestClient, demo: DemoSummary) -> None:
    for s in demo.sessions:
        transcript = Transcript.open(s.path)
        for url in (
            f"/s/{s.session_id}",
            f"/s/{s.session_id}?follow=1",
            f"/s/{s.session_id}/page?start=0",
            f"/s/{s.session_id}/tree",
            f"/s/{s.session_id}/checkpoints",
            f"/s/{s.session_id}/export.html",
        ):
            got = client.get(url)
            assert got.status_code == 200, (s.role, url, got.text[-300:])
        page = client.get(f"/s/{s.session_id}").text
        assert (
            uuids_shown(page) == [r.uuid for r in transcript.active_records() if is_shown(r)][:60]
        )


def test_usage_takes_since_and_until_as_the_command_does(
    client: TestClient, demo: DemoSummary
) -> None:
    from datetime import date

    report = read_usage(Layout(demo.root), by="day", tz=None)
    first = report.rows[0].key
    page = client.get("/usage", params={"by": "day", "since": first, "until": first}).text
    assert len(re.findall(r'<rect class="bar"', page)) == 1
    assert f"<td>{first}</td>" in page
    assert client.get("/usage", params={"since": "yesterday"}).status_code == 409
    today = date.today().isoformat()
    recent = read_usage(Layout(demo.root), by="day", tz=None, since=date.today())
    page = client.get("/usage", params={"since": "1d"}).text
    assert len(re.findall(r'<rect class="bar"', page)) == len(recent.rows)
    assert today in page or not recent.rows


def test_a_file_that_cannot_be_read_is_one_line_not_a_traceback(
    client: TestClient, demo: DemoSummary
) -> None:
    rewinds = demo.session("rewinds")
    if os.geteuid() == 0:  # root reads any file: take its place with a folder instead
        rewinds.path.unlink()
        rewinds.path.mkdir()
    else:
        rewinds.path.chmod(0)
    got = client.get(f"/s/{rewinds.session_id}")
    assert got.status_code in (404, 500)
    assert "Traceback" not in got.text and 'id="error"' in got.text


def test_the_listing_pages_newest_first_and_opens_only_the_page_shown(
    demo: DemoSummary, monkeypatch: pytest.MonkeyPatch
) -> None:
    from sessiontree.web import sessions

    monkeypatch.setattr(sessions, "PAGE_SIZE", 2)
    opened: list[str] = []
    counts = sessions._counts
    monkeypatch.setattr(
        sessions,
        "_counts",
        lambda config, info: opened.append(info.sessionId) or counts(config, info),
    )
    with make_client(demo.root) as viewer:
        seen: list[str] = []
        page, number = viewer.get("/"), 0
        while True:
            ids = re.findall(r'<tr data-session="([0-9a-f-]+)">', page.text)
            assert 1 <= len(ids) <= 2 and opened == ids  # only the page's rows opened
            seen += ids
            opened.clear()
            older = re.search(r'id="older" href="([^"]+)"', page.text)
            if older is None:
                break
            number += 1
            assert older.group(1) == f"/?page={number}"
            page = viewer.get(older.group(1))
            assert 'id="newer"' in page.text
        assert seen == [s.sessionId for s in sessions.list_sessions(Layout(demo.root))]
        assert viewer.get("/?page=x").status_code == 200  # a bad page number: the first


def test_the_search_page_filters_through_the_index(
    demo: DemoSummary, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The search page offers `search`'s filters (project, session, dates, role, tool,
    on or off the active path), and each one narrows the hits the index gives."""
    hit_re = re.compile(
        r'<li class="hit"><span>(.)</span> <a href="/s/([0-9a-f-]+)\?at=[0-9a-f-]+#r-[0-9a-f-]+">'
        r'<code>[^<]*</code> <code>[^<]*</code></a> <span class="kind">(?:agent )?(?:(\w+) '
        r"(?:call|result)|[a-z ]+)</span>:"
    )
    rewinds = demo.session("rewinds")
    with make_client(demo.root, search_index=tmp_path / "cache" / "search.sqlite") as viewer:

        def hits(**params: str) -> list[tuple[str, str, str]]:
            page = viewer.get("/search", params={"q": "the", **params})
            assert page.status_code == 200, page.text
            return hit_re.findall(page.text)

        form = viewer.get("/search").text
        for field in ("project", "session", "since", "until", "role", "tool", "path"):
            assert f'name="{field}"' in form, field
        every = hits()
        assert {mark for mark, _, _ in every} == {"●", "○"}
        assert {mark for mark, _, _ in hits(path="active")} == {"●"}
        assert {mark for mark, _, _ in hits(path="off")} == {"○"}
        bash = hits(role="tool", tool="bash")
        assert bash and {tool for _, _, tool in bash} == {"Bash"}
        # each hit says what it is (a tool's call or result, as `search` does), where and when
        page = viewer.get("/search", params={"q": "the", "role": "tool", "tool": "bash"}).text
        assert re.search(r'<span class="kind">Bash (call|result)</span>', page)
        places = re.findall(
            r'<small class="muted where">([^<]*) · (\d{4}-\d\d-\d\d \d\d:\d\d)', page
        )
        assert places and {cwd for cwd, _ in places} <= {s.cwd for s in demo.sessions}
        assert {sid for _, sid, _ in hits(session=rewinds.session_id)} == {rewinds.session_id}
        folder = Path(rewinds.path).parent.name
        assert f'<option value="{folder}">' in form
        in_folder = {sid for _, sid, _ in hits(project=folder)}
        assert in_folder and in_folder <= {
            s.session_id for s in demo.sessions if Path(s.path).parent.name == folder
        }
        assert "there may be more" not in viewer.get("/search", params={"q": "the"}).text
        monkeypatch.setattr(sessions, "MAX_HITS", 3)
        capped = viewer.get("/search", params={"q": "the"}).text
        assert capped.count('class="hit"') == 3 and "the best 3 hits (there may be more" in capped
        monkeypatch.undo()
        assert hits(since="2099-01-01") == [] and hits(until="2000-01-01") == []
        assert len(hits(since="2000-01-01", until="2099-01-01")) == len(every)
        bad = viewer.get("/search", params={"q": "the", "since": "soon"})
        assert bad.status_code >= 400 and "since: a date" in bad.text
        assert viewer.get("/search", params={"q": "the", "path": "x"}).status_code >= 400
    with make_client(demo.root) as scanning:  # no index: filters refused, not ignored
        refused = scanning.get("/search", params={"q": "the", "path": "off"})
        assert refused.status_code >= 400 and "need the search index" in refused.text


def test_the_search_page_searches_history_when_asked(demo: DemoSummary, tmp_path: Path) -> None:
    """``history`` ticked: what was typed (history.jsonl) is searched too, as
    ``search --history`` does; each such hit says so and links to its session."""
    history = Layout(demo.root).history_path
    typed = [json.loads(line) for line in history.read_text().splitlines() if line.strip()]
    entry = next(e for e in typed if e.get("sessionId") and len(e.get("display", "")) > 8)
    word = max(re.findall(r"[A-Za-z]{4,}", entry["display"]), key=len)
    with make_client(demo.root, search_index=tmp_path / "cache" / "search.sqlite") as viewer:
        assert 'name="history"' in viewer.get("/search").text
        without = viewer.get("/search", params={"q": word}).text
        assert '<span class="kind">history</span>' not in without
        page = viewer.get("/search", params={"q": word, "history": "1"})
        assert page.status_code == 200
        found = re.findall(
            r'<li class="hit"><span>·</span> <a href="/s/([0-9a-f-]+)"><code>[^<]*</code></a> '
            r'<span class="kind">history</span>:',
            page.text,
        )
        assert entry["sessionId"] in found
        assert 'name="history" value="1" checked' in page.text
        assert without.count('class="hit"') < page.text.count('class="hit"')
        # on or off the active path is a transcript's question: no history entry answers it
        active = viewer.get("/search", params={"q": word, "history": "1", "path": "active"})
        assert '<span class="kind">history</span>' not in active.text
        bad = viewer.get("/search", params={"q": word, "history": "yes"})
        assert bad.status_code >= 400 and "history: 1 or nothing" in bad.text


def test_a_rewound_branch_shows_every_parallel_call_and_its_result(tmp_path: Path) -> None:
    """The rewound branch of 18-par-edits-rewind made three edits in one response: its page
    shows every block of that response and every result hanging on them, as the active
    path's page does (what resuming that branch would send)."""
    par = Path(__file__).parents[1] / "fixtures" / "claude-code-2.1.328-par"
    root, _ = lay_out(par / "18-par-edits-rewind", tmp_path)
    path = next((root / "projects").glob("*/*.jsonl"))
    transcript = Transcript.open(path)
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    leaves = switchable_leaves(transcript)
    assert leaves
    with make_client(root) as client:
        for leaf in [None, *leaves]:
            params = {} if leaf is None else {"leaf": leaf}
            shown = set(uuids_shown(client.get(f"/s/{path.stem}", params=params).text))
            responses = {
                r["message"]["id"]
                for r in rows
                if r.get("uuid") in shown and r["type"] == "assistant"
            }
            blocks = {
                r["uuid"]
                for r in rows
                if r["type"] == "assistant" and r["message"]["id"] in responses
            }
            results = {
                r["uuid"]
                for r in rows
                if r["type"] == "user" and "toolUseResult" in r and r["parentUuid"] in blocks
            }
            assert len(results) >= 5, leaf  # (each branch: two responses with several calls)
            assert sorted((blocks | results) - shown) == [], leaf
