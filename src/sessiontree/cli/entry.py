"""The ``sessiontree`` command: ``sessiontree --version`` is answered before click and
the commands are imported (a third of the start-up's cost); a read-only command is
handed to the daemon when one runs (:mod:`sessiontree.cli.daemon.client`); anything
else is run by :func:`sessiontree.cli.main.main`. It prints what click's ``--version``
prints."""

from __future__ import annotations

import sys


def main() -> None:
    if sys.argv[1:] == ["--version"]:
        from sessiontree._version import __version__

        try:
            sys.stdout.write(f"sessiontree, version {__version__}\n")
            sys.stdout.flush()
        except BrokenPipeError:
            pass  # (as click's own --version does: nothing to say to a closed pipe)
        return
    from sessiontree.cli.daemon.client import end_as, hand_over

    code = hand_over(sys.argv[1:])
    if code is not None:
        end_as(code)  # (the daemon's worker ran it)
    from sessiontree.cli.main import main as run

    run()
