"""A seeded mutation fuzzer for every read face: damaged copies of the real-client fixtures.

Each case copies one fixture's config root, damages one of its transcripts (one to three
mutations, the kinds people's files really suffer: a crash mid-write, NUL blocks, flipped
bytes, invalid UTF-8, hand edits that give fields the wrong type, sync tools that nest or
cut lines, hostile checkpoint entries), adds an untouched session from another fixture,
and runs every read face over the store, through the library and through the CLI. It
asserts:

* nothing raises but a :class:`~sessiontree.errors.SessionTreeError`; a CLI error is one
  line on stderr and a non-zero exit, never a traceback;
* the listing still shows every session, the damaged one and the untouched one;
* ``doctor`` reports each injected damage (kind, and line where the damage has one);
* a record the skeleton scan kept is never dropped by the full decode.

Deterministic: case ``n`` uses ``random.Random(SEED + n)``. 300 cases by default;
``SESSIONTREE_FUZZ_CASES=5000 pytest tests/storage/test_fuzz_read.py`` runs more, and
``SESSIONTREE_FUZZ_SEED`` picks another seed. A failure names its case; rerun it with
``-k 'case_0042'``.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import uuid as uuid_module
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from sessiontree.catalog.index import list_sessions
from sessiontree.catalog.search import search_transcript
from sessiontree.checkpoints.drift import find_drift
from sessiontree.checkpoints.read import read_checkpoints
from sessiontree.checkpoints.restore import plan_restore
from sessiontree.cli.main import cli
from sessiontree.conversation.transcript import Transcript
from sessiontree.doctor import check_transcript
from sessiontree.errors import SessionTreeError
from sessiontree.model.records import Problem
from sessiontree.storage.layout import Layout
from sessiontree.views.export import iter_html, iter_json, iter_markdown
from sessiontree.views.shapes import prompts_json, show_json, tree_json
from tests.conftest import copy_writable

CASES = int(os.environ.get("SESSIONTREE_FUZZ_CASES", "300"))
SEED = int(os.environ.get("SESSIONTREE_FUZZ_SEED", "20261201"))
FIXTURE_DIRS = sorted((Path(__file__).parents[1] / "fixtures").glob("claude-code-2.1.328*"))
HOMES = sorted(h for d in FIXTURE_DIRS for h in d.glob("*/claude-home"))
#: (config root, transcript) for every top-level session of the fixtures.
TARGETS = [(home, path) for home in HOMES for path in sorted(home.glob("projects/*/*.jsonl"))]
#: Subagent transcripts (all sidechain): damaged too, though no listing shows them.
TARGETS += [
    (home, path) for home in HOMES for path in sorted(home.glob("projects/*/*/subagents/*.jsonl"))
]


@dataclass
class Expect:
    """A damage doctor must report: its kinds (any one will do) and, if known, its line."""

    what: str
    kinds: frozenset[str]
    line: int | None


class Damage:
    """The lines of one transcript (newline stripped), mutated in place, and what to expect."""

    def __init__(self, data: bytes, rng: random.Random) -> None:
        self.lines = data.split(b"\n")
        self.ends_with_newline = self.lines[-1] == b""
        if self.ends_with_newline:
            self.lines.pop()
        self.rng = rng
        self.touched: set[int] = set()
        self.expected: list[Expect] = []
        self.kept_uuids: set[str] = set()  # records the full decode must not drop
        self.torn = False

    def data(self) -> bytes:
        body = b"\n".join(self.lines)
        return body if self.torn or not self.ends_with_newline else body + b"\n"

    def parsed(self, index: int) -> dict[str, Any] | None:
        try:
            value = json.loads(self.lines[index])
        except (ValueError, RecursionError):
            return None
        return value if isinstance(value, dict) else None

    def pick(self, want: Callable[[dict[str, Any]], bool]) -> tuple[int, dict[str, Any]] | None:
        """A random untouched line whose record satisfies ``want``."""
        candidates = [
            i
            for i in range(len(self.lines))
            if i not in self.touched and (r := self.parsed(i)) is not None and want(r)
        ]
        if not candidates:
            return None
        index = self.rng.choice(candidates)
        record = self.parsed(index)
        assert record is not None
        return index, record

    def put(self, index: int, line: bytes, what: str, kinds: set[str] | None, *, at: bool) -> None:
        assert b"\n" not in line
        self.lines[index] = line
        self.touched.add(index)
        if kinds is not None:
            self.expected.append(Expect(what, frozenset(kinds), index + 1 if at else None))

    def append(self, line: bytes, what: str, kinds: set[str]) -> None:
        self.lines.append(line)
        self.touched.add(len(self.lines) - 1)
        self.expected.append(Expect(what, frozenset(kinds), len(self.lines)))


def encode(record: dict[str, Any]) -> bytes:
    return json.dumps(record, ensure_ascii=False, separators=(",", ":")).encode()


def is_chain(record: dict[str, Any]) -> bool:
    return isinstance(record.get("uuid"), str) and record.get("type") in (
        "user",
        "assistant",
        "system",
        "attachment",
        "progress",
    )


def is_message(record: dict[str, Any]) -> bool:
    return is_chain(record) and record.get("type") in ("user", "assistant")


# -- mutations: each damages one line (or appends one) and says what doctor must report ---


def truncate(d: Damage) -> None:
    found = d.pick(lambda r: True)
    if found:
        index, _ = found
        line = d.lines[index]
        cut = d.rng.randint(1, len(line) - 1)
        d.put(index, line[:cut], "truncated line", {"bad-json", "bad-utf8"}, at=True)


def torn_tail(d: Damage) -> None:
    index = len(d.lines) - 1
    if index in d.touched or len(d.lines[index]) < 2:
        return
    line = d.lines[index]
    d.put(index, line[: d.rng.randint(1, len(line) - 1)], "torn last line", {"torn-line"}, at=True)
    d.torn = True


def nul_block(d: Damage) -> None:
    found = d.pick(lambda r: True)
    if found:
        index, _ = found
        line = d.lines[index]
        at = d.rng.randint(0, len(line))
        nuls = b"\x00" * d.rng.choice([1, 7, 512, 4096])
        d.put(index, line[:at] + nuls + line[at:], "NUL block", {"nul-bytes"}, at=True)


def flip_bytes(d: Damage) -> None:
    found = d.pick(lambda r: True)
    if found:
        index, _ = found
        line = bytearray(d.lines[index])
        for _ in range(d.rng.randint(1, 4)):
            line[d.rng.randrange(len(line))] = d.rng.choice([b for b in range(256) if b != 10])
        d.put(index, bytes(line), "flipped bytes", None, at=True)  # may be harmless


def invalid_utf8(d: Damage) -> None:
    found = d.pick(lambda r: True)  # chain and metadata records alike
    if found:
        index, record = found
        record["fuzzNote"] = "\ue000MARK\ue000"
        line = encode(record).replace("\ue000MARK\ue000".encode(), b"ok \xff\xfe\xc3 end")
        d.put(index, line, "invalid UTF-8 in a field", {"bad-utf8"}, at=True)


def deep_nesting(d: Damage) -> None:
    found = d.pick(lambda r: True)
    if found:
        index, record = found
        depth = d.rng.choice([2_000, 10_000, 30_000])
        body = encode(record)
        line = body[:-1] + b',"fuzzDeep":' + b"[" * depth + b"]" * depth + b"}"
        d.put(index, line, f"nesting {depth} deep", {"too-deep"}, at=True)


def first_prompt(d: Damage) -> tuple[int, dict[str, Any]] | None:
    """The first user record: where a listing looks for a session's title."""
    for index in range(len(d.lines)):
        record = d.parsed(index)
        if record is not None and record.get("type") == "user":
            if index in d.touched or not isinstance(record.get("message"), dict):
                return None
            return index, record
    return None


