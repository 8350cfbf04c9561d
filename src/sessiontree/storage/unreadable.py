"""What a reader of many transcripts says of one it cannot read: a folder or a link
named as a transcript, a file gone since it was listed, one it may not open. Readers
skip it and go on; each is an ``unreadable`` :class:`~sessiontree.model.records.Problem`
for the caller to report (the CLI: one line on stderr; ``doctor``: among its problems)."""

from __future__ import annotations

import os

from sessiontree.errors import DataError
from sessiontree.model.records import Problem


def not_a_file(entry: os.DirEntry[str]) -> Problem:
    """``entry`` (named as a transcript) is no regular file: a folder, a link (never
    followed: a link could name any file), a FIFO or another node."""
    if entry.is_symlink():
        why = "a symbolic link (not followed)"
    elif entry.is_dir(follow_symlinks=False):
        why = "a folder, not a file"
    else:
        why = "not a regular file"
    return Problem("unreadable", entry.path, None, why)


def read_failed(path: str | os.PathLike[str], exc: OSError | DataError) -> Problem:
    """``path`` could not be listed, opened or read: ``exc`` says why (a
    :class:`~sessiontree.errors.DataError` the scan raised for it, the ``OSError`` its
    cause)."""
    cause = exc.__cause__ if isinstance(exc, DataError) else exc
    if isinstance(cause, FileNotFoundError):
        why = "gone since it was listed"
    elif isinstance(cause, OSError):
        why = cause.strerror or str(cause)
    else:
        why = exc.reason if isinstance(exc, DataError) else str(exc)
    return Problem("unreadable", os.fspath(path), None, why)
