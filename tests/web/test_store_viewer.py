"""``serve --store``: the viewer over a store, read only. The demo's sessions are synced,
the root deleted, and then every page comes from the store and shows what the same page
showed over the files; every write is refused, the store is left as it was, and the
DSN's password is on no page."""

from __future__ import annotations

import getpass
import html
import http.client
import json
import re
import shutil
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg.conninfo import make_conninfo
from starlette.routing import Route
from starlette.testclient import TestClient

from sessiontree.checkpoints.read import read_checkpoints
from sessiontree.conversation.rewind import switchable_leaves
from sessiontree.conversation.transcript import Transcript
from sessiontree.demo import DemoSummary
from sessiontree.errors import StoreError
from sessiontree.storage.layout import Layout
from sessiontree.storage.store.archive import Machine, new_machine_id
from sessiontree.storage.store.connect import connect, describe_dsn
from sessiontree.storage.store.schema import migrate
from sessiontree.sync.push import sync_root
from sessiontree.web.security import READ_ONLY
from tests.store.conftest import store_dsn, store_server  # noqa: F401 (fixtures)
from tests.web.conftest import TOKEN, make_client
from tests.web.test_routes import uuids_shown

#: What the store's DSN carries (the throwaway server trusts local logins: ignored).
PASSWORD = "pw-never-shown-7f3a"
MACHINE = "laptop"


@dataclass
class Synced:
    """The demo synced into a store, its root then deleted: the DSN (with a password),
    the pages the viewer showed over the files, and what the engine read of them."""

    dsn: str
    demo: DemoSummary
    local: dict[str, str]
    checkpoints: dict[str, list[str]]  # session id -> its checkpoints' prompt uuids
    who: Machine


def local_pages(demo: DemoSummary) -> dict[str, str]:
    rewinds = demo.session("rewinds").session_id
    transcript = Transcript.open(demo.session("rewinds").path)
    off = switchable_leaves(transcript)[0]
    first, second = (c.message_id for c in read_checkpoints(transcript)[:2])
    urls = ["/", *(f"/usage?by={by}" for by in ("day", "session", "project", "model"))]
    for s in demo.sessions:
        urls += [f"/s/{s.session_id}", f"/s/{s.session_id}/tree"]
    urls += [f"/s/{rewinds}?leaf={off}", f"/s/{rewinds}/checkpoints",
             f"/s/{rewinds}/diff?file=weather.py&a={first}&b={second}"]  # fmt: skip
    with make_client(demo.root) as viewer:
        return {url: viewer.get(url).text for url in urls}


@pytest.fixture
def synced(demo: DemoSummary, store_dsn: str) -> Synced:  # noqa: F811
    who = Machine(new_machine_id(), MACHINE, "ada")
    with connect(store_dsn) as conn:
        migrate(conn)
        sync_root(conn, who, Layout(demo.root))
    local = local_pages(demo)
    checkpoints = {
        s.session_id: [c.message_id for c in read_checkpoints(Transcript.open(s.path))]
        for s in demo.sessions
    }
    shutil.rmtree(demo.root)  # every page now comes from the store, or from nowhere
    return Synced(make_conninfo(store_dsn, password=PASSWORD), demo, local, checkpoints, who)


def store_client(synced: Synced, **options: object) -> TestClient:
    return make_client(synced.demo.root, store=synced.dsn, **options)


@pytest.fixture
def viewer(synced: Synced) -> Iterator[TestClient]:
    with store_client(synced) as client:
        yield client


def rows(html: str) -> list[str]:
    return re.findall(r'<tr data-session="([0-9a-f-]+)">', html)


def cells(html: str, session_id: str) -> list[str]:
    row = html.split(f'<tr data-session="{session_id}">')[1].split("</tr>")[0]
    return re.findall(r"<td[^>]*>(.*?)</td>", row, re.S)


def test_the_listing_shows_every_stored_session_with_its_machine(
    viewer: TestClient, synced: Synced
) -> None:
    page = viewer.get("/")
    assert page.status_code == 200
    local = synced.local["/"]
    assert rows(page.text) == rows(local) and len(rows(local)) == len(synced.demo.sessions)
    for sid in rows(local):
        # title, started, updated, size, messages, prompts, branches as over the files,
        # then the machine and the user instead of live or idle
        assert cells(page.text, sid) == [*cells(local, sid)[:-1], MACHINE, "ada"]
    assert "<th>machine</th><th>user</th>" in page.text
    name = describe_dsn(synced.dsn)
    assert 'id="store"' in page.text and f"store {name} · read-only" in page.text
    assert f"in the store <code>{name}</code>" in page.text
    assert rows(viewer.get("/", params={"filter": "weather"}).text) == [
        synced.demo.session("rewinds").session_id
    ]


