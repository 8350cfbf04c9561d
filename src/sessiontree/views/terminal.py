"""Rendering sessions for people (rich): the conversation, and its tree of branches."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from sessiontree.conversation.transcript import Transcript
from sessiontree.model.branches import switchable_leaves
from sessiontree.model.context import Message
from sessiontree.model.records import Record
from sessiontree.model.resume import message_at_or_above
from sessiontree.model.tree import Tree
from sessiontree.views.shapes import is_shown
from sessiontree.views.text import printable, printable_line
from sessiontree.views.times import local_time

LINE = 110

#: Blocks printed per call by :func:`render_context` (see there).
_PRINT_BATCH = 512

#: Off-path leaves the footer of :func:`render_tree` names (``tree --json`` has them all).
_LEAVES_SHOWN = 10


def _shown(text: str) -> str:
    """Transcript text (an id, a name, a title) as rich markup: controls shown escaped,
    then markup escaped."""
    return escape(printable(text))


def _label(record: Record) -> str:
    if record.type == "system" and record.subtype == "compact_boundary":
        return "[magenta]── compacted ──[/]"
    role = "tool" if record.is_tool_result else (record.type or "?")
    colour = {"user": "green", "assistant": "blue", "tool": "dim", "system": "yellow"}.get(
        role, "white"
    )
    return f"[{colour}]{_shown(f'{role:>9}')}[/] {escape(printable_line(record.text(), LINE))}"


def render_tree(out: Console, transcript: Transcript, *, only_turns: bool = True) -> None:
    """An indented tree: a chain stays flat, a fork point opens one branch per child.

    Only shown records (prompts, replies, boundaries; with ``only_turns`` not tool
    results) are printed; the branching between them is kept.
    """
    tree = transcript.tree
    on_path = set(transcript.active_path)
    # One pass over the records, keeping only the label of each one printed (records
    # are never held: a large session's would take gigabytes).
    labels: dict[str, str] = {
        r.uuid: _label(r)
        for r in transcript.iter_all_records()
        if r.uuid is not None
        and not r.is_sidechain
        and is_shown(r)
        and not (only_turns and r.is_tool_result)
    }

    roots = [
        u
        for u in tree.nodes
        if not tree.is_sidechain(u)
        and (tree.parent.get(u) is None or tree.parent[u] not in tree.nodes)
    ]
    roots.sort(key=lambda u: tree.nodes[u].number)
    fork_ids = {f.uuid for f in transcript.fork_points()}
    seen: set[str] = set()

    def walk(start: str, note: str) -> None:
        # Iterative depth-first: (uuid, indent, lead). Transcripts can be 100k records
        # deep. ``lead`` draws a branch's first printed record (├─ or └─); the records
        # after it in that branch hang under │ (or nothing, in the last branch).
        stack: list[tuple[str, str, str | None]] = [(start, "", None)]
        while stack:
            uuid, indent, lead = stack.pop()
            if uuid in seen:
                continue  # a parent loop comes back here
            seen.add(uuid)
            label = labels.get(uuid)
            if label is not None:
                mark = "●" if uuid in on_path else ("·" if uuid in tree.compacted else "○")
                extra = note if uuid == start else ""
                prefix = indent if lead is None else lead
                out.print(f"{prefix}{mark} [dim]{_shown(uuid[:8])}[/] {label}{extra}")
                lead = None
            kids = tree.main_children(uuid)
            if len(kids) > 1:
                # Structural siblings that end there (a parallel call's result hanging on
                # its own call, an attachment) print before the record the chain goes on.
                kids = sorted(kids, key=lambda kid: bool(tree.main_children(kid)))
            if uuid in fork_ids and len(kids) > 1:
                where = indent if lead is None else lead
                out.print(f"{where}[bold yellow]⑂ {len(kids)} branches at {_shown(uuid[:8])}[/]")
                for position, kid in reversed(list(enumerate(kids))):
                    last = position == len(kids) - 1
                    branch = indent + ("   " if last else "│  ")
                    stack.append((kid, branch, indent + ("└─ " if last else "├─ ")))
            else:
                for kid in reversed(kids):
                    stack.append((kid, indent, lead))

    for root in roots:
        walk(root, "")
    # Records on a parent loop hang on no root: each loop is shown from its first record.
    for uuid in sorted(tree.nodes, key=lambda u: tree.nodes[u].number):
        if uuid not in seen and not tree.is_sidechain(uuid):
            walk(uuid, " [bold red](its parents loop: see doctor)[/]")
    for agent in transcript.subagents():
        spawned = f" from tool_use {agent.tool_use_id}" if agent.tool_use_id else ""
        out.print(
            f"[cyan]subagent[/] {_shown(agent.agent_id)} ({_shown(agent.agent_type or '?')})"
            f"{_shown(spawned)}: {_shown(agent.description or '')}"
        )
    leaf = transcript.leaf
    out.print(
        f"[dim]leaf {_shown(leaf[:8]) if leaf else '-'} · "
        f"{len(transcript.active_path)} records on the active path · "
        f"{len(fork_ids)} fork point(s) · "
        f"{len(transcript.off_path_leaves())} off-path leaves[/]"
    )
    switchable = switchable_leaves(transcript.tree, transcript.active_path)
    if switchable:
        ids = ", ".join(_leaf_id(tree, u) for u in switchable[:_LEAVES_SHOWN])
        more = len(switchable) - _LEAVES_SHOWN
        ids += f" and {more} more (tree --json)" if more > 0 else ""
        out.print(f"[dim]branches to switch to (switch SESSION --to LEAF): {ids}[/]")
    out.print("[dim]● active path   ○ rewound branch   · summarized by a compaction[/]")


def _leaf_id(tree: Tree, leaf: str) -> str:
    """A leaf's short id, with the message it resumes at when that is another record (a
    turn's end is not printed in the tree; its reply is)."""
    message = message_at_or_above(tree, leaf)
    if message is None or message == leaf:
        return _shown(leaf[:8])
    return f"{_shown(leaf[:8])} (at {_shown(message[:8])})"


