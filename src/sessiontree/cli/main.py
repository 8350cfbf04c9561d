"""``sessiontree``: the command group, global options and the one place errors become exits.

Commands are imported lazily (:class:`LazyGroup`) so ``sessiontree --help`` stays light:
the web viewer, the agent host and the demo builder are loaded only when run.

An error becomes an exit in :meth:`LazyGroup.invoke`: one line on stderr, or, when the
command was run with ``--json``, one JSON document on stdout (``{"error", "code", …}``),
with the same exit code either way.
"""

from __future__ import annotations

import copy
import importlib
import os
import stat
import sys
from collections.abc import Mapping
from dataclasses import dataclass, replace
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

import click

from sessiontree._version import __version__
from sessiontree.errors import (
    Ambiguous,
    DataError,
    NotAConfigRoot,
    NotFound,
    RootProblem,
    SessionTreeError,
)

if TYPE_CHECKING:  # (the storage layer is imported when a command runs: --help needs none)
    from sessiontree.storage.layout import Layout

#: command name -> ("module:attribute" of a click.Command, one-line help). Commands are
#: imported on first use; the help line here lets ``sessiontree --help`` list them all
#: without importing any (a test checks each line against the command's own).
COMMANDS: dict[str, tuple[str, str]] = {
    "sessions": ("sessiontree.cli.listing:sessions", "List sessions, newest first."),
    "show": ("sessiontree.cli.view:show", "Show the conversation (or every branch)."),
    "tree": ("sessiontree.cli.view:tree", "Show the tree: branches, fork points, active path."),
    "context": ("sessiontree.cli.view:context", "The `messages` that resuming this sends."),
    "prompts": ("sessiontree.cli.view:prompts", "The rewind list: every prompt typed."),
    "checkpoints": ("sessiontree.cli.checkpoint_list:checkpoints", "File checkpoints per prompt."),
    "history": ("sessiontree.cli.history:history", "What you typed, with pastes expanded."),
    "search": ("sessiontree.cli.search:search", "Search every branch of every session."),
    "doctor": ("sessiontree.cli.doctor:doctor", "Check transcripts and backups for problems."),
    "export": ("sessiontree.cli.export:export", "Export a session as md, html or json."),
    "restore": ("sessiontree.cli.restore:restore", "Restore code to a prompt (undoable)."),
    "rewind": ("sessiontree.cli.rewind:rewind", "Rewind the conversation and/or code."),
    "switch": ("sessiontree.cli.switch:switch", "Switch the branch the client resumes."),
    "fork": ("sessiontree.cli.fork:fork", "Copy the conversation into a new session."),
    "compact": ("sessiontree.cli.compact:compact", "Compact: boundary + summary, history kept."),
    "summarize": (
        "sessiontree.cli.summarize:summarize",
        "Summarize from / up to a prompt (partial compaction).",
    ),
    "usage": ("sessiontree.cli.usage:usage", "Tokens and cost, each API response counted once."),
    "demo": ("sessiontree.cli.demo:demo", "Write a realistic sample store to try things on."),
    "serve": ("sessiontree.cli.serve:serve", "The local web viewer: sessions, trees, checkpoints."),
    "chat": (
        "sessiontree.cli.chat:chat",
        "Chat with an agent that writes the session as Claude Code.",
    ),
    "cleanup": (
        "sessiontree.cli.cleanup:cleanup",
        "Delete old sessions per cleanupPeriodDays (plans first).",
    ),
    "sync": ("sessiontree.cli.sync:sync", "Push this root's sessions into the store (--store)."),
    "store": ("sessiontree.cli.store:store", "A local store to try: init, start, stop, status."),
    "secrets": ("sessiontree.cli.secrets:secrets", "Keys and tokens tools printed, masked."),
    "pull": ("sessiontree.cli.pull:pull", "Write a stored session here, for the client to go on."),
    "daemon": (
        "sessiontree.cli.daemon.command:daemon",
        "A warm process that runs the read-only commands for you.",
    ),
}


#: ``ctx.meta`` key: whether the command being run was given ``--json`` (set by the
#: ``--json`` option's callback, :data:`sessiontree.cli.output.json_option`).
JSON_FLAG = "sessiontree.json"
#: ``ctx.meta`` key: the subcommand and the arguments it was given, before they are parsed.
_SUBCOMMAND = "sessiontree.subcommand"


