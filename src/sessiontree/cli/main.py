"""``sessiontree``: the command group, global options and the one place errors become exits.

Commands are imported lazily (:class:`LazyGroup`) so ``sessiontree --help`` stays light:
the web viewer, the agent host and the demo builder are loaded only when run.
"""

from __future__ import annotations

import importlib
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click

from sessiontree.errors import SessionTreeError
from sessiontree.storage.layout import Layout, resolve_root

#: command name -> "module:attribute" (a click.Command), loaded on first use.
COMMANDS: dict[str, str] = {
    "sessions": "sessiontree.cli.read:sessions",
    "show": "sessiontree.cli.read:show",
    "tree": "sessiontree.cli.read:tree",
    "context": "sessiontree.cli.read:context",
    "prompts": "sessiontree.cli.read:prompts",
    "checkpoints": "sessiontree.cli.read:checkpoints",
    "history": "sessiontree.cli.read:history",
    "search": "sessiontree.cli.read:search",
    "doctor": "sessiontree.cli.read:doctor",
    "export": "sessiontree.cli.export:export",
    "restore": "sessiontree.cli.restore:restore",
    "demo": "sessiontree.cli.demo:demo",
}


class LazyGroup(click.Group):
    """A group whose subcommands are imported only when invoked or listed with help."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted([*COMMANDS, *super().list_commands(ctx)])

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        target = COMMANDS.get(cmd_name)
        if target is None:
            return super().get_command(ctx, cmd_name)
        module_name, attribute = target.split(":")
        command = getattr(importlib.import_module(module_name), attribute)
        assert isinstance(command, click.Command)
        return command

    def invoke(self, ctx: click.Context) -> Any:
        """Run a command; the one place a :class:`SessionTreeError` becomes an exit."""
        try:
            return super().invoke(ctx)
        except SessionTreeError as exc:
            click.echo(f"sessiontree: {exc}", err=True)
            ctx.exit(exc.exit_code)


@dataclass(frozen=True)
class Env:
    """What the faces read from the process, gathered once: root, cwd, colour."""

    layout: Layout
    cwd: str
    color: bool


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
    ctx.obj = Env(layout=Layout(resolve_root(root, os.environ)), cwd=os.getcwd(), color=color)


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
        click.echo(f"sessiontree: {exc.filename or ''}: {exc.strerror or exc}", err=True)
        sys.exit(1)