def render_context(out: Console, messages: Iterable[Message]) -> None:
    """The messages resuming sends, block by block (text, tool calls and results)."""
    for message in messages:
        content = message["content"]
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
        out.rule(f"[bold]{_shown(str(message['role']))}[/]", align="left")
        # A print per few hundred blocks: rich takes ~40 us a call, and a damaged line can
        # hold a million small blocks (a 37 MB line printed block by block took a minute;
        # in one print, 1.5 GB).
        shown: list[str] = []
        for block in blocks:
            kind = block.get("type")
            if kind == "text":
                shown.append(_shown(str(block.get("text", ""))))
            elif kind == "tool_use":
                name, call = _shown(str(block.get("name"))), _shown(str(block.get("id")))
                shown.append(f"[cyan]tool_use[/] {name} {call}")
            elif kind == "tool_result":
                shown.append(f"[cyan]tool_result[/] {_shown(str(block.get('tool_use_id')))}")
            else:  # escaped whole: rich read "[image]" as a style and printed nothing
                shown.append(_shown(f"[{kind}]"))
            if len(shown) >= _PRINT_BATCH:
                out.print("\n".join(shown))
                shown.clear()
        if shown:
            out.print("\n".join(shown))


def render_prompts(out: Console, rows: list[dict[str, Any]]) -> None:
    """The rewind list as a table: ``prompts_json`` rows, marked on or off the path, each
    active-path prompt with its number (what ``--to`` takes)."""
    table = Table(box=None, pad_edge=False)
    table.add_column("#", no_wrap=True, justify="right")
    for name in ("", "prompt", "time", "code"):
        table.add_column(name, no_wrap=True)
    table.add_column("text", no_wrap=True, overflow="ellipsis", max_width=max(20, out.width - 38))
    for row in rows:
        table.add_row(
            "" if row["number"] is None else str(row["number"]),
            "●" if row["onActivePath"] else ("·" if row["compacted"] else "○"),
            str(row["uuid"])[:8],
            local_time(row["timestamp"], seconds=True)[11:],
            ("gone" if row.get("checkpointGone") else "yes") if row["checkpoint"] else "",
            escape(" ".join(printable(str(row["text"])).split())[:100]),
        )
    out.print(table)
    out.print("● on the active path   ○ on a rewound branch   · summarized by a compaction")
    out.print("# the number PROMPT arguments take (--to 2; -1 is the last)")
    if any(row.get("checkpointGone") for row in rows):
        out.print("code gone: the client pruned that checkpoint's backups (it keeps its newest)")
