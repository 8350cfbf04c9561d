"""Where sessiontree keeps what is not a cache, from the environment alone: plain ``os``
(no ``pathlib``), because the daemon's client finds its socket here before anything
else is imported (:mod:`sessiontree.cli.daemon.client`)."""

from __future__ import annotations

import os

TYPE_CHECKING = False  # (``typing``'s import is not paid here: see :mod:`sessiontree`)
if TYPE_CHECKING:
    from collections.abc import Mapping


def state_folder_name(environ: Mapping[str, str]) -> str:
    """sessiontree's state folder (what it keeps that is not a cache: this machine's id,
    what a sync pushed, a local store, the daemon's socket): ``$SESSIONTREE_STATE_DIR``,
    else ``$XDG_STATE_HOME/sessiontree``, else ``~/.local/state/sessiontree``."""
    if environ.get("SESSIONTREE_STATE_DIR"):
        return environ["SESSIONTREE_STATE_DIR"]
    base = environ.get("XDG_STATE_HOME")
    if not base:
        home = environ["HOME"] if "HOME" in environ else os.path.expanduser("~")
        base = os.path.join(home, ".local/state")
    return os.path.join(base, "sessiontree")
