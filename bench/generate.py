# mypy: disable-error-code="import-untyped"
# (sessiontree has no py.typed marker yet; drop this line once it has.)
"""Large, realistic Claude Code transcripts and session archives, made from real records.

Every line is a record of the real-client fixtures (see :mod:`bench.templates`), re-chained
with fresh uuids, parents, timestamps and session ids, in the shapes the client writes:
a ``file-history-snapshot`` before each prompt, the attachment chain after it, one
assistant record per content block sharing ``message.id``, tool results with
``toolUseResult`` and ``sourceToolAssistantUUID``, ``turn_duration``, ``last-prompt``,
``api-request*`` noise; rewinds (a prompt hung on an earlier prompt's parent, then the
all-zero ``last-prompt`` marker) and compactions (``compact_boundary`` with a preserved
segment, then the compact summary). Tool results are mostly 1-20 KB, some 100 KB-1 MB
and, in big transcripts, a few 5-50 MB lines. Output is a function of the seed.

A 2.0.x-shaped transcript (``--compactions 2.0``) is compacted as 2.0.x clients compact
(2.0.76's boundary, which preserves nothing, then its summary) and, as they do, writes no
``last-prompt``; its other records are the same.

Usage::

    python -m bench.generate transcript OUT.jsonl --mb 200
    python -m bench.generate transcript OUT.jsonl --mb 200 --single-chain   # worst case
    python -m bench.generate transcript OUT.jsonl --mb 200 --compactions 2.0
    python -m bench.generate archive ROOT --sessions 2000 --projects 40 --gb 2
"""

from __future__ import annotations

import argparse
import calendar
import dataclasses
import math
import os
import random
import sys
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

from bench.templates import (
    COMPACTION_ATTACHMENTS,
    FIXTURE_ROOT_2_0,
    NOISE,
    OPENING_ATTACHMENTS,
    PAYLOAD_FIELDS,
    TOOLS,
    TURN_ATTACHMENTS,
    Chunk,
    Template,
    TextPool,
    build_templates,
    compaction_templates_2_0,
    format_json_string,
    read_fixture_records,
    read_prompts,
    read_text_lines,
)
from sessiontree.storage.layout import Layout, encode_cwd

KB = 1024
MB = 1024 * KB

#: Tool result line sizes: (low, high) bytes, drawn log-uniformly.
SMALL_RESULT = (1 * KB, 20 * KB)
MEDIUM_RESULT = (100 * KB, 1 * MB)
HUGE_RESULT = (5 * MB, 50 * MB)
#: Share of tool results that are medium-sized.
MEDIUM_SHARE = 0.03
#: One huge line per this many bytes of transcript, each at most 1/8 of the transcript.
HUGE_EVERY = 66 * MB
HUGE_CAP_SHARE = 8
TOOL_WEIGHTS = (35, 35, 15, 15)  # Read, Bash, Edit, Write
STEPS_PER_TURN = (0, 1, 1, 2, 2, 3, 3, 4, 5, 6, 8)
ASSISTANT_TEXT = (40, 1500)
REWIND_CHANCE = 0.04
#: A compaction happens after this many bytes (drawn uniformly) since the last one.
COMPACT_AFTER = (3 * MB, 8 * MB)
#: The smallest session the archive plans: about one opening turn.
MIN_SESSION = 48 * KB
POOL_SIZE = 8 * MB
#: Records start on this day; archive sessions spread over the following weeks.
EPOCH_MS = calendar.timegm((2026, 1, 5, 9, 0, 0)) * 1000
ARCHIVE_SPAN_MS = 45 * 24 * 3600 * 1000


@dataclass(frozen=True)
class Corpus:
    """What every session is made from: templates, typed prompts and a text pool."""

    templates: dict[str, Template]
    prompts: tuple[str, ...]
    pool: TextPool

    @classmethod
    def load(cls, seed: int) -> Corpus:
        records = read_fixture_records()
        pool = TextPool.build(read_text_lines(records), size=POOL_SIZE, rng=random.Random(seed))
        templates = {
            **build_templates(records),
            **compaction_templates_2_0(read_fixture_records(FIXTURE_ROOT_2_0)),
        }
        return cls(templates, tuple(read_prompts(records)), pool)


