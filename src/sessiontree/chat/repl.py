"""The interactive ``sessiontree chat``: a prompt (prompt_toolkit) over an ``AgentHost``.

The interface ``cli/chat.py`` calls (agreed with the engine's owner)::

    from sessiontree.chat.repl import Terminal, run

    terminal = Terminal(env=os.environ)                 # before the host: it answers permissions
    permissions = Permissions(project=cwd, ask=terminal.ask_permission, skip=skip)
    ...                                                 # toolbox, host, run_session(...)
    run(host, layout=layout, terminal=terminal, open_session=open_session)

- ``Terminal(env=...)``: the terminal face (rich console, NO_COLOR respected, ``$EDITOR``).
  ``terminal.ask_permission(request) -> "once" | "always" | "deny"`` is the ``ask`` callback
  of ``agent.permissions.Permissions``; it may be called from a tool's worker thread.
- ``run(host, *, layout, terminal=None, open_session=None) -> None``: the loop, until
  ``/exit``, Ctrl+D or a second Ctrl+C on an empty input. ``open_session(path)`` gives a
  host for another transcript of this project (``/resume``); None: ``/resume`` says it
  cannot switch. What ``run`` returns, the caller closes (``run_session``'s ``with``).
"""