def test_a_session_page_and_its_tree_come_from_the_store(
    viewer: TestClient, synced: Synced
) -> None:
    for s in synced.demo.sessions:
        page = viewer.get(f"/s/{s.session_id}")
        assert page.status_code == 200, page.text
        local = synced.local[f"/s/{s.session_id}"]
        assert uuids_shown(page.text) == uuids_shown(local) and uuids_shown(local)
        assert f"<title>{s.title}</title>" in page.text.replace("&#39;", "'")
        tree = viewer.get(f"/s/{s.session_id}/tree")
        assert tree.status_code == 200 and tree.text == synced.local[f"/s/{s.session_id}/tree"]
        assert '<svg class="tree"' in page.text
    rewinds = synced.demo.session("rewinds").session_id
    branch = next(url for url in synced.local if url.startswith(f"/s/{rewinds}?leaf="))
    page = viewer.get(branch)
    assert uuids_shown(page.text) == uuids_shown(synced.local[branch])
    assert 'id="rewound"' in page.text  # a branch the client does not resume, said so


def test_session_pages_have_no_write_controls(viewer: TestClient, synced: Synced) -> None:
    rewinds = synced.demo.session("rewinds").session_id
    branch = next(url for url in synced.local if url.startswith(f"/s/{rewinds}?leaf="))
    checkpoints = f"/s/{rewinds}/checkpoints"
    assert 'id="switch-link"' in synced.local[branch]  # (what the files' viewer offers)
    assert 'class="button restore-link"' in synced.local[checkpoints]
    pages = [branch, checkpoints, f"/s/{rewinds}?switched=x", "/"]
    pages += [f"/s/{s.session_id}" for s in synced.demo.sessions]
    for url in pages:
        html = viewer.get(url).text
        assert 'method="post"' not in html.lower(), url
        for control in ("switch-link", "switch-back", "undo-link", "restore-link", "/restore?",
                        "/switch?", "/undo"):  # fmt: skip
            assert control not in html, (url, control)
        assert 'name="token"' not in html, url


def test_checkpoints_and_their_diffs_read_the_stores_blobs(
    viewer: TestClient, synced: Synced
) -> None:
    rewinds = synced.demo.session("rewinds").session_id
    url = f"/s/{rewinds}/checkpoints"
    timeline = viewer.get(url)
    assert timeline.status_code == 200
    prompts = re.compile(r'<li class="(?:on)?" data-prompt="([0-9a-f-]+)">')
    assert prompts.findall(timeline.text) == prompts.findall(synced.local[url])
    assert set(synced.checkpoints[rewinds]) <= set(prompts.findall(timeline.text))
    assert "diff with now" not in timeline.text and 'value="current"' not in timeline.text
    assert 'id="diff-form"' in timeline.text

    diff_url = next(u for u in synced.local if "/diff?" in u)
    diff = viewer.get(diff_url)
    assert diff.status_code == 200, diff.text
    shown = re.search(r'<pre class="diff">.*?</pre>', diff.text, re.S)
    assert shown is not None and '<span class="add">' in shown.group(0)
    assert shown.group(0) in synced.local[diff_url]  # the same diff as over the files

    first = synced.checkpoints[rewinds][0]
    now = viewer.get(f"/s/{rewinds}/diff", params={"file": "weather.py", "a": first})
    assert now.status_code == 409 and "on the machine that synced this session" in now.text


@pytest.mark.parametrize("by", ["day", "session", "project", "model"])
def test_usage_from_the_store_counts_as_over_the_files(
    viewer: TestClient, synced: Synced, by: str
) -> None:
    page = viewer.get("/usage", params={"by": by})
    assert page.status_code == 200
    table = re.compile(r"<table.*?</table>", re.S)
    local = table.findall(synced.local[f"/usage?by={by}"])
    assert table.findall(page.text) == local and local


#: What a write would change, table by table: its rows, and a digest of one column.
TABLES = (
    ("line", "uuid"),
    ("line_block", "raw"),
    ("source", "synced_bytes"),
    ("session", "info"),
    ("artifact", "sha256"),
)


def store_contents(dsn: str) -> list[Any]:
    with psycopg.connect(dsn) as conn:
        return [
            conn.execute(
                f"SELECT count(*), md5(string_agg({column}::text, ',' ORDER BY 1))"
                f" FROM sessiontree.{table}"
            ).fetchone()
            for table, column in TABLES
        ]


