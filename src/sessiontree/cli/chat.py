"""``sessiontree chat``: the agent host, interactive or one turn (``-p``).

Reads what only the CLI reads (the environment, the working folder), opens the session
(new, ``-c``, ``-r [SESSION]``, ``--fork-session``), picks the provider (``anthropic``
when ``ANTHROPIC_API_KEY`` is set, else ``offline``, said on stderr), and runs it under
:func:`~sessiontree.session.host.run_session` (``sessions/<pid>.json`` busy and idle, the
session's env folder, a shell snapshot) with file checkpoints as the interactive client
keeps them: ``-p`` keeps them too (the client's ``-p`` writes none), so ``restore`` and
``rewind --code`` work on what a scripted turn changed.

The terminal is :mod:`sessiontree.chat.repl` (imported only for an interactive run);
the SDK only when the ``anthropic`` provider is made.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

import click

from sessiontree.cli.main import Env
from sessiontree.cli.output import emit_json, get_env, json_option
from sessiontree.errors import Refused

if TYPE_CHECKING:  # the engine is imported only when chat runs
    from sessiontree.agent.loop import AgentHost
    from sessiontree.agent.provider import Provider
    from sessiontree.session.host import RunningSession
    from sessiontree.session.session import Session

#: The provider names ``--provider`` takes.
PROVIDERS = ("anthropic", "offline")


def choose_provider(name: str | None, environ: Mapping[str, str]) -> tuple[str, str | None]:
    """``(provider, notice)``: the one named, else ``anthropic`` when a key is set, else
    ``offline`` with the line that says so."""
    key = environ.get("ANTHROPIC_API_KEY", "").strip()
    if name == "anthropic" and not key:
        raise Refused("--provider anthropic needs ANTHROPIC_API_KEY (or use --provider offline)")
    if name is not None:
        return name, None
    if key:
        return "anthropic", None
    return "offline", (
        "sessiontree: ANTHROPIC_API_KEY is not set: using the offline provider "
        "(scripted answers from [[...]] directives, no model)"
    )


def make_provider(
    name: str, environ: Mapping[str, str], *, notice: Callable[[str], None] | None = None
) -> Provider:
    """The provider named; the Anthropic SDK is imported only for ``anthropic``."""
    if name == "offline":
        from sessiontree.agent.offline import OfflineProvider

        return OfflineProvider()
    from sessiontree.agent.anthropic_provider import AnthropicProvider

    return AnthropicProvider(
        api_key=environ["ANTHROPIC_API_KEY"].strip(),
        base_url=environ.get("ANTHROPIC_BASE_URL") or None,
        on_retry=notice,
    )


def _stderr(text: str) -> None:
    click.echo(f"sessiontree: {text}", err=True)


@contextmanager
def _sigint_cancels(cancel: threading.Event) -> Iterator[None]:
    """Ctrl+C during a ``-p`` turn stops it as the client's Ctrl+C does (recorded)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.getsignal(signal.SIGINT)
    signal.signal(signal.SIGINT, lambda *_: cancel.set())
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def open_chat_session(
    env: Env,
    *,
    continue_: bool,
    resume: str | None,
    fork: bool,
    interactive: bool,
) -> Session:
    """The session to write: new, ``-c``, ``-r REF`` (``--fork-session``: a copy of it),
    with its file checkpoints set up (loaded when it goes on)."""
    from sessiontree.checkpoints.capture import FileHistory
    from sessiontree.session.session import Session

    layout = env.layout
    if continue_:
        session = Session.continue_latest(layout, env.cwd, record_history=interactive)
    elif resume is not None:
        session = Session.resume(
            layout, resume, record_history=interactive, cache_file=env.cache_file
        )
    else:
        session = Session.create(
            layout,
            env.cwd,
            entrypoint="cli" if interactive else "sdk-cli",
            record_history=interactive,
        )
        session.file_history = FileHistory(layout, session.session_id, session.env.cwd)
        return session
    if fork:
        session = session.branch()
        session.file_history = FileHistory(layout, session.session_id, session.env.cwd)
    else:
        session.file_history = FileHistory.load(layout, session.transcript(), cwd=session.env.cwd)
    return session


