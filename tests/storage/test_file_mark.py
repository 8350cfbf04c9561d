"""FileMark (storage/skeleton_cache.py): the only-grew rule a reader of an append-only
file keeps, shared by the skeleton cache and the search index."""

from __future__ import annotations

import os
from pathlib import Path

from sessiontree.storage.skeleton_cache import CHECK_BYTES, FileMark


def _mark(path: Path, end: int) -> FileMark:
    with path.open("rb") as handle:
        return FileMark.of(handle.fileno(), os.fstat(handle.fileno()), end)


def _grew(mark: FileMark, path: Path) -> bool:
    with path.open("rb") as handle:
        return mark.only_grew(os.fstat(handle.fileno()), handle.fileno())


def test_an_append_only_grows_a_rewrite_does_not(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_bytes(b"a" * 1000 + b"\n")
    mark = _mark(path, 1001)
    assert mark.unchanged(path.stat())
    with path.open("ab") as handle:
        handle.write(b"more\n")
    assert not mark.unchanged(path.stat()) and _grew(mark, path)
    path.write_bytes(b"b" * 1000 + b"\nmore\n")  # truncated and written again, longer
    assert not _grew(mark, path)
    path.write_bytes(b"a" * 500)  # shorter
    assert not _grew(mark, path)


def test_grown_to_is_the_mark_of_the_grown_file(tmp_path: Path) -> None:
    for first in (100, 3 * CHECK_BYTES):  # a head shorter than the check, and longer
        path = tmp_path / f"t{first}.jsonl"
        path.write_bytes(b"x" * (first - 1) + b"\n")
        mark = _mark(path, first)
        with path.open("ab") as handle:
            handle.write(b"y" * 99 + b"\n")
        with path.open("rb") as handle:
            st = os.fstat(handle.fileno())
            grown = mark.grown_to(handle.fileno(), st, first + 100)
        assert grown == _mark(path, first + 100)
