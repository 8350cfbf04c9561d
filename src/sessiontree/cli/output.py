"""Printing for the CLI: one JSON document on stdout, or rich output for people."""

from __future__ import annotations

import contextlib
import functools
import gc
import os
import sys
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO

import click
import msgspec

from sessiontree.catalog.resolve import resolve_session
from sessiontree.cli.main import (
    JSON_FLAG,
    Env,
    check_root,
    leave_without_stdout,
    stdout_reader_gone,
)
from sessiontree.model.records import Problem
from sessiontree.storage.forked import ForkedOutput
from sessiontree.storage.layout import resolve_root
from sessiontree.views.sizes import format_size as format_size  # (the one rule for sizes)
from sessiontree.views.text import printable, utf8_safe

if TYPE_CHECKING:  # (imported where used: a listing or a search needs neither)
    from rich.console import Console

    from sessiontree.conversation.transcript import Transcript
    from sessiontree.storage.skeleton_cache import SkeletonCache


def emit_json(value: Any) -> None:
    """Exactly one JSON document on stdout (UTF-8, newline-terminated); a string that is
    not UTF-8 (a file name) shows its stray bytes as U+FFFD (:func:`utf8_safe`)."""
    out = sys.stdout.buffer
    try:
        encoded = msgspec.json.encode(value)
    except UnicodeEncodeError:
        encoded = msgspec.json.encode(utf8_safe(msgspec.to_builtins(value)))
    out.write(msgspec.json.format(encoded, indent=2))
    out.write(b"\n")  # not ``+ b"\n"``: a copy of a document that may be 100 MB
    sys.stdout.flush()


@contextlib.contextmanager
def no_cycle_collection() -> Iterator[None]:
    """Run a command's reading without the cyclic garbage collector (and the children it
    forks meanwhile too): decoded records and built messages hold no reference cycles,
    reference counting frees them, and on a long path the collector's passes over tens of
    thousands of live records are a few percent of a resume's time (2.7% of the samples of
    ``context`` of a 200 MB chain, perf). Collection is back as it was afterwards."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


@contextlib.contextmanager
def paged(out: Console, *, enabled: bool = True) -> Iterator[None]:
    """Page what ``out`` prints in the block through ``$PAGER`` (else ``less -R``, colour
    kept) when stdout is a terminal; else print it as it comes."""
    if not enabled or not sys.stdout.isatty() or not out.is_terminal:
        yield
        return
    os.environ.setdefault("LESS", "-R")  # (the pager: a child of this process)
    with out.pager(styles=out.color_system is not None):
        yield


def console(env: Env) -> Console:
    return _stdout_console()(no_color=not env.color, highlight=False, soft_wrap=True)


@functools.cache
def _stdout_console() -> type[Console]:
    """rich's Console, but that a reader of stdout gone ends the run as every other
    output does (:func:`~sessiontree.cli.main.leave_without_stdout`), not with rich's 1."""
    from rich.console import Console  # rich only for output to people: --json runs without

    class StdoutConsole(Console):
        def on_broken_pipe(self) -> None:
            self.quiet = True
            if not stdout_reader_gone():
                super().on_broken_pipe()
            leave_without_stdout()

    return StdoutConsole


def current_env() -> Env:
    """What the command runs on, as the ``sessiontree`` group gathered it (no root
    checked: for commands that read none, ``store`` and ``daemon``)."""
    env = click.get_current_context().find_object(Env)
    assert env is not None, "the sessiontree group sets ctx.obj"
    return env


def get_env(*, new_root: bool = False, reads_store: bool = False) -> Env:
    """What the command runs on, its config root checked (:func:`check_root`): it must be
    a folder holding ``projects/``, unless the command's ``SESSION`` names a transcript
    by its path (that needs no root), it makes the root (``new_root``: ``demo``), or it
    reads the store and the run names one (``reads_store``: no local root needed)."""
    ctx = click.get_current_context()
    env = current_env()
    if reads_store and env.store is not None:
        return env
    session = ctx.params.get("session")
    if new_root or not (isinstance(session, str) and transcript_file(session)):
        check_root(env, may_be_new=new_root)
    return env


def transcript_file(ref: str) -> str | None:
    """The file a ``SESSION`` argument names by its path (a ``.jsonl`` that is a file, a
    ``~`` in it expanded: a quoted one reaches us unexpanded), else None."""
    expanded = os.path.expanduser(ref)
    return expanded if ref.endswith(".jsonl") and os.path.isfile(expanded) else None