class LazyGroup(click.Group):
    """A group whose subcommands are imported only when one is run or asked for help.

    Each subcommand also takes the group's ``--root`` after its name
    (``sessiontree sessions --root R``): a hidden option added here, once for every
    command, that click parses with the command's own options (see :func:`_late_root`).
    """

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted([*COMMANDS, *super().list_commands(ctx)])

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in COMMANDS:
            return super().get_command(ctx, cmd_name)
        module_name, attribute = COMMANDS[cmd_name][0].split(":")
        command = getattr(importlib.import_module(module_name), attribute)
        assert isinstance(command, click.Command)
        return _with_late_root(command)

    def resolve_command(
        self, ctx: click.Context, args: list[str]
    ) -> tuple[str | None, click.Command | None, list[str]]:
        name, command, rest = super().resolve_command(ctx, args)
        ctx.meta[_SUBCOMMAND] = (command, list(rest))
        return name, command, rest

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        rows = [(name, COMMANDS[name][1]) for name in sorted(COMMANDS)]
        with formatter.section("Commands"):
            formatter.write_dl(rows)

    def make_context(
        self,
        info_name: str | None,
        args: list[str],
        parent: click.Context | None = None,
        **extra: Any,
    ) -> click.Context:
        """The group's context; a usage error in the group's own options (``sessiontree
        --bogus``) said in one line (:class:`UsageLine`), as a command's is."""
        try:
            return super().make_context(info_name, args, parent, **extra)
        except click.UsageError as exc:
            raise UsageLine.of(exc) from None
        except BrokenPipeError:  # (the group's --help, to a reader gone)
            if not stdout_reader_gone():
                raise
            leave_without_stdout()

    def invoke(self, ctx: click.Context) -> Any:
        """Run a command; the one place a :class:`SessionTreeError` becomes an exit (and,
        under ``--json``, a usage error or an ``OSError`` a JSON error too)."""
        try:
            return super().invoke(ctx)
        except SessionTreeError as exc:
            if _json_run(ctx):
                _emit_error(error_json(exc))
            else:
                click.echo(f"sessiontree: {_shown(str(exc))}", err=True)
            ctx.exit(exc.exit_code)
        except click.UsageError as exc:
            if not _json_run(ctx):
                raise UsageLine.of(exc) from None  # click prints it, in one line
            _emit_error({"error": exc.format_message(), "code": "usage"})
            ctx.exit(exc.exit_code)
        except OSError as exc:
            if isinstance(exc, BrokenPipeError):
                if stdout_reader_gone():
                    leave_without_stdout()
                click.echo(f"sessiontree: {_shown(describe_os_error(exc))}", err=True)
                ctx.exit(1)
            if not _json_run(ctx):
                raise  # main() prints it
            _emit_error({"error": describe_os_error(exc), "code": "io-error"})
            ctx.exit(1)
        except Exception as exc:
            # The store's server failing while a command reads from it (psycopg's errors,
            # told by their module: psycopg is imported only by a command that uses it).
            if not type(exc).__module__.startswith("psycopg"):
                raise
            from sessiontree.storage.store.connect import store_error

            env = ctx.find_object(Env)
            error = store_error(exc, env.store if env and env.store else "")
            if _json_run(ctx):
                _emit_error(error_json(error))
            else:
                click.echo(f"sessiontree: {error}", err=True)
            ctx.exit(error.exit_code)


class UsageLine(click.UsageError):
    """A usage error said as every error is, in one line on stderr: what is wrong, and
    the command whose help tells the usage (``sessiontree: No such option: --bogus (see
    'sessiontree usage --help')``); exit 2. Click's own takes four lines."""

    @classmethod
    def of(cls, exc: click.UsageError) -> click.UsageError:
        """``exc`` as a :class:`UsageLine` (a bare ``sessiontree``'s help stays help)."""
        if isinstance(exc, UsageLine | click.exceptions.NoArgsIsHelpError):
            return exc
        return cls(exc.format_message(), exc.ctx)

    def show(self, file: Any = None) -> None:
        hint = f" (see '{self.ctx.command_path} --help')" if self.ctx is not None else ""
        click.echo(f"sessiontree: {self.format_message()}{hint}", file=file, err=True)


#: The exit status of a command whose stdout's reader went away (``| head`` read what it
#: wanted): 128 + SIGPIPE, the status of a program that signal stopped (``seq 1000000 |
#: head`` has it), told from 1 (not found, refused) and 0 (the output was not all read).
READER_GONE = 141


