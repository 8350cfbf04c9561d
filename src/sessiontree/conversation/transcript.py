"""One session transcript, read: skeleton scan, tree, and records decoded on demand."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator
from functools import cached_property
from pathlib import Path
from typing import Any

import msgspec

from sessiontree.errors import Ambiguous, NotFound, Refused
from sessiontree.model.context import (
    ContextFacts,
    Message,
    build_context,
    context_facts,
    iter_context,
    read_for_context,
    read_for_facts,
    skeleton_facts,
)
from sessiontree.model.records import (
    ContextFields,
    FactFields,
    Line,
    Problem,
    Record,
    SessionId,
    may_be_typed_prompt,
)
from sessiontree.model.seam import find_seam
from sessiontree.model.tail import find_tail, stands_alone
from sessiontree.model.tree import ForkPoint, Tree, build_tree
from sessiontree.storage.jsonl import LineSource, iter_path_records, read_records
from sessiontree.storage.layout import StrPath, subagent_meta_path, subagents_dir
from sessiontree.storage.scan import Scan, scan_transcript
from sessiontree.storage.skeleton_cache import SkeletonCache
from sessiontree.storage.tail_read import read_tail_first


def _text(value: Any) -> str | None:
    """A ``.meta.json`` field as text; another type (damage) reads as absent."""
    return value if isinstance(value, str) else None


#: The longest active path (its lines' bytes) :meth:`Transcript.iter_context` holds
#: while it builds the messages; a longer one is never held.
HOLD_BYTES = 8 * 1024 * 1024

#: The shortest active path (its lines' bytes) :meth:`Transcript.context_in_two` builds
#: in two parts. A split costs a fork, the seam and the facts from the skeletons (~5 ms
#: here) and saves about half the build (~16 ms a MB): on a 2.5 MB path (the 200 MB
#: bench transcript's tail) a warm ``context --json`` went from 163 to 145 ms (median of
#: 20 interleaved runs); on a 0.6 MB one it saved nothing measurable.
TWO_PARTS_FROM = 1024 * 1024


class Subagent(msgspec.Struct, frozen=True):
    """A subagent's own transcript, and what spawned it (from its ``.meta.json``)."""

    agent_id: str
    path: Path
    tool_use_id: str | None
    agent_type: str | None
    description: str | None

    @classmethod
    def of(cls, path: Path, meta: bytes | None) -> Subagent:
        """The subagent whose transcript is at ``path``, with what its ``.meta.json``
        (its bytes, None: there is none) says; a damaged one says nothing."""
        import json  # (here: a resume never reads a subagent's metadata)

        fields: dict[str, Any] = {}
        if meta is not None:
            try:
                loaded = json.loads(meta)
                fields = loaded if isinstance(loaded, dict) else {}
            except (ValueError, RecursionError):
                pass
        return cls(
            agent_id=path.stem.removeprefix("agent-"),
            path=path,
            tool_use_id=_text(fields.get("toolUseId")),
            agent_type=_text(fields.get("agentType")),
            description=_text(fields.get("description")),
        )

    def as_json(self) -> dict[str, Any]:
        return {
            "agentId": self.agent_id,
            "path": str(self.path),
            "toolUseId": self.tool_use_id,
            "agentType": self.agent_type,
            "description": self.description,
        }


#: The most digits a prompt number has (a session of ten million prompts has none);
#: longer digits are only a uuid prefix, such as the short id ``prompts`` prints.
NUMBER_DIGITS = 7


