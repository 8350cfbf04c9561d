"""When a response was: its day, week and month in a time zone, and the 5-hour billing
blocks responses fall into (ccusage's ``blocks``). Pure but for :func:`parse_timezone`,
which reads the zone's tzdata.

Blocks, by ccusage's rules: the responses in time order; a block starts at its first
response's time floored to the hour (the UTC hour: a block is when the API was used, the
same in every zone; the zone only changes how its times are written) and ends 5 hours
later; a response more than 5 hours after the block's start, or after the response
before it, starts a new block. A block is active while the next response could still
join it: less than 5 hours since its last response, and its end not reached.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta, tzinfo
from typing import TypeVar

from sessiontree.errors import Refused

#: How long a billing block lasts.
BLOCK_LENGTH = timedelta(hours=5)

#: The days a week may start on (``--start-of-week``), Monday first as ``date.weekday()``.
WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")

T = TypeVar("T")


def parse_timezone(name: str) -> tzinfo:
    """The IANA zone ``name`` (``Europe/Paris``, ``UTC``);
    :class:`~sessiontree.errors.Refused` if there is none of that name."""
    from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

    try:
        return ZoneInfo(name.strip())
    except (ZoneInfoNotFoundError, ValueError):
        # ValueError: a name that is no relative path (``/etc/x``, ``..``)
        raise Refused(
            f"{name!r} is no time zone: give an IANA name (Europe/Paris, America/New_York, UTC)"
        ) from None


def parse_moment(timestamp: str | None, tz: tzinfo | None) -> datetime | None:
    """An ISO 8601 timestamp as an aware time (one without an offset is in ``tz``; None:
    the process's local zone); None if there is none or it is no time."""
    if not timestamp:
        return None
    try:
        moment = datetime.fromisoformat(timestamp)
    except ValueError:
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=tz) if tz is not None else moment.astimezone()
    return moment


def week_start(day: date, *, first_weekday: int = 0) -> date:
    """The first day of the week ``day`` is in, weeks starting on ``first_weekday``
    (0 Monday, as ISO 8601, … 6 Sunday)."""
    return day - timedelta(days=(day.weekday() - first_weekday) % 7)


def month_of(day: date) -> str:
    """``YYYY-MM``."""
    return f"{day.year:04d}-{day.month:02d}"


@dataclass(frozen=True)
class BillingBlock:
    """One 5-hour block: its start and end (UTC), its last response's time, and whether
    it is still active at the time it was cut."""

    start: datetime
    end: datetime
    last: datetime
    active: bool


def cut_blocks(
    items: Iterable[T], when: Callable[[T], datetime], *, now: datetime
) -> list[tuple[BillingBlock, list[T]]]:
    """``items`` (each at the aware time ``when`` gives) in the blocks they fall into,
    oldest first, each block with its items in time order (see the module's rules);
    ``now`` says which block is active."""
    ordered = sorted(items, key=when)
    groups: list[tuple[datetime, list[T]]] = []
    for item in ordered:
        moment = when(item)
        if groups:
            start, members = groups[-1]
            if moment - start <= BLOCK_LENGTH and moment - when(members[-1]) <= BLOCK_LENGTH:
                members.append(item)
                continue
        hour = moment.astimezone(UTC).replace(minute=0, second=0, microsecond=0)
        groups.append((hour, [item]))
    blocks = []
    for start, members in groups:
        end, last = start + BLOCK_LENGTH, when(members[-1]).astimezone(UTC)
        active = now - last < BLOCK_LENGTH and now < end
        blocks.append((BillingBlock(start, end, last, active), members))
    return blocks
