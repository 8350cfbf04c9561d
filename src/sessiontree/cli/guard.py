"""Writing to a session that a running client holds open: refused unless ``--force``.

A running client keeps the conversation in memory and appends its next turn to its own
leaf: a rewind, compaction or summary appended behind its back would be overtaken by
that turn, and a restore would change files under an agent that is editing them.
"""

from __future__ import annotations

import click

from sessiontree.errors import Refused
from sessiontree.lifecycle.live import session_holders
from sessiontree.storage.layout import Layout

force_option = click.option(
    "--force",
    is_flag=True,
    help="Write even while a running process (sessions/<pid>.json) holds the session.",
)


def refuse_if_live(layout: Layout, session_id: str, *, force: bool) -> None:
    """Refuse, with the holding pids, when a running process holds ``session_id``."""
    holders = session_holders(layout, session_id)
    if holders and not force:
        pids = ", ".join(str(h.pid) for h in holders)
        raise Refused(
            f"session {session_id} is open in a running process (pid {pids}); its next turn "
            "would not see this change. Close it first, or pass --force"
        )
