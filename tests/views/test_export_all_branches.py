"""``export --all-branches``: every branch's conversation in one file, each record once.

HTML: the tree beside it, each of its nodes a link to a record in the file; the active
path first and marked; still one self-contained file (no script, nothing loaded, the
same Content-Security-Policy), well formed, its Markdown rendered safely. Markdown: the
same sections. JSON: every record already. Checked on every scenario a real client
wrote (rewinds, re-sends, compactions, forks) and on sessions from the wild."""

from __future__ import annotations

import html
import json
import re
from html.parser import HTMLParser
from pathlib import Path

import pytest
from click.testing import CliRunner

from sessiontree.cli.main import cli
from sessiontree.conversation.transcript import Transcript
from sessiontree.views.shapes import is_shown
from tests.conftest import WILD, all_scenarios, needs_wild, scenario_id

CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:"
#: Elements with no end tag (and SVG's, written self-closed, which the parser reports so).
VOID = {"meta", "link", "br", "hr", "img", "input", "area", "base", "col", "wbr", "source"}


def _transcripts(scenarios: list[Path]) -> list[Path]:
    return sorted(
        path
        for scenario in scenarios
        for path in (scenario / "claude-home" / "projects").glob("*/*.jsonl")
        if not path.name.startswith("agent-")
    )


SCENARIOS = {scenario_id(s): s for s in all_scenarios()}
SCENARIO_TRANSCRIPTS = _transcripts(all_scenarios())
WILD_TRANSCRIPTS = _transcripts(sorted(WILD.iterdir()) if WILD.is_dir() else [])


def _export(path: Path, tmp_path: Path, *args: str) -> str:
    target = tmp_path / "out"
    result = CliRunner().invoke(cli, ["export", str(path), "-o", str(target), *args])
    assert result.exit_code == 0, result.output
    return target.read_text()


