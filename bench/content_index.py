"""Count the stat calls (``os.stat`` / ``lstat`` / ``fstat``, which ``Path.stat`` and
``lstat`` go through) and file opens while ``FileHistory`` backs up N unchanged files:
a snapshot, a first edit of each file (N ``BackupStore.write`` calls), two more
snapshots; with ``--second-session``, the same files again in a new session with a fresh
store (which scans, hashes and links them). Counts, not times, are the point: the
content index once stat-ed every same-size backup per write.

    python -m bench.content_index 1000 4000 [--sizes=mixed] [--second-session]
"""

from __future__ import annotations

import builtins
import io
import os
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

from sessiontree.checkpoints.capture import FileHistory
from sessiontree.storage.backups import BackupStore
from sessiontree.storage.layout import Layout

SID = "0f31836f-46f1-45f6-85ba-7878a822a884"


def run(n: int, mixed: bool, second: bool) -> tuple[Counter[str], float]:
    base = Path(tempfile.mkdtemp())
    project = base / "proj"
    project.mkdir()
    layout = Layout(base / "root")
    paths = []
    for i in range(n):
        path = project / f"pkg{i % 10}" / f"f{i:05d}.py"
        path.parent.mkdir(exist_ok=True)
        path.write_bytes((b"x = %d\n" % i) if mixed else (b"x = %06d\n" % i))
        paths.append(path)
    old = time.time() - 3600
    for path in paths:
        os.utime(path, (old, old))
    history = FileHistory(layout, SID, project, store=BackupStore(layout, fsync=False))
    counts: Counter[str] = Counter()
    real = {"stat": os.stat, "lstat": os.lstat, "fstat": os.fstat, "open": builtins.open}

    def stat(path, *args, follow_symlinks=True, **kw):  # type: ignore[no-untyped-def]
        counts["lstat" if not follow_symlinks else "stat"] += 1
        return real["stat"](path, *args, follow_symlinks=follow_symlinks, **kw)

    def lstat(path, *args, **kw):  # type: ignore[no-untyped-def]
        counts["lstat"] += 1
        return real["lstat"](path, *args, **kw)

    def fstat(fd):  # type: ignore[no-untyped-def]
        counts["fstat"] += 1
        return real["fstat"](fd)

    def opener(*args, **kw):  # type: ignore[no-untyped-def]
        counts["open"] += 1
        return real["open"](*args, **kw)

    os.stat, os.lstat, os.fstat = stat, lstat, fstat  # type: ignore[assignment]
    builtins.open = io.open = opener  # type: ignore[assignment]
    start = time.perf_counter()
    try:
        history.snapshot("p1")
        for i, path in enumerate(paths):
            history.before_edit(path, prompt_uuid="p1", tool_use_record_uuid=f"t{i}")
        history.snapshot("p2")
        history.snapshot("p3")
        if second:  # a second session, fresh store: scans, hashes, links each file
            other = "0f31836f-46f1-45f6-85ba-000000000002"
            again = FileHistory(layout, other, project, store=BackupStore(layout, fsync=False))
            again.snapshot("q1")
            for i, path in enumerate(paths):
                again.before_edit(path, prompt_uuid="q1", tool_use_record_uuid=f"u{i}")
    finally:
        os.stat, os.lstat, os.fstat = real["stat"], real["lstat"], real["fstat"]  # type: ignore[assignment]
        builtins.open = io.open = real["open"]  # type: ignore[assignment]
    return counts, time.perf_counter() - start


def main(argv: list[str]) -> None:
    mixed = "--sizes=mixed" in argv
    second = "--second-session" in argv
    counts = [int(a) for a in argv if a.isdigit()] or [1000, 4000]
    shape = ("mixed" if mixed else "one") + " size" + (", + a second session" if second else "")
    print(f"files  lstat      stat    fstat   open    seconds   ({shape})")
    for n in counts:
        c, secs = run(n, mixed, second)
        print(f"{n:<6} {c['lstat']:<10} {c['stat']:<7} {c['fstat']:<7} {c['open']:<7} {secs:.2f}")


if __name__ == "__main__":
    main(sys.argv[1:])
