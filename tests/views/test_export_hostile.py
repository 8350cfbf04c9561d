"""Exports of transcript text that fights back: backtick runs that would close a fence,
HTML that would run in a renderer, lines that would make a heading (issue 11).

Markdown: every fence opens and closes with the same fence and holds its text verbatim;
outside fences there is no ``<`` at all and no heading but the export's own. HTML: no tag
from the transcript (the web viewer's own XSS corpus is in ``tests/web/``). The Markdown
is read by a small CommonMark fence scanner here (the rules a renderer follows to find
fenced code blocks), and, where markdown-it-py is
installed (rich brings it), rendered by a real CommonMark renderer with raw HTML on.
"""

from __future__ import annotations

import html
import json
import re
import uuid
from dataclasses import dataclass
from pathlib import Path

import markupsafe
import pytest

from sessiontree.conversation.transcript import Transcript
from sessiontree.views.export import iter_html, iter_markdown
from sessiontree.views.text import printable

SESSION = "5e551011-0000-4000-8000-00000000beef"

HOSTILE = [
    "```",
    "a ``` b",
    "```\nclosed early?\n```\n<script>alert('after the fence')</script>",
    "````\nfour ``` three\n````",
    "```py\nclosed by a longer run\n  `````  \n<b>after</b>",
    "``````````",
    "ten: ``````````\n``````````\n<b>bold?</b>",
    "<script>alert(1)</script>",
    "<SCRIPT SRC=//evil.example/x.js></SCRIPT>",
    '<img src=x onerror="alert(1)">',
    "&amp; &lt;script&gt; &#60;script&#62; AT&T",
    "<!-- a comment --> and <!-- one left open",
    "# a line starting with #\n## User\nforged turn",
    "Assistant\n---\nUser\n===",
    "~~~\n<script>in tildes</script>\n~~~",
    "```\n<script>left open</script>",
    "line\r```\r<script>after a lone CR</script>",
    "    <script>indented</script>",
    "> <script>quoted</script>",
    "<http://autolink.example> <javascript:alert(1)>",
]


def _record(parent: str | None, kind: str, content: object, n: int) -> dict[str, object]:
    return {
        "parentUuid": parent,
        "isSidechain": False,
        "type": kind,
        "message": {"role": kind, "content": content},
        "uuid": str(uuid.UUID(int=n + 1)),
        "timestamp": f"2026-12-01T07:00:{n % 60:02d}.000Z",
        "sessionId": SESSION,
    }


@pytest.fixture
def transcript(tmp_path: Path) -> Transcript:
    """Each hostile text as a prompt, a reply, a tool call's input and a tool's result
    (as a string and as a text block)."""
    records: list[dict[str, object]] = []

    def add(kind: str, content: object) -> None:
        parent = records[-1]["uuid"] if records else None
        records.append(_record(parent, kind, content, len(records)))  # type: ignore[arg-type]

    for i, text in enumerate(HOSTILE):
        tool = f"toolu_{i:04d}"
        add("user", text)
        add(
            "assistant",
            [
                {"type": "text", "text": text},
                {"type": "tool_use", "id": tool, "name": "Bash", "input": {"command": text}},
            ],
        )
        add("user", [{"type": "tool_result", "tool_use_id": tool, "content": text}])
        add(
            "user",
            [
                {
                    "type": "tool_result",
                    "tool_use_id": tool,
                    "content": [{"type": "text", "text": text}],
                }
            ],
        )
    path = tmp_path / f"{SESSION}.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return Transcript.open(path)


@dataclass(frozen=True)
class Fenced:
    opening: str  # the fence's run: ``` or ~~~~, as opened
    closing: str | None  # as closed (None: still open at the end)
    info: str
    lines: list[str]


_OPEN = re.compile(r"( {0,3})(`{3,}(?=[^`]*$)|~{3,})(.*)")
_LINE_END = re.compile(r"\r\n|\r|\n")


