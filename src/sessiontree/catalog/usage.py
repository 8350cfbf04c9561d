"""Token usage and cost: every API response in a store's transcripts, each counted once.

What is counted (``docs/CLI.md``'s ``usage`` says the same to users):

- every assistant record that carries ``message.usage``, in every transcript of the
  scope: top-level sessions, old-style ``agent-*.jsonl`` beside them and
  ``<session>/subagents/*.jsonl`` (subagents are API calls too), sidechains inline, and
  every branch of a file (a rewound branch cost money when it ran), not only the active
  path;
- a response once, whatever number of records holds it. The client writes one record per
  content block of a response, each with the response's usage (streamed: the earlier
  ones may still say 1 output token, the last says the final count), and a resume or
  fork copies records into another transcript (same uuids, same ``message.id``). A
  response is known by its ``message.id``, else its ``requestId``, else the record's
  uuid; its tokens are the largest value of each count among its records;
- not records of the ``<synthetic>`` model (what the client writes itself, such as an
  API error shown as a message): they are no API call.

A copied response belongs to the session that first wrote it: it is counted under the
record with the earliest timestamp, then one that is no copy (copies keep the timestamp:
a fork's say so, ``forkedFrom`` or ``requestSessionId``), then the first transcript path:
deterministic, whatever order the folders are read in, and a fork whose id sorts first
is not charged for its parent's responses. Its session is the one its record names as
having sent the request (``requestSessionId``, which 2.1.x clients write on a fork's
copies), else the one a copy says it came from (``forkedFrom.sessionId``: ``/branch`` and
``sessiontree fork``), else the record's ``sessionId`` (a subagent's records name their
parent session), else the transcript's. Its day is the local date of its timestamp.

Cost: per million tokens from a price table (:func:`default_prices`, the table shipped
as ``prices.json``; :func:`read_prices` for a file, :func:`merge_prices` to lay it over
the shipped one). Cache writes are
priced as the 5-minute cache unless the usage says how many were for the 1-hour cache
(``cache_creation.ephemeral_1h_input_tokens``). A model the table does not name has its
tokens counted and its cost unknown (``None``), never guessed.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta, tzinfo
from importlib import resources
from pathlib import Path
from typing import Any, Literal

import msgspec

from sessiontree.catalog.usage_periods import (
    BillingBlock,
    cut_blocks,
    month_of,
    parse_moment,
    week_start,
)
from sessiontree.errors import DataError, Refused
from sessiontree.model.records import FactFields, FactMessage, Problem
from sessiontree.storage.jsonl import LineSource, iter_path_records
from sessiontree.storage.layout import Layout, subagents_dir
from sessiontree.storage.scan import Scan
from sessiontree.storage.unreadable import not_a_file, read_failed

UsageBy = Literal["day", "week", "month", "block", "session", "project", "model"]
USAGE_BY: tuple[UsageBy, ...] = ("day", "week", "month", "block", "session", "project", "model")

#: The model the client names on records it writes itself (no API call behind them).
SYNTHETIC_MODEL = "<synthetic>"

#: The key of a response with no timestamp in ``--by day``.
NO_DATE = "unknown"


# --- prices -------------------------------------------------------------------------


@dataclass(frozen=True)
class Price:
    """USD per million tokens of one model family."""

    input: float
    output: float
    cache_write: float  # the 5-minute cache
    cache_write_1h: float
    cache_read: float


@dataclass(frozen=True)
class PriceTable:
    """Prices by model family (``claude-sonnet-4-5``), and other names for families."""

    models: Mapping[str, Price]
    aliases: Mapping[str, str] = field(default_factory=dict)
    as_of: str | None = None

    def price_for(self, model: str) -> Price | None:
        """The price of ``model`` (an API model id, dated or not), None if unknown."""
        for name in (model, normalize_model(model)):
            name = self.aliases.get(name, name)
            if name in self.models:
                return self.models[name]
        return None


#: What is cut from a model id to name its family: a provider prefix
#: (``us.anthropic.``), a version suffix (``-v2:0``, ``-v2``), a date (``-20250514``,
#: ``@20250514``) or ``-latest``.
_PROVIDER = re.compile(r"^(?:[a-z]{2,4}\.)?anthropic\.")
_SUFFIX = re.compile(r"(?:-v\d+(?::\d+)?|[-@]\d{8}|-latest)$")


def normalize_model(model: str) -> str:
    """A model id as its family: ``claude-sonnet-4-20250514`` is ``claude-sonnet-4``,
    ``us.anthropic.claude-3-7-sonnet-20250219-v1:0`` is ``claude-3-7-sonnet``."""
    name = _PROVIDER.sub("", model.strip().lower())
    while (cut := _SUFFIX.sub("", name)) != name:
        name = cut
    return name


_PRICE_KEYS = ("input", "output", "cacheWrite", "cacheRead")


def parse_prices(data: str | bytes, *, source: str = "prices") -> PriceTable:
    """A price table from JSON: ``{"asOf": ..., "models": {family: {input, output,
    cacheWrite, cacheRead[, cacheWrite1h]}}, "aliases": {name: family}}``, each price in
    USD per million tokens; ``cacheWrite1h`` left out is twice ``input`` (Anthropic's
    rule for the 1-hour cache). :class:`~sessiontree.errors.DataError` if it is not one."""
    try:
        value = json.loads(data)
    except (ValueError, RecursionError) as exc:
        raise DataError(source, f"not JSON: {exc}") from exc
    models = value.get("models") if isinstance(value, dict) else None
    if not isinstance(models, dict):
        raise DataError(source, 'no "models" object of prices')
    table: dict[str, Price] = {}
    for name, entry in models.items():
        if not isinstance(entry, dict) or not all(_is_price(entry.get(k)) for k in _PRICE_KEYS):
            raise DataError(source, f"{name}: needs {', '.join(_PRICE_KEYS)} (USD per MTok)")
        hour = entry.get("cacheWrite1h", 2 * entry["input"])
        if not _is_price(hour):
            raise DataError(source, f"{name}: cacheWrite1h is no price")
        table[name] = Price(
            float(entry["input"]),
            float(entry["output"]),
            float(entry["cacheWrite"]),
            float(hour),
            float(entry["cacheRead"]),
        )
    aliases = value.get("aliases", {})
    if not isinstance(aliases, dict) or not all(isinstance(v, str) for v in aliases.values()):
        raise DataError(source, '"aliases" must map names to model families')
    as_of = value.get("asOf")
    return PriceTable(table, dict(aliases), as_of if isinstance(as_of, str) else None)


def _is_price(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and value >= 0


def merge_prices(base: PriceTable, top: PriceTable) -> PriceTable:
    """``top`` laid over ``base``: a model either names is priced, by ``top`` when both do
    (a name ``top`` prices is no longer an alias of ``base``'s). What ``--prices FILE``
    does with the shipped table: a file may price only the models it adds or changes."""
    aliases = {k: v for k, v in base.aliases.items() if k not in top.models}
    return PriceTable(
        {**base.models, **top.models}, {**aliases, **top.aliases}, top.as_of or base.as_of
    )


def read_prices(path: str | os.PathLike[str]) -> PriceTable:
    """The price table in a JSON file (:func:`parse_prices`)."""
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise DataError(str(path), exc.strerror or str(exc)) from exc
    return parse_prices(data, source=str(path))


def default_prices() -> PriceTable:
    """The table shipped with sessiontree: Anthropic's list prices as of its ``asOf``."""
    data = resources.files("sessiontree.catalog").joinpath("prices.json").read_bytes()
    return parse_prices(data, source="sessiontree/catalog/prices.json")


# --- reading responses ---------------------------------------------------------------


class _UsageMessage(FactMessage, gc=False):
    usage: Any = msgspec.UNSET


class UsageFields(FactFields, gc=False):
    """What usage reads of an assistant record; its text, tool inputs and results are
    skipped, not decoded."""

    uuid: Any = msgspec.UNSET
    timestamp: Any = msgspec.UNSET
    requestId: Any = msgspec.UNSET
    sessionId: Any = msgspec.UNSET
    requestSessionId: Any = msgspec.UNSET
    forkedFrom: Any = msgspec.UNSET
    cwd: Any = msgspec.UNSET
    message: _UsageMessage | msgspec.UnsetType | None = msgspec.UNSET


@dataclass
class Tokens:
    """The token counts of one response (or a sum of them)."""

    input: int = 0
    output: int = 0
    cache_write: int = 0
    cache_write_1h: int = 0  # of cache_write, those for the 1-hour cache
    cache_read: int = 0

    def take_max(self, other: Tokens) -> None:
        self.input = max(self.input, other.input)
        self.output = max(self.output, other.output)
        self.cache_write = max(self.cache_write, other.cache_write)
        self.cache_write_1h = max(self.cache_write_1h, other.cache_write_1h)
        self.cache_read = max(self.cache_read, other.cache_read)

    def add(self, other: Tokens) -> None:
        self.input += other.input
        self.output += other.output
        self.cache_write += other.cache_write
        self.cache_write_1h += other.cache_write_1h
        self.cache_read += other.cache_read


@dataclass
class Response:
    """One API response, however many records hold it."""

    key: str
    model: str | None
    tokens: Tokens
    timestamp: str | None
    session_id: str
    project: str
    path: str  # the transcript the response is counted under
    #: The record is a copy another session's record was made from (a fork's).
    copied: bool = False

    @property
    def rank(self) -> tuple[str, bool, str]:
        """Which copy of a response counts: the earliest, then no copy, then the first
        path."""
        return (self.timestamp or "\uffff", self.copied, self.path)


def _count(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


def parse_tokens(usage: Mapping[str, Any]) -> Tokens:
    """The counts of a ``message.usage`` object (a missing or odd count is 0)."""
    write = _count(usage.get("cache_creation_input_tokens"))
    split = usage.get("cache_creation")
    hour = _count(split.get("ephemeral_1h_input_tokens")) if isinstance(split, dict) else 0
    return Tokens(
        input=_count(usage.get("input_tokens")),
        output=_count(usage.get("output_tokens")),
        cache_write=write,
        cache_write_1h=min(hour, write),
        cache_read=_count(usage.get("cache_read_input_tokens")),
    )


def parse_response(
    raw: Mapping[str, Any], *, session_id: str, project: str, path: str
) -> Response | None:
    """The response an assistant record holds (its part of it), or None: not an
    assistant record, no usage, or the ``<synthetic>`` model."""
    message = raw.get("message")
    if raw.get("type") != "assistant" or not isinstance(message, dict):
        return None
    usage = message.get("usage")
    model = message.get("model")
    if not isinstance(usage, dict) or model == SYNTHETIC_MODEL:
        return None
    key = next(
        (
            f"{kind}:{value}"
            for kind, value in (
                ("message", message.get("id")),
                ("request", raw.get("requestId")),
                ("record", raw.get("uuid")),
            )
            if isinstance(value, str) and value
        ),
        None,
    )
    if key is None:
        return None  # nothing to tell it from another response: not counted
    # A copy a fork made may still say which session sent the request (2.1.x clients:
    # ``requestSessionId``) or which one it was copied from (``forkedFrom``); else the
    # record's session, else the file's.
    forked = raw.get("forkedFrom")
    origin = forked.get("sessionId") if isinstance(forked, dict) else None
    sent_by, own = raw.get("requestSessionId"), raw.get("sessionId")
    sid = next(
        (v for v in (sent_by, origin, own) if isinstance(v, str) and v),
        session_id,
    )
    copied = isinstance(forked, dict) or (
        isinstance(sent_by, str) and bool(sent_by) and sent_by != own
    )
    cwd, timestamp = raw.get("cwd"), raw.get("timestamp")
    return Response(
        key=key,
        model=model if isinstance(model, str) else None,
        tokens=parse_tokens(usage),
        timestamp=timestamp if isinstance(timestamp, str) else None,
        session_id=sid,
        project=cwd if isinstance(cwd, str) and cwd else project,
        path=path,
        copied=copied,
    )


def merge_response(seen: dict[str, Response], response: Response) -> None:
    """Add one record's response to ``seen``: a key already there keeps the largest of
    each count and is counted under the copy :attr:`Response.rank` puts first."""
    known = seen.get(response.key)
    if known is None:
        seen[response.key] = response
        return
    known.tokens.take_max(response.tokens)
    if known.model is None:
        known.model = response.model
    if response.rank < known.rank:
        known.timestamp, known.session_id = response.timestamp, response.session_id
        known.project, known.path = response.project, response.path
        known.copied = response.copied


def iter_usage_files(
    layout: Layout,
    project_dirs: Iterable[Path] | None = None,
    problems: list[Problem] | None = None,
) -> Iterator[Path]:
    """Every transcript of the scope that may hold API responses: each ``.jsonl`` in a
    project folder (sessions, old-style ``agent-*.jsonl``) and in each session's
    ``subagents/`` folder. ``project_dirs`` None: every project of ``layout``. A
    ``.jsonl`` that is no regular file (a folder, a link) and a folder that cannot be
    listed are skipped, each an ``unreadable`` problem added to ``problems``."""
    folders = layout.iter_project_dirs() if project_dirs is None else project_dirs
    for folder in folders:
        for path in _jsonl_files(folder, problems):
            yield path
            yield from _jsonl_files(subagents_dir(path), problems)


def _jsonl_files(folder: Path, problems: list[Problem] | None) -> Iterator[Path]:
    try:
        entries = sorted(os.scandir(folder), key=lambda e: e.name)
    except (FileNotFoundError, NotADirectoryError):
        return
    except OSError as exc:
        _note(problems, read_failed(folder, exc))
        return
    for entry in entries:
        if not entry.name.endswith(".jsonl"):
            continue
        if entry.is_file(follow_symlinks=False):
            yield Path(entry.path)
        else:
            _note(problems, not_a_file(entry))


def _note(problems: list[Problem] | None, problem: Problem) -> None:
    if problems is not None:
        problems.append(problem)


def session_of(path: Path) -> str:
    """The session a transcript belongs to, when its records do not say: a subagent's is
    the folder it is in (``<session>/subagents/``), a session's its file name."""
    if path.parent.name == "subagents":
        return path.parent.parent.name
    return path.stem


def project_of(path: Path) -> str:
    return (path.parent.parent.parent if path.parent.name == "subagents" else path.parent).name


def add_responses(
    seen: dict[str, Response], path: Path, scan: Scan, lines_from: Path | LineSource
) -> None:
    """The responses of one transcript (its path, its scan, where its lines are read:
    the file, or the store), merged into ``seen`` (:func:`merge_response`)."""
    lines = [ln for ln in scan.lines if ln.skeleton and ln.skeleton.type == "assistant"]
    session_id, project, where = session_of(path), project_of(path), str(path)
    for record in iter_path_records(lines_from, lines, fields=UsageFields):
        response = parse_response(record.raw, session_id=session_id, project=project, path=where)
        if response is not None:
            merge_response(seen, response)


# --- the report ----------------------------------------------------------------------


@dataclass(frozen=True)
class ModelUsage:
    """The usage of one model within a row (``--breakdown``)."""

    model: str
    input_tokens: int
    output_tokens: int
    cache_write_tokens: int
    cache_read_tokens: int
    responses: int
    #: USD; None when the model has no price.
    cost_usd: float | None

    def as_json(self) -> dict[str, Any]:
        return {
            "model": self.model,
            "inputTokens": self.input_tokens,
            "outputTokens": self.output_tokens,
            "cacheReadTokens": self.cache_read_tokens,
            "cacheCreationTokens": self.cache_write_tokens,
            "costUSD": None if self.cost_usd is None else round(self.cost_usd, 6),
            "responses": self.responses,
        }


@dataclass(frozen=True)
class UsageRow:
    """The usage of one group (a day, week, month, billing block, session, project or
    model), or of all of them."""

    key: str
    input_tokens: int
    output_tokens: int
    cache_write_tokens: int
    cache_read_tokens: int
    responses: int
    #: USD; None when a model of the group has no price.
    cost_usd: float | None
    #: USD of the responses whose model has a price.
    known_cost_usd: float
    unpriced_models: tuple[str, ...] = ()
    #: Its models, the dearest first, those without a price last.
    models: tuple[ModelUsage, ...] = ()
    #: ``--by block``: the block (its times in the report's zone); None for the others.
    block: BillingBlock | None = None

    def as_json(self, *, breakdown: bool = False) -> dict[str, Any]:
        """The row as ``usage --json`` prints it (docs/CLI.md's keys, then added ones: a
        block's ``start``, ``end`` and ``active``; with ``breakdown``, ``models``)."""
        doc: dict[str, Any] = {
            "key": self.key,
            "inputTokens": self.input_tokens,
            "outputTokens": self.output_tokens,
            "cacheReadTokens": self.cache_read_tokens,
            "cacheCreationTokens": self.cache_write_tokens,
            "costUSD": None if self.cost_usd is None else round(self.cost_usd, 6),
            "knownCostUSD": round(self.known_cost_usd, 6),
            "responses": self.responses,
            "unpricedModels": list(self.unpriced_models),
        }
        if self.block is not None:
            doc["start"] = _iso(self.block.start)
            doc["end"] = _iso(self.block.end)
            doc["active"] = self.block.active
        if breakdown:
            doc["models"] = [model.as_json() for model in self.models]
        return doc


@dataclass(frozen=True)
class UsageReport:
    by: UsageBy
    since: date | None
    until: date | None
    rows: tuple[UsageRow, ...]
    total: UsageRow
    #: Models with tokens and no price, sorted.
    unpriced: tuple[str, ...]


def local_date(timestamp: str | None, tz: tzinfo | None) -> date | None:
    """The date of an ISO 8601 timestamp in ``tz`` (None: the process's local zone)."""
    moment = parse_moment(timestamp, tz)
    return None if moment is None else moment.astimezone(tz).date()


class LocalDays:
    """:func:`local_date` of many timestamps in ``tz``, worked out once an hour where the
    hour allows: the instants of an hour (UTC) share their date when its first and last
    instants have the same date and the same offset (a zone changes its offset months
    apart, and at whole minutes); an hour a local midnight falls in (a zone whose offset
    is no whole number of hours), or the zone's offset changes in, is worked out a
    timestamp at a time. 18,527 responses of 630 hours: 19 ms -> 9 (their local dates)."""

    def __init__(self, tz: tzinfo | None) -> None:
        self.tz = tz
        self._hours: dict[int, date | None] = {}  # (None: worked out a timestamp at a time)

    def of(self, timestamp: str | None) -> date | None:
        """The date of ``timestamp`` in the zone (:func:`local_date`)."""
        moment = parse_moment(timestamp, self.tz)
        if moment is None:
            return None
        if moment.tzinfo is UTC:  # (as transcripts write them: the quicker way)
            hour = (moment.toordinal() - _EPOCH_DAY) * 24 + moment.hour
        else:
            hour = (moment - _EPOCH) // _HOUR
        try:
            day = self._hours[hour]
        except KeyError:
            day = self._hours[hour] = self._whole_hour(hour)
        return moment.astimezone(self.tz).date() if day is None else day

    def _whole_hour(self, hour: int) -> date | None:
        """The date of every instant of the hour ``hour`` (hours since the epoch, UTC),
        or None if they may not share one."""
        start = _EPOCH + hour * _HOUR
        try:
            first, last = start.astimezone(self.tz), (start + _HOUR_END).astimezone(self.tz)
        except (OverflowError, ValueError, OSError):  # (an hour at the ends of time)
            return None
        if first.date() == last.date() and first.utcoffset() == last.utcoffset():
            return first.date()
        return None


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_EPOCH_DAY = _EPOCH.toordinal()
_HOUR = timedelta(hours=1)
_HOUR_END = _HOUR - timedelta(microseconds=1)  # (the hour's last instant)


def _iso(moment: datetime) -> str:
    return moment.isoformat(timespec="seconds")


_RELATIVE = re.compile(r"(\d+)d")


def parse_since(text: str, *, today: date) -> date:
    """A ``--since``/``--until`` value: ``YYYY-MM-DD``, or ``Nd``, the last N days with
    ``today`` (``1d`` is today, ``7d`` today and the 6 days before).
    :class:`~sessiontree.errors.Refused` for anything else."""
    relative = _RELATIVE.fullmatch(text.strip())
    if relative:
        days = int(relative.group(1))
        if days < 1:
            raise Refused(f"{text!r}: say 1d or more (1d is today)")
        return today - timedelta(days=days - 1)
    try:
        return date.fromisoformat(text.strip())
    except ValueError:
        raise Refused(f"{text!r} is no date: give YYYY-MM-DD or Nd (7d: the last 7 days)") from None


def _group_key(response: Response, by: UsageBy, day: date | None, first_weekday: int) -> str:
    if by in ("day", "week", "month"):
        if day is None:
            return NO_DATE
        if by == "week":
            return week_start(day, first_weekday=first_weekday).isoformat()
        return month_of(day) if by == "month" else day.isoformat()
    if by == "session":
        return response.session_id
    if by == "project":
        return response.project
    return response.model or "unknown"


@dataclass
class _Sum:
    """The summed tokens of some responses of one model, and how many."""

    tokens: Tokens = field(default_factory=Tokens)
    responses: int = 0


#: A group's usage by model.
_Models = dict[str | None, _Sum]


def build_usage_report(
    responses: Iterable[Response],
    *,
    by: UsageBy,
    prices: PriceTable,
    tz: tzinfo | None,
    since: date | None = None,
    until: date | None = None,
    first_weekday: int = 0,
    now: datetime | None = None,
) -> UsageReport:
    """The usage of ``responses`` grouped ``by`` day, week (its first day, weeks
    starting on ``first_weekday``: 0 Monday … 6 Sunday) or month of their date in
    ``tz``, by 5-hour billing block (:func:`~.usage_periods.cut_blocks`, active at
    ``now``, default the time now), session, project or model; rows sorted by key,
    blocks by time, ``unknown`` (no timestamp) last. Only those dated from ``since`` to
    ``until`` (both included) when either is given: a block by the date it starts, a
    block cut from every response (as it was billed), not from those of the dates."""

    def dated(day: date | None) -> bool:
        if not (since or until):
            return True
        return day is not None and not (since and day < since) and not (until and day > until)

    groups: dict[str, _Models] = {}
    spans: dict[str, BillingBlock] = {}
    if by == "block":
        undated: list[Response] = []
        timed: list[tuple[datetime, Response]] = []
        for response in responses:
            moment = parse_moment(response.timestamp, tz)
            if moment is None:
                undated.append(response)
            else:
                timed.append((moment, response))
        when = now if now is not None else datetime.now(UTC)
        for block, members in cut_blocks(timed, lambda pair: pair[0], now=when):
            start = block.start.astimezone(tz)
            if not dated(start.date()):
                continue
            key = _iso(start)
            end, last = block.end.astimezone(tz), block.last.astimezone(tz)
            spans[key] = BillingBlock(start, end, last, block.active)
            for _, response in members:
                _add(groups.setdefault(key, {}), response)
        if not (since or until):
            for response in undated:
                _add(groups.setdefault(NO_DATE, {}), response)
        order = sorted(groups, key=lambda k: (k not in spans, spans[k].start if k in spans else k))
    else:
        days = LocalDays(tz)
        for response in responses:
            day = days.of(response.timestamp)
            if dated(day):
                key = _group_key(response, by, day, first_weekday)
                _add(groups.setdefault(key, {}), response)
        order = sorted(groups)
    rows = tuple(_row(key, groups[key], prices, spans.get(key)) for key in order)
    everything: _Models = {}
    for models in groups.values():
        for model, part in models.items():
            whole = everything.setdefault(model, _Sum())
            whole.tokens.add(part.tokens)
            whole.responses += part.responses
    total = _row("total", everything, prices, None)
    return UsageReport(by, since, until, rows, total, total.unpriced_models)


def _add(models: _Models, response: Response) -> None:
    part = models.setdefault(response.model, _Sum())
    part.tokens.add(response.tokens)
    part.responses += 1


def _row(key: str, models: _Models, prices: PriceTable, block: BillingBlock | None) -> UsageRow:
    summed, known, unpriced = Tokens(), 0.0, set()
    parts = []
    for model, part in models.items():
        tokens = part.tokens
        summed.add(tokens)
        price = prices.price_for(model) if model else None
        cost = None if price is None else cost_of(tokens, price)
        if cost is None:
            unpriced.add(model or "unknown")
        else:
            known += cost
        parts.append(
            ModelUsage(
                model or "unknown",
                tokens.input,
                tokens.output,
                tokens.cache_write,
                tokens.cache_read,
                part.responses,
                cost,
            )
        )
    # The dearest first, those without a price last, then by name.
    parts.sort(key=lambda m: (m.cost_usd is None, -(m.cost_usd or 0.0), m.model))
    return UsageRow(
        key=key,
        input_tokens=summed.input,
        output_tokens=summed.output,
        cache_write_tokens=summed.cache_write,
        cache_read_tokens=summed.cache_read,
        responses=sum(part.responses for part in models.values()),
        cost_usd=None if unpriced else known,
        known_cost_usd=known,
        unpriced_models=tuple(sorted(unpriced)),
        models=tuple(parts),
        block=block,
    )


def cost_of(tokens: Tokens, price: Price) -> float:
    """USD of ``tokens`` at ``price``."""
    five_minute = tokens.cache_write - tokens.cache_write_1h
    return (
        tokens.input * price.input
        + tokens.output * price.output
        + five_minute * price.cache_write
        + tokens.cache_write_1h * price.cache_write_1h
        + tokens.cache_read * price.cache_read
    ) / 1_000_000
