"""Markdown from a transcript, rendered to HTML that cannot act.

CommonMark (markdown-it-py) with raw HTML off: a ``<script>`` or ``<img onerror>`` in a
prompt or a reply is shown as text. A link keeps its target only for ``http``,
``https`` and ``mailto`` (no ``javascript:``, ``data:``, ``vbscript:``, no relative
link into the viewer's own routes); any other stays text. An image is never loaded (the
viewer fetches nothing from the internet, and a tracking pixel would tell someone the
page was read): it becomes a link to its target, under the same rule, named by its alt
text. Every link opens with ``rel="noopener noreferrer nofollow"``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import cache
from typing import Any

from markdown_it import MarkdownIt
from markdown_it.renderer import RendererHTML
from markdown_it.token import Token
from markdown_it.utils import EnvType, OptionsDict
from markupsafe import Markup, escape

#: The schemes a link from a transcript may keep (case-insensitive).
SAFE_SCHEMES = ("http", "https", "mailto")
_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*):")


def is_safe_link(url: str) -> bool:
    """Whether ``url`` names one of :data:`SAFE_SCHEMES` (after the control characters
    and spaces a browser strips from a URL's start)."""
    stripped = re.sub(r"[\x00-\x20\x7f]", "", url)
    match = _SCHEME.match(stripped)
    return match is not None and match.group(1).lower() in SAFE_SCHEMES


class _Markdown(MarkdownIt):
    def validateLink(self, url: str) -> bool:
        return is_safe_link(url)


def _link_open(
    renderer: RendererHTML, tokens: Sequence[Token], idx: int, options: OptionsDict, env: EnvType
) -> str:
    tokens[idx].attrSet("rel", "noopener noreferrer nofollow")
    return renderer.renderToken(tokens, idx, options, env)


def _image(
    renderer: RendererHTML, tokens: Sequence[Token], idx: int, options: OptionsDict, env: EnvType
) -> str:
    """An image as a link to it, never loaded."""
    token = tokens[idx]
    src = str(token.attrGet("src") or "")
    alt = renderer.renderInlineAsText(token.children or [], options, env) or "image"
    label = escape(f"[image: {alt}]")
    return (
        f'<a class="image-link" href="{escape(src)}" rel="noopener noreferrer nofollow">{label}</a>'
    )


@cache
def _parser() -> MarkdownIt:
    md = _Markdown("commonmark", {"html": False, "linkify": False, "typographer": False})
    md.add_render_rule("link_open", _link_open)
    md.add_render_rule("image", _image)
    return md


def render_markdown(text: str) -> Markup:
    """``text`` as safe HTML (see the module docstring)."""
    rendered: Any = _parser().render(text)
    return Markup(str(rendered))  # made by the parser above, raw HTML off
