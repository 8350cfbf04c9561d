"""A transcript in the store, read as a file is: the same :class:`Transcript`, its phase
one the skeletons its sync made with the engine's scan, its phase two the lines fetched
by offset. Tree, active path, context and every view then run on it unchanged."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from sessiontree.conversation.transcript import Subagent, Transcript
from sessiontree.model.tree import build_tree
from sessiontree.storage.store.reads import (
    StoredLines,
    StoredSource,
    current_sources,
    read_blob,
    read_scan,
    session_artifacts,
)

if TYPE_CHECKING:
    import psycopg


def open_stored(conn: psycopg.Connection[Any], source: StoredSource) -> Transcript:
    """The transcript of a stored source, as :meth:`Transcript.open` reads a file."""
    scan = read_scan(conn, source)
    tree = build_tree(str(source.path), scan.lines)
    transcript = Transcript(
        path=source.path, scan=scan, tree=tree, reader=StoredLines(conn, source)
    )
    if source.kind == "transcript" and source.session_id is not None:
        transcript.subagent_list = stored_subagents(conn, source)
    return transcript


def stored_subagents(conn: psycopg.Connection[Any], source: StoredSource) -> list[Subagent]:
    """The subagent transcripts the store holds of a session, from the same machine and
    root, with what their ``.meta.json`` said (as :meth:`Transcript.subagents`)."""
    assert source.session_id is not None
    folder = source.path.with_suffix("") / "subagents"
    metas = {
        a.rel_path: a
        for a in session_artifacts(conn, source.machine_id, source.root, source.session_id)
        if a.kind == "agent-meta"
    }
    found = []
    for sub in current_sources(conn, kinds=("subagent",), session_ids=[source.session_id]):
        if sub.machine_id != source.machine_id or sub.root != source.root:
            continue
        path = Path(sub.root) / sub.rel_path
        if path.parent != folder or not path.name.startswith("agent-"):
            continue
        artifact = metas.get(sub.rel_path[: -len(".jsonl")] + ".meta.json")
        found.append(
            Subagent.of(path, None if artifact is None else read_blob(conn, artifact.sha256))
        )
    found.sort(key=lambda s: s.path)
    return found