def wrong_content(d: Damage) -> None:
    found = None
    if d.rng.random() < 0.5:
        found = first_prompt(d)
    found = found or d.pick(lambda r: is_message(r) and isinstance(r.get("message"), dict))
    if found:
        index, record = found
        record["message"]["content"] = d.rng.choice(
            [7, None, True, {"type": "text"}, ["text", 3, None, {"type": "text", "text": "x"}]]
        )
        d.put(index, encode(record), "content of the wrong type", {"bad-field"}, at=True)
        d.kept_uuids.add(record["uuid"])


def wrong_message(d: Damage) -> None:
    found = d.pick(is_message)
    if found:
        index, record = found
        if d.rng.random() < 0.5:
            del record["message"]
            d.put(index, encode(record), "no message", {"bad-field"}, at=True)
            d.kept_uuids.add(record["uuid"])
        else:
            record["message"] = "a string"
            d.put(index, encode(record), "message a string", {"bad-field", "bad-shape"}, at=True)


def bad_timestamp(d: Damage) -> None:
    found = d.pick(lambda r: is_chain(r) and "timestamp" in r)
    if found:
        index, record = found
        record["timestamp"] = d.rng.choice(["yesterday", "2025-13-45T99:99:99Z", "", 12345])
        d.put(index, encode(record), "unparseable timestamp", {"bad-field", "bad-shape"}, at=True)