def stdout_reader_gone() -> bool:
    """Whether stdout is a pipe (or socket) whose reader has closed it: a
    ``BrokenPipeError`` from writing elsewhere (a child's pipe) is an error to tell."""
    import select  # (only when a pipe broke)

    try:
        fd = sys.stdout.fileno()
    except (AttributeError, OSError, ValueError):  # (replaced by one with no descriptor)
        return False
    if not hasattr(select, "poll"):
        return True
    poller = select.poll()
    poller.register(fd, select.POLLOUT)
    return any(events & select.POLLERR for _, events in poller.poll(0))


def leave_without_stdout() -> NoReturn:
    """End the run in silence, :data:`READER_GONE`: stdout pointed at ``/dev/null``
    first, so what is still buffered for the reader that went away is dropped rather
    than failing again at exit (``Exception ignored … BrokenPipeError``); stderr stays
    open for what is still to say."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, sys.stdout.fileno())
    finally:
        os.close(devnull)
    raise click.exceptions.Exit(READER_GONE)


def _with_late_root(command: click.Command) -> click.Command:
    """``command`` with a hidden ``--root`` and ``--store`` of its own, unless it has one
    (``demo``): a copy, so the command its module defines stays as it is written."""
    if any(isinstance(p, click.Option) and "--root" in p.opts for p in command.params):
        return command
    late = copy.copy(command)
    late.params = [
        *command.params,
        click.Option(
            ["--root", "late_root"],
            type=click.Path(path_type=Path),
            hidden=True,
            expose_value=False,
            is_eager=True,
            callback=_late_root,
        ),
        click.Option(
            ["--store", "late_store"],
            metavar="DSN",
            hidden=True,
            expose_value=False,
            callback=_late_store,
        ),
    ]
    return late


def _late_store(ctx: click.Context, _param: click.Parameter, store: str | None) -> None:
    """``--store`` given after the command's name: it stands for the group's."""
    if store is not None:
        env = ctx.find_object(Env)
        assert env is not None
        ctx.obj = replace(env, store=store)


def _late_root(ctx: click.Context, _param: click.Parameter, root: Path | None) -> None:
    """``--root`` given after the command's name: it stands for the group's (the later
    one on the line wins, as for any option given twice)."""
    if root is not None:
        previous = ctx.find_object(Env)
        ctx.obj = build_env(root, os.environ, store=previous.store if previous else None)


def _json_run(ctx: click.Context) -> bool:
    """Whether the command being run was given ``--json``: as its option parsed it, or,
    when parsing stopped before that option (an unknown option, a bad value), when the
    command has ``--json`` and its arguments hold one before any ``--``."""
    parsed = ctx.meta.get(JSON_FLAG)
    if parsed is not None:
        return bool(parsed)
    command, args = ctx.meta.get(_SUBCOMMAND, (None, []))
    if command is None or not any(
        isinstance(p, click.Option) and "--json" in p.opts for p in command.params
    ):
        return False
    before = args[: args.index("--")] if "--" in args else args
    return "--json" in before


def _shown(text: str) -> str:
    """An error's line as it may go to a terminal: a name or text from the files in it
    shows its controls escaped (:func:`~sessiontree.views.text.printable`)."""
    from sessiontree.views.text import printable  # (only on an error's path)

    return printable(text)


def error_json(exc: SessionTreeError) -> dict[str, Any]:
    """The ``--json`` error of ``exc``: its one line and ``code``, and the fields that
    help a script (``candidates`` of an ambiguous reference, the ``path`` of bad data)."""
    doc: dict[str, Any] = {"error": str(exc), "code": exc.code}
    if isinstance(exc, NotFound | Ambiguous):
        doc |= {"what": exc.what, "ref": exc.ref}
    if isinstance(exc, Ambiguous):
        doc["candidates"] = exc.candidates
    if isinstance(exc, DataError):
        doc |= {"path": exc.path, "reason": exc.reason}
    if isinstance(exc, NotAConfigRoot):
        doc |= {"root": exc.root, "source": exc.source, "problem": exc.problem}
    return doc


def _emit_error(doc: Mapping[str, Any]) -> None:
    """One JSON error document on stdout; a name that is not UTF-8 shows its stray bytes
    as U+FFFD, as every ``--json`` document does."""

    import json  # (an error's path: json is not imported on any other)

    from sessiontree.storage.layout import utf8_name

    def safe(value: Any) -> Any:
        if isinstance(value, str):
            return utf8_name(value)
        if isinstance(value, list):
            return [safe(v) for v in value]
        return value

    text = json.dumps({k: safe(v) for k, v in doc.items()}, indent=2, ensure_ascii=False)
    out = sys.stdout.buffer
    out.write(text.encode() + b"\n")
    out.flush()


def describe_os_error(exc: OSError) -> str:
    """An ``OSError`` in one line: the file it names, and why."""
    where = f"{exc.filename}: " if exc.filename else ""
    return f"{where}{exc.strerror or exc}"


@dataclass(frozen=True)
class Env:
    """What the faces read from the process, gathered once: root, cwd, colour, and where
    this root's caches live (each cache file named when a command first asks for it: a
    command that reads a transcript by its path needs none)."""

    layout: Layout
    cwd: str
    color: bool
    #: The environment the cache files are named from.
    environ: Mapping[str, str]
    #: Where transcripts' skeletons are cached (``SkeletonCache``); None: not cached.
    cache_dir: Path | None = None
    #: Where the root was named: ``--root``, ``$CLAUDE_CONFIG_DIR`` or ``default``.
    root_source: str = "default"
    #: The store's DSN (``--store``, else ``$SESSIONTREE_STORE``); None: local files only.
    store: str | None = None

    @cached_property
    def state_dir(self) -> Path:
        """sessiontree's state folder (:func:`state_folder`)."""
        return state_folder(self.environ)

    @cached_property
    def cache_file(self) -> Path | None:
        """The listing cache of this root (:func:`cache_path`)."""
        return cache_path(self.layout.root, self.environ)

    @cached_property
    def usage_cache_file(self) -> Path | None:
        """usage's cache of this root (``usage-<key>.msgpack`` in the cache folder);
        None: the cache folder is inside the root."""
        return _per_root(self.layout.root, self.environ, "usage-{key}.msgpack")

    @cached_property
    def search_index(self) -> Path | None:
        """The search index of this root (``search``); None: the cache folder is inside
        it (:func:`search_index_path`)."""
        return search_index_path(self.layout.root, self.environ)


