"""What the user typed: ``history.jsonl`` (:mod:`.log`) and the pasted text it points at
(:mod:`.pastes`, ``paste-cache/``).

The names of :mod:`.log` are re-exported here: ``from sessiontree.history import
iter_history`` keeps working.
"""

from sessiontree.history.log import *  # noqa: F403