class Transcript(msgspec.Struct, dict=True):
    """A transcript file after phase one; records are decoded only when asked for."""

    path: Path
    scan: Scan
    tree: Tree
    #: False for a tail read (:meth:`open_tail`): ``scan`` and ``tree`` then hold only
    #: the transcript's tail, which resumes as the whole file does.
    whole: bool = True
    _cache: dict[str, Record] = msgspec.field(default_factory=dict)
    #: Found while decoding whole records (text that had to be repaired to be read).
    read_problems: list[Problem] = msgspec.field(default_factory=list)
    #: Where phase two reads lines when they are not in the file at :attr:`path` (a
    #: transcript in the store: :attr:`path` is where it is, or was, on its machine).
    reader: LineSource | None = None
    #: The subagents of a transcript in the store (:attr:`reader` set): as
    #: :meth:`subagents` finds them beside a file.
    subagent_list: list[Subagent] | None = None

    @property
    def lines_from(self) -> Path | LineSource:
        """Where the lines are read from: :attr:`reader`, else the file."""
        return self.path if self.reader is None else self.reader

    @classmethod
    def open(cls, path: StrPath, *, skeleton_cache: SkeletonCache | None = None) -> Transcript:
        """Read a transcript (``str`` or ``os.PathLike``): the skeleton scan and the tree.

        With ``skeleton_cache``, a transcript read before through the same cache is read
        only from where it ended then (:mod:`~sessiontree.storage.skeleton_cache`); the
        result is the same. Without one (the default), the whole file is scanned."""
        path = Path(path)
        if skeleton_cache is None:
            scan = scan_transcript(path)
            return cls(path=path, scan=scan, tree=build_tree(str(path), scan.lines))
        scan = skeleton_cache.scan(path)
        tree = build_tree(str(path), scan.lines)
        skeleton_cache.keep(path, lambda: find_tail(scan.lines))
        return cls(path=path, scan=scan, tree=tree)

    @classmethod
    def open_to_resume(cls, path: StrPath, skeleton_cache: SkeletonCache) -> Transcript:
        """A transcript whose leaf, active path and context will be read, and nothing else:
        its tail (:attr:`whole` False) when the tail resumes as the whole file does, read
        from the cache (:meth:`open_tail`), else read tail first (the head folded, never
        held: :func:`~sessiontree.storage.tail_read.read_tail_first`) and then cached;
        else the whole file (:meth:`open`)."""
        path = Path(path)
        tail = cls.open_tail(path, skeleton_cache)
        if tail is not None:
            return tail
        first = read_tail_first(path, cores=skeleton_cache.cores)
        if first is not None:
            tree = build_tree(str(path), first.scan.lines, head=first.tail.head)
            if stands_alone(tree, first.tail.head, first.names):
                skeleton_cache.keep_tail(path, first.scan, first.tail)
                return cls(path=path, scan=first.scan, tree=tree, whole=False)
        return cls.open(path, skeleton_cache=skeleton_cache)

    @classmethod
    def open_tail(cls, path: StrPath, skeleton_cache: SkeletonCache) -> Transcript | None:
        """Only what resuming reads, when the cache allows: the lines since the last
        compaction of a transcript read whole before through ``skeleton_cache``, and the
        lines appended since (:mod:`sessiontree.model.tail`). Its leaf, active path and
        context are the whole file's; its scan, tree and problems are the tail's
        (:attr:`whole` is False). None when the tail does not answer alone: then
        :meth:`open`."""
        path = Path(path)
        cached = skeleton_cache.scan_tail(path)
        if cached is None:
            return None
        tail = cached.tail
        tree = build_tree(str(path), cached.scan.lines, head=tail.head)
        if not stands_alone(tree, tail.head, tail.names()):
            return None
        return cls(path=path, scan=cached.scan, tree=tree, whole=False)

    @property
    def session_id(self) -> SessionId:
        """The session id: a transcript is named ``<sessionId>.jsonl``."""
        return SessionId(self.path.stem)

    @property
    def problems(self) -> list[Problem]:
        """What is wrong with the file: its lines, its links, what decoding had to repair.
        Of a tail read (not :attr:`whole`), the lines' problems of the whole file and
        what decoding found; its tree's are left out (a link into the head the tail does
        not hold is no dangling parent)."""
        tree_problems = self.tree.problems if self.whole else []
        return [*self.scan.problems, *tree_problems, *self.read_problems]

    @cached_property
    def leaf(self) -> str | None:
        return self.tree.resolve_leaf()

    @cached_property
    def active_path(self) -> list[str]:
        return self.tree.active_path()

    def fork_points(self) -> list[ForkPoint]:
        return self.tree.fork_points()

    def off_path_leaves(self) -> list[str]:
        return self.tree.off_path_leaves(self.active_path)

    def records(self, uuids: Iterable[str]) -> list[Record]:
        """Whole records for ``uuids`` (decoded once, cached), in the order given."""
        wanted = list(uuids)
        missing = [
            u for u in dict.fromkeys(wanted) if u not in self._cache and u in self.tree.nodes
        ]
        if missing:
            lines = [self.tree.nodes[u] for u in missing]
            decoded = read_records(self.lines_from, lines, self.read_problems)
            for record in decoded:
                if record.uuid is not None:
                    self._cache[record.uuid] = record
        return [self._cache[u] for u in wanted if u in self._cache]

    def record(self, uuid: str) -> Record | None:
        found = self.records([uuid])
        return found[0] if found else None

    def active_records(self) -> list[Record]:
        return self.records(self.active_path)

    def context(self) -> list[Message]:
        """What resuming this session sends to the model as ``messages``."""
        return build_context(self.active_records())

    def iter_context(self) -> Iterator[Message]:
        """:meth:`context`, streamed, for a path of any length. A path of up to
        :data:`HOLD_BYTES` is read once (each line decoded only as
        :class:`~sessiontree.model.records.ContextFields`) and held while its messages
        are built; a longer one is never held: its
        :func:`~sessiontree.model.context.context_facts` come from the lines' skeletons
        (:func:`~sessiontree.model.context.skeleton_facts`) and its last response, found
        before the first message is given out."""
        lines = [self.tree.nodes[u] for u in self.active_path]
        for_context = [ln for ln in lines if read_for_context(ln.skeleton)]
        records = iter_path_records(
            self.lines_from, for_context, fields=ContextFields, problems=self.read_problems
        )
        if sum(line.length for line in for_context) <= HOLD_BYTES:
            held = list(records)  # (the facts read user and assistant records only)
            return iter_context(held, context_facts(held))
        return iter_context(records, self._facts(lines))

    def context_in_two(self) -> tuple[Iterator[Message], Callable[[], Iterator[Message]]] | None:
        """:meth:`iter_context` of a path of :data:`TWO_PARTS_FROM` bytes or more, as two
        parts to build apart (on two cores, say): the messages before its seam
        (:func:`~sessiontree.model.seam.find_seam`, at least one) and a function giving
        those from it; one after the other, they are :meth:`iter_context`'s. None when
        the path is shorter or has no seam. Repairs made decoding the second part are
        reported in :attr:`read_problems` only when it is built in this process."""
        if self.reader is not None:
            return None  # (a forked child must not share the reader's connection)
        lines = [self.tree.nodes[u] for u in self.active_path]
        for_context = [ln for ln in lines if read_for_context(ln.skeleton)]
        if sum(line.length for line in for_context) < TWO_PARTS_FROM:
            return None
        seam = find_seam(for_context)
        if seam is None:
            return None
        facts = self._facts(lines)
        path, problems = self.path, self.read_problems

        def read(part: list[Line]) -> Iterator[Record]:
            return iter_path_records(path, part, fields=ContextFields, problems=problems)

        def rest() -> Iterator[Message]:
            before = next(read(for_context[seam - 1 : seam]), None)
            return iter_context(read(for_context[seam:]), facts, before=before)

        return iter_context(read(for_context[:seam]), facts, to_end=False), rest

    def _facts(self, lines: list[Line]) -> ContextFacts:
        """:func:`~sessiontree.model.context.context_facts` of a long path: from its
        skeletons and its last response, else from a pass over its records."""
        facts = skeleton_facts([ln.skeleton for ln in lines], self._last_model(lines))
        if facts is None:  # a skeleton without its message: read the records for them
            for_facts = [ln for ln in lines if read_for_facts(ln.skeleton)]
            facts = context_facts(iter_path_records(self.lines_from, for_facts, fields=FactFields))
        return facts

    def _last_model(self, lines: list[Line]) -> str | None:
        """The model of the last response of ``lines`` (``<synthetic>`` ones passed over),
        read back from their end: mostly one record."""
        responses = (
            ln for ln in reversed(lines) if ln.skeleton and ln.skeleton.type == "assistant"
        )
        for record in iter_path_records(self.lines_from, responses, fields=FactFields):
            name = record.message.get("model")
            if isinstance(name, str) and name != "<synthetic>":
                return name
        return None

    def lines_of_type(self, *types: str) -> list[Line]:
        return [
            ln for ln in self.scan.lines if ln.skeleton is not None and ln.skeleton.type in types
        ]

    def metadata(self, *types: str) -> list[Record]:
        """Metadata records (no uuid) of the given types, in file order."""
        return read_records(self.lines_from, self.lines_of_type(*types))

    def prompt_uuids(self) -> list[str]:
        """uuids of every record that could be a typed prompt (what its skeleton shows of
        the rule: :func:`~sessiontree.model.records.may_be_typed_prompt`), in file order;
        :attr:`Record.is_prompt` settles it."""
        nodes = self.tree.nodes
        found = [
            u
            for u, line in nodes.items()
            if line.skeleton is not None
            and may_be_typed_prompt(line.skeleton)
            and self.tree.is_turn(u)
        ]
        found.sort(key=lambda u: nodes[u].number)
        return found

    @cached_property
    def cwd(self) -> str | None:
        """The working directory the session ran in (from its first records)."""
        for line in self.scan.lines[:200]:
            if line.skeleton is not None and line.skeleton.uuid:
                record = read_records(self.lines_from, [line])
                if record and isinstance(record[0].get("cwd"), str):
                    value: str = record[0].get("cwd")
                    return value
        return None

    def numbered_prompts(self) -> list[str]:
        """The prompts of the active path, in its order: prompt ``N`` is item ``N - 1``
        (what a number as a ``PROMPT`` argument, and ``prompts``, count)."""
        may_be = set(self.prompt_uuids())
        on_path = [u for u in self.active_path if u in may_be]
        return [r.uuid for r in self.records(on_path) if r.is_prompt and r.uuid]

    def resolve_prompt(self, ref: str, *, any_record: bool = False) -> str:
        """A ``PROMPT`` argument: a prompt number, a prompt uuid, or a unique uuid prefix.

        A number counts the prompts of the active path in its order: ``1`` is the first,
        ``-1`` the last (``-N`` the N-th newest). Digits are a number when they are short
        (:data:`NUMBER_DIGITS` or fewer) and one of the prompts (``1`` to the count);
        other digits are a uuid prefix (the short id ``prompts`` prints may be all
        digits), and a number again in the error when none matches. A prefix needs 4+
        characters, as a session prefix does; a shorter ref that is not a number is
        :class:`~sessiontree.errors.Refused`. ``any_record``: a uuid or prefix may name
        any chain record, not only a prompt (``fork --at``).
        """
        if re.fullmatch(r"-?[0-9]+", ref):
            prompts = self.numbered_prompts()
            count = len(prompts)
            n = int(ref) if len(ref) <= NUMBER_DIGITS else 0  # (a long one is out of range)
            if 1 <= n <= count or -count <= n <= -1:
                return prompts[n - 1 if n > 0 else n]
            if ref[0] != "-" and len(ref) >= 4:
                try:
                    return self._resolve_uuid(ref, any_record=any_record)
                except NotFound:
                    pass  # (said as a number)
            what = "prompt on the active path"
            if count:
                what = f"prompt of the {count} on the active path (1..{count}, -1..-{count})"
            raise NotFound(what, ref)
        if len(ref) < 4:
            raise Refused(
                f"{ref!r} is neither a prompt number (1 is the first, -1 the last; "
                "`sessiontree prompts SESSION` shows them) nor a uuid prefix (4+ characters)"
            )
        return self._resolve_uuid(ref, any_record=any_record)

    def _resolve_uuid(self, ref: str, *, any_record: bool) -> str:
        """A prompt's (or, ``any_record``, a record's) uuid, or unique prefix of one."""
        lowered = ref.lower()
        if any_record:
            return self.tree.resolve_prefix(ref if ref in self.tree.nodes else lowered)
        matching = [u for u in self.prompt_uuids() if u.startswith(lowered)]
        candidates = [r.uuid for r in self.records(matching) if r.is_prompt and r.uuid]
        if lowered in candidates:
            return lowered
        if len(candidates) > 1:
            raise Ambiguous("prompt", ref, candidates)
        if not candidates:
            raise NotFound("prompt", ref)
        return candidates[0]

    def subagents(self) -> list[Subagent]:
        """Subagent transcripts of this session (``<session>/subagents/agent-*.jsonl``)."""
        if self.subagent_list is not None:
            return list(self.subagent_list)
        folder = subagents_dir(self.path)
        if not folder.is_dir():
            return []
        found = []
        for path in sorted(folder.glob("agent-*.jsonl")):
            try:
                meta: bytes | None = subagent_meta_path(path).read_bytes()
            except OSError:
                meta = None
            found.append(Subagent.of(path, meta))
        return found

    def iter_all_records(self) -> Iterator[Record]:
        """Every chain record, in file order (decoded in one sequential pass)."""
        ordered = sorted(self.tree.nodes.values(), key=lambda ln: ln.number)
        seen = {p.line for p in self.read_problems}
        found: list[Problem] = []
        yield from iter_path_records(self.lines_from, ordered, problems=found)  # one at a time
        self.read_problems.extend(p for p in found if p.line not in seen)