def build_env(root: Path | None, environ: Mapping[str, str], *, store: str | None = None) -> Env:
    """The :class:`Env` of a run whose ``--root`` is ``root`` (None: not given) and whose
    ``--store`` is ``store`` (None: ``$SESSIONTREE_STORE``, if set and not empty)."""
    from sessiontree.storage.layout import Layout, resolve_root

    layout = Layout(resolve_root(root, environ))
    return Env(
        layout=layout,
        cwd=os.getcwd(),
        color="NO_COLOR" not in environ and sys.stdout.isatty(),
        environ=dict(environ),
        cache_dir=skeleton_cache_dir(layout.root, environ),
        root_source=root_source(root, environ),
        store=store or environ.get("SESSIONTREE_STORE", "").strip() or None,
    )


def state_folder(environ: Mapping[str, str]) -> Path:
    """sessiontree's state folder (:func:`~sessiontree.cli.folders.state_folder_name`)."""
    from sessiontree.cli.folders import state_folder_name

    return Path(state_folder_name(environ))


def root_source(root: Path | None, environ: Mapping[str, str]) -> str:
    """Where :func:`~sessiontree.storage.layout.resolve_root` takes the root from."""
    if root is not None:
        return "--root"
    if environ.get("CLAUDE_CONFIG_DIR", "").strip():
        return "$CLAUDE_CONFIG_DIR"
    return "default"


def check_root(env: Env, *, may_be_new: bool = False) -> None:
    """Refuse a config root that does not exist, is not a folder or holds no
    ``projects/`` folder (:class:`NotAConfigRoot`, naming where it came from).

    ``may_be_new``: a command that makes the root (``demo``) may be given one that does
    not exist yet, or an empty folder; not a file."""
    root = env.layout.root
    try:
        mode = root.stat().st_mode
    except (FileNotFoundError, NotADirectoryError):
        if may_be_new:
            return
        raise NotAConfigRoot(str(root), env.root_source, "missing") from None
    if not stat.S_ISDIR(mode):
        problem: RootProblem = "file" if stat.S_ISREG(mode) else "not-a-folder"
        raise NotAConfigRoot(str(root), env.root_source, problem)
    if not may_be_new and not env.layout.projects_dir.is_dir():
        raise NotAConfigRoot(str(root), env.root_source, "no-projects")


