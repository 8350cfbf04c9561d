"""Rendering sessions for people (rich): the conversation, and its tree of branches."""

from __future__ import annotations

from collections.abc import Collection, Iterable
from typing import Any

from rich.cells import cell_len
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from sessiontree.conversation.transcript import Transcript
from sessiontree.model.branches import newest_leaves, summarized, switchable_leaves
from sessiontree.model.context import Message
from sessiontree.model.records import Record
from sessiontree.model.resume import message_at_or_above
from sessiontree.model.tree import Tree
from sessiontree.views.cells import fit
from sessiontree.views.marks import COMPACTION, LEGEND, mark
from sessiontree.views.reader import record_line
from sessiontree.views.shapes import is_shown
from sessiontree.views.text import printable, printable_line
from sessiontree.views.times import local_time

#: Blocks printed per call by :func:`render_context` (see there).
_PRINT_BATCH = 512

#: Off-path leaves the footer of :func:`render_tree` names (``tree --json`` has them all).
_LEAVES_SHOWN = 10


def _shown(text: str) -> str:
    """Transcript text (an id, a name, a title) as rich markup: controls shown escaped,
    then markup escaped."""
    return escape(printable(text))


#: Cells before a tree line's text: its mark, short id and role (``● 1a2b3c4d      user ``).
_LINE_HEAD = 2 + 9 + 10
#: Cells a tree line's text keeps however deep its branch (it overflows past that).
_MIN_TEXT = 16

_COLOURS = {"user": "green", "assistant": "blue", "tool": "dim", "system": "yellow"}


def _line(record: Record, limit: int, calls: dict[str, str]) -> tuple[str, str]:
    """A tree line's role and text (plain, cut to ``limit``): :func:`record_line`."""
    if record.type == "system" and record.subtype == "compact_boundary":
        return "", COMPACTION
    role = "tool" if record.is_tool_result else (record.type or "?")
    return role, record_line(record, limit, calls)


def render_tree(out: Console, transcript: Transcript, *, only_turns: bool = True) -> None:
    """An indented tree: a chain stays flat, a fork point opens one branch per child;
    each line fits the console's width (its text cut, with an ellipsis).

    Only shown records (prompts, replies, boundaries; with ``only_turns`` not tool
    results) are printed, the branching between them kept: a fork at a record not shown
    (a turn's ``turn_duration`` note, say) is named by the shown record above it. A tool
    call shows as what it acts on, a result after its tool's name
    (:func:`~sessiontree.views.reader.record_line`).
    """
    tree = transcript.tree
    on_path = set(transcript.active_path)
    away = summarized(tree, transcript.active_path)
    # One pass over the records, keeping only the line of each one printed (records
    # are never held: a large session's would take gigabytes).
    lines: dict[str, tuple[str, str]] = {}
    calls: dict[str, str] = {}  # tool call id -> tool name
    callers: dict[str, str] = {}  # tool call id -> the record holding the call
    for r in transcript.iter_all_records():
        if r.uuid is None:
            continue
        if r.type == "assistant" and not isinstance(r.content, str):
            for block in r.content:
                if isinstance(block, dict) and block.get("type") == "tool_use":
                    calls[str(block.get("id"))] = str(block.get("name", "?"))
                    callers[str(block.get("id"))] = r.uuid
        if r.is_sidechain or not is_shown(r) or (only_turns and r.is_tool_result):
            continue
        lines[r.uuid] = _line(r, out.width, calls)

    roots = [
        u
        for u in tree.nodes
        if not tree.is_sidechain(u)
        and (tree.parent.get(u) is None or tree.parent[u] not in tree.nodes)
    ]
    roots.sort(key=lambda u: tree.nodes[u].number)
    fork_ids = {f.uuid for f in transcript.fork_points()}
    seen: set[str] = set()

    def shown_at_or_above(uuid: str) -> str:
        current: str | None = uuid
        walked: set[str] = set()
        while current is not None and current not in walked:
            if current in lines:
                return current
            walked.add(current)
            current = tree.parent.get(current)
        return uuid

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
            line = lines.get(uuid)
            if line is not None:
                sign = mark(on_path=uuid in on_path, summarized=uuid in away)
                extra = note if uuid == start else ""
                prefix = indent if lead is None else lead
                room = max(out.width - cell_len(prefix) - _LINE_HEAD, _MIN_TEXT)
                role, text = line
                if not role:  # a compaction
                    shown = f"[magenta]{escape(fit(text, room + 10))}[/]"
                else:
                    colour = _COLOURS.get(role, "white")
                    shown = f"[{colour}]{escape(f'{role:>9}')}[/] {escape(fit(text, room))}"
                out.print(f"{prefix}{sign} [dim]{_shown(uuid[:8])}[/] {shown}{extra}")
                lead = None
            kids = tree.main_children(uuid)
            if len(kids) > 1:
                # Structural siblings that end there (a parallel call's result hanging on
                # its own call, an attachment) print before the record the chain goes on.
                kids = sorted(kids, key=lambda kid: bool(tree.main_children(kid)))
            if uuid in fork_ids and len(kids) > 1:
                where = indent if lead is None else lead
                at = _shown(shown_at_or_above(uuid)[:8])
                out.print(f"{where}[bold yellow]⑂ {len(kids)} branches from {at}[/]")
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
        caller = callers.get(agent.tool_use_id or "")
        spawned = f" called at {caller[:8]}" if caller else ""
        said = f"subagent {agent.agent_id} ({agent.agent_type or '?'}){spawned}"
        said = printable_line(f"{said}: {agent.description or ''}", out.width)
        out.print(f"[cyan]{escape(fit(said, out.width))}[/]")
    leaf = transcript.leaf
    out.print(
        f"[dim]leaf {_shown(leaf[:8]) if leaf else '-'} · "
        f"{len(transcript.active_path)} records on the active path · "
        f"{len(fork_ids)} fork point(s) · "
        f"{len(transcript.off_path_leaves())} off-path leaves[/]",
        soft_wrap=False,
    )
    switchable = switchable_leaves(transcript.tree, transcript.active_path)
    if switchable:
        ids = ", ".join(_leaf_id(tree, u) for u in switchable[:_LEAVES_SHOWN])
        more = len(switchable) - _LEAVES_SHOWN
        ids += f" and {more} more (tree --json)" if more > 0 else ""
        out.print(f"[dim]branches to switch to (switch SESSION --to ID): {ids}[/]", soft_wrap=False)
    out.print(f"[dim]{LEGEND}[/]", soft_wrap=False)


