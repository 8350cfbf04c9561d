"""HTML for the two faces that show a session in a browser: ``sessiontree serve`` (the
web viewer, :mod:`sessiontree.web`) and ``export --format html`` (one file).

The templates (``templates/``, Jinja2, autoescape on for every one of them) and the
stylesheet and script (``static/``) ship in the package; both faces render with
:func:`environment`. What the pages show is built by :mod:`.pages` from the engine;
:mod:`.conversation` turns records into items, :mod:`.graph` lays the tree out,
:mod:`.markdown` renders prose safely.
"""

from __future__ import annotations

import shlex
from functools import cache
from importlib import resources

from jinja2 import Environment, PackageLoader, StrictUndefined
from markupsafe import Markup, escape

from sessiontree.views.sizes import format_size
from sessiontree.views.text import printable


@cache
def environment() -> Environment:
    """The Jinja2 environment of the HTML faces: autoescape on for every template."""
    env = Environment(
        loader=PackageLoader("sessiontree.views.html", "templates"),
        autoescape=True,
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["short"] = lambda value: str(value)[:8]
    env.filters["marked"] = marked
    env.filters["size"] = format_size  # (the CLI's rule: 1024 bytes to a KB)
    env.filters["printable"] = printable  # (a control character shown as its escape)
    env.filters["shell_quote"] = shlex.quote
    return env


def marked(text: str, ranges: object = None) -> Markup:
    """``text`` escaped, its control characters shown as escapes (``\\x1b``:
    :func:`~sessiontree.views.text.printable`), its ``[start, end)`` character
    ``ranges`` (a search hit's ``highlights``, indexes into ``text`` as stored) in
    ``<mark>``; a range that is not two indexes in order inside the text, or that
    overlaps the one before, is passed over."""
    out, at = [], 0
    for start, end in sorted(_ranges(ranges, len(text))):
        if start >= at:
            out += [_shown(text[at:start]), Markup("<mark>"), _shown(text[start:end])]
            out.append(Markup("</mark>"))
            at = end
    out.append(_shown(text[at:]))
    return Markup("").join(out)


def _shown(text: str) -> Markup:
    return escape(printable(text))


def _ranges(value: object, length: int) -> list[tuple[int, int]]:
    pairs = value if isinstance(value, list | tuple) else ()
    return [
        (pair[0], pair[1])
        for pair in pairs
        if isinstance(pair, list | tuple)
        and len(pair) == 2
        and all(type(i) is int for i in pair)
        and 0 <= pair[0] < pair[1] <= length
    ]


def render(template: str, **context: object) -> str:
    """``template`` rendered with ``context``."""
    return environment().get_template(template).render(**context)


def static_bytes(name: str) -> bytes:
    """A file of ``static/`` (the viewer's stylesheet and script)."""
    return resources.files(__package__).joinpath("static", name).read_bytes()


#: The files of ``static/`` the viewer serves, by name, with their media type.
STATIC_FILES = {"viewer.css": "text/css", "viewer.js": "text/javascript"}