def resolve(env: Env, ref: str) -> Path:
    """The transcript a ``SESSION`` argument names (:func:`resolve_session`), the listing
    cache used (a path needs none)."""
    path = transcript_file(ref)
    if path is not None:
        return Path(path)
    return resolve_session(env.layout, ref, cache_file=env.cache_file)


def skipped_files() -> list[Problem]:
    """A list for the readers of many files to add what they skip, unreadable, to
    (their ``problems``): each is said in one line on stderr when the command ends
    (``sessiontree: skipped PATH: WHY``), after its output. The command goes on with the
    rest, its output (``--json`` too) as it is without that file, and exits 0."""
    skipped: list[Problem] = []

    def report() -> None:
        for problem in skipped:
            shown = f"{printable(problem.path)}: {printable(problem.detail)}"
            click.echo(f"sessiontree: skipped {shown}", err=True)

    click.get_current_context().call_on_close(report)
    return skipped


def exclusive(flags: Mapping[str, object]) -> None:
    """Refuse options that do not go together, all the same way: a usage error (exit 2)
    naming those given. ``flags`` maps each option to its value; it is given unless the
    value is None or False (an empty ``--summary ""`` is given)."""
    given = [name for name, value in flags.items() if value is not None and value is not False]
    if len(given) > 1:
        names = ", ".join(given[:-1]) + f" and {given[-1]}"
        raise click.UsageError(f"{names} do not go together")


#: The size of the writes :func:`emit_pieces` makes.
WRITE_SIZE = 1024 * 1024


def command_hint(env: Env, *args: str) -> str:
    """A ``sessiontree`` command line to print as a hint, runnable as printed: with the
    ``--root`` of this run unless it is the one a bare run would use."""
    default = resolve_root(None, os.environ)
    root = [] if env.layout.root == default else ["--root", str(env.layout.root)]
    import shlex  # (here: only a suggestion needs it)

    return shlex.join(["sessiontree", *root, *args])


def resume_hint(env: Env, session_id: str, cwd: str | None) -> str:
    """How to go on with a session in the client, runnable as printed: ``cd <cwd> &&
    claude -r <id>``, with ``CLAUDE_CONFIG_DIR`` when the root is not the one the client
    would use."""
    import shlex

    command = shlex.join(["claude", "-r", session_id])
    if env.layout.root != resolve_root(None, os.environ):
        command = f"CLAUDE_CONFIG_DIR={shlex.quote(str(env.layout.root))} {command}"
    return f"cd {shlex.quote(cwd)} && {command}" if cwd else command


def emit_pieces(pieces: Iterable[bytes | memoryview | ForkedOutput]) -> None:
    """Write a document given in pieces to stdout, in writes of about
    :data:`WRITE_SIZE`: through a pipe, a write of the default 8 KB wakes the reader
    each time (a quarter of a second on an 80 MB document). A forked child's output
    (made whole: :meth:`~sessiontree.storage.forked.ForkedOutput.wait`) is sent by the
    system where stdout is a file descriptor it can send to, else read and written."""
    out = sys.stdout.buffer
    batch = bytearray()
    for piece in pieces:
        if isinstance(piece, ForkedOutput):
            out.write(batch)
            batch.clear()
            out.flush()
            if not _sent(piece, out):
                for part in piece.pieces():
                    out.write(part)
            continue
        if not batch and len(piece) >= WRITE_SIZE:
            out.write(piece)  # big enough alone: not copied into the batch
            continue
        batch += piece
        if len(batch) >= WRITE_SIZE:
            out.write(batch)
            batch.clear()
    out.write(batch)
    out.flush()


def _sent(output: ForkedOutput, out: BinaryIO) -> bool:
    """Whether ``output`` went to ``out`` by the system's copy (not when ``out`` has no
    file descriptor: a test's capture, say)."""
    try:
        fd = out.fileno()
    except (OSError, ValueError):  # (io.UnsupportedOperation is both)
        return False
    return output.send(fd)


def open_transcript(env: Env, path: Path) -> Transcript:
    """:meth:`Transcript.open` with the skeleton cache of ``env``: a transcript read
    before is read only from where it ended then."""
    from sessiontree.conversation.transcript import Transcript

    return Transcript.open(path, skeleton_cache=skeleton_cache(env))


def open_to_resume(env: Env, path: Path) -> Transcript:
    """:meth:`Transcript.open_to_resume` with the skeleton cache of ``env`` (without
    one, :meth:`Transcript.open`): only what resuming reads."""
    from sessiontree.conversation.transcript import Transcript

    cache = skeleton_cache(env)
    if cache is None:
        return Transcript.open(path)
    return Transcript.open_to_resume(path, cache)