def parent_deleted(d: Damage) -> None:
    found = d.pick(lambda r: is_chain(r) and isinstance(r.get("parentUuid"), str))
    if found:
        index, record = found
        del record["parentUuid"]
        d.put(index, encode(record), "parentUuid deleted", {"missing-parent-key"}, at=True)
        d.kept_uuids.add(record["uuid"])


def parent_self(d: Damage) -> None:
    found = d.pick(is_chain)
    if found:
        index, record = found
        record["parentUuid"] = record["uuid"]
        d.put(index, encode(record), "parent is itself", {"cycle"}, at=False)


def huge_number(d: Damage) -> None:
    found = d.pick(lambda r: True)
    if found:
        index, record = found
        line = b'{"fuzzCost":1e999,' + encode(record)[1:]
        d.put(index, line, "1e999", {"bad-number"}, at=True)
        if is_chain(record):
            d.kept_uuids.add(record["uuid"])


def many_blocks(d: Damage) -> None:
    found = d.pick(lambda r: is_message(r) and isinstance(r.get("message"), dict))
    if found:
        index, record = found
        count = d.rng.choice([1_000, 20_000])
        record["message"]["content"] = [{"type": "text", "text": "x"}] * count
        d.put(index, encode(record), f"{count} content blocks", None, at=True)


ODD_VALUES: list[Any] = [7, -1.5, "x", "", None, True, [], {}, [1, "a", None, []], {"type": 7}]


def retype_field(d: Damage) -> None:
    """Any field, at any depth, given a value of another type (a crash probe: a wrong type
    in a field no reader relies on is harmless, so nothing is expected of doctor)."""
    found = d.pick(lambda r: True)
    if not found:
        return
    index, record = found
    holder: Any = record
    for _ in range(d.rng.randint(1, 5)):
        keys = list(holder) if isinstance(holder, dict) else list(range(len(holder)))
        if not keys:
            break
        key = d.rng.choice(keys)
        if isinstance(holder[key], (dict, list)) and holder[key] and d.rng.random() < 0.6:
            holder = holder[key]
            continue
        holder[key] = d.rng.choice(ODD_VALUES)
        break
    d.put(index, encode(record), "a field retyped", None, at=True)


def reflow(d: Damage) -> None:
    """A sync tool's damage to the lines themselves: two lines run together, one cut in
    two, a block of lines lost or repeated. Line numbers shift, so it runs alone and
    expects nothing of doctor: a crash probe."""
    if len(d.lines) < 3:
        return
    index = d.rng.randrange(len(d.lines) - 1)
    how = d.rng.choice(["join", "split", "drop", "repeat"])
    if how == "join":
        d.lines[index : index + 2] = [d.lines[index] + d.lines[index + 1]]
    elif how == "split":
        line = d.lines[index]
        cut = d.rng.randint(0, len(line))
        d.lines[index : index + 1] = [line[:cut], line[cut:]]
    elif how == "drop":
        del d.lines[index : index + d.rng.randint(1, 10)]
    else:
        d.lines[index:index] = d.lines[index : index + d.rng.randint(1, 10)]


def garbage_line(d: Damage) -> None:
    found = d.pick(lambda r: True)
    if found:
        index, _ = found
        line = d.rng.choice([b"[1,2]", b'"text"', b"3", b"null"])
        d.put(index, line, "not an object", {"bad-shape"}, at=True)


def bad_last_prompt(d: Damage) -> None:
    records = [r for i in range(len(d.lines)) if (r := d.parsed(i)) is not None]
    # In a subagent's own transcript every record is a sidechain one: its main chain.
    all_side = all(r.get("isSidechain") is True for r in records if is_chain(r))
    odd = [
        r["uuid"]
        for r in records
        if is_chain(r)
        and (
            (r.get("isSidechain") is True and not all_side)
            or (r.get("type") == "system" and r.get("subtype") != "turn_duration")
            or r.get("type") == "progress"
        )
    ]
    session = next((r["sessionId"] for r in records if isinstance(r.get("sessionId"), str)), "s")
    leaf = d.rng.choice(odd) if odd and d.rng.random() < 0.7 else str(uuid_module.uuid4())
    line = encode(
        {"type": "last-prompt", "lastPrompt": "x", "leafUuid": leaf, "sessionId": session}
    )
    d.append(line, "last-prompt naming a non-message", {"bad-last-prompt"})


