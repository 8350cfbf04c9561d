"""The envelope every chain record carries, and the format's time stamps."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

JsonDict = dict[str, Any]

#: The client version whose shapes these builders reproduce.
CLIENT_VERSION = "2.1.328"


# -- time ------------------------------------------------------------------------------


def format_timestamp(moment: datetime) -> str:
    """``2026-11-29T19:16:27.352Z``: UTC, milliseconds, ``Z`` (naive means UTC)."""
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    utc = moment.astimezone(UTC)
    return utc.strftime("%Y-%m-%dT%H:%M:%S.") + f"{utc.microsecond // 1000:03d}Z"


def epoch_ms(moment: datetime) -> int:
    """Milliseconds since the epoch, as ``history.jsonl`` stores ``timestamp``."""
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return int(moment.timestamp() * 1000)


# -- the envelope shared by chain records ----------------------------------------------


@dataclass(frozen=True, kw_only=True)
class Envelope:
    """Who wrote a chain record: the fields every user/assistant/system/attachment carries.

    ``agent_id`` is set only for a subagent's sidechain transcript (its records then carry
    ``isSidechain: true`` and ``agentId``). ``slug`` and ``session_kind`` are written by the
    client only in some sessions (after compaction, in background sessions).
    """

    session_id: str
    cwd: str
    version: str = CLIENT_VERSION
    git_branch: str = "HEAD"
    user_type: str = "external"
    entrypoint: str = "cli"
    slug: str | None = None
    session_kind: str | None = None
    agent_id: str | None = None

    @property
    def is_sidechain(self) -> bool:
        return self.agent_id is not None


def _head(env: Envelope, parent_uuid: str | None) -> JsonDict:
    return {"parentUuid": parent_uuid, "isSidechain": env.is_sidechain}


def _agent(env: Envelope) -> JsonDict:
    return {"agentId": env.agent_id} if env.agent_id is not None else {}


def _echo(env: Envelope, echo: bool) -> JsonDict:
    """The snake_case ``session_id`` duplicate the client adds to some main-chain records."""
    return {"session_id": env.session_id} if echo and not env.is_sidechain else {}


def _tail(env: Envelope) -> JsonDict:
    tail: JsonDict = {
        "userType": env.user_type,
        "entrypoint": env.entrypoint,
        "cwd": env.cwd,
        "sessionId": env.session_id,
        "version": env.version,
        "gitBranch": env.git_branch,
    }
    if env.slug is not None:
        tail["slug"] = env.slug
    if env.session_kind is not None:
        tail["sessionKind"] = env.session_kind
    return tail