def test_every_write_is_refused_and_nothing_changes(viewer: TestClient, synced: Synced) -> None:
    rewinds = synced.demo.session("rewinds")
    sid, first = rewinds.session_id, synced.checkpoints[rewinds.session_id][0]
    project = Path(rewinds.cwd)
    files = {p: p.read_bytes() for p in project.rglob("*") if p.is_file()}
    before = store_contents(synced.dsn)
    app = viewer.app
    posts = [r.path for r in app.routes if isinstance(r, Route) and "POST" in (r.methods or ())]  # type: ignore[attr-defined]
    assert len(posts) == 3  # switch, restore, undo
    form = {"token": TOKEN, "to": first, "prompt": first}
    for path in [*posts, "/", "/usage", "/nothing/here"]:
        got = viewer.post(path.replace("{session_id}", sid), data=form)
        assert got.status_code == 403 and got.text == f"{READ_ONLY}\n", path
    for method in ("put", "delete", "patch"):
        assert getattr(viewer, method)(f"/s/{sid}").status_code == 403
    for preview in (f"/s/{sid}/switch?to={first}", f"/s/{sid}/restore?prompt={first}",
                    f"/s/{sid}/undo"):  # fmt: skip
        got = viewer.get(preview)
        assert got.status_code == 403 and READ_ONLY in got.text, preview
        assert 'method="post"' not in got.text
    assert store_contents(synced.dsn) == before
    assert {p: p.read_bytes() for p in project.rglob("*") if p.is_file()} == files


def test_the_dsns_password_is_on_no_page(synced: Synced, tmp_path: Path) -> None:
    rewinds = synced.demo.session("rewinds").session_id
    with store_client(synced, follow_seconds=0.2) as viewer:
        urls = [*synced.local, "/search", "/search?q=weather", f"/s/{rewinds}/export.html",
                f"/s/{rewinds}/page?start=10", f"/s/{rewinds}?follow=1",
                f"/s/{rewinds}/events", "/s/00000000-0000-4000-8000-000000000000",
                f"/s/{rewinds}/restore?prompt=x"]  # fmt: skip
        for url in urls:
            got = viewer.get(url)
            assert PASSWORD not in got.text and synced.dsn not in got.text, url
            assert PASSWORD not in str(got.headers), url
        assert viewer.get(urls[-2]).status_code == 404
    # a store that cannot be used: its failure is a page, one line, no password either
    wrong = make_conninfo(synced.dsn, dbname="no_such_database")
    with make_client(tmp_path, store=wrong) as viewer:
        got = viewer.get("/")
    said = html.unescape(got.text)
    assert got.status_code == 503 and "the store's database does not exist" in said
    assert PASSWORD not in said and "Traceback" not in said
    assert describe_dsn(wrong) in said


def test_the_viewers_connections_are_read_only(viewer: TestClient, synced: Synced) -> None:
    pool = viewer.app.state.store  # type: ignore[attr-defined]
    with pool.connection() as conn:
        assert conn.read_only
        assert conn.execute("SHOW default_transaction_read_only").fetchone() == ("on",)
        assert conn.execute("SHOW transaction_isolation").fetchone() == ("repeatable read",)
    with pytest.raises(StoreError, match="read-only transaction"), pool.connection() as conn:
        conn.execute("DELETE FROM sessiontree.line")
    # Code that turned its transaction read-write on purpose (none of the viewer's does)
    # could write, but never commit: the request's transaction is rolled back at its end.
    with pool.connection() as conn:
        conn.execute("SET TRANSACTION READ WRITE")
        conn.execute("CREATE TABLE sessiontree.scribble (a int)")
    with pool.connection() as conn:
        assert conn.execute("SELECT to_regclass('sessiontree.scribble')").fetchone() == (None,)
    assert viewer.get("/").status_code == 200  # (each request its own, fresh snapshot)
    stats = pool._pool.get_stats()
    assert stats["pool_max"] == 4 and stats["pool_min"] == 0


