"""Printing for the CLI: one JSON document on stdout, or rich output for people."""

from __future__ import annotations

import sys
from typing import Any

import click
import msgspec
from rich.console import Console

from sessiontree.cli.main import Env


def emit_json(value: Any) -> None:
    """Exactly one JSON document on stdout (UTF-8, newline-terminated)."""
    sys.stdout.buffer.write(msgspec.json.format(msgspec.json.encode(value), indent=2) + b"\n")
    sys.stdout.flush()


def console(env: Env) -> Console:
    return Console(no_color=not env.color, highlight=False, soft_wrap=True)


def get_env() -> Env:
    env = click.get_current_context().find_object(Env)
    assert env is not None, "the sessiontree group sets ctx.obj"
    return env


json_option = click.option("--json", "as_json", is_flag=True, help="Print one JSON document.")
