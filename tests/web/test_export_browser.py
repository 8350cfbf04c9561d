"""``export --format html --all-branches`` opened in a real browser (Debian's Chromium,
as :mod:`tests.web.test_browser` drives it): no script and no Content-Security-Policy
violation, and a click on a node of a rewound branch in the tree goes to its record in
the file, in that branch's section, scrolled into view."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from click.testing import CliRunner

from sessiontree.cli.main import cli
from sessiontree.conversation.transcript import Transcript
from tests.conftest import FIXTURES
from tests.web.test_browser import CHROMIUM, CHROMIUM_ARGS, sync_api


def test_a_rewound_node_of_the_tree_opens_its_record(tmp_path: Path) -> None:
    (path,) = (FIXTURES / "02-rewind-both" / "claude-home" / "projects").glob("*/*.jsonl")
    target = tmp_path / "all.html"
    result = CliRunner().invoke(
        cli, ["export", str(path), "--format", "html", "--all-branches", "-o", str(target)]
    )
    assert result.exit_code == 0, result.output
    on_path = set(Transcript.open(path).active_path)
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            page: Any = browser.new_page(viewport={"width": 1400, "height": 900})
            problems: list[str] = []
            page.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
            page.on("pageerror", lambda e: problems.append(str(e)))
            page.goto(target.as_uri())
            assert page.evaluate("document.scripts.length") == 0
            assert page.locator("section.branch").first.get_attribute("class") == "branch active"
            rewound = page.locator("svg.tree a.node-link:not(:has(g.on))")
            assert rewound.count() >= 1
            tip = rewound.last.get_attribute("data-tip")
            assert tip is not None and tip not in on_path
            rewound.last.click()
            hash_ = page.evaluate("location.hash")
            shown = page.locator(f"article{hash_}")
            assert shown.count() == 1 and hash_[3:] not in on_path
            assert shown.evaluate("e => e.closest('section.branch').className") == "branch rewound"
            assert shown.is_visible() and shown.evaluate(
                "e => { const r = e.getBoundingClientRect();"
                " return r.top >= 0 && r.top < window.innerHeight; }"
            )
            assert problems == []
        finally:
            browser.close()