@click.command()
@click.option(
    "-c", "--continue", "continue_", is_flag=True, help="Go on with this folder's newest session."
)
@click.option(
    "-r",
    "--resume",
    "resume",
    is_flag=False,
    flag_value="",
    default=None,
    metavar="[SESSION]",
    help="Resume SESSION (id, prefix, title or search); without one, pick it from a list.",
)
@click.option(
    "-p",
    "--print",
    "print_prompt",
    metavar="PROMPT",
    help="Run one turn with PROMPT (- reads it from stdin), print the answer, exit.",
)
@click.option("--model", help="The model to ask (default: claude-opus-5-5, as the client).")
@click.option(
    "--fork-session", is_flag=True, help="With -c or -r: go on in a copy (a new session)."
)
@click.option(
    "--provider",
    type=click.Choice(PROVIDERS),
    help="anthropic (needs ANTHROPIC_API_KEY; ANTHROPIC_BASE_URL is honoured) or offline "
    "(scripted; the default without a key).",
)
@click.option(
    "--dangerously-skip-permissions",
    "skip_permissions",
    is_flag=True,
    help="Run every tool call without asking.",
)
@json_option
def chat(
    continue_: bool,
    resume: str | None,
    print_prompt: str | None,
    model: str | None,
    fork_session: bool,
    provider: str | None,
    skip_permissions: bool,
    as_json: bool,
) -> None:
    """Chat with an agent that writes the session as Claude Code does (interactive, or
    one turn with -p)."""
    if continue_ and resume is not None:
        raise click.UsageError("-c and -r do not go together")
    if fork_session and not (continue_ or resume is not None):
        raise click.UsageError("--fork-session goes with -c or -r")
    if as_json and print_prompt is None:
        raise click.UsageError("--json goes with -p")
    interactive = print_prompt is None
    if print_prompt == "-":
        print_prompt = sys.stdin.read()
    if print_prompt is not None and not print_prompt.strip():
        raise click.UsageError("the prompt is empty")
    if resume == "" and not interactive:
        raise click.UsageError("-r needs a SESSION with -p")
    environ = os.environ
    env = get_env(new_root=not (continue_ or resume))
    name, notice = choose_provider(provider, environ)
    if notice is not None:
        click.echo(notice, err=True)
    if resume == "":
        resume = _pick(env, environ)
        if resume is None:
            return
    from sessiontree.agent.provider import DEFAULT_MODEL

    session = open_chat_session(
        env, continue_=continue_, resume=resume, fork=fork_session, interactive=interactive
    )
    made = make_provider(name, environ, notice=_stderr)
    _run(
        env,
        session,
        made,
        model=model or DEFAULT_MODEL,
        prompt=print_prompt,
        skip=skip_permissions,
        as_json=as_json,
        environ=environ,
        resumed=continue_ or resume is not None,
    )


def _pick(env: Env, environ: Mapping[str, str]) -> str | None:
    """``-r`` without a SESSION: the terminal's picker (None: the user chose none)."""
    repl = _repl()
    picked = repl.pick_session(env.layout, env.cwd, env=environ)
    return None if picked is None else str(picked)


def _repl() -> ModuleType:
    """The terminal's module, imported only when a terminal is used (prompt_toolkit is
    heavy: ``chat -p`` and every other command go without it)."""
    from sessiontree.chat import repl

    return repl


def _session_start_hooks(
    env: Env,
    host: AgentHost,
    running: RunningSession,
    environ: Mapping[str, str],
    *,
    resumed: bool,
    reload_env: Callable[[], None],
) -> None:
    """Run the SessionStart hooks of the settings at start, and give the host the way to
    run them on ``/clear`` and after a compaction. What they print goes to the model
    (with the next prompt at start), a failure is one line on stderr; ``reload_env``
    after the start's."""
    from sessiontree.agent.hooks import (
        HookCommand,
        Source,
        read_session_start_hooks,
        run_session_start_hooks,
        settings_files,
    )
    from sessiontree.lifecycle.session_env import create_session_env, hook_env_file

    cwd = Path(host.session.env.cwd)
    hooks: list[HookCommand] = read_session_start_hooks(
        settings_files(config_dir=env.layout.root, cwd=cwd)
    )
    if not hooks:
        return

    def run(source: Source, session: Session, prompt_id: str | None) -> list[Any]:
        if source == "clear":  # a new session: its own env folder
            running.env_dirs.append(create_session_env(env.layout, session.session_id))
        runs = run_session_start_hooks(
            hooks,
            source=source,
            session_id=session.session_id,
            transcript_path=session.path,
            cwd=cwd,
            env={**environ, "CLAUDE_CODE_ENTRYPOINT": session.env.entrypoint},
            env_file=lambda n: hook_env_file(env.layout, session.session_id, n),
            prompt_id=prompt_id,
            model=host.model if source == "compact" else None,
        )
        for failed in (r for r in runs if not r.succeeded):
            _stderr(f"SessionStart hook failed (exit {failed.exit_code}): {failed.command}")
        return [r.attachment() for r in runs if r.succeeded]

    host.add_start_context(run("resume" if resumed else "startup", host.session, None))
    reload_env()  # what the hooks exported is read again before the next command
    host.session_start_hooks = run