HOSTILE_ENTRIES: list[tuple[str, Any]] = [
    ("../../etc/passwd", "0123456789abcdef@v1"),
    ("/etc/passwd", "0123456789abcdef@v1"),
    ("notes\nfake.txt", "0123456789abcdef@v1"),
    ("nul\x00.txt", "0123456789abcdef@v1"),
    ("fine.txt", "../../../x@v1"),
    ("fine.txt", "/tmp/" + "a" * 400),
    ("fine.txt", "a" * 300 + "@v1"),
    ("fine.txt", 7),
    ("fine.txt", "name\nwith newline@v1"),
]


def hostile_snapshot(d: Damage) -> None:
    found = d.pick(
        lambda r: r.get("type") == "file-history-snapshot" and isinstance(r.get("snapshot"), dict)
    )
    if found:
        index, record = found
        path, name = d.rng.choice(HOSTILE_ENTRIES)
        tracked = record["snapshot"].setdefault("trackedFileBackups", {})
        if not isinstance(tracked, dict):
            return
        tracked[path] = {"backupFileName": name, "version": 1, "backupTime": "2026-01-01T00:00:00Z"}
        d.put(
            index, encode(record), f"hostile entry {path!r}: {name!r}", {"hostile-path"}, at=False
        )


def compact_self_link(d: Damage) -> None:
    found = d.pick(lambda r: r.get("subtype") == "compact_boundary" and is_chain(r))
    if found:
        index, record = found
        record["logicalParentUuid"] = record["uuid"]
        d.put(index, encode(record), "boundary names itself", {"self-link"}, at=True)


def hidden_cycle(d: Damage) -> None:
    """The preserved segment's head hung on its own tail: a stored loop the re-link hides."""
    boundaries = [
        r
        for i in range(len(d.lines))
        if (r := d.parsed(i)) is not None and r.get("subtype") == "compact_boundary"
    ]
    if not boundaries:
        return
    segment = (boundaries[-1].get("compactMetadata") or {}).get("preservedSegment") or {}
    head, tail = segment.get("headUuid"), segment.get("tailUuid")
    found = d.pick(lambda r: r.get("uuid") == head and is_chain(r))
    if found and isinstance(tail, str):
        index, record = found
        record["parentUuid"] = tail
        d.put(index, encode(record), "cycle hidden by the re-link", {"cycle"}, at=False)


MUTATIONS: list[Callable[[Damage], None]] = [
    truncate,
    torn_tail,
    nul_block,
    flip_bytes,
    invalid_utf8,
    deep_nesting,
    wrong_content,
    wrong_message,
    bad_timestamp,
    parent_deleted,
    parent_self,
    huge_number,
    many_blocks,
    garbage_line,
    retype_field,
    retype_field,
    retype_field,
    bad_last_prompt,
    reflow,
    hostile_snapshot,
    compact_self_link,
    hidden_cycle,
]


# -- damage beside the transcripts: what a listing, doctor or history also reads -------


def damage_store(root: Path, rng: random.Random) -> None:
    """Garbage and deep nesting in the files around the transcripts (subagent metadata,
    history.jsonl, a live-session entry, settings.json), each with some chance."""
    deep = b"[" * 20_000 + b"]" * 20_000
    garbage = [deep, b"{not json", b"\xff\xfe", b"[1,2]", b"null", b'{"agentType":7}']
    for meta in root.rglob("agent-*.meta.json"):
        if rng.random() < 0.5:
            meta.write_bytes(rng.choice(garbage))
    history = root / "history.jsonl"
    if history.is_file() and rng.random() < 0.3:
        lines = history.read_bytes().split(b"\n")
        lines[rng.randrange(len(lines))] = rng.choice(garbage)
        history.write_bytes(b"\n".join(lines))
    if rng.random() < 0.2:
        (root / "sessions").mkdir(exist_ok=True)
        (root / "sessions" / "4242.json").write_bytes(rng.choice(garbage))
    if rng.random() < 0.2:
        (root / "settings.json").write_bytes(rng.choice(garbage))


# -- the faces ----------------------------------------------------------------------------


