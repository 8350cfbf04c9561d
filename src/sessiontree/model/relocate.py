"""A session moved to another project folder: the paths its lines name under the old
folder named under the new one, and nothing else changed.

Pure: one JSONL line's bytes in, bytes out. A path is rewritten where a JSON string
*starts* with the old folder (``"cwd":"/home/a/proj"``, ``"file_path":"/home/a/proj/x.py"``,
a checkpoint's ``"/home/a/proj/x.py":{…}`` key): the folder itself, or followed by ``/``.
Text that mentions the folder inside a longer string (a tool's prose output) is left as
it was: it is what was said, not where a file is. The match is on the bytes the client
writes (JSON with ``/`` unescaped and non-ASCII as UTF-8), so every other byte of a line
stays as it was; a line that names no path under the folder is returned unchanged.
"""

from __future__ import annotations

import json


def json_text(text: str) -> bytes:
    """``text`` as the inside of a JSON string, as the client writes it."""
    return json.dumps(text, ensure_ascii=False)[1:-1].encode("utf-8", "surrogatepass")


class Relocation:
    """Rewrites the paths under ``old`` (a folder, absolute) to be under ``new``."""

    def __init__(self, old: str, new: str) -> None:
        self.old, self.new = old.rstrip("/") or "/", new.rstrip("/") or "/"
        was, now = json_text(self.old), json_text(self.new)
        self.pairs = (
            (b'"' + was + b'"', b'"' + now + b'"'),
            (b'"' + was + b"/", b'"' + now + b"/"),
        )

    def line(self, raw: bytes) -> bytes:
        """The line with every JSON string that starts with the old folder moved."""
        if self.old == self.new:
            return raw
        for was, now in self.pairs:
            if was in raw:
                raw = raw.replace(was, now)
        return raw

    def path(self, text: str) -> str:
        """A path under the old folder, under the new one (else as it is)."""
        if text == self.old:
            return self.new
        if text.startswith(self.old.rstrip("/") + "/"):
            return self.new.rstrip("/") + text[len(self.old.rstrip("/")) :]
        return text
