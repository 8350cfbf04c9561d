"""What the faces show: the ``--json`` shapes (:mod:`.shapes`), terminal rendering
(:mod:`.terminal`) and exports (:mod:`.export`).

The names of :mod:`.shapes` are still found here (``from sessiontree.views import
show_json`` keeps working), imported on first use (PEP 562): a face that needs only a
small module of this package (``views.sizes``, ``views.text``) does not load the shapes
and the transcript reading under them.
"""

from __future__ import annotations

import importlib
from typing import Any


def __getattr__(name: str) -> Any:
    shapes = importlib.import_module("sessiontree.views.shapes")
    if name.startswith("_") or not hasattr(shapes, name):
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(shapes, name)
