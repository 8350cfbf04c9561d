"""Large tool outputs spilled to ``<sessionId>/tool-results/<id>.txt``, as the client does.

What client 2.1.328 does with a Bash output larger than 30,000 (fixture 13, and its
code for persisting outputs, previews and sizes):

- The whole output (its UTF-8 bytes, up to 64 MB) is copied to
  ``projects/<enc>/<sessionId>/tool-results/<id>.txt``, ``<id>`` being the command's task
  id: ``b`` (a local bash task) and 8 characters drawn from ``0-9a-z`` (``bfsc7oawx``).
  The output is spilled when its size in bytes is over 30,000 (``BASH_MAX_OUTPUT_LENGTH``,
  default 30,000).
- ``toolUseResult.stdout`` keeps the first 30,000 UTF-16 units of the output (never half
  a surrogate pair), with ``persistedOutputPath`` and ``persistedOutputSize`` (bytes).
- The ``tool_result`` content sent to the model is::

      <persisted-output>
      Output too large (179.7KB). Full output saved to: <path>

      Preview (first 2KB):
      <preview>
      ...
      </persisted-output>

  The preview is the start of ``stdout``: up to 2,000 units, cut back to the last newline
  in them when that newline lies past the first 1,000 (the newline itself is left out);
  ``\\n...\\n`` follows when there is more, ``\\n`` when the preview is the whole output.
  Sizes read as the client writes them: ``N bytes`` below 1 KB, else KB / MB / GB over 1024
  with one decimal (rounded half up), a trailing ``.0`` dropped. At 64 MB or more the
  first line is ``Output exceeded the 64MB persist limit; only the first 64MB were saved
  to: <path>``. A ``<persisted-output>`` tag inside the preview is neutralized to
  ``<\\persisted-output`` (ASCII spelling; the client also catches look-alikes).

The client writes the file with mode ``0666 & ~umask``; sessiontree writes 0600.
"""

from __future__ import annotations

import re
import secrets
from collections.abc import Callable
from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal
from pathlib import Path

from sessiontree.errors import Refused
from sessiontree.model.builders.envelope import JsonDict
from sessiontree.storage.atomic import write_atomically
from sessiontree.storage.layout import tool_results_dir

#: Outputs over this many bytes are spilled (the client's default BASH_MAX_OUTPUT_LENGTH).
SPILL_THRESHOLD = 30_000

#: ``toolUseResult.stdout`` keeps this many characters (UTF-16 units) of a spilled output.
STDOUT_CHARS = 30_000

#: The preview in the tool_result: "first 2KB" is 2,000 characters.
PREVIEW_CHARS = 2_000

#: The client stores at most this much of one output.
PERSIST_LIMIT_BYTES = 64 * 1024 * 1024

#: Task id prefixes by task kind (the client's table); a Bash output is ``local_bash``.
TASK_ID_PREFIX = {
    "local_bash": "b",
    "local_agent": "a",
    "remote_agent": "r",
    "in_process_teammate": "t",
    "local_workflow": "w",
    "monitor_mcp": "m",
    "monitor_ws": "s",
    "mcp_task": "k",
    "dream": "d",
    "auto_mode_scan": "e",
    "local_memory_import": "n",
    "post_turn_memory": "p",
}

_BASE36 = "0123456789abcdefghijklmnopqrstuvwxyz"
_SAFE_ID = re.compile(r"^[A-Za-z0-9_-]{1,128}$")
_TAG_OPENER = re.compile(r"<(?!\\)(?=\s*/?\s*persisted-output(?![A-Za-z0-9_-]))", re.IGNORECASE)


# -- JavaScript string measures (UTF-16 code units) --------------------------------------


def js_length(text: str) -> int:
    """``text.length`` in JavaScript: characters outside the BMP count twice."""
    if text.isascii():
        return len(text)
    return len(text) + sum(1 for ch in text if ord(ch) > 0xFFFF)


def js_cut(text: str, units: int) -> str:
    """The first ``units`` UTF-16 units of ``text``, never half a surrogate pair (as the
    client cuts a preview: a pair cut in the middle is dropped whole)."""
    if units <= 0:
        return ""
    if text.isascii():
        return text[:units]
    used = 0
    for index, ch in enumerate(text):
        width = 2 if ord(ch) > 0xFFFF else 1
        if used + width > units:
            return text[:index]
        used += width
    return text


def _js_last_newline_before(text: str, units: int) -> int:
    """``text.slice(0, units).lastIndexOf("\\n")`` in UTF-16 units (-1 if none)."""
    head = js_cut(text, units)
    index = head.rfind("\n")
    return -1 if index < 0 else js_length(head[:index])


# -- pure formatting ---------------------------------------------------------------------


def _fixed1(value: float) -> str:
    """``value.toFixed(1)`` with a trailing ``.0`` dropped (exact value, ties up)."""
    text = str(Decimal(value).quantize(Decimal("0.1"), rounding=ROUND_HALF_UP))
    return text[:-2] if text.endswith(".0") else text