@dataclass(frozen=True)
class SessionSpec:
    """One transcript to write: who it is, where it ran, how big, when it started."""

    session_id: str
    cwd: str
    target_bytes: int
    start_ms: int
    seed: str
    #: The worst case for a reader: one chain, never compacted and never rewound, so the
    #: active path is the whole file.
    single_chain: bool = False
    #: Which clients' compactions: 2.1.x's (a preserved segment) or 2.0.x's (nothing
    #: preserved, and no ``last-prompt`` records).
    compactions: str = "2.1"


def _log_uniform(rng: random.Random, low: int, high: int) -> int:
    return int(math.exp(rng.uniform(math.log(low), math.log(high))))


def format_timestamp(ms: int) -> bytes:
    """``2026-01-05T09:00:00.000Z`` for epoch milliseconds, as the client writes it."""
    seconds, millis = divmod(ms, 1000)
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(seconds)).encode() + b".%03dZ" % millis


@dataclass
class _ResultSizes:
    """Line sizes of tool results: planned huge ones at byte offsets, the rest drawn."""

    rng: random.Random
    huge: list[tuple[int, int]] = field(default_factory=list)  # (at byte offset, size)

    @classmethod
    def plan(cls, rng: random.Random, target_bytes: int) -> _ResultSizes:
        cap = max(HUGE_RESULT[0], min(HUGE_RESULT[1], target_bytes // HUGE_CAP_SHARE))
        count = target_bytes // HUGE_EVERY
        section = target_bytes / max(1, count)  # one huge line somewhere in each section
        huge = [
            (int((k + rng.uniform(0.1, 0.9)) * section), _log_uniform(rng, HUGE_RESULT[0], cap))
            for k in range(count)
        ]
        return cls(rng, huge)

    def next(self, written: int) -> int:
        if self.huge and written >= self.huge[0][0]:
            return self.huge.pop(0)[1]
        if self.rng.random() < MEDIUM_SHARE:
            return _log_uniform(self.rng, *MEDIUM_RESULT)
        return _log_uniform(self.rng, *SMALL_RESULT)


class SessionWriter:
    """Writes one session's transcript, turn by turn, until it reaches its target size."""

    def __init__(self, out: BinaryIO, corpus: Corpus, spec: SessionSpec) -> None:
        self.out = out
        self.corpus = corpus
        self.spec = spec
        self.rng = random.Random(spec.seed)
        self.session = {
            "sid": spec.session_id.encode(),
            "cwd": format_json_string(spec.cwd),
            "project": encode_cwd(spec.cwd).encode(),
        }
        self.prompt_texts = [
            format_json_string(p.replace("@@cwd@@", spec.cwd)) for p in corpus.prompts
        ]
        self.sizes = _ResultSizes.plan(self.rng, spec.target_bytes)
        self.clock_ms = spec.start_ms
        self.written = 0
        self.leaf: bytes | None = None  # where the next record of the conversation hangs
        self.last_answer: bytes | None = None  # the last turn's final assistant record
        self.prompts: list[tuple[bytes, bytes | None]] = []  # (prompt, parent) on the path
        self.since_compaction = 0
        self.compact_at = self._draw_compaction()

    # -- ids and time ----------------------------------------------------------------

    def _uuid(self) -> bytes:
        return str(uuid.UUID(int=self.rng.getrandbits(128), version=4)).encode()

    def _hex_id(self, prefix: bytes) -> bytes:
        return prefix + b"%024x" % self.rng.getrandbits(96)

    def _tick(self, low: int = 5, high: int = 2500) -> bytes:
        self.clock_ms += self.rng.randint(low, high)
        return format_timestamp(self.clock_ms)

    def _draw_compaction(self) -> int:
        return self.rng.randint(*COMPACT_AFTER)

    # -- records ---------------------------------------------------------------------

    def emit(self, kind: str, **values: Chunk | Sequence[Chunk]) -> None:
        """Write one line of template ``kind``; session slots and the time are filled in."""
        parts = self.corpus.templates[kind].render({**self.session, "ts": self._tick(), **values})
        parts.append(b"\n")
        self.out.writelines(parts)
        size = sum(len(p) for p in parts)
        self.written += size
        self.since_compaction += size

    def emit_chain(
        self,
        kind: str,
        parent: bytes | None,
        record_uuid: bytes | None = None,
        **values: Chunk | Sequence[Chunk],
    ) -> bytes:
        """Write a chain record hung on ``parent``; returns its uuid."""
        own = record_uuid or self._uuid()
        parent_json = b'"' + parent + b'"' if parent is not None else b"null"
        self.emit(kind, uuid=own, parent=parent_json, **values)
        return own

    def _request(self, previous: bytes | None) -> bytes:
        request = self._uuid()
        self.emit("api-request", req=request, req_base=previous or request)
        return request

    def _request_shape(self) -> None:
        for kind in ("api-request-shape", "api-request-blob:0", "api-request-blob:1"):
            self.emit(kind)

    def _attachments(self, parent: bytes, kinds: Sequence[str]) -> bytes:
        for kind in kinds:
            parent = self.emit_chain(f"attachment:{kind}", parent)
        return parent

    def _assistant(self, kind: str, parent: bytes, message_id: bytes, request: bytes) -> bytes:
        text = self.corpus.pool.take(self.rng.randint(*ASSISTANT_TEXT), self.rng)
        return self.emit_chain(kind, parent, msg_id=message_id, req=request, text=text)

    def _tool_result(self, tool: str, use: bytes, tool_id: bytes, prompt_id: bytes) -> bytes:
        kind = f"tool_result:{tool}"
        payload: list[Chunk] = []
        if tool in PAYLOAD_FIELDS:  # the text is stored twice: content and toolUseResult
            size = self.sizes.next(self.written) - self.corpus.templates[kind].fixed_size
            payload = self.corpus.pool.take(max(64, size // 2), self.rng)
        return self.emit_chain(
            kind, use, tool_id=tool_id, source=use, prompt_id=prompt_id, payload=payload
        )

    # -- conversation ----------------------------------------------------------------

    def _tool_step(self, parent: bytes, prompt: bytes, prompt_id: bytes, request: bytes) -> bytes:
        """One API response (text + tool_use blocks) and its tool result; returns the result."""
        message_id, tool_id = self._hex_id(b"msg_"), self._hex_id(b"toolu_")
        text = self._assistant("assistant-text", parent, message_id, request)
        tool = self.rng.choices(TOOLS, TOOL_WEIGHTS)[0]
        use = self.emit_chain(
            f"tool_use:{tool}", text, msg_id=message_id, req=request, tool_id=tool_id
        )
        if tool in ("Edit", "Write"):
            self.emit("file-history-delta", source=use, prompt_uuid=prompt)
        result = self._tool_result(tool, use, tool_id, prompt_id)
        if self.rng.random() < 0.25:
            self.emit("tools-used")
        if self.rng.random() < 0.1:
            result = self._attachments(result, [self.rng.choice(TURN_ATTACHMENTS)])
        return result

    def _rewind_parent(self) -> bytes | None:
        """The parent for a new prompt that rewinds the conversation, or None."""
        if self.spec.single_chain:
            return None
        if len(self.prompts) < 2 or self.rng.random() >= REWIND_CHANCE:
            return None
        index = self.rng.randrange(max(0, len(self.prompts) - 5), len(self.prompts))
        parent = self.prompts[index][1]
        if parent is None:
            return None  # the session's first prompt: nothing to rewind to
        del self.prompts[index:]  # the dropped prompts leave the active path
        return parent

    def _turn(self, *, opening: bool) -> None:
        """A prompt, its attachments, tool steps, the answer, turn_duration, last-prompt."""
        rng = self.rng
        self.clock_ms += rng.randint(5_000, 600_000)
        prompt_text = rng.choice(self.prompt_texts)
        prompt, prompt_id = self._uuid(), self._uuid()
        rewind_parent = self._rewind_parent()
        parent = self.leaf if rewind_parent is None else rewind_parent
        self.emit("file-history-snapshot", prompt_uuid=prompt)
        self.emit_chain(
            "prompt", parent, record_uuid=prompt, prompt_id=prompt_id, prompt=prompt_text
        )
        if rewind_parent is not None and self.spec.compactions != "2.0":
            self.emit("rewind-marker")
        self.prompts.append((prompt, parent))
        kinds = (
            OPENING_ATTACHMENTS
            if opening
            else rng.sample(TURN_ATTACHMENTS, rng.choice((0, 0, 1, 2)))
        )
        leaf = self._attachments(prompt, kinds)
        if opening:
            self._request_shape()
        request: bytes | None = None
        for _ in range(rng.choice(STEPS_PER_TURN)):
            request = self._request(request)
            leaf = self._tool_step(leaf, prompt, prompt_id, request)
        request = self._request(request)
        answer = self._assistant("assistant-final", leaf, self._hex_id(b"msg_"), request)
        duration = self.emit_chain("turn-duration", answer)
        if self.spec.compactions != "2.0":  # (2.0.x clients write no last-prompt)
            self.emit("last-prompt", prompt=prompt_text, leaf=duration)
        self.leaf, self.last_answer = duration, answer
        for kind in NOISE:
            if rng.random() < 0.2:
                self.emit(kind)

    def _compact(self) -> None:
        """A compaction that keeps the last answer and its turn_duration (06-compact's
        shape), or (2.0.x's) keeps nothing."""
        assert self.leaf is not None and self.last_answer is not None
        boundary, summary = self._uuid(), self._uuid()
        if self.spec.compactions == "2.0":
            self.emit("compact-boundary:2.0", uuid=boundary, logical=self.leaf)
            self.leaf = self.emit_chain("compact-summary:2.0", boundary, record_uuid=summary)
            self._after_compaction()
            return
        self.emit(
            "compact-boundary",
            uuid=boundary,
            logical=self.leaf,
            head=self.last_answer,
            anchor=summary,
            tail=self.leaf,
        )
        self.emit_chain("compact-summary", boundary, record_uuid=summary, prompt_id=self._uuid())
        self.leaf = self._attachments(summary, COMPACTION_ATTACHMENTS)
        self._request_shape()
        self._after_compaction()

    def _after_compaction(self) -> None:
        self.prompts = []
        self.since_compaction = 0
        self.compact_at = self._draw_compaction()

    def write(self) -> int:
        """Write the whole session; returns its size in bytes."""
        for kind in ("mode", "permission-mode", "atis-latch"):
            self.emit(kind)
        self._turn(opening=True)
        while self.written < self.spec.target_bytes:
            if self.since_compaction >= self.compact_at and not self.spec.single_chain:
                self._compact()
            self._turn(opening=False)
        self.emit("cost-state")
        return self.written


def write_session(path: Path, corpus: Corpus, spec: SessionSpec) -> int:
    """Write ``spec`` to ``path`` (mtime = its last record's time); returns its size."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("wb") as out:
        writer = SessionWriter(out, corpus, spec)
        size = writer.write()
    mtime = writer.clock_ms / 1000
    os.utime(path, (mtime, mtime))
    return size


def _session_id(rng: random.Random) -> str:
    return str(uuid.UUID(int=rng.getrandbits(128), version=4))


def write_transcript(
    path: Path,
    *,
    target_bytes: int,
    seed: int,
    corpus: Corpus | None = None,
    single_chain: bool = False,
    compactions: str = "2.1",
) -> int:
    """One big transcript of about ``target_bytes``; returns its size. ``single_chain``:
    never compacted nor rewound (the worst case: the active path is the whole file);
    ``compactions``: as 2.1.x or 2.0.x clients write them (:class:`SessionSpec`)."""
    rng = random.Random(seed)
    spec = SessionSpec(
        _session_id(rng),
        "/home/dev/big-project",
        target_bytes,
        EPOCH_MS,
        f"{seed}/big",
        single_chain=single_chain,
        compactions=compactions,
    )
    return write_session(path, corpus or Corpus.load(seed), spec)


# -- archives --------------------------------------------------------------------------


@dataclass(frozen=True)
class ArchiveSpec:
    """``sessions`` transcripts across ``projects`` folders, about ``total_bytes`` in all."""

    sessions: int
    projects: int
    total_bytes: int
    seed: int


_PROJECT_STYLES = (
    "/home/dev/src/{name}",
    "/home/dev/work/acme.{name}",
    "/Users/dev/Code/{name}_v2",
    "/home/dev/src/github.com/acme/{name}",
    "/srv/projects/{name}/backend",
)
_PROJECT_NAMES = (
    "api", "web", "infra", "billing", "search", "mobile", "ml-pipeline", "docs", "cli",
    "auth", "gateway", "etl", "dashboard", "scheduler", "notifier",
)  # fmt: skip


def plan_project_cwds(count: int) -> list[str]:
    """Project cwds of many shapes; the first is long enough to get a hashed folder name."""
    cwds = [
        _PROJECT_STYLES[k % len(_PROJECT_STYLES)].format(
            name=f"{_PROJECT_NAMES[k % len(_PROJECT_NAMES)]}-{k}"
        )
        for k in range(count)
    ]
    if cwds:
        cwds[0] = "/home/dev/" + "/".join(f"deeply-nested.folder_{n}" for n in range(10))
    return cwds


def plan_session_sizes(rng: random.Random, count: int, total_bytes: int) -> list[int]:
    """Log-normal sizes (many small sessions, a few big ones) summing to about the total."""
    raw = [rng.lognormvariate(0, 1.6) for _ in range(count)]
    cap = max(MIN_SESSION, total_bytes // 20)
    scale = total_bytes / sum(raw)
    sizes: list[int] = []
    for _ in range(8):  # spread what the clamps cut off over the others
        sizes = [min(cap, max(MIN_SESSION, int(r * scale))) for r in raw]
        scale *= total_bytes / sum(sizes)
    return sizes


def plan_archive(spec: ArchiveSpec) -> list[SessionSpec]:
    """Every session of the archive, in a Zipf-like spread over its projects."""
    rng = random.Random(spec.seed)
    cwds = plan_project_cwds(spec.projects)
    weights = [1 / (k + 1) for k in range(len(cwds))]
    sizes = plan_session_sizes(rng, spec.sessions, spec.total_bytes)
    return [
        SessionSpec(
            session_id=_session_id(rng),
            cwd=rng.choices(cwds, weights)[0],
            target_bytes=size,
            start_ms=EPOCH_MS + rng.randrange(ARCHIVE_SPAN_MS),
            seed=f"{spec.seed}/{index}",
        )
        for index, size in enumerate(sizes)
    ]


def write_archive(
    root: Path,
    spec: ArchiveSpec,
    *,
    corpus: Corpus | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> int:
    """Write the archive's transcripts under ``root/projects/``; returns the total size.

    ``progress(sessions written, bytes written)`` is called after each session.
    """
    corpus = corpus or Corpus.load(spec.seed)
    layout = Layout(root)
    planned = total = 0
    for done, session in enumerate(plan_archive(spec), 1):
        # A session ends on a whole turn, past its target: the next ones make up for it.
        target = max(MIN_SESSION, session.target_bytes - (total - planned))
        planned += session.target_bytes
        path = layout.transcript_path(session.cwd, session.session_id)
        total += write_session(path, corpus, dataclasses.replace(session, target_bytes=target))
        if progress is not None:
            progress(done, total)
    return total


# -- command line ----------------------------------------------------------------------


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m bench.generate", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--seed", type=int, default=1)
    kinds = parser.add_subparsers(dest="kind", required=True)
    one = kinds.add_parser("transcript", help="one big transcript")
    one.add_argument("out", type=Path)
    one.add_argument("--mb", type=float, default=200)
    one.add_argument(
        "--single-chain",
        action="store_true",
        help="the worst case: one chain, never compacted nor rewound",
    )
    one.add_argument(
        "--compactions",
        choices=("2.1", "2.0"),
        default="2.1",
        help="as 2.1.x clients compact (a preserved segment) or 2.0.x (nothing preserved, "
        "no last-prompt records)",
    )
    archive = kinds.add_parser("archive", help="a config root with many sessions")
    archive.add_argument("root", type=Path)
    archive.add_argument("--sessions", type=int, default=2000)
    archive.add_argument("--projects", type=int, default=40)
    archive.add_argument("--gb", type=float, default=2)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    started = time.perf_counter()
    if args.kind == "transcript":
        size = write_transcript(
            args.out,
            target_bytes=int(args.mb * MB),
            seed=args.seed,
            single_chain=args.single_chain,
            compactions=args.compactions,
        )
    else:
        spec = ArchiveSpec(args.sessions, args.projects, int(args.gb * 1024 * MB), args.seed)
        size = write_archive(args.root, spec)
    elapsed = time.perf_counter() - started
    print(f"wrote {size / MB:.1f} MB in {elapsed:.1f} s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
