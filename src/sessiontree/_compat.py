"""Import paths from before the package layout, kept working.

Each old module name is an alias of the module that now holds its code (the same module
object, so ``monkeypatch`` through either name patches both). The old names are not
advertised; ``docs/ARCHITECTURE.md`` maps old to new.
"""

from __future__ import annotations

import importlib
import importlib.machinery
import sys

TYPE_CHECKING = False  # (``typing``'s import is not paid at start-up: see the package)
if TYPE_CHECKING:  # the class for the type checker; at run time its import is not paid
    from collections.abc import Sequence
    from importlib.abc import Loader
    from types import ModuleType
else:
    Loader = object

#: Old module -> the module that holds its code now. (``sessiontree.checkpoints``,
#: ``.history``, ``.session`` and ``.views`` became packages that re-export the old names.)
MOVED = {
    "sessiontree.backup_retention": "sessiontree.checkpoints.retention",
    "sessiontree.capture": "sessiontree.checkpoints.capture",
    "sessiontree.drift": "sessiontree.checkpoints.drift",
    "sessiontree.export": "sessiontree.views.export",
    "sessiontree.fork": "sessiontree.conversation.fork",
    "sessiontree.index": "sessiontree.catalog.index",
    "sessiontree.lifecycle.host": "sessiontree.session.host",
    "sessiontree.pastes": "sessiontree.history.pastes",
    "sessiontree.render": "sessiontree.views.terminal",
    "sessiontree.restore": "sessiontree.checkpoints.restore",
    "sessiontree.rewind": "sessiontree.conversation.rewind",
    "sessiontree.search": "sessiontree.catalog.search",
    "sessiontree.spill": "sessiontree.conversation.spill",
    "sessiontree.store": "sessiontree.catalog.resolve",
    "sessiontree.summarize": "sessiontree.conversation.summarize",
    "sessiontree.transcript": "sessiontree.conversation.transcript",
}


class _OldPaths(Loader):
    """Finds an old module name and loads it as the module that replaced it: a meta path
    finder and its loader (the protocols, not the ``importlib.abc`` classes, whose
    import costs more than everything else here)."""

    def find_spec(
        self,
        fullname: str,
        path: Sequence[str] | None,
        target: ModuleType | None = None,
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname not in MOVED:
            return None
        return importlib.machinery.ModuleSpec(fullname, self)

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        return importlib.import_module(MOVED[spec.name])

    def exec_module(self, module: ModuleType) -> None:
        """Nothing to run: the module was imported under its own name."""


def install() -> None:
    """Make the old import paths work (once per interpreter)."""
    if not any(isinstance(finder, _OldPaths) for finder in sys.meta_path):
        sys.meta_path.append(_OldPaths())
