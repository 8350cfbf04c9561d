"""``python -m sessiontree``: the ``sessiontree`` command."""

from sessiontree.cli.entry import main

main()