def cache_folder(environ: Mapping[str, str]) -> Path:
    """sessiontree's cache folder: ``$SESSIONTREE_CACHE_DIR``, else
    ``$XDG_CACHE_HOME/sessiontree``, else ``~/.cache/sessiontree``."""
    base = environ.get("SESSIONTREE_CACHE_DIR") or environ.get("XDG_CACHE_HOME")
    folder = Path(base) if base else Path(environ.get("HOME", str(Path.home()))) / ".cache"
    if not environ.get("SESSIONTREE_CACHE_DIR"):
        folder = folder / "sessiontree"
    return folder


def cache_path(root: Path, environ: Mapping[str, str]) -> Path | None:
    """Where the listing cache of one config root lives: in :func:`cache_folder`, one file
    per root; None when that folder is inside the root (the cache is ours, never written
    among the client's files)."""
    return _per_root(root, environ, "index-{key}.msgpack")


def skeleton_cache_dir(root: Path, environ: Mapping[str, str]) -> Path | None:
    """Where transcripts' skeletons are cached: :func:`cache_folder`, unless it is inside
    the config root (the cache is never written among the client's files)."""
    folder = cache_folder(environ)
    resolved, root_resolved = folder.resolve(), root.resolve()
    if resolved == root_resolved or root_resolved in resolved.parents:
        return None
    return folder


def search_index_path(root: Path, environ: Mapping[str, str]) -> Path | None:
    """Where the search index of one config root lives: in :func:`cache_folder`, one
    database per root; None when that folder is inside the root (never written among the
    client's files)."""
    return _per_root(root, environ, "search-{key}.sqlite")


def _per_root(root: Path, environ: Mapping[str, str], name: str) -> Path | None:
    """``name`` (its ``{key}`` the root's) in :func:`skeleton_cache_dir`, if there is one."""
    folder = skeleton_cache_dir(root, environ)
    if folder is None:
        return None
    import hashlib

    key = hashlib.sha256(str(root.resolve()).encode()).hexdigest()[:16]
    return folder / name.format(key=key)


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--root",
    type=click.Path(path_type=Path),
    help="Config root (default: $CLAUDE_CONFIG_DIR, else ~/.claude); also after COMMAND.",
)
@click.option(
    "--store",
    metavar="DSN",
    help="Read (and sync to) the store on PostgreSQL at DSN, a libpq URI or key=value "
    "string (default: $SESSIONTREE_STORE; none: local files only); also after COMMAND.",
)
@click.version_option(version=__version__, package_name="sessiontree")
@click.pass_context
def cli(ctx: click.Context, root: Path | None, store: str | None) -> None:
    """See, search and repair Claude Code sessions, on Claude Code's own files."""
    # The root is checked by the commands that read it (``get_env``): ``demo`` makes one,
    # and a transcript named by its path needs none.
    ctx.obj = build_env(root, os.environ, store=store)


#: Set by a command that only read and printed (:func:`leave_quickly`).
_quick_exit = False


def leave_quickly() -> None:
    """Let :func:`main` end the process once this command is done without tearing the
    interpreter down: freeing a big transcript's objects one by one costs more than
    reading it took in part (0.07 s of a 1 s ``context`` of 200 MB). Only for a command
    that wrote nothing but its output, all of it flushed before the process ends."""
    global _quick_exit
    _quick_exit = True


def main(argv: list[str] | None = None) -> None:
    """Entry point: the group, plus what no command should show as a traceback."""
    try:
        cli.main(args=argv, prog_name="sessiontree")
    except SystemExit as done:
        # (only for the command line: a program that calls main(argv) gets SystemExit)
        if _quick_exit and argv is None and (done.code is None or isinstance(done.code, int)):
            try:
                sys.stdout.flush()
                sys.stderr.flush()
            except BrokenPipeError:
                pass  # as below, the normal way
            else:
                os._exit(done.code or 0)
        raise
    except BrokenPipeError:
        # stdout closed early (`| head`): not an error worth a traceback, nor a word.
        try:
            leave_without_stdout()
        except click.exceptions.Exit:
            sys.exit(READER_GONE)
    except KeyboardInterrupt:
        sys.exit(130)
    except OSError as exc:
        click.echo(f"sessiontree: {_shown(describe_os_error(exc))}", err=True)
        sys.exit(1)