def test_a_followed_session_gets_what_the_next_sync_pushes(
    demo: DemoSummary,
    store_dsn: str,  # noqa: F811
) -> None:
    """Following a stored session polls the bytes synced of it; what a sync then pushes
    comes as the records event a growing file gives."""
    rewinds = demo.session("rewinds")
    who = Machine(new_machine_id(), MACHINE, getpass.getuser())
    with connect(store_dsn) as conn:
        migrate(conn)
        sync_root(conn, who, Layout(demo.root))
    leaf = Transcript.open(rewinds.path).active_path[-1]
    new = {
        "type": "user", "uuid": "11111111-2222-4333-8444-555555555555", "parentUuid": leaf,
        "isSidechain": False, "sessionId": rewinds.session_id, "cwd": rewinds.cwd,
        "timestamp": "2026-12-01T12:00:00.000Z",
        "message": {"role": "user", "content": "a prompt synced while we watch"},
    }  # fmt: skip

    def append_and_sync() -> None:
        time.sleep(0.3)
        with rewinds.path.open("a") as out:
            out.write(json.dumps(new) + "\n")
        with connect(store_dsn) as conn:
            sync_root(conn, who, Layout(demo.root))

    with make_client(demo.root, store=store_dsn, follow_seconds=1.5) as follower:
        page = follower.get(f"/s/{rewinds.session_id}", params={"follow": "1"})
        src = re.search(r'data-live-src="([^"]+)"', page.text).group(1).replace("&amp;", "&")  # type: ignore[union-attr]
        writer = threading.Thread(target=append_and_sync)
        writer.start()
        events = follower.get(src)
        writer.join()
        # (no connection is held while the stream waits: the pool has them all back)
        assert follower.app.state.store._pool.get_stats()["pool_available"] >= 1  # type: ignore[attr-defined]
    sent = [json.loads(line[6:]) for line in events.text.splitlines() if line.startswith("data: ")]
    assert [d["last"] for d in sent] == [new["uuid"]]
    assert "a prompt synced while we watch" in sent[0]["html"]


def test_search_on_the_store_gives_each_hit_its_machine(viewer: TestClient) -> None:
    pytest.importorskip("sessiontree.catalog.store_search")
    page = viewer.get("/search", params={"q": "weather"})
    assert page.status_code == 200, page.text
    hits = re.findall(r'<li class="hit">.*?</li>', page.text, re.S)
    assert hits and all(f"on {MACHINE} (ada)" in hit for hit in hits if "history" not in hit)
    assert 'name="project"' in page.text  # the filters: the store answers them
    narrowed = viewer.get("/search", params={"q": "weather", "path": "active"})
    assert narrowed.status_code == 200 and "<span>○</span>" not in narrowed.text


def test_serve_shows_the_store_with_no_root(synced: Synced) -> None:
    """The real command: ``serve --store`` needs no local root, says what it serves by
    the store's name alone, and answers a write 403."""
    from tests.web.test_serve_command import start

    process, port, log = start(synced.demo.root, "--port", "0", "--store", synced.dsn)
    try:
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        connection.request("GET", "/", headers={"Host": f"127.0.0.1:{port}"})
        listing = connection.getresponse()
        text = listing.read().decode()
        connection.request("POST", "/", body="", headers={"Host": f"127.0.0.1:{port}"})
        refused = connection.getresponse()
        said = refused.read().decode()
        connection.close()
    finally:
        process.terminate()
        process.wait(timeout=10)
    assert listing.status == 200 and rows(text) == rows(synced.local["/"])
    assert refused.status == 403 and said == f"{READ_ONLY}\n"
    started = log.read_text()
    assert f"serving the store {describe_dsn(synced.dsn)} (read-only) on http://" in started
    assert PASSWORD not in started and "Traceback" not in started


def test_serve_off_loopback_still_needs_a_password(synced: Synced) -> None:
    from click.testing import CliRunner

    from sessiontree.cli.main import cli

    args = ["--store", synced.dsn, "serve", "--no-open", "--host", "0.0.0.0"]
    result = CliRunner().invoke(cli, args, env={"SESSIONTREE_SERVE_PASSWORD": ""})
    assert result.exit_code == 1 and "give a password" in result.output
    assert PASSWORD not in result.output


def test_each_session_offers_the_pull_line_without_the_password(
    viewer: TestClient, synced: Synced, tmp_path: Path
) -> None:
    """The viewer stays read-only; it offers the command that goes on with a session
    elsewhere, its store named without the password, and that command works."""
    import shlex

    from click.testing import CliRunner

    from sessiontree.cli.main import cli

    for s in synced.demo.sessions:
        page = viewer.get(f"/s/{s.session_id}").text
        (line,) = re.findall(r'<code class="copy"[^>]*>([^<]*)</code>', page)
        argv = shlex.split(html.unescape(line))
        assert argv[:3] == ["sessiontree", "pull", s.session_id] and argv[3] == "--store"
        assert PASSWORD not in line
    (sid, store) = (synced.demo.sessions[0].session_id, argv[4])
    root = tmp_path / "elsewhere"
    result = CliRunner().invoke(cli, ["--store", store, "--root", str(root), "pull", sid,
                                      "--force", "--json"])  # fmt: skip
    assert result.exit_code == 0, result.output
    assert Path(json.loads(result.output)["path"]).is_file()
