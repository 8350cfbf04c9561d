"""``sessiontree serve``: a local web viewer over the engine (Starlette, Jinja2).

:func:`~sessiontree.web.app.create_app` makes the app from a :class:`ViewerConfig`
(the config root, the server's token, a password; nothing here reads the environment:
``cli/serve.py`` does). Route modules per area: :mod:`.sessions` (the listing and
search), :mod:`.session` (a session: conversation, tree, switch), :mod:`.checkpoints`
(timeline, diffs, restore and undo), :mod:`.usage`, :mod:`.live` (server-sent events).
:mod:`.security` holds the token, CSRF, the Content-Security-Policy and the password.
The pages are :mod:`sessiontree.views.html`'s templates, shared with the HTML export.
On a store (``serve --store``: ``ViewerConfig.store``) the same pages read the store,
read only, each request on a read-only connection of :mod:`.store`'s pool.
"""

from sessiontree.web.config import ViewerConfig

__all__ = ["ViewerConfig"]