def format_size(size: int) -> str:
    """A byte count as the client shows it: ``900 bytes``, ``179.7KB``, ``64MB``."""
    kb = size / 1024
    if kb < 1:
        return f"{size} bytes"
    if kb < 1024:
        return f"{_fixed1(kb)}KB"
    mb = kb / 1024
    if mb < 1024:
        return f"{_fixed1(mb)}MB"
    return f"{_fixed1(mb / 1024)}GB"


def build_preview(text: str, limit: int = PREVIEW_CHARS) -> tuple[str, bool]:
    """The preview of ``text`` and whether there is more (as the client cuts it)."""
    if js_length(text) <= limit:
        return text, False
    newline = _js_last_newline_before(text, limit)
    cut = newline if newline > limit * 0.5 else limit
    return js_cut(text, cut), True


def neutralize_preview(text: str) -> str:
    """Preview text made unable to close the ``<persisted-output>`` block around it."""
    return _TAG_OPENER.sub("<\\\\", text)


def format_persisted_output(*, path: str, size: int, stdout: str) -> str:
    """The ``tool_result`` content of a spilled output (pure, byte for byte the client's).

    ``path``: the absolute path of the saved file; ``size``: the output's size in bytes;
    ``stdout``: the output as ``toolUseResult.stdout`` keeps it (the preview's source).
    """
    if size >= PERSIST_LIMIT_BYTES:
        limit = format_size(PERSIST_LIMIT_BYTES)
        first = (
            f"Output exceeded the {limit} persist limit; only the first {limit} "
            f"were saved to: {path}\n"
        )
    else:
        first = f"Output too large ({format_size(size)}). Full output saved to: {path}\n"
    preview, more = build_preview(stdout)
    return (
        "<persisted-output>\n"
        f"{first}\n"
        f"Preview (first {format_size(PREVIEW_CHARS)}):\n"
        f"{neutralize_preview(preview)}"
        f"{chr(10) + '...' + chr(10) if more else chr(10)}"
        "</persisted-output>"
    )


def new_output_id(
    kind: str = "local_bash", *, token_bytes: Callable[[int], bytes] | None = None
) -> str:
    """A task id like the client's: a kind letter and 8 of ``0-9a-z`` (byte mod 36)."""
    draw = token_bytes or secrets.token_bytes
    prefix = TASK_ID_PREFIX.get(kind, "x")
    return prefix + "".join(_BASE36[b % 36] for b in draw(8))


def cut_to_bytes(text: str, limit: int) -> bytes:
    """At most ``limit`` UTF-8 bytes of ``text``, never half a character."""
    data = text.encode("utf-8", errors="surrogatepass")
    if len(data) <= limit:
        return data
    return data[:limit].decode("utf-8", errors="ignore").encode("utf-8")


# -- the spill ---------------------------------------------------------------------------


@dataclass(frozen=True)
class SpilledOutput:
    """Where an output went and what the transcript says about it."""

    output_id: str
    path: Path
    size: int
    stdout: str
    content: str

    def tool_use_result_fields(self) -> JsonDict:
        """The ``toolUseResult`` fields of a spilled Bash output."""
        return {
            "stdout": self.stdout,
            "persistedOutputPath": str(self.path),
            "persistedOutputSize": self.size,
        }


def tool_result_path(transcript_path: Path, output_id: str) -> Path:
    """``<project>/<sessionId>/tool-results/<id>.txt`` beside a transcript."""
    if not _SAFE_ID.match(output_id):
        raise Refused(f"not a tool output id: {output_id!r}")
    return tool_results_dir(transcript_path) / f"{output_id}.txt"


def spill_tool_output(
    transcript_path: Path,
    *,
    output: str,
    output_id: str | None = None,
    threshold: int = SPILL_THRESHOLD,
    fsync: bool = True,
) -> SpilledOutput | None:
    """Save ``output`` beside the transcript when it is over ``threshold`` bytes.

    None when it is small enough to stay inline. Otherwise the file is written atomically
    (0600; an existing file of that id is replaced) and the result carries the
    ``tool_result`` text and the ``toolUseResult`` fields. ``output_id``: the task id
    (default: a new ``b…`` id).
    """
    data = output.encode("utf-8", errors="surrogatepass")
    size = len(data)
    if size <= threshold:
        return None
    output_id = output_id or new_output_id()
    target = tool_result_path(transcript_path, output_id)
    stored = data if size < PERSIST_LIMIT_BYTES else cut_to_bytes(output, PERSIST_LIMIT_BYTES)
    write_atomically(target, stored, mode=0o600, fsync=fsync, folder_mode=0o700)
    stdout = js_cut(output, STDOUT_CHARS)
    content = format_persisted_output(path=str(target), size=size, stdout=stdout)
    return SpilledOutput(
        output_id=output_id, path=target, size=size, stdout=stdout, content=content
    )
