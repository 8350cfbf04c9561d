"""``sessiontree``: the command group, global options and the one place errors become exits.

Commands are imported lazily (:class:`LazyGroup`) so ``sessiontree --help`` stays light:
the web viewer, the agent host and the demo builder are loaded only when run.
"""

from __future__ import annotations

import hashlib
import importlib
import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click

from sessiontree.errors import SessionTreeError
from sessiontree.storage.layout import Layout, resolve_root

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
    "search": ("sessiontree.cli.listing:search", "Search every branch of every session."),
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
    "cleanup": (
        "sessiontree.cli.cleanup:cleanup",
        "Delete old sessions per cleanupPeriodDays (plans first).",
    ),
}


class LazyGroup(click.Group):
    """A group whose subcommands are imported only when one is run or asked for help."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted([*COMMANDS, *super().list_commands(ctx)])

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in COMMANDS:
            return super().get_command(ctx, cmd_name)
        module_name, attribute = COMMANDS[cmd_name][0].split(":")
        command = getattr(importlib.import_module(module_name), attribute)
        assert isinstance(command, click.Command)
        return command

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        rows = [(name, COMMANDS[name][1]) for name in sorted(COMMANDS)]
        with formatter.section("Commands"):
            formatter.write_dl(rows)

    def invoke(self, ctx: click.Context) -> Any:
        """Run a command; the one place a :class:`SessionTreeError` becomes an exit."""
        try:
            return super().invoke(ctx)
        except SessionTreeError as exc:
            click.echo(f"sessiontree: {exc}", err=True)
            ctx.exit(exc.exit_code)


@dataclass(frozen=True)
class Env:
    """What the faces read from the process, gathered once: root, cwd, colour, and where
    the listing cache of this root lives."""

    layout: Layout
    cwd: str
    color: bool
    cache_file: Path | None = None
    #: Where transcripts' skeletons are cached (``SkeletonCache``); None: not cached.
    cache_dir: Path | None = None


def cache_folder(environ: Mapping[str, str]) -> Path:
    """sessiontree's cache folder: ``$SESSIONTREE_CACHE_DIR``, else
    ``$XDG_CACHE_HOME/sessiontree``, else ``~/.cache/sessiontree``."""
    base = environ.get("SESSIONTREE_CACHE_DIR") or environ.get("XDG_CACHE_HOME")
    folder = Path(base) if base else Path(environ.get("HOME", str(Path.home()))) / ".cache"
    if not environ.get("SESSIONTREE_CACHE_DIR"):
        folder = folder / "sessiontree"
    return folder


def cache_path(root: Path, environ: Mapping[str, str]) -> Path:
    """Where the listing cache of one config root lives: in :func:`cache_folder` (outside
    the root: the cache is ours, not the client's), one file per root."""
    key = hashlib.sha256(str(root.resolve()).encode()).hexdigest()[:16]
    return cache_folder(environ) / f"index-{key}.msgpack"


def skeleton_cache_dir(root: Path, environ: Mapping[str, str]) -> Path | None:
    """Where transcripts' skeletons are cached: :func:`cache_folder`, unless it is inside
    the config root (the cache is never written among the client's files)."""
    folder = cache_folder(environ)
    resolved, root_resolved = folder.resolve(), root.resolve()
    if resolved == root_resolved or root_resolved in resolved.parents:
        return None
    return folder


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--root",
    type=click.Path(file_okay=False, path_type=Path),
    help="Config root (default: $CLAUDE_CONFIG_DIR, else ~/.claude).",
)
@click.version_option(package_name="sessiontree")
@click.pass_context
def cli(ctx: click.Context, root: Path | None) -> None:
    """See, search and repair Claude Code sessions, on Claude Code's own files."""
    color = "NO_COLOR" not in os.environ and sys.stdout.isatty()
    layout = Layout(resolve_root(root, os.environ))
    ctx.obj = Env(
        layout=layout,
        cwd=os.getcwd(),
        color=color,
        cache_file=cache_path(layout.root, os.environ),
        cache_dir=skeleton_cache_dir(layout.root, os.environ),
    )


def main(argv: list[str] | None = None) -> None:
    """Entry point: the group, plus what no command should show as a traceback."""
    try:
        cli.main(args=argv, prog_name="sessiontree")
    except BrokenPipeError:
        # stdout closed early (`| head`): not an error worth a traceback.
        sys.stderr.close()
        sys.exit(1)
    except KeyboardInterrupt:
        sys.exit(130)
    except OSError as exc:
        where = f"{exc.filename}: " if exc.filename else ""
        click.echo(f"sessiontree: {where}{exc.strerror or exc}", err=True)
        sys.exit(1)
