"""The viewer in a real browser: Playwright for Python driving Debian's Chromium
(``apt-get install chromium``; ``make system-deps`` installs it) against the real server
(``sessiontree serve`` in a subprocess, on a free port of 127.0.0.1) over a demo store.

The walk: the sessions, a session, a rewound branch followed from the tree, switched
to; a diff between checkpoints; a restore and its undo; a search; a live session
watched as it grows; the usage chart; a long session paged by its "load more" link. A
screenshot of each step is kept in ``tests/web/artifacts/`` (git-ignored), and no page
may make the browser report a Content-Security-Policy violation or a script error.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

import sessiontree
from sessiontree.conversation.rewind import switchable_leaves
from sessiontree.conversation.transcript import Transcript
from sessiontree.demo import DemoSummary, write_demo
from sessiontree.storage.layout import Layout

CHROMIUM = Path("/usr/bin/chromium")
ARTIFACTS = Path(__file__).parent / "artifacts"
#: Without the background-networking flags Chromium stalls on a closed network.
CHROMIUM_ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]  # fmt: skip

if not CHROMIUM.exists():
    pytest.skip(
        f"{CHROMIUM} is not installed (apt-get install chromium, or make system-deps): "
        "the browser tests need Debian's Chromium",
        allow_module_level=True,
    )
sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is a dev dependency")

LONG_SESSION = "0c0ffee0-0000-4000-8000-00000000face"
BIG_TREE = "0c0ffee0-0000-4000-8000-0000000b16b1"


def _write_long_session(
    root: Path, cwd: str, *, session: str = LONG_SESSION, count: int = 150
) -> None:
    """``count`` records in one chain; past 100, a second branch off record 100."""
    folder = next((root / "projects").iterdir())
    records: list[dict[str, Any]] = []
    for i in range(count):
        kind = "user" if i % 2 == 0 else "assistant"
        records.append(
            {
                "type": kind, "uuid": f"00000000-0000-4000-8000-{i:012d}",
                "parentUuid": records[-1]["uuid"] if records else None, "isSidechain": False,
                "sessionId": session, "cwd": cwd,
                "timestamp": f"2026-11-01T{10 + i // 3600:02d}:{i // 60 % 60:02d}:{i % 60:02d}Z",
                "message": {"role": kind, "content": f"long session message {i}"},
            }
        )  # fmt: skip
    if count > 200:  # a rewound branch, older than the rest
        branch = dict(records[101], uuid="00000000-0000-4000-8000-999999999999")
        branch["parentUuid"] = records[100]["uuid"]
        records.append(branch)
    (folder / f"{session}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> DemoSummary:
    base = tmp_path_factory.mktemp("browser")
    summary = write_demo(Layout(base / "root"), now=datetime.now(UTC))
    _write_long_session(summary.root, summary.session("rewinds").cwd)
    _write_long_session(summary.root, summary.session("rewinds").cwd, session=BIG_TREE, count=6000)
    return summary


@pytest.fixture(scope="module")
def server(store: DemoSummary) -> Iterator[str]:
    """``sessiontree serve --port 0 --no-open`` on the demo store; its URL."""
    env = {
        **os.environ,
        "PYTHONPATH": str(Path(sessiontree.__file__).parents[1]),
        "SESSIONTREE_CACHE_DIR": str(store.root.parent / "cache"),
    }
    env.pop("CLAUDE_CONFIG_DIR", None)
    log = store.root.parent / "serve.log"
    with log.open("w") as stderr:
        process = subprocess.Popen(
            [sys.executable, "-c", "from sessiontree.cli.main import main; main()",
             "--root", str(store.root), "serve", "--port", "0", "--no-open"],
            stderr=stderr, text=True, env=env,
        )  # fmt: skip
    try:
        found = None
        for _ in range(200):  # what it says first: where it serves
            found = re.search(r"on (http://127\.0\.0\.1:\d+/)", log.read_text())
            if found or process.poll() is not None:
                break
            time.sleep(0.05)
        assert found, f"serve said: {log.read_text()!r}"
        yield found.group(1).rstrip("/")
    finally:
        process.terminate()
        process.wait(timeout=10)
    assert "Traceback" not in log.read_text(), log.read_text()


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with sync_api.sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        yield launched
        launched.close()


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    ARTIFACTS.mkdir(exist_ok=True)
    context = browser.new_context(viewport={"width": 1400, "height": 900})
    opened = context.new_page()
    problems: list[str] = []
    opened.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
    opened.on("pageerror", lambda e: problems.append(str(e)))
    opened.set_default_timeout(15_000)
    yield opened
    context.close()
    assert not problems, f"the browser reported: {problems}"


def shot(page: Any, name: str) -> None:
    page.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=False)


def test_the_walk(page: Any, server: str, store: DemoSummary) -> None:
    rewinds = store.session("rewinds")
    sid = rewinds.session_id
    # the sessions
    page.goto(server + "/")
    assert page.locator("tr[data-session]").count() == len(store.sessions) + 2
    shot(page, "01-sessions")
    # a session: the conversation of its active path, the tree beside it
    page.click(f"tr[data-session='{sid}'] a")
    page.wait_for_url(f"**/s/{sid}")
    assert page.locator("article.item").count() > 10
    assert page.locator("svg.tree .node").count() >= 5
    assert not page.locator("details.thinking[open]").count(), "thinking hidden by default"
    shot(page, "02-session")
    # a rewound branch, from the tree
    transcript = Transcript.open(rewinds.path)
    leaf = switchable_leaves(transcript)[0]
    page.click(f"svg.tree a[data-tip='{leaf}']")
    page.wait_for_selector("#rewound")
    shot(page, "03-rewound-branch")
    # switch to it: preview, then confirm
    page.click("#switch-link")
    page.wait_for_selector("#confirm-switch")
    shot(page, "04-switch-preview")
    page.click("#confirm-switch")
    page.wait_for_selector("#switched")
    resumed = Transcript.open(rewinds.path)
    assert resumed.leaf in resumed.tree.path_to(leaf)
    assert page.locator("#rewound").count() == 0, "the branch shown is now the active one"
    shot(page, "05-switched")
    # a diff between two checkpoints
    page.goto(f"{server}/s/{sid}/checkpoints")
    shot(page, "06-checkpoints")
    page.select_option("#diff-form select[name=file]", "weather.py")
    page.click("#show-diff")
    page.wait_for_selector("pre.diff, #same")
    assert page.locator("pre.diff span.add, pre.diff span.del").count() > 0
    shot(page, "07-diff")
    # restore a checkpoint, then undo it
    project = Path(rewinds.cwd)
    before = {p: p.read_bytes() for p in project.rglob("*") if p.is_file()}
    page.goto(f"{server}/s/{sid}/checkpoints")
    page.locator("a.restore-link").first.click()
    page.wait_for_selector("#confirm-restore")
    shot(page, "08-restore-preview")
    page.click("#confirm-restore")
    page.wait_for_selector("#restored")
    assert {p: p.read_bytes() for p in project.rglob("*") if p.is_file()} != before
    shot(page, "09-restored")
    page.click("#offer-undo")
    page.click("#confirm-undo")
    page.wait_for_selector("#undone")
    assert {p: p.read_bytes() for p in project.rglob("*") if p.is_file()} == before
    shot(page, "10-undone")
    # search, and open a hit
    page.fill("nav input[type=search]", "kelvin")
    page.press("nav input[type=search]", "Enter")
    page.wait_for_selector("#hit-count")
    assert page.locator("li.hit").count() > 0
    shot(page, "11-search")
    page.locator("li.hit a").first.click()
    page.wait_for_selector("article.item")
    assert "kelvin" in page.content().lower()
    # the usage chart
    page.goto(server + "/usage")
    assert page.locator("svg.chart rect.bar").count() > 0
    shot(page, "12-usage")


def test_a_live_session_grows_in_the_browser(page: Any, server: str, store: DemoSummary) -> None:
    session = store.session("compacted")
    page.goto(f"{server}/s/{session.session_id}?follow=1")
    page.wait_for_selector("#live-status")
    shown = page.locator("article.item").count()
    transcript = Transcript.open(session.path)
    last = transcript.active_path[-1]
    with session.path.open("a") as out:
        for n in range(2):
            record = {
                "type": "user" if n == 0 else "assistant",
                "uuid": f"99999999-0000-4000-8000-00000000000{n}", "parentUuid": last,
                "isSidechain": False, "sessionId": session.session_id, "cwd": session.cwd,
                "timestamp": f"2026-12-01T23:00:0{n}.000Z",
                "message": {"role": "user" if n == 0 else "assistant",
                            "content": f"written while the browser watches ({n})"},
            }  # fmt: skip
            last = str(record["uuid"])
            out.write(json.dumps(record) + "\n")
    page.wait_for_selector("text=written while the browser watches (1)", timeout=15_000)
    assert page.locator("article.item").count() == shown + 2
    shot(page, "13-live")


def test_a_long_session_pages_in(page: Any, server: str) -> None:
    page.goto(f"{server}/s/{LONG_SESSION}")
    assert page.locator("article.item").count() == 60
    page.click("a.more[data-fragment]")
    page.wait_for_selector("text=long session message 119")
    assert page.locator("article.item").count() == 120
    assert page.url.endswith(LONG_SESSION), "appended in place"
    page.click("a.more[data-fragment]")
    page.wait_for_selector("text=long session message 149")
    assert page.locator("a.more[data-fragment]").count() == 0
    shot(page, "14-paged")


def test_a_big_tree_is_drawn_once_the_page_shows(page: Any, server: str) -> None:
    page.goto(f"{server}/s/{BIG_TREE}")
    assert page.locator("article.item").count() == 60
    page.wait_for_selector("svg.tree .node")
    # 6,001 records: the chain to the fork, the two branches below it
    assert page.locator("svg.tree .node").count() == 3
    assert page.locator("#tree-loading").count() == 0
    shot(page, "15-big-tree")


def test_the_tree_pane_shows_the_active_leaf(page: Any, server: str, store: DemoSummary) -> None:
    """A tree far taller than the window (a hundred rewound branches): the pane opens
    scrolled to the active path's leaf, the last row, in sight without scrolling the page."""
    session = "0c0ffee0-0000-4000-8000-00000000b0b0"
    folder = Path(store.session("rewinds").path).parent
    records: list[dict[str, Any]] = []
    chain: str | None = None
    for i in range(300):
        for branch in ("p", "x") if i % 3 == 0 and i else ("p",):
            kind = "user" if (i % 2 == 0) == (branch == "p") else "assistant"
            uuid = f"00000000-0000-4000-8{'0' if branch == 'p' else '1'}00-{i:012d}"
            n = len(records)
            records.append(
                {
                    "type": kind, "uuid": uuid, "parentUuid": chain, "isSidechain": False,
                    "sessionId": session, "cwd": store.session("rewinds").cwd,
                    "timestamp": f"2026-11-02T10:{n // 60 % 60:02d}:{n % 60:02d}Z",
                    "message": {"role": kind, "content": f"{branch} message {i}"},
                }
            )  # fmt: skip
        chain = records[-2 if records[-1]["uuid"][20] == "1" else -1]["uuid"]
    (folder / f"{session}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    leaf = records[-1]["uuid"]
    page.goto(f"{server}/s/{session}")
    page.wait_for_selector("svg.tree .node")
    for _ in range(40):  # the pane scrolls once the tree is drawn
        if page.locator(".tree-pane").evaluate("p => p.scrollTop") > 0:
            break
        page.wait_for_timeout(50)
    tip = page.locator(f"svg.tree a[data-tip='{leaf}'] circle").bounding_box()
    pane = page.locator(".tree-pane").bounding_box()
    assert page.evaluate("window.scrollY") == 0
    assert pane["y"] <= tip["y"] and tip["y"] + tip["height"] <= 900, (tip, pane)
    assert page.locator(".tree-pane").evaluate("p => p.scrollHeight > 3 * p.clientHeight")
    shot(page, "16-tree-at-leaf")


def test_artifacts_are_kept() -> None:
    kept = sorted(p.name for p in ARTIFACTS.glob("*.png"))
    assert "02-session.png" in kept, kept
    print(f"screenshots in {ARTIFACTS}: {', '.join(kept)}")


def test_chromium_is_debians() -> None:
    assert shutil.which("chromium") == str(CHROMIUM)


def test_the_viewer_is_usable_800_pixels_wide(
    browser: Any, server: str, store: DemoSummary
) -> None:
    """At 800x900 the page never scrolls sideways: the sessions table fits, and a
    session's conversation keeps most of the width (the tree stacks, foldable, above it)."""
    context = browser.new_context(viewport={"width": 800, "height": 900})
    narrow = context.new_page()
    narrow.set_default_timeout(15_000)
    problems: list[str] = []
    narrow.on("pageerror", lambda e: problems.append(str(e)))
    try:
        width = "document.scrollingElement.scrollWidth"
        narrow.goto(server + "/")
        assert narrow.evaluate(width) <= 800
        shot(narrow, "17-narrow-sessions")
        sid = store.session("rewinds").session_id
        narrow.goto(f"{server}/s/{sid}")
        narrow.wait_for_selector("svg.tree .node")
        assert narrow.evaluate(width) <= 800
        conversation = narrow.locator("section.conversation").bounding_box()
        assert conversation["width"] >= 480, conversation
        tree = narrow.locator(".tree-pane")
        assert tree.is_visible() and tree.bounding_box()["width"] <= 800
        shot(narrow, "18-narrow-session")
        # the tree folds away, and opens again
        narrow.click("#tree-toggle")
        assert not narrow.locator("svg.tree").is_visible()
        narrow.click("#tree-toggle")
        assert narrow.locator("svg.tree").is_visible()
        narrow.goto(f"{server}/s/{sid}/checkpoints")
        assert narrow.evaluate(width) <= 800
        narrow.goto(f"{server}/search?q=kelvin")
        assert narrow.evaluate(width) <= 800
        narrow.goto(server + "/usage")
        assert narrow.evaluate(width) <= 800
        shot(narrow, "19-narrow-usage")
    finally:
        context.close()
    assert not problems, problems
