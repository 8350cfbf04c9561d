"""Memory files read by the real client and by :func:`sessiontree.agent.memory.load_memory`.

``python -m tests.agent.memory_cases CLAUDE_BIN`` makes the tree below in a scratch
folder (a home with the user's memory, a project with every kind of memory file and
import), runs the real client 2.1.328 (``claude -p hi``) in the project against a
stand-in API that keeps whole request bodies, and writes to
``tests/fixtures/claude-code-2.1.328-tools/memory.json`` the memory text block of the
first request and the ``instructions`` attachment of the transcript, the scratch folder
written as ``<R>``. ``test_memory.py`` makes the same tree and compares.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import threading
from http.server import ThreadingHTTPServer
from pathlib import Path

from sessiontree.storage.layout import encode_cwd
from tests.agent.tool_cases import _Script

GOLDEN = Path(__file__).parents[1] / "fixtures" / "claude-code-2.1.328-tools" / "memory.json"
R = "<R>"

#: Files under the scratch root (``memory/`` is the project's auto-memory folder).
TREE: dict[str, str] = {
    "home/.claude/CLAUDE.md": "USER start @~/tilde.md and @a1.md and @c1.md\n",
    "home/tilde.md": "TILDE imported\n",
    **{f"home/.claude/a{n}.md": f"A{n} then @a{n + 1}.md\n" for n in range(1, 8)},
    "home/.claude/a8.md": "A8 end\n",
    "home/.claude/c1.md": "C1 @c2.md\n",
    "home/.claude/c2.md": "C2 @c1.md\n",
    "home/home-note.md": "HOME-NOTE outside the project\n",
    "CLAUDE.md": "PARENT memory\n",
    "proj/CLAUDE.md": (
        "\n\n  PROJECT leading blanks\n<!-- html comment here -->\n"
        "inline <!-- gone --> comment, a code span `@notes/inline.md`, @notes/extra.md and"
        " @~/home-note.md and @missing.md and @notes/comma.md, and @{R}/proj/notes/abs.md\n\n"
        "```\n@notes/incode.md\n```\n\n\n"
    ),
    "proj/notes/extra.md": "EXTRA nested @deeper.md\n",
    "proj/notes/deeper.md": "DEEPER\n",
    "proj/notes/inline.md": "INLINE not imported\n",
    "proj/notes/incode.md": "INCODE not imported\n",
    "proj/notes/abs.md": "ABS imported\n",
    "proj/notes/comma.md": "COMMA not imported: the comma is part of the path\n",
    "proj/.claude/CLAUDE.md": "DOTCLAUDE memory\n",
    "proj/.claude/rules/b-rule.md": "RULE b\n",
    "proj/.claude/rules/a-rule.md": "RULE a\n",
    "proj/CLAUDE.local.md": "LOCAL private\n",
    "proj/sub/CLAUDE.md": "SUBFOLDER not read at start\n",
    "memory/MEMORY.md": "- [note](note.md) \u2014 AUTOMEM index entry\n",
    "memory/note.md": "---\nname: note\n---\nAUTOMEM note body, not loaded\n",
}


def make_tree(root: Path) -> tuple[Path, Path]:
    """The tree under ``root``; (home, project)."""
    home, project = root / "home", root / "proj"
    memory = home / ".claude" / "projects" / encode_cwd(str(project)) / "memory"
    for rel, text in TREE.items():
        path = memory / rel.removeprefix("memory/") if rel.startswith("memory/") else root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text.replace("{R}", str(root)))
    return home, project


def generate(claude: str) -> None:
    root = Path(tempfile.mkdtemp(prefix="memory-cases-"))
    home, project = make_tree(root)
    _Script.steps = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Script)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    env = dict(
        os.environ,
        HOME=str(home),
        ANTHROPIC_BASE_URL=f"http://127.0.0.1:{server.server_address[1]}",
        ANTHROPIC_API_KEY="sk-ant-mock",
        CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1",
        DISABLE_TELEMETRY="1",
        DISABLE_AUTOUPDATER="1",
        DISABLE_ERROR_REPORTING="1",
        IS_SANDBOX="1",
    )
    env.pop("CLAUDE_CONFIG_DIR", None)
    subprocess.run(
        [claude, "-p", "hi", "--dangerously-skip-permissions"],
        cwd=project,
        env=env,
        check=True,
        timeout=300,
        capture_output=True,
    )
    server.shutdown()
    server.server_close()
    first = next(b for b in _Script.bodies if b.get("tools"))
    texts = [block["text"] for block in first["messages"][0]["content"]]
    reminder = next(t for t in texts if "Codebase and user instructions" in t)
    (transcript,) = (home / ".claude" / "projects").glob("*/*.jsonl")
    attachment = next(
        record
        for record in map(json.loads, transcript.read_text().splitlines())
        if record.get("type") == "attachment" and record["attachment"]["type"] == "instructions"
    )
    found = {
        "reminder": reminder,
        "attachment": attachment["attachment"],
        "rendered": attachment["rendered"],
        "renderedRole": attachment["renderedRole"],
    }
    text = json.dumps(found, indent=1, ensure_ascii=False).replace(str(root), R)
    GOLDEN.write_text(text + "\n")
    print(f"-> {GOLDEN}")


if __name__ == "__main__":
    generate(sys.argv[1])
