"""The one safe delete: regular files and laid-out folders only, links never followed."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from sessiontree.errors import Refused
from sessiontree.storage.remove import (
    open_folder,
    remove_empty_folder,
    remove_file,
    remove_file_at,
    remove_link,
    remove_tree,
)


def test_a_file_is_removed_and_its_bytes_counted(tmp_path: Path) -> None:
    target = tmp_path / "a.txt"
    target.write_bytes(b"12345")
    assert remove_file(target) == 5
    assert not target.exists()
    assert remove_file(target) == 0  # already gone
    with pytest.raises(FileNotFoundError):
        remove_file(target, missing_ok=False)


def test_a_hard_linked_file_frees_nothing(tmp_path: Path) -> None:
    target = tmp_path / "a.txt"
    target.write_bytes(b"12345")
    os.link(target, tmp_path / "b.txt")
    assert remove_file(target) == 0
    assert (tmp_path / "b.txt").read_bytes() == b"12345"


@pytest.mark.parametrize("kind", ["symlink", "fifo", "folder"])
def test_anything_but_a_regular_file_is_refused(tmp_path: Path, kind: str) -> None:
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me")
    target = tmp_path / "target"
    if kind == "symlink":
        target.symlink_to(victim)
    elif kind == "fifo":
        os.mkfifo(target)
    else:
        target.mkdir()
    with pytest.raises(Refused):
        remove_file(target)
    assert os.path.lexists(target)
    assert victim.read_text() == "keep me"


def test_a_replaced_file_is_not_removed(tmp_path: Path) -> None:
    target = tmp_path / "a.txt"
    target.write_text("planned")
    seen = target.stat()
    (tmp_path / "b.txt").write_text("new")
    (tmp_path / "b.txt").replace(target)
    fd = open_folder(tmp_path)
    try:
        with pytest.raises(Refused, match="replaced"):
            remove_file_at(fd, "a.txt", expect=seen)
    finally:
        os.close(fd)
    assert target.read_text() == "new"


def test_a_tree_goes_without_following_links(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "precious.txt").write_text("x" * 10)
    tree = tmp_path / "tree"
    (tree / "sub").mkdir(parents=True)
    (tree / "sub" / "f.txt").write_text("abc")
    (tree / "link-to-folder").symlink_to(outside, target_is_directory=True)
    (tree / "link-to-file").symlink_to(outside / "precious.txt")
    freed, failed = remove_tree(tree)
    assert (freed, failed) == (3, [])
    assert not tree.exists()
    assert (outside / "precious.txt").read_text() == "x" * 10


def test_a_linked_tree_is_refused(tmp_path: Path) -> None:
    real = tmp_path / "real"
    real.mkdir()
    (real / "f").write_text("keep")
    (tmp_path / "link").symlink_to(real, target_is_directory=True)
    with pytest.raises(Refused):
        remove_tree(tmp_path / "link")
    assert (real / "f").read_text() == "keep"
    assert remove_tree(tmp_path / "gone") == (0, [])


def test_open_folder_follows_no_link_below_its_base(tmp_path: Path) -> None:
    (tmp_path / "real").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "real", target_is_directory=True)
    with pytest.raises(OSError):
        os.close(open_folder(tmp_path, ["link"]))
    os.close(open_folder(tmp_path / "link"))  # the base itself may be a link


def test_only_an_empty_folder_is_removed(tmp_path: Path) -> None:
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "f").write_text("x")
    (tmp_path / "empty").mkdir()
    assert remove_empty_folder(tmp_path / "full") is False
    assert remove_empty_folder(tmp_path / "empty") is True
    assert (tmp_path / "full" / "f").exists()


def test_a_link_is_removed_and_its_target_kept(tmp_path: Path) -> None:
    target = tmp_path / "target"
    target.mkdir()
    (target / "keep.txt").write_text("keep")
    link = tmp_path / "link"
    link.symlink_to(target)
    assert remove_link(link) is True
    assert not os.path.lexists(link) and (target / "keep.txt").read_text() == "keep"
    assert remove_link(link) is False
    with pytest.raises(Refused):
        remove_link(target)
    assert target.is_dir()