def _leaf_id(tree: Tree, leaf: str) -> str:
    """A leaf as ``switch --to`` takes it, by a record the tree prints: the message it
    resumes at, which stands for its newest leaf (a turn's ``turn_duration`` note ends
    a turn, and is not printed); the leaf's own id, with that message, when the message
    has a newer leaf below it."""
    message = message_at_or_above(tree, leaf)
    if message is None or message == leaf:
        return _shown(leaf[:8])
    if newest_leaves(tree).get(message) == leaf:
        return _shown(message[:8])
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


def render_prompts(
    out: Console, rows: list[dict[str, Any]], away: Collection[str] = frozenset()
) -> None:
    """The rewind list as a table that fits the console: ``prompts_json`` rows, marked
    on the active path, rewound, or summarized by a compaction (``compacted``, or in
    ``away``: :func:`~sessiontree.model.branches.summarized`), each active-path prompt
    with its number (what ``--to`` takes); the text takes the room left, cut with an
    ellipsis."""
    cells = [
        (
            "" if row["number"] is None else str(row["number"]),
            mark(on_path=row["onActivePath"], summarized=row["compacted"] or row["uuid"] in away),
            str(row["uuid"])[:8],
            local_time(row["timestamp"], seconds=True)[11:],
            ("gone" if row.get("checkpointGone") else "yes") if row["checkpoint"] else "",
        )
        for row in rows
    ]
    texts = [" ".join(printable(str(row["text"])[:400]).split()) for row in rows]
    names = ("#", "", "prompt", "time", "code")
    widths = [
        max([cell_len(name), *(cell_len(c[i]) for c in cells)]) for i, name in enumerate(names)
    ]
    # The text takes the room left (2 cells between columns), at least _MIN_TEXT.
    room = out.width - sum(widths) - 2 * len(widths)
    text_width = min(max(room, _MIN_TEXT), max(map(cell_len, ["text", *texts])))
    table = Table(box=None, pad_edge=False)
    for i, (name, width) in enumerate(zip(names, widths, strict=True)):
        table.add_column(name, no_wrap=True, width=width, justify="right" if i == 0 else "left")
    table.add_column("text", no_wrap=True, overflow="ellipsis", width=text_width)
    for fixed, text in zip(cells, texts, strict=True):
        table.add_row(*fixed, escape(text))
    out.print(table)
    out.print(LEGEND)
    out.print("# the number PROMPT arguments take (--to 2; -1 is the last)", soft_wrap=False)
    if any(row.get("checkpointGone") for row in rows):
        out.print(
            "code gone: the client pruned that checkpoint's backups (it keeps its newest)",
            soft_wrap=False,
        )
