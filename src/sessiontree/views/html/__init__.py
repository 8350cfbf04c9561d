"""HTML for the two faces that show a session in a browser: ``sessiontree serve`` (the
web viewer, :mod:`sessiontree.web`) and ``export --format html`` (one file).

The templates (``templates/``, Jinja2, autoescape on for every one of them) and the
stylesheet and script (``static/``) ship in the package; both faces render with
:func:`environment`. What the pages show is built by :mod:`.pages` from the engine;
:mod:`.conversation` turns records into items, :mod:`.graph` lays the tree out,
:mod:`.markdown` renders prose safely.
"""

from __future__ import annotations

from functools import cache
from importlib import resources

from jinja2 import Environment, PackageLoader, StrictUndefined


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
    return env


def render(template: str, **context: object) -> str:
    """``template`` rendered with ``context``."""
    return environment().get_template(template).render(**context)


def static_bytes(name: str) -> bytes:
    """A file of ``static/`` (the viewer's stylesheet and script)."""
    return resources.files(__package__).joinpath("static", name).read_bytes()


#: The files of ``static/`` the viewer serves, by name, with their media type.
STATIC_FILES = {"viewer.css": "text/css", "viewer.js": "text/javascript"}
