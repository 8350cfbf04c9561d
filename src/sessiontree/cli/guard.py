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


def refuse_if_live(layout: Layout, session_id: str, *, force: bool, dry_run: bool = False) -> None:
    """Refuse, with the holding pids, when a running process holds ``session_id``.

    A dry run writes nothing, so it is never refused: when the session is held it says
    so in one line on stderr (``--json`` stays exact on stdout), with what the real run
    would need, and goes on to show its plan."""
    holders = session_holders(layout, session_id)
    if not holders:
        return
    pids = ", ".join(str(h.pid) for h in holders)
    held = f"session {session_id} is open in a running process (pid {pids})"
    if dry_run:
        real = (
            "a real run with --force writes while it runs"
            if force
            else "a real run is refused unless --force (or close it first)"
        )
        click.echo(f"sessiontree: note: {held}: {real}", err=True)
        return
    if not force:
        raise Refused(
            f"{held}; its next turn would not see this change. Close it first, or pass --force"
        )
