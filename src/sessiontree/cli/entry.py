"""The ``sessiontree`` command: ``sessiontree --version`` is answered before click and
the commands are imported (a third of the start-up's cost), anything else by
:func:`sessiontree.cli.main.main`. It prints what click's ``--version`` prints."""

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
    from sessiontree.cli.main import main as run

    run()