def skeleton_cache(env: Env) -> SkeletonCache | None:
    """The skeleton cache of ``env`` (None without a cache folder); a big scan may use
    every core (the CLI runs one thread: see :func:`~sessiontree.storage.scan.scan_handle`),
    and with two, cache files are written by a forked child while the command goes on
    (waited for when the command ends)."""
    if env.cache_dir is None:
        return None
    from sessiontree.storage.skeleton_cache import SkeletonCache

    cores = usable_cores()
    context = click.get_current_context(silent=True)
    background = cores > 1 and context is not None
    cache = SkeletonCache(env.cache_dir, cores=cores, background=background)
    if context is not None:  # a cache file written meanwhile is done when the command is
        context.call_on_close(cache.finish)
    return cache


def usable_cores() -> int:
    """The cores this process may run on (its affinity, where the system says)."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


@contextlib.contextmanager
def progress_callback(env: Env, what: str) -> Iterator[Callable[[int, int], None]]:
    """:func:`progress` for work that reports ``(done, total)`` itself (the bar starts at
    the first report, when the total is known)."""
    with contextlib.ExitStack() as stack:
        advance: Callable[[], None] | None = None

        def report(done: int, total: int) -> None:
            nonlocal advance
            if advance is None:
                advance = stack.enter_context(progress(env, what, total))
            advance()

        yield report


#: Bytes to read below which :func:`progress_bytes` shows no bar (it would flash by).
MIN_BAR_BYTES = 16 * 1024 * 1024


@contextlib.contextmanager
def progress_bytes(env: Env, what: str) -> Iterator[Callable[[int, int], None]]:
    """A progress bar of bytes, on stderr when it is a terminal and there are at least
    :data:`MIN_BAR_BYTES` to read, for work that reports ``(done, total)`` in bytes (the
    bar starts at the first report, when the total is known)."""
    with contextlib.ExitStack() as stack:
        bar: Any = None
        task: Any = None

        def report(done: int, total: int) -> None:
            nonlocal bar, task
            if bar is None:
                if total < MIN_BAR_BYTES or not sys.stderr.isatty():
                    bar = False
                    return
                from rich.console import Console
                from rich.progress import (
                    BarColumn,
                    DownloadColumn,
                    Progress,
                    TextColumn,
                    TimeRemainingColumn,
                    TransferSpeedColumn,
                )

                bar = Progress(
                    TextColumn(what),
                    BarColumn(),
                    DownloadColumn(),
                    TransferSpeedColumn(),
                    TimeRemainingColumn(),
                    console=Console(file=sys.stderr, no_color=not env.color),
                    transient=True,
                )
                stack.enter_context(bar)
                task = bar.add_task(what, total=total)
            if bar:
                bar.update(task, completed=done)

        yield report


@contextlib.contextmanager
def progress(
    env: Env, what: str, total: int, *, lets_fork: bool = False
) -> Iterator[Callable[[], None]]:
    """A progress bar on stderr when it is a terminal and the work is long; else nothing.
    ``lets_fork``: the bar is redrawn as the work advances (at most ten times a second),
    not by a thread of its own, so that the work may fork (a process with threads does
    not: :func:`~sessiontree.storage.forked.may_fork`)."""
    if total < 20 or not sys.stderr.isatty():
        yield lambda: None
        return
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeRemainingColumn,
    )

    bar = Progress(
        TextColumn(what),
        BarColumn(),
        MofNCompleteColumn(),
        TimeRemainingColumn(),
        console=Console(file=sys.stderr, no_color=not env.color),
        transient=True,
        auto_refresh=not lets_fork,
    )
    with bar:
        task = bar.add_task(what, total=total)
        if not lets_fork:
            yield lambda: bar.advance(task)
            return
        import time

        drawn = 0.0

        def advance() -> None:
            nonlocal drawn
            bar.advance(task)
            if (now := time.monotonic()) - drawn >= 0.1:
                bar.refresh()
                drawn = now

        yield advance


def _remember_json(ctx: click.Context, _param: click.Parameter, value: bool) -> bool:
    """Note ``--json`` where the group's error handling finds it (:data:`JSON_FLAG`)."""
    ctx.meta[JSON_FLAG] = value
    return value


json_option = click.option(
    "--json",
    "as_json",
    is_flag=True,
    callback=_remember_json,
    help="Print one JSON document (errors too: {error, code}).",
)