class _Document(HTMLParser):
    """What a browser would make of the file: tags closed in order, ids, links, the
    sections and the articles in them."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.open: list[str] = []
        self.misnested: list[str] = []
        self.ids: list[str] = []
        self.links: list[str] = []
        self.tags: set[str] = set()
        self.csp: list[str] = []
        self.sections: list[tuple[str, list[str]]] = []  # (class, article ids)
        self.section_headings: list[str] = []
        self.in_heading = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = dict(attrs)
        self.tags.add(tag)
        if found.get("id"):
            self.ids.append(str(found["id"]))
        if found.get("href") is not None:
            self.links.append(str(found["href"]))
        if tag == "meta" and found.get("http-equiv") == "Content-Security-Policy":
            self.csp.append(str(found.get("content")))
        if tag == "section" and "branch" in str(found.get("class", "")).split():
            self.sections.append((str(found["class"]), []))
        if tag == "article" and self.sections and "section" in self.open:
            self.sections[-1][1].append(str(found.get("id", "")).removeprefix("r-"))
        if tag == "h2" and self.sections and "section" in self.open:
            self.in_heading = True
            self.section_headings.append("")
        if tag not in VOID:
            self.open.append(tag)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.handle_starttag(tag, attrs)
        if tag not in VOID:
            self.open.pop()

    def handle_endtag(self, tag: str) -> None:
        if tag == "h2":
            self.in_heading = False
        if not self.open or self.open[-1] != tag:
            self.misnested.append(f"</{tag}> with {self.open[-3:]} open")
            return
        self.open.pop()

    def handle_data(self, data: str) -> None:
        if self.in_heading:
            self.section_headings[-1] += data


def _parse(document: str) -> _Document:
    parsed = _Document()
    parsed.feed(document)
    parsed.close()
    return parsed


def _shown_records(transcript: Transcript) -> list[str]:
    return [
        str(r.uuid)
        for r in transcript.iter_all_records()
        if is_shown(r) and not r.is_sidechain and r.uuid is not None
    ]


def _shown_at_or_above(transcript: Transcript, uuid: str) -> str:
    """The record a link to ``uuid`` goes to: it, or the nearest above it a reader sees."""
    record = transcript.record(uuid)
    while record is not None and not is_shown(record):
        record = transcript.record(record.parent_uuid or "")
    assert record is not None and record.uuid is not None
    return record.uuid


def _check_document(transcript: Transcript, document: str) -> _Document:
    parsed = _parse(document)
    assert parsed.misnested == [] and parsed.open == []
    # every shown record of every branch, each once, in a section
    placed = [uuid for _, articles in parsed.sections for uuid in articles]
    assert sorted(placed) == sorted(_shown_records(transcript))
    # each id once, and every link in the file goes to one of them
    assert len(parsed.ids) == len(set(parsed.ids))
    internal = [link for link in parsed.links if link.startswith("#")]
    assert {link[1:] for link in internal} <= set(parsed.ids)
    # the tree: every node a link into the file
    nodes = document.count('<g class="node')
    assert nodes == document.count('class="node-link"')
    assert (nodes > 0) == any(not transcript.tree.is_sidechain(u) for u in transcript.tree.nodes)
    # the active path first, marked, in its order; no other section marked so
    active = [u for u in transcript.active_path if u in set(placed)]
    if active:
        classes, articles = parsed.sections[0]
        assert "active" in classes.split() and articles == active
    assert not [c for c, _ in parsed.sections[1:] if "active" in c.split()]
    # self-contained: no script, nothing loaded, the same policy as without the flag
    assert "script" not in parsed.tags and "link" not in parsed.tags
    assert parsed.csp == [CSP]
    assert not [link for link in parsed.links if not link.startswith(("#", "http", "mailto:"))]
    return parsed


@pytest.mark.parametrize("path", SCENARIO_TRANSCRIPTS, ids=lambda p: p.parents[3].name)
def test_every_branch_of_every_scenario_is_in_the_file_once(path: Path, tmp_path: Path) -> None:
    transcript = Transcript.open(path)
    _check_document(transcript, _export(path, tmp_path, "--format", "html", "--all-branches"))


@needs_wild
@pytest.mark.parametrize(
    "path", WILD_TRANSCRIPTS, ids=lambda p: f"{p.parents[3].name}/{p.stem[:8]}"
)
def test_every_branch_of_sessions_from_the_wild_is_in_the_file_once(
    path: Path, tmp_path: Path
) -> None:
    transcript = Transcript.open(path)
    _check_document(transcript, _export(path, tmp_path, "--format", "html", "--all-branches"))


def _typed(scenario: Path) -> list[str]:
    steps = json.loads((scenario / "scenario.json").read_text())["steps"]
    return [step["text"] for step in steps if step.get("action") == "prompt"]


def test_the_branch_a_rewind_left_is_shown_after_the_active_path(tmp_path: Path) -> None:
    """02-rewind-both: p2 and p3 were rewound (p4 typed instead); the active path has
    p1 and p4, the rewound section p2 and p3, its heading linking to the fork point."""
    scenario = SCENARIOS["2.1.328/02-rewind-both"]
    (path,) = _transcripts([scenario])
    transcript = Transcript.open(path)
    only_active = _export(path, tmp_path, "--format", "html")
    document = _export(path, tmp_path, "--format", "html", "--all-branches", "--force")
    parsed = _check_document(transcript, document)
    on_path = {r.text() for r in transcript.active_records() if r.is_prompt}
    rewound = [p for p in _typed(scenario) if p not in on_path]
    assert rewound and len(on_path) >= 2
    for prompt in _typed(scenario):
        assert html.escape(prompt, quote=False) in document.replace("&#34;", '"')
    assert not [p for p in rewound if html.escape(p, quote=False) in only_active]
    (point,) = transcript.fork_points()
    fork = _shown_at_or_above(transcript, point.uuid)
    assert len(parsed.sections) == 2
    classes, articles = parsed.sections[1]
    assert "rewound" in classes.split()
    texts = {str(r.uuid): r.text() for r in transcript.records(articles)}
    assert [t for t in texts.values() if t in rewound] == rewound
    assert f'href="#r-{fork}"' in document.split('class="branch rewound"')[1][:2000]
    assert fork[:8] in parsed.section_headings[1]


def test_a_rewound_branch_is_rendered_safely(tmp_path: Path) -> None:
    """The Markdown of a branch off the active path is rendered as the active path's
    is: raw HTML shown as text, only http/https/mailto links kept."""
    session = "5e551011-0000-4000-8000-00000000b0b0"
    hostile = "<script>alert(1)</script> [x](javascript:alert(2)) <img src=x onerror=alert(3)>"

    def record(n: int, parent: int | None, kind: str, text: str) -> str:
        return json.dumps({
            "type": kind, "uuid": f"00000000-0000-4000-8000-{n:012d}",
            "parentUuid": None if parent is None else f"00000000-0000-4000-8000-{parent:012d}",
            "isSidechain": False, "sessionId": session,
            "timestamp": f"2026-12-01T07:00:{n:02d}.000Z",
            "message": {"role": kind, "content": text},
        })  # fmt: skip

    path = tmp_path / f"{session}.jsonl"
    lines = [
        record(1, None, "user", "first"),
        record(2, 1, "assistant", "ok"),
        record(3, 2, "user", hostile),  # rewound
        record(4, 3, "assistant", f"**bold** {hostile}"),
        record(5, 2, "user", "again"),
        record(6, 5, "assistant", "fine"),
    ]
    path.write_text("\n".join(lines) + "\n")
    document = _export(path, tmp_path, "--format", "html", "--all-branches")
    parsed = _check_document(Transcript.open(path), document)
    assert len(parsed.sections) == 2
    assert "<strong>bold</strong>" in document
    conversation = document.split('class="conversation"')[1]
    assert conversation.count("&lt;script&gt;alert(1)&lt;/script&gt;") == 2
    lowered = document.lower()
    assert (
        "<script" not in lowered
        and "<img" not in lowered
        and "javascript:" not in re.sub(r"\[x\]\(javascript:alert\(2\)\)", "", lowered)
    )


def test_markdown_has_every_branch_once(tmp_path: Path) -> None:
    scenario = SCENARIOS["2.1.328/02-rewind-both"]
    (path,) = _transcripts([scenario])
    transcript = Transcript.open(path)
    markdown = _export(path, tmp_path, "--format", "md", "--all-branches")
    for uuid in _shown_records(transcript):
        assert markdown.count(f"`{uuid}`") == 1, uuid
    headings = re.findall(r"^## (.*)$", markdown, flags=re.M)
    assert len(headings) == 2 and "active path" in headings[0] and "rewound" in headings[1]
    (point,) = transcript.fork_points()
    assert _shown_at_or_above(transcript, point.uuid)[:8] in headings[1]
    rewound = markdown.split(f"## {headings[1]}")[1]
    on_path = {r.text() for r in transcript.active_records() if r.is_prompt}
    for prompt in _typed(scenario):
        shown = prompt.replace("<", "&lt;").replace(">", "&gt;")  # (as prose: no HTML)
        assert (shown in rewound) is (prompt not in on_path), prompt
    # each record under a heading a level below its section's
    assert markdown.count("\n### ") == len(_shown_records(transcript))


def test_json_holds_every_branch_with_or_without_the_flag(tmp_path: Path) -> None:
    (path,) = _transcripts([SCENARIOS["2.1.328/02-rewind-both"]])
    plain = _export(path, tmp_path, "--format", "json")
    every = _export(path, tmp_path, "--format", "json", "--all-branches", "--force")
    assert every == plain
    assert len(json.loads(every)["records"]) >= len(Transcript.open(path).tree.nodes)


def test_a_compaction_links_to_the_conversation_it_summarized(tmp_path: Path) -> None:
    """06-compact (a 2.1 compaction: what it kept re-linked below its boundary): the
    boundary on the active path links to the last record it summarized, in a section
    of its own further down, marked summarized."""
    (path,) = _transcripts([SCENARIOS["2.1.328/06-compact"]])
    transcript = Transcript.open(path)
    parsed = _check_document(
        transcript, document := _export(path, tmp_path, "--format", "html", "--all-branches")
    )
    links = re.findall(r'<p class="summarized"><a href="#r-([0-9a-f-]+)"', document)
    assert len(links) == 1
    (target,) = links
    (home,) = [classes for classes, articles in parsed.sections if target in articles]
    assert "summarized" in home.split() and target not in transcript.active_path
    boundary = next(
        u
        for u in transcript.active_path
        if transcript.tree.skeleton(u).subtype == "compact_boundary"
    )
    conversation = document.split('class="conversation"')[1]
    link = f'<p class="summarized"><a href="#r-{target}"'
    assert f'id="r-{boundary}"' in conversation.split(link)[0].rsplit("<article", 1)[1]
