"""File checkpoints, "Restore code" and everything around them.

:mod:`.read` (what a transcript's snapshots say), :mod:`.capture` (taking them, as the
client does), :mod:`.code` (the whole "Restore code": plan, preview, apply, undo),
:mod:`.restore` (its file-by-file plan and the undoable apply), :mod:`.drift` (edits the
client's checkpoints miss), :mod:`.writes` (what an agent's Write/Edit recorded),
:mod:`.retention` (pruning backups no checkpoint needs; capture runs it, as the client).

The names of :mod:`.read` are re-exported here: ``from sessiontree.checkpoints import
read_checkpoints`` keeps working.
"""

from sessiontree.checkpoints.read import *  # noqa: F403
