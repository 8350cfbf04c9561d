"""What each tool's output totals to, for ``python -m bench peers``: a peer's figures set
against sessiontree's (session counts, search hits and their sessions, tokens per day,
the bytes an export wrote). Pure: bytes in, numbers out."""

from __future__ import annotations

import json

MB = 1024 * 1024

#: A total by name: ``sessions``, ``hits``; a day (``YYYY-MM-DD``) for usage; ``bytes``.
Totals = dict[str, int]


def parse_sessiontree_sessions(out: bytes) -> Totals:
    return {"sessions": len(json.loads(out))}


def parse_agentsview_sessions(out: bytes) -> Totals:
    return {"sessions": len(json.loads(out)["sessions"])}


def parse_ccusage_sessions(out: bytes) -> Totals:
    return {"sessions": len(json.loads(out)["session"])}


def parse_sessiontree_hits(out: bytes) -> Totals:
    hits = json.loads(out)
    return {"hits": len(hits), "sessions": len({h["sessionId"] for h in hits})}


def parse_sessiontree_usage(out: bytes) -> Totals:
    return {
        row["key"]: row["inputTokens"]
        + row["outputTokens"]
        + row["cacheReadTokens"]
        + row["cacheCreationTokens"]
        for row in json.loads(out)
    }


def parse_ccusage_daily(out: bytes) -> Totals:
    return {
        row["period"]: row["inputTokens"]
        + row["outputTokens"]
        + row["cacheReadTokens"]
        + row["cacheCreationTokens"]
        for row in json.loads(out)["daily"]
    }


def parse_agentsview_daily(out: bytes) -> Totals:
    return {
        row["date"]: row["inputTokens"]
        + row["outputTokens"]
        + row["cacheReadTokens"]
        + row["cacheCreationTokens"]
        for row in json.loads(out)["daily"]
    }


def format_totals(task: str, totals: Totals | None) -> str:
    if totals is None:
        return ""
    if task.startswith("usage"):
        return f"{sum(totals.values()):,} tokens, {len(totals)} days"
    if set(totals) == {"bytes"}:
        return f"{totals['bytes'] / MB:.2f} MB written"
    return ", ".join(f"{value:,} {key}" for key, value in totals.items())


def compare_totals(task: str, ours: Totals | None, theirs: Totals | None) -> str:
    """Whether a peer's totals are sessiontree's: "yes", or how they differ."""
    if ours is None or theirs is None or "bytes" in theirs:
        return ""
    if ours == theirs:
        return "yes"
    if task.startswith("usage"):
        days = sorted(set(ours) | set(theirs))
        differ = sum(ours.get(d, 0) != theirs.get(d, 0) for d in days)
        mine, other = sum(ours.values()), sum(theirs.values())
        scale = f"{other / mine:.2f}x ours" if mine else f"{other:,} vs 0"
        return f"no: {differ} of {len(days)} days differ, tokens {scale}"
    parts = [
        f"{key} {theirs.get(key, 0):,} vs {ours.get(key, 0):,}"
        for key in ours
        if ours.get(key) != theirs.get(key)
    ]
    return "no: " + ", ".join(parts)
