"""The session picker of ``chat -r`` (no SESSION) and ``/resume``.

The interface ``cli/chat.py`` calls::

    from sessiontree.chat.picker import pick_session

    path = pick_session(layout, cwd=cwd, env=os.environ)   # a transcript Path, or None (cancelled)

The sessions of ``cwd``'s project, newest first, with title, age, size and first prompt;
arrow keys move, typing filters, Enter picks, Esc or Ctrl+C cancels. No session at all:
``NotFound`` is raised before anything is drawn.
"""
