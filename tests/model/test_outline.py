"""The outline of every branch (``export --all-branches``): the tree cut into sections,
each record in one, the active path first, each other branch after the one it forks
from, on every scenario a real client wrote and on a long session of many rewinds."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from sessiontree.conversation.transcript import Transcript
from sessiontree.model.branches import summarized
from sessiontree.model.outline import Section, build_outline
from tests.conftest import WILD, all_scenarios, needs_wild, scenario_id


def _transcripts(scenarios: list[Path]) -> list[Path]:
    return sorted(
        path
        for scenario in scenarios
        for path in (scenario / "claude-home" / "projects").glob("*/*.jsonl")
        if not path.name.startswith("agent-")
    )


SCENARIO_TRANSCRIPTS = _transcripts(all_scenarios())


def _check(transcript: Transcript, sections: tuple[Section, ...]) -> None:
    tree = transcript.tree
    main = [u for u in tree.nodes if not tree.is_sidechain(u)]
    placed = [u for s in sections for u in s.records]
    assert sorted(placed) == sorted(main)  # every chain record, each once
    home = {u: i for i, s in enumerate(sections) for u in s.records}
    active = [u for u in transcript.active_path if u in home]
    if active:
        assert sections[0].kind == "active" and list(sections[0].records) == active
    assert [s.kind for s in sections[1:]].count("active") == 0
    away = summarized(tree, transcript.active_path)
    for index, section in enumerate(sections[1 if active else 0 :], 1 if active else 0):
        first = section.records[0]
        assert section.kind == ("summarized" if first in away else "rewound")
        if section.fork is None:  # a root (or a loop's first record)
            assert section.parent is None and section.depth == 0
            continue
        # it hangs on a record shown before it, in the section it names
        assert tree.parent[first] == section.fork
        assert section.parent is not None and section.parent < index
        assert home[section.fork] == section.parent
        assert section.depth == sections[section.parent].depth + 1
        # a branch is one piece of the tree: each record hangs on one before it there
        for uuid in section.records[1:]:
            assert home.get(tree.parent.get(uuid) or "") == index, uuid


@pytest.mark.parametrize("path", SCENARIO_TRANSCRIPTS, ids=lambda p: f"{p.parents[3].name}")
def test_every_record_is_in_one_section_the_active_path_first(path: Path) -> None:
    transcript = Transcript.open(path)
    _check(transcript, build_outline(transcript.tree, transcript.active_path))


@needs_wild
@pytest.mark.parametrize(
    "path",
    _transcripts(sorted(WILD.iterdir()) if WILD.is_dir() else []),
    ids=lambda p: f"{p.parents[3].name}/{p.stem[:8]}",
)
def test_every_record_is_in_one_section_in_the_wild(path: Path) -> None:
    transcript = Transcript.open(path)
    _check(transcript, build_outline(transcript.tree, transcript.active_path))


def test_a_rewind_is_a_section_from_its_fork_point() -> None:
    """02-rewind-both: the prompts p2 and p3, rewound, are one branch off the fork point;
    p4, typed after the rewind, goes on in the active path."""
    scenario = next(s for s in all_scenarios() if scenario_id(s) == "2.1.328/02-rewind-both")
    (path,) = _transcripts([scenario])
    transcript = Transcript.open(path)
    sections = build_outline(transcript.tree, transcript.active_path)
    (fork,) = transcript.fork_points()
    rewound = [s for s in sections if s.kind == "rewound"]
    assert len(sections) == 2 and len(rewound) == 1
    assert rewound[0].fork == fork.uuid and rewound[0].parent == 0
    assert rewound[0].records[0] in fork.children
    assert rewound[0].records[0] not in transcript.active_path
    prompts = [r.text() for r in transcript.records(rewound[0].records) if r.is_prompt]
    steps = json.loads((scenario / "scenario.json").read_text())["steps"]
    typed = [s["text"] for s in steps if s.get("action") == "prompt"]
    assert prompts and all(p in typed for p in prompts)
    assert not set(prompts) & {r.text() for r in transcript.active_records() if r.is_prompt}


def _many_rewinds(path: Path, *, turns: int, every: int, branch: int) -> Path:
    """One chain of ``turns`` prompt/reply pairs; after every ``every``-th pair a rewound
    branch of ``branch`` pairs, older than what goes on (as a rewind leaves it)."""
    lines: list[str] = []
    count = 0

    def add(parent: str | None, kind: str, when: int) -> str:
        nonlocal count
        count += 1
        uuid = f"00000000-0000-4000-8000-{count:012d}"
        stamp = f"{when // 3_600_000:02d}:{when // 60_000 % 60:02d}:{when // 1000 % 60:02d}"
        record = {
            "type": kind, "uuid": uuid, "parentUuid": parent, "isSidechain": False,
            "sessionId": path.stem, "timestamp": f"2026-11-01T{stamp}.{when % 1000:03d}Z",
            "message": {"role": kind, "content": f"{kind} {count}"},
        }  # fmt: skip
        lines.append(json.dumps(record))
        return uuid

    at: str | None = None
    clock = 0
    for turn in range(turns):
        if turn and turn % every == 0 and at is not None:
            down = at
            for _ in range(branch):  # the branch a rewind left
                clock += 1
                down = add(add(down, "user", clock), "assistant", clock)
        clock += 1
        at = add(add(at, "user", clock), "assistant", clock)
    path.write_text("\n".join(lines) + "\n")
    return path


def test_many_rewinds_on_a_long_chain_take_linear_time(tmp_path: Path) -> None:
    """100,000 records, 5,000 rewinds: one pass (a walk up from each branch, or a path
    per leaf, would be 5,000 walks of a 60,000-record chain)."""
    path = _many_rewinds(
        tmp_path / "0c0ffee0-0000-4000-8000-000000000001.jsonl", turns=30_000, every=6, branch=4
    )
    transcript = Transcript.open(path)
    active = transcript.active_path
    started = time.perf_counter()
    sections = build_outline(transcript.tree, active)
    took = time.perf_counter() - started
    assert len(sections) == 1 + (30_000 - 1) // 6
    _check(transcript, sections)
    assert took < 5, took
