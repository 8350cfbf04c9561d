"""Errors raised by sessiontree.

The tree, drawn once here so every face maps it the same way::

    SessionTreeError                 root: anything sessiontree refuses or cannot do
    ├── NotFound                     a session, prompt or record that does not exist   (exit 1)
    ├── Ambiguous                    a reference that matches more than one thing      (exit 2)
    ├── Refused                      an operation that would be unsafe or makes no sense (exit 1)
    ├── NotAConfigRoot               a config root that is missing, a file, or not one  (exit 1)
    ├── StoreError                   the store cannot be reached or used               (exit 1)
    └── DataError                    stored data that cannot be used as it is          (exit 1)
        └── NotASession              a transcript with no conversation to resume        (exit 1)

Each class has a ``code``: the stable kind of error a face reports beside its message
(``sessiontree CMD --json`` prints ``{"error": message, "code": code}``).

Readers never raise for a bad line: they record a :class:`~sessiontree.model.records.Problem`
and go on. ``DataError`` is for what a command cannot work around (an unreadable file).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal


class SessionTreeError(Exception):
    """Root of every error sessiontree raises on purpose."""

    exit_code = 1
    #: The kind of error, stable for scripts (``--json`` errors name it).
    code = "error"


class NotFound(SessionTreeError):
    """A session, prompt or record that the caller named does not exist."""

    code = "not-found"

    def __init__(self, what: str, ref: str) -> None:
        super().__init__(f"no {what} matches {ref!r}")
        self.what = what
        self.ref = ref


class Ambiguous(SessionTreeError):
    """A reference (prefix, title) that matches more than one candidate."""

    exit_code = 2
    code = "ambiguous"

    def __init__(self, what: str, ref: str, candidates: Sequence[str]) -> None:
        shown = ", ".join(candidates[:10]) + (" …" if len(candidates) > 10 else "")
        super().__init__(f"{ref!r} matches {len(candidates)} {what}s: {shown}")
        self.what = what
        self.ref = ref
        self.candidates = list(candidates)


class Refused(SessionTreeError):
    """An operation sessiontree will not do (unsafe, or meaningless here)."""

    code = "refused"


#: What is wrong with a config root: it does not exist, it is a file (or another thing
#: that is not a folder), or it holds no ``projects/`` folder.
RootProblem = Literal["missing", "file", "not-a-folder", "no-projects"]


class NotAConfigRoot(SessionTreeError):
    """The config root a command would read is missing, is not a folder, or holds no
    ``projects/`` folder. ``source`` says where it was named: ``--root``,
    ``$CLAUDE_CONFIG_DIR`` or ``default`` (``~/.claude``)."""

    code = "not-a-root"

    def __init__(self, root: str, source: str, problem: RootProblem) -> None:
        named = "the default root" if source == "default" else source
        said = {
            "missing": "does not exist",
            "file": "is a file, not a folder",
            "not-a-folder": "is not a folder",
            "no-projects": "holds no projects/ folder: is it a Claude Code config root?",
        }[problem]
        hint = (
            " (pass --root DIR or set $CLAUDE_CONFIG_DIR)"
            if source == "default" and problem == "missing"
            else ""
        )
        super().__init__(f"{named} {root} {said}{hint}")
        self.root = root
        self.source = source
        self.problem = problem


class DataError(SessionTreeError):
    """Stored data that a command cannot use: an unreadable or foreign file."""

    code = "data-error"

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(f"{path}: {reason}")
        self.path = path
        self.reason = reason


class NotASession(DataError):
    """A transcript that holds no conversation: the client answers "No conversation found"
    to resuming it (see :mod:`sessiontree.model.conversation`)."""

    code = "not-a-session"

    def __init__(self, path: str, reason: str, description: str) -> None:
        SessionTreeError.__init__(
            self,
            f"{path} holds no conversation: {description} "
            "(the client answers 'No conversation found')",
        )
        self.path = path
        self.reason = reason  # a NoConversation value: "empty", "only-summaries", ...
        self.description = description


#: What went wrong with the store, stable for scripts (``--json`` errors name it).
StoreProblem = Literal[
    "store-unreachable",  # no server answers at the DSN's address
    "store-auth",  # the server refused the role or password
    "store-no-database",  # the server has no such database
    "store-schema",  # the store's schema is newer than this program, or was changed
    "store-lost",  # the server went away in the middle of the work
    "store-full",  # the server's disk is full
    "store-error",  # anything else the server refused
]


class StoreError(SessionTreeError):
    """The store (``--store``, ``$SESSIONTREE_STORE``) cannot be reached or used. The
    message never holds the DSN's password: it names the store by its host, port,
    database and role only."""

    def __init__(self, message: str, *, code: StoreProblem = "store-error") -> None:
        super().__init__(message)
        self.code = code
