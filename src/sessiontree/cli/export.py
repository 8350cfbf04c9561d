"""``sessiontree export SESSION --format md|html|json [-o FILE]``."""

from __future__ import annotations

import os
import re
import stat
import sys
from collections.abc import Iterable, Iterator
from pathlib import Path

import click

from sessiontree.cli.output import get_env, open_to_resume, open_transcript, resolve
from sessiontree.errors import Refused
from sessiontree.storage.atomic import write_atomically, write_in_place
from sessiontree.storage.layout import utf8_name
from sessiontree.views.export import iter_html, iter_json, iter_markdown


@click.command()
@click.argument("session", metavar="SESSION")
@click.option(
    "--format", "fmt", type=click.Choice(["md", "html", "json"]), default="md", show_default=True
)
@click.option(
    "-o",
    "--output",
    help="File to write, a device or FIFO to write to, or - (or /dev/stdout) for stdout"
    " (default: <id>.<format>).",
)
@click.option("--force", is_flag=True, help="Overwrite an existing output file.")
@click.option(
    "--all-branches",
    is_flag=True,
    help="md/html: every branch, each record once, the active path first (json: always).",
)
def export(session: str, fmt: str, output: str | None, force: bool, all_branches: bool) -> None:
    """Export a session: md/html of the active path (or every branch), json of every
    record as stored."""
    env = get_env(reads_store=True)
    if env.store is not None:
        from sessiontree.cli.stored import open_stored_session

        transcript = open_stored_session(env, session)
    else:
        # md is of the active path alone: read as a resume reads it (its tail, when that
        # answers alone); html draws every branch, json holds every record (and both md
        # and html show every branch with --all-branches).
        opened = open_to_resume if fmt == "md" and not all_branches else open_transcript
        transcript = opened(env, resolve(env, session))
    text = (
        iter_markdown(transcript, all_branches=all_branches)
        if fmt == "md"
        else iter_html(transcript, all_branches=all_branches)
    )
    chunks = iter_json(transcript) if fmt == "json" else (_utf8(s) for s in text)
    if output == "-":
        for chunk in chunks:
            sys.stdout.buffer.write(chunk)
        sys.stdout.flush()
        return
    target = Path(output) if output else Path(f"{transcript.session_id}.{fmt}")
    source = _Source(chunks)
    fd = stream_fd(output) if output else None
    try:
        if fd is not None:
            _write_stream(fd, source)
            return  # nothing was made that a "wrote" line would point to
        _write_output(target, source, force=force)
    except OSError as exc:
        if exc is source.error:
            raise
        # A failure of writing is told under the name the user gave: not the temp file
        # beside it (mkstemp, rename), nor no name at all (a write).
        raise OSError(exc.errno, exc.strerror, str(target)) from exc
    click.echo(f"wrote {target}", err=True)


#: This process's own open streams, named as a shell's redirections name them.
_STREAM = re.compile(r"/dev/fd/(\d+)|/proc/self/fd/(\d+)")
_STREAMS = {"/dev/stdout": 1, "/dev/stderr": 2}


def stream_fd(output: str) -> int | None:
    """The descriptor ``output`` names (``/dev/stdout`` 1, ``/dev/stderr`` 2,
    ``/dev/fd/N`` and ``/proc/self/fd/N`` N), or None for any other path. Such a path is
    a link to whatever the stream is (a pipe, a terminal, a file a shell opened, a
    socket): it is written through the descriptor already open, as a shell does, never
    opened again nor replaced."""
    if output in _STREAMS:
        return _STREAMS[output]
    match = _STREAM.fullmatch(output)
    return int(match.group(1) or match.group(2)) if match else None


def _write_stream(fd: int, chunks: Iterable[bytes]) -> None:
    """Write ``chunks`` to the open descriptor ``fd`` (stdout and stderr through
    Python's streams, so what was printed before stays in order)."""
    stream = {1: sys.stdout, 2: sys.stderr}.get(fd)
    if stream is not None:
        stream.flush()
        for chunk in chunks:
            stream.buffer.write(chunk)
        stream.flush()
        return
    for chunk in chunks:
        view = memoryview(chunk)
        while view:
            view = view[os.write(fd, view) :]


def _write_output(target: Path, chunks: Iterable[bytes], *, force: bool) -> None:
    """A regular file (or a new one) is replaced whole, atomically; a character device or
    a FIFO is written in place, as a shell's ``>`` does, and needs no ``--force`` (as
    with bash's ``noclobber``: nothing stored is overwritten); anything else is refused."""
    try:
        mode: int | None = target.lstat().st_mode
    except FileNotFoundError:
        mode = None
    if mode is not None and (stat.S_ISCHR(mode) or stat.S_ISFIFO(mode)):
        write_in_place(target, chunks)
        return
    if mode is not None and not stat.S_ISREG(mode):
        raise Refused(
            f"{target} is {_kind(mode)}: export writes a file, a character device or a FIFO"
        )
    if mode is not None and not force:
        raise Refused(f"{target} exists; pass --force to overwrite it")
    write_atomically(target, chunks)


def _kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a folder"
    if stat.S_ISLNK(mode):
        return "a symlink"
    if stat.S_ISBLK(mode):
        return "a block device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


class _Source:
    """The document's chunks, remembering an ``OSError`` of reading the transcript, so
    that only a failure of writing is reported under the output's name."""

    def __init__(self, chunks: Iterable[bytes]) -> None:
        self._chunks = chunks
        self.error: OSError | None = None

    def __iter__(self) -> Iterator[bytes]:
        try:
            yield from self._chunks
        except OSError as exc:
            self.error = exc
            raise


def _utf8(text: str) -> bytes:
    """``text`` as UTF-8; a file name in it that is not UTF-8 shows its stray bytes as
    U+FFFD (:func:`~sessiontree.storage.layout.utf8_name`)."""
    try:
        return text.encode()
    except UnicodeEncodeError:
        return utf8_name(text).encode()
