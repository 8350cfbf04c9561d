"""Damaged transcript shapes that once took quadratic time, built at any size.

Each builder returns the records of one transcript (root first, file order) with ``n``
chain records or so. ``tests/storage/test_scaling.py`` checks that reading them grows about
linearly; ``python -m bench.shapes`` times them at a few sizes.

* ``missing-parents``: every record names a parent that is not in the file (a transcript
  whose first part was lost): each step of the path is a timestamp bridge;
* ``long-segment``: a compaction that preserved ``n`` records;
* ``wide-anchor``: a compaction whose anchor has ``n`` children, all re-hung on the tail;
* ``system-chain``: ``n`` system records in a chain with no message, each with a leaf
  hung on it.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

Record = dict[str, Any]
SESSION = "5ca1ab1e-0000-4000-8000-000000000000"
_START = datetime(2026, 1, 1, tzinfo=UTC)


def _stamp(i: int) -> str:
    return (_START + timedelta(milliseconds=500 * i)).isoformat().replace("+00:00", "Z")


def _uuid(kind: str, i: int) -> str:
    return f"{kind[:8]:0<8}-0000-4000-8000-{i:012d}"


def _message(i: int, parent: str | None, *, uuid: str | None = None) -> Record:
    role = "user" if i % 2 == 0 else "assistant"
    message: Record = {"role": role, "content": f"message {i}"}
    if role == "assistant":
        message = {"role": role, "id": f"msg_{i}", "content": [{"type": "text", "text": f"{i}"}]}
    return {
        "type": role,
        "uuid": uuid or _uuid("msg", i),
        "parentUuid": parent,
        "sessionId": SESSION,
        "timestamp": _stamp(i),
        "message": message,
    }


def missing_parents(n: int) -> list[Record]:
    return [_message(i, _uuid("gone", i)) for i in range(n)]


def _compaction(kept: list[str], anchor: str, tail_index: int) -> list[Record]:
    boundary = _uuid("boundary", 0)
    return [
        {
            "type": "system",
            "subtype": "compact_boundary",
            "uuid": boundary,
            "parentUuid": None,
            "logicalParentUuid": kept[-1] if kept else anchor,
            "sessionId": SESSION,
            "timestamp": _stamp(tail_index + 1),
            "content": "Conversation compacted",
            "compactMetadata": {
                "trigger": "manual",
                "preservedSegment": {
                    "headUuid": kept[0],
                    "anchorUuid": anchor,
                    "tailUuid": kept[-1],
                },
            },
        },
        {
            "type": "user",
            "uuid": _uuid("summary", 0),
            "parentUuid": boundary,
            "isCompactSummary": True,
            "sessionId": SESSION,
            "timestamp": _stamp(tail_index + 2),
            "message": {"role": "user", "content": "summary"},
        },
    ]


def long_segment(n: int) -> list[Record]:
    records = [_message(0, None)]
    previous = records[0]["uuid"]
    for i in range(1, n + 1):
        records.append(_message(i, previous))
        previous = records[-1]["uuid"]
    kept = [r["uuid"] for r in records[1:]]
    return [*records, *_compaction(kept, _uuid("boundary", 0), n)]


def wide_anchor(n: int) -> list[Record]:
    root = _message(0, None)
    head = _message(1, root["uuid"])
    tail = _message(3, head["uuid"])
    children = [_message(2 * i + 4, root["uuid"]) for i in range(n)]  # all hang on the anchor
    records = [root, head, tail, *children]
    boundary = _compaction([head["uuid"], tail["uuid"]], root["uuid"], 2 * n + 4)
    return [*records, *boundary]


def system_chain(n: int) -> list[Record]:
    records: list[Record] = []
    previous: str | None = None
    for i in range(n):
        uuid = _uuid("system", i)
        records.append(
            {
                "type": "system",
                "subtype": "informational",
                "uuid": uuid,
                "parentUuid": previous,
                "sessionId": SESSION,
                "timestamp": _stamp(2 * i),
                "content": f"note {i}",
            }
        )
        records.append(
            {
                "type": "attachment",
                "uuid": _uuid("attach", i),
                "parentUuid": uuid,
                "sessionId": SESSION,
                "timestamp": _stamp(2 * i + 1),
                "attachment": {"type": "note"},
            }
        )
        previous = uuid
    return records


def many_blocks(n: int) -> list[Record]:
    """A prompt and one response of ``n`` one-letter text blocks on a single line (1.4
    million blocks make the 37 MB line of the issue)."""
    prompt = _message(0, None)
    response = _message(1, prompt["uuid"])
    response["message"]["content"] = [{"type": "text", "text": "x"}] * n
    return [prompt, response, _message(2, response["uuid"])]


SHAPES: dict[str, Callable[[int], list[Record]]] = {
    "missing-parents": missing_parents,
    "long-segment": long_segment,
    "wide-anchor": wide_anchor,
    "system-chain": system_chain,
}
#: Sizes for ``python -m bench --only damaged``: the four shapes, and the 37 MB line.
BENCH_SIZES = {**dict.fromkeys(SHAPES, 8_000), "many-blocks": 1_400_000}


def prepare(
    name: str, *, baseline: bool = False
) -> Callable[[Path, Path | None], Callable[[], dict[str, Any]]]:
    """A :mod:`bench.measure` workload: write shape ``name`` in the scratch folder
    (untimed), then open it, resolve the active path and build the context (timed); with
    ``baseline``, ``json.loads`` every line of the same file instead (what any reader of
    it does at least), for the row's ratio."""
    build = SHAPES.get(name) or many_blocks

    def workload(scratch: Path, _cache: Path | None) -> Callable[[], dict[str, Any]]:
        path = scratch / f"{name}.jsonl"
        with path.open("w") as handle:
            for record in build(BENCH_SIZES[name]):
                handle.write(json.dumps(record, separators=(",", ":")) + "\n")

        def run() -> dict[str, Any]:
            if baseline:
                with path.open("rb") as lines:
                    return {"records": sum(1 for line in lines if json.loads(line))}
            return {"size_mb": round(path.stat().st_size / 1e6, 1), "result": read_shape(path)}

        return run

    return workload


def write_shape(path: Path, name: str, n: int) -> Path:
    """Write shape ``name`` with ``n`` records as a transcript at ``path``."""
    path.write_text("".join(json.dumps(r, separators=(",", ":")) + "\n" for r in SHAPES[name](n)))
    return path


def read_shape(path: Path) -> int:
    """Open, resolve, build the context: what ``sessiontree context`` does."""
    from sessiontree.conversation.transcript import Transcript

    transcript = Transcript.open(path)
    return len(transcript.context()) + len(transcript.tree.problems)


def main(argv: list[str]) -> None:
    import tempfile

    sizes = [int(a) for a in argv] or [1_000, 2_000, 4_000, 8_000]
    with tempfile.TemporaryDirectory() as folder:
        for name in SHAPES:
            row = []
            for n in sizes:
                path = write_shape(Path(folder) / f"{name}-{n}.jsonl", name, n)
                start = time.perf_counter()
                read_shape(path)
                row.append(f"n={n:,}: {time.perf_counter() - start:.3f} s")
            print(f"{name:16} " + "   ".join(row), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
