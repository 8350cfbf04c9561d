"""Moments for people and for scripts: one rule for every command.

Text output shows a moment in the local time zone, with that zone's name or offset
(``2026-11-29 20:16 CET``); JSON gives ISO 8601 with an offset, UTC as ``Z`` (as the
client writes its own timestamps). A moment comes as the client stores it: an ISO 8601
string (records) or epoch milliseconds (``history.jsonl``).
"""

from __future__ import annotations

from datetime import UTC, datetime


def parse_moment(moment: str | float | None) -> datetime | None:
    """An aware datetime for a stored moment; None when there is none or it is no moment."""
    if moment is None or isinstance(moment, bool):
        return None
    try:
        if isinstance(moment, int | float):
            return datetime.fromtimestamp(moment / 1000, UTC)
        parsed = datetime.fromisoformat(moment)
    except (ValueError, OverflowError, OSError):
        return None
    return parsed if parsed.tzinfo is not None else parsed.replace(tzinfo=UTC)


def local_time(moment: str | float | None, *, seconds: bool = False) -> str:
    """``moment`` in the local time zone, with the zone: ``2026-11-29 20:16 CET`` (with
    ``seconds``, ``20:16:30``); ``""`` when there is none."""
    parsed = parse_moment(moment)
    if parsed is None:
        return ""
    local = parsed.astimezone()
    zone = local.tzname() or ""
    if not zone or zone[0] in "+-":  # no name for it: the offset, as +05:30
        offset = local.strftime("%z")
        zone = f"{offset[:3]}:{offset[3:]}" if offset else ""
    shown = local.strftime("%Y-%m-%d %H:%M:%S" if seconds else "%Y-%m-%d %H:%M")
    return f"{shown} {zone}".rstrip()


def iso_time(moment: str | float | None) -> str | None:
    """``moment`` as ISO 8601 in UTC with milliseconds and ``Z``; None when there is none."""
    parsed = parse_moment(moment)
    if parsed is None:
        return None
    utc = parsed.astimezone(UTC)
    return utc.strftime("%Y-%m-%dT%H:%M:%S.") + f"{utc.microsecond // 1000:03d}Z"
