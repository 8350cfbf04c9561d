"""Rendering sessions for people (rich): the conversation, and its tree of branches."""

from __future__ import annotations

from rich.console import Console
from rich.markup import escape

from sessiontree.conversation.transcript import Transcript
from sessiontree.model.records import Record
from sessiontree.views.shapes import is_shown

LINE = 110


def _one_line(text: str, limit: int = LINE) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def _label(record: Record) -> str:
    if record.type == "system" and record.subtype == "compact_boundary":
        return "[magenta]── compacted ──[/]"
    role = "tool" if record.is_tool_result else (record.type or "?")
    colour = {"user": "green", "assistant": "blue", "tool": "dim", "system": "yellow"}.get(
        role, "white"
    )
    return f"[{colour}]{role:>9}[/] {escape(_one_line(record.text()))}"


def render_show(out: Console, transcript: Transcript, *, all_branches: bool) -> None:
    """The conversation; with ``all_branches`` every record, rewound ones marked ○."""
    if not all_branches:
        for record in transcript.active_records():
            if is_shown(record):
                out.print(_label(record))
        return
    render_tree(out, transcript, only_turns=False)


def render_tree(out: Console, transcript: Transcript, *, only_turns: bool = True) -> None:
    """An indented tree: a chain stays flat, a fork point opens one branch per child.

    Only shown records (prompts, replies, boundaries; with ``only_turns`` not tool
    results) are printed; the branching between them is kept.
    """
    tree = transcript.tree
    on_path = set(transcript.active_path)
    records: dict[str, Record] = {
        r.uuid: r for r in transcript.iter_all_records() if r.uuid is not None
    }

    def wanted(uuid: str) -> bool:
        record = records.get(uuid)
        if record is None or record.is_sidechain or not is_shown(record):
            return False
        return not (only_turns and record.is_tool_result)

    roots = [
        u
        for u in tree.nodes
        if not tree.is_sidechain(u)
        and (tree.parent.get(u) is None or tree.parent[u] not in tree.nodes)
    ]
    roots.sort(key=lambda u: tree.nodes[u].number)
    fork_ids = {f.uuid for f in transcript.fork_points()}
    # Iterative depth-first walk: (uuid, indent). Transcripts can be 100k records deep.
    stack: list[tuple[str, str]] = [(r, "") for r in reversed(roots)]
    while stack:
        uuid, indent = stack.pop()
        if wanted(uuid):
            mark = "●" if uuid in on_path else ("·" if uuid in tree.compacted else "○")
            out.print(f"{indent}{mark} [dim]{uuid[:8]}[/] {_label(records[uuid])}")
        kids = tree.main_children(uuid)
        if len(kids) > 1:
            # Structural siblings that end there (a parallel call's result hanging on its
            # own call, an attachment) print before the record the chain goes on from.
            kids = sorted(kids, key=lambda kid: bool(tree.main_children(kid)))
        if uuid in fork_ids and len(kids) > 1:
            out.print(f"{indent}[bold yellow]⑂ {len(kids)} branches at {uuid[:8]}[/]")
            for kid in reversed(kids):
                stack.append((kid, indent + "  "))
        else:
            for kid in reversed(kids):
                stack.append((kid, indent))
    for agent in transcript.subagents():
        spawned = f" from tool_use {agent.tool_use_id}" if agent.tool_use_id else ""
        out.print(
            f"[cyan]subagent[/] {escape(agent.agent_id)} ({escape(agent.agent_type or '?')})"
            f"{escape(spawned)}: {escape(agent.description or '')}"
        )
    leaf = transcript.leaf
    out.print(
        f"[dim]leaf {leaf[:8] if leaf else '-'} · {len(transcript.active_path)} records on the "
        f"active path · {len(fork_ids)} fork point(s) · "
        f"{len(transcript.off_path_leaves())} off-path leaves[/]"
    )
    out.print("[dim]● active path   ○ rewound branch   · summarized by a compaction[/]")