def scan(markdown: str) -> tuple[list[Fenced], list[str]]:
    """CommonMark's fenced code blocks of a document (top level), and its other lines."""
    blocks: list[Fenced] = []
    outside: list[str] = []
    current: tuple[str, str, list[str]] | None = None
    for line in _LINE_END.split(markdown):
        if current is None:
            opening = _OPEN.fullmatch(line)
            if opening:
                current = (opening.group(2), opening.group(3), [])
            else:
                outside.append(line)
            continue
        run, info, lines = current
        close = re.fullmatch(rf" {{0,3}}({re.escape(run[0])}+)[ \t]*", line)
        if close and len(close.group(1)) >= len(run):
            blocks.append(Fenced(run, close.group(1), info, lines))
            current = None
        else:
            lines.append(line)
    if current is not None:
        blocks.append(Fenced(current[0], None, current[1], current[2]))
    return blocks, outside


def _lines(text: str) -> list[str]:
    return _LINE_END.split(text)


def test_markdown_fences_hold_each_text_verbatim(transcript: Transcript) -> None:
    blocks, _ = scan("".join(iter_markdown(transcript)))
    assert all(b.closing == b.opening for b in blocks), [
        b for b in blocks if b.closing != b.opening
    ]
    contents = [b.lines for b in blocks]
    for text in HOSTILE:
        # the tool's result, twice (a string and a text block), and the call's input
        assert contents.count(_lines(text)) >= 2, text
        assert _lines(json.dumps({"command": text}, indent=2, ensure_ascii=False)) in contents


def test_markdown_has_no_html_and_no_forged_heading_outside_fences(
    transcript: Transcript,
) -> None:
    markdown = "".join(iter_markdown(transcript))
    _, outside = scan(markdown)
    assert not [line for line in outside if "<" in line]
    headings = [line for line in outside if re.match(r" {0,3}#{1,6}(?:[ \t]|$)", line)]
    shown = {"User", "Assistant", "Tool result"}
    assert headings[0] == f"# Session {SESSION}"
    assert all(h.removeprefix("## ") in shown for h in headings[1:]), headings
    assert len(headings) == 1 + 4 * len(HOSTILE)
    assert not [line for line in outside if re.fullmatch(r" {0,3}(?:=+|-+)[ \t]*", line)]
    assert "&amp;amp; &amp;lt;script&amp;gt; &amp;#60;script&amp;#62; AT&T" in outside


def test_markdown_renders_as_text(transcript: Transcript) -> None:
    """A CommonMark renderer with raw HTML allowed makes no tag from the transcript."""
    markdown_it = pytest.importorskip("markdown_it")
    rendered = markdown_it.MarkdownIt("commonmark").render("".join(iter_markdown(transcript)))
    tags = set(re.findall(r"<(/?[A-Za-z][A-Za-z0-9]*|!--)", rendered))
    assert tags <= {"h1", "/h1", "h2", "/h2", "p", "/p", "em", "/em", "code", "/code",
                    "pre", "/pre", "strong", "/strong", "br"}, tags  # fmt: skip
    assert rendered.count("<h2>") == 4 * len(HOSTILE)
    for text in HOSTILE:
        escaped = html.escape("\n".join(_lines(text)), quote=False).replace('"', "&quot;")
        assert f">{escaped}\n</code></pre>" in rendered, text


def test_html_escapes_every_text(transcript: Transcript) -> None:
    document = "".join(iter_html(transcript))
    lowered = document.lower()
    assert "<script" not in lowered and "<img" not in lowered and "<!--" not in lowered
    assert "javascript:" not in document.replace(html.escape("<javascript:"), "")
    for text in HOSTILE:
        # (Jinja2's escape: the export renders the web viewer's templates, autoescaped;
        # a control character, the lone CR, shown as its escape as the viewer shows it)
        assert str(markupsafe.escape(printable(text))) in document, text
