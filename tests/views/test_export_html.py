"""``export --format html``: one self-contained file on the web viewer's templates, with
the session's title, the tree (every branch) and the conversation of the active path."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from pathlib import Path

import pytest
from click.testing import CliRunner

from sessiontree.cli.main import cli
from sessiontree.conversation.rewind import switchable_leaves
from sessiontree.conversation.transcript import Transcript
from sessiontree.demo import write_demo
from sessiontree.storage.layout import Layout
from sessiontree.views.shapes import is_shown


def test_export_html_is_one_self_contained_file_with_the_tree_and_the_conversation(
    tmp_path: Path,
) -> None:
    demo = write_demo(Layout(tmp_path / "root"), now=datetime.now(UTC))
    rewinds = demo.session("rewinds")
    target = tmp_path / "out.html"
    result = CliRunner().invoke(
        cli,
        ["--root", str(demo.root), "export", rewinds.session_id, "--format", "html",
         "-o", str(target)],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    document = target.read_text()
    assert re.search(r"<title>(.*?)</title>", document).group(1) == rewinds.title  # type: ignore[union-attr]
    transcript = Transcript.open(rewinds.path)
    shown = re.findall(r'<article class="item [a-z]+" id="r-([0-9a-f-]+)"', document)
    assert shown == [r.uuid for r in transcript.active_records() if is_shown(r)]
    # the tree: every record placed, the rewound branches drawn (not linked: off the page)
    assert document.count("<svg") == 1 and 'class="tree"' in document
    titles = re.findall(r"<title>[^<]*\((\d+) records?, ([0-9a-f]{8})\)</title>", document)
    assert sum(int(n) for n, _ in titles) == len(
        [u for u in transcript.tree.nodes if not transcript.tree.is_sidechain(u)]
    )
    assert {leaf[:8] for leaf in switchable_leaves(transcript)} <= {tip for _, tip in titles}
    # self-contained: the stylesheet inline, no script, nothing loaded from anywhere
    assert "<style>" in document and "svg.tree" in document
    assert "<script" not in document and "<link" not in document
    assert not re.search(r'\s(?:src|href)="(?!#)', document.split("</head>")[1].replace(
        'href="https://', "").replace('href="http://', ""))  # fmt: skip


def _scenario_transcripts() -> list[Path]:
    from tests.conftest import all_scenarios

    return sorted(
        path
        for scenario in all_scenarios()
        for path in (scenario / "claude-home" / "projects").glob("*/*.jsonl")
        if not path.name.startswith("agent-")
    )


@pytest.mark.parametrize("path", _scenario_transcripts(), ids=lambda p: p.parents[3].name)
def test_each_node_of_the_active_path_links_to_a_record_in_the_file(
    path: Path, tmp_path: Path
) -> None:
    """A node's last record may be one a reader is not shown (a turn's ``turn_duration``
    note): its link goes to the record above it that is, on the active path."""
    target = tmp_path / "out.html"
    result = CliRunner().invoke(cli, ["export", str(path), "--format", "html", "-o", str(target)])
    assert result.exit_code == 0, result.output
    document = target.read_text()
    ids = set(re.findall(r' id="([^"]+)"', document))
    links = re.findall(r'<a href="#([^"]+)" class="node-link"', document)
    on_path = set(Transcript.open(path).active_path)
    assert links and [link for link in links if link not in ids] == []
    assert {link.removeprefix("r-") for link in links} <= on_path
