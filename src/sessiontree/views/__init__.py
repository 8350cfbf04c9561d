"""What the faces show: the ``--json`` shapes (:mod:`.shapes`), terminal rendering
(:mod:`.terminal`) and exports (:mod:`.export`).

The names of :mod:`.shapes` are re-exported here: ``from sessiontree.views import
show_json`` keeps working.
"""

from sessiontree.views.shapes import *  # noqa: F403
