"""What a viewer runs on: every setting a parameter (the CLI resolves them)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sessiontree.catalog.usage import PriceTable
from sessiontree.catalog.usage_files import UsageCache
from sessiontree.storage.layout import Layout
from sessiontree.storage.skeleton_cache import SkeletonCache

if TYPE_CHECKING:
    import psycopg


@dataclass(frozen=True)
class ViewerConfig:
    """``root``: the config root shown. ``token``: the per-server secret every write
    (a POST) must carry (:mod:`~sessiontree.web.security`). ``password``: when set,
    every request must give it (HTTP Basic; required off loopback). ``allowed_hosts``:
    the ``Host`` headers answered (``127.0.0.1:8765``…; None: any, for tests): a page of
    another site whose name resolves to 127.0.0.1 (DNS rebinding) gets nothing.
    ``cache_file``: the listing cache; ``cache_dir``: the skeleton cache's folder;
    ``search_index``: the search index's database; ``usage_cache_file``: usage's cache
    (each None: none; without an index, search scans the transcripts). ``poll_seconds``:
    how often a followed session is looked at;
    ``follow_seconds``: how long one event stream lasts (the browser then reconnects,
    saying the last record it got).

    ``store``: the DSN of a store to show instead of the root (``serve --store``), read
    only; ``conn``: the store's connection the request being answered reads through
    (each request is given one from the app's pool: :func:`~.responses.reading`; None
    outside a request, and on the root)."""

    root: Path
    token: str
    password: str | None = None
    allowed_hosts: frozenset[str] | None = None
    cache_file: Path | None = None
    cache_dir: Path | None = None
    search_index: Path | None = None
    usage_cache_file: Path | None = None
    poll_seconds: float = 0.5
    follow_seconds: float = 300.0
    prices: PriceTable | None = None
    store: str | None = field(default=None, repr=False)  # (a DSN may hold a password)
    conn: psycopg.Connection[Any] | None = field(default=None, repr=False, compare=False)

    @property
    def layout(self) -> Layout:
        return Layout(self.root)

    def skeleton_cache(self) -> SkeletonCache | None:
        return None if self.cache_dir is None else SkeletonCache(self.cache_dir)

    def usage_cache(self) -> UsageCache | None:
        return None if self.usage_cache_file is None else UsageCache(self.usage_cache_file)

    def store_conn(self) -> psycopg.Connection[Any]:
        """The connection to the store of the request being answered."""
        assert self.conn is not None, "the store is read inside responses.reading()"
        return self.conn