def _run(
    env: Env,
    session: Session,
    provider: Provider,
    *,
    model: str,
    prompt: str | None,
    skip: bool,
    as_json: bool,
    environ: Mapping[str, str],
    resumed: bool = False,
) -> None:
    from sessiontree.agent.tools import Toolbox  # noqa: I001 (before permissions: it imports them)
    from sessiontree.agent.loop import AgentHost, TurnEvents
    from sessiontree.agent.memory import load_memory
    from sessiontree.agent.permissions import Permissions
    from sessiontree.lifecycle.live import unregister_live_session
    from sessiontree.lifecycle.session_env import read_session_env
    from sessiontree.session.host import run_session

    cwd = Path(session.env.cwd)
    interactive = prompt is None
    repl = _repl() if interactive else None
    holder: dict[str, Any] = {}

    def ask(request: Any) -> Any:  # the terminal answers, once it is up
        host = holder.get("host")
        answer = getattr(host, "ask_permission", None)
        return answer(request) if answer is not None else "deny"

    permissions = Permissions(project=cwd, ask=ask if interactive else None, skip=skip)
    own_env_file = environ.get("CLAUDE_ENV_FILE")  # the client reads its own first too

    def session_env(session_id: str) -> str:
        return read_session_env(
            env.layout, session_id, env_file=Path(own_env_file) if own_env_file else None
        )

    toolbox = Toolbox(
        session, cwd=cwd, permissions=permissions, env=environ, session_env=session_env
    )
    home = Path(environ.get("HOME") or Path.home())
    memory = load_memory(cwd=cwd, home=home, config_dir=env.layout.root)
    # kind "interactive" with -p too: what client 2.1.328's -p registers (its entrypoint,
    # sdk-cli, tells them apart)
    with run_session(env.layout, session, env=environ, kind="interactive") as running:
        host = AgentHost(
            session,
            provider,
            toolbox,
            model=model,
            layout=env.layout,
            memory=memory,
            running=running,
        )
        holder["host"] = host
        _session_start_hooks(
            env, host, running, environ, resumed=resumed, reload_env=toolbox.reload_session_env
        )
        try:
            if repl is not None:
                repl.run(host, env=env, environ=environ)
                return
            assert prompt is not None
            cancel = threading.Event()
            with _sigint_cancels(cancel):
                result = host.turn(prompt, events=TurnEvents(on_notice=_stderr), cancel=cancel)
        finally:  # the entry names the session /clear or /resume moved to, if one did
            unregister_live_session(
                env.layout, running.live.pid, session_id=running.live.session_id
            )
    if as_json:
        usage = host.cost()
        emit_json(
            {
                "sessionId": host.session.session_id,
                "path": str(host.session.path),
                "result": result.text,
                "interrupted": result.interrupted,
                "responses": result.responses,
                "toolCalls": result.tool_calls,
                "provider": provider.name,
                "model": model,
                "usage": {
                    "inputTokens": usage.input_tokens,
                    "outputTokens": usage.output_tokens,
                    "cacheReadTokens": usage.cache_read_input_tokens,
                    "cacheCreationTokens": usage.cache_creation_input_tokens,
                    "costUSD": usage.cost,
                },
            }
        )
    elif result.text:
        click.echo(result.text)
    if result.interrupted:
        _stderr("interrupted")
        sys.exit(130)
