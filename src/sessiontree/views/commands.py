"""A slash command's records read as the client shows them, not as the tags it stores.

The client records ``/compact`` as a user record holding
``<command-name>/compact</command-name> <command-message>compact</command-message>
<command-args></command-args>`` and its output as ``<local-command-stdout>…
</local-command-stdout>`` (a user record from older clients, a ``system/local_command``
record from newer ones); a caveat before them as ``<local-command-caveat>…``. On screen
it shows the command line typed (``/compact``, with its arguments) and the output's
text. :func:`command_text` makes the same lines from the stored text; pure.
"""

from __future__ import annotations

import re

from sessiontree.model.records import COMMAND_RECORD_PREFIXES

_TAG = re.compile(
    r"<(command-name|command-message|command-args|local-command-stdout"
    r"|local-command-stderr|local-command-caveat)>(.*?)</\1>",
    re.S,
)

#: What an output record that printed nothing reads as.
NO_OUTPUT = "(no output)"


def command_text(text: str) -> str | None:
    """What the client shows for a slash command's record of stored ``text``: the command
    line (``/compact some args``), its output (:data:`NO_OUTPUT` when empty) or a caveat's
    text; None when ``text`` is not such a record (or its tags do not read)."""
    if not text.lstrip().startswith(COMMAND_RECORD_PREFIXES):
        return None
    tags: dict[str, str] = {}
    for name, value in _TAG.findall(text):
        tags.setdefault(name, value)
    name = (tags.get("command-name") or tags.get("command-message") or "").strip()
    if name:
        args = " ".join(tags.get("command-args", "").split())
        return f"{name if name.startswith('/') else '/' + name} {args}".rstrip()
    for kind in ("local-command-stdout", "local-command-stderr", "local-command-caveat"):
        if kind in tags:
            return tags[kind].strip("\n") or NO_OUTPUT
    return None
