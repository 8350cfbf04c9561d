"""File checkpoints, "Restore code" and everything around them.

:mod:`.read` (what a transcript's snapshots say), :mod:`.capture` (taking them, as the
client does), :mod:`.restore` (planning and applying a restore), :mod:`.drift` (edits the
client's checkpoints miss), :mod:`.retention` (pruning backups no checkpoint needs).

The names of :mod:`.read` are re-exported here: ``from sessiontree.checkpoints import
read_checkpoints`` keeps working.
"""

from sessiontree.checkpoints.read import *  # noqa: F403