def read_faces(layout: Layout, path: Path) -> list[Problem]:
    """Every library read of one transcript; returns what doctor found."""
    transcript = Transcript.open(path)
    assert transcript.leaf is None or transcript.leaf in transcript.tree.nodes
    assert len(transcript.active_path) <= len(transcript.tree.nodes)
    # streamed (the CLI's way: facts and fields only) as built from whole records
    assert list(transcript.iter_context()) == transcript.context()
    transcript.fork_points()
    transcript.off_path_leaves()
    checkpoints = read_checkpoints(transcript)
    prompts_json(transcript, {c.message_id for c in checkpoints})
    show_json(transcript, all_branches=True)
    show_json(transcript)
    tree_json(transcript)
    list(search_transcript(path, "the"))
    list(iter_markdown(transcript))
    list(iter_html(transcript))
    list(iter_json(transcript))
    for checkpoint in checkpoints[-2:]:  # a dry run: plan and check, write nothing
        project = Path(transcript.cwd or path.parent)
        plan = plan_restore(
            layout, transcript.session_id, project, checkpoints, checkpoint.message_id
        )
        find_drift(transcript, plan, layout=layout)
    return check_transcript(path, layout=layout)


CLI_FACES = [
    ("sessions", "--all", "--json"),
    ("sessions", "--all"),
    ("show", "{sid}"),
    ("show", "{sid}", "--all-branches", "--json"),
    ("context", "{sid}", "--json"),
    ("tree", "{sid}"),
    ("prompts", "{sid}"),
    ("checkpoints", "{sid}"),
    ("doctor", "{sid}", "--json"),
    ("doctor",),
    ("export", "{sid}", "--format", "md", "-o", "-"),
    ("export", "{sid}", "--format", "json", "-o", "-"),
    ("search", "the", "--all"),
    ("history",),
    ("cleanup", "--dry-run"),
]


def run_cli(root: Path, args: tuple[str, ...]) -> None:
    result = CliRunner().invoke(cli, ["--root", str(root), *args])
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise AssertionError(f"{args}: {result.exception!r}") from result.exception
    assert "Traceback" not in result.output, args
    if result.exit_code != 0 and args[0] != "doctor":
        if "--json" in args:  # the error alone on stdout, as JSON (docs/CLI.md, "Errors")
            error = json.loads(result.stdout)
            assert error["code"] and "\n" not in error["error"], (args, error)
            return
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("sessiontree: "), (args, result.stderr)


def case_ids() -> list[str]:
    return [f"case_{n:04d}" for n in range(CASES)]


@pytest.mark.parametrize("case", case_ids())
def test_damaged_store_reads(case: str, tmp_path: Path) -> None:
    number = int(case.removeprefix("case_"))
    rng = random.Random(SEED + number)
    home, target = rng.choice(TARGETS)
    _witness_home, witness = rng.choice(
        [t for t in TARGETS if t[0] != home and t[1].parent.name != "subagents"]
    )
    root = copy_writable(home, tmp_path / "root")
    path = root / target.relative_to(home)
    # An untouched session from another fixture, in a project folder of its own.
    (root / "projects" / "-witness").mkdir()
    shutil.copyfile(witness, root / "projects" / "-witness" / witness.name)

    damage = Damage(path.read_bytes(), rng)
    chosen = rng.sample(MUTATIONS, rng.randint(1, 3))
    for solo in (hidden_cycle, reflow):  # hidden_cycle: the re-link must still apply
        if solo in chosen:
            chosen = [solo]
    if torn_tail in chosen:  # the torn line must stay the last one
        chosen = [*(m for m in chosen if m is not torn_tail), torn_tail]
    for mutate in chosen:
        mutate(damage)
    path.write_bytes(damage.data())
    damage_store(root, rng)
    layout = Layout(root)
    where = f"{case}: {[m.__name__ for m in chosen]} on {target.parent.name}/{target.name}"

    try:
        found = read_faces(layout, path)
        sessions = {row.sessionId for row in list_sessions(layout)}
    except SessionTreeError:
        pass  # a documented error is an answer
    else:
        subagent = path.parent.name == "subagents"
        listed = path.parent.parent.name if subagent else path.stem  # a subagent's session
        assert {listed, witness.stem} <= sessions, where
        for expect in damage.expected:
            hits = [p for p in found if p.kind in expect.kinds]
            if expect.line is not None:
                hits = [p for p in hits if p.line == expect.line]
            assert hits, f"{where}: doctor missed {expect}; found {found}"
        transcript = Transcript.open(path)
        for uuid in damage.kept_uuids:
            if uuid in transcript.tree.nodes:
                assert transcript.record(uuid) is not None, f"{where}: {uuid} dropped"
    sid = str(path) if path.parent.name == "subagents" else path.stem  # a path is a SESSION too
    for args in CLI_FACES:
        run_cli(root, tuple(a.format(sid=sid) for a in args))
