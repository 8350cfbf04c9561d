"""Glob and Grep, with the client's results.

As client 2.1.328 answers (its transcripts, driven against a stand-in API):

- Paths are shown relative to the current directory (absolute outside it).
- Glob walks everything under its folder, hidden and git-ignored files and ``.git/``
  included; a pattern without ``/`` matches a file's name at any depth (ripgrep's
  ``--glob``). Oldest first (modification time), at most 100, then ``(Showing 100 of N
  matching files; M more are not listed. Narrow the pattern or path to see the rest.)``.
  ``No files found`` when none; a missing folder: ``Directory does not exist: …``.
- Grep searches like ``rg --hidden`` (git-ignored files and VCS folders left out). In
  ``files_with_matches`` (the default): ``Found N files`` then the paths, newest first;
  ``content``: ``path:line:text`` (no path when searching one file), context lines
  ``path-line-text``; ``count``: ``path:N`` then ``Found T total occurrences across N
  files.``; ``head_limit`` (default 250, 0: none) and ``offset`` page every mode, and a
  page says ``[Showing results with pagination = limit: L, offset: O]``. A pattern
  ripgrep refuses: ``Search failed — ripgrep rejected the pattern, glob, or file type
  without searching:`` and its message.

Grep runs ``rg`` when it is on the PATH, else a Python search that follows the same
rules (``re`` for the regular expression; git-ignored files found with ``git ls-files``).
"""

from __future__ import annotations

import os
import re
import stat
import subprocess
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

from sessiontree.agent.tools.globs import glob_matcher, matches_glob, resolve_path
from sessiontree.agent.tools.outcome import ToolError, ToolOutcome
from sessiontree.model.builders.envelope import JsonDict

GLOB_LIMIT = 100
GREP_HEAD_LIMIT = 250
#: How many folder entries one Glob or Grep walks at most (a bound on a huge tree).
MAX_WALK = 200_000
MAX_COLUMNS = 500
VCS_DIRS = (".git", ".svn", ".hg", ".bzr", ".jj", ".sl")

#: ``type`` values the Python search knows (ripgrep knows many more).
FILE_TYPES: dict[str, tuple[str, ...]] = {
    "py": ("*.py", "*.pyi"),
    "js": ("*.js", "*.jsx", "*.mjs", "*.cjs", "*.vue"),
    "ts": ("*.ts", "*.tsx", "*.cts", "*.mts"),
    "rust": ("*.rs",),
    "go": ("*.go",),
    "java": ("*.java", "*.jsp"),
    "c": ("*.c", "*.h"),
    "cpp": ("*.cpp", "*.cc", "*.cxx", "*.hpp", "*.hh", "*.hxx", "*.h"),
    "md": ("*.md", "*.markdown", "*.mdx"),
    "json": ("*.json",),
    "sh": ("*.sh", "*.bash", "*.zsh"),
    "rb": ("*.rb",),
    "html": ("*.html", "*.htm"),
    "css": ("*.css", "*.scss", "*.sass", "*.less"),
    "yaml": ("*.yaml", "*.yml"),
    "toml": ("*.toml",),
    "txt": ("*.txt",),
}


@dataclass(frozen=True)
class SearchCall:
    """Where relative paths start (the shell's current directory)."""

    cwd: Path
    ripgrep: str | None = None
    git: str | None = None
    home_dir: str | None = None
    env: Mapping[str, str] | None = None

    def resolve(self, path: str | None) -> Path:
        if not path:
            return self.cwd
        return resolve_path(self.cwd, path, self.home_dir)

    def show(self, path: Path) -> str:
        if path.is_relative_to(self.cwd) and path != self.cwd:
            return str(path.relative_to(self.cwd))
        return str(path)

    def note(self) -> str:
        return f"Note: your current working directory is {self.cwd}."


def walk_files(base: Path, *, skip_dirs: tuple[str, ...] = ()) -> Iterator[tuple[str, Path]]:
    """Every file under ``base`` as ``(relative path, path)``, links not followed, at
    most :data:`MAX_WALK` entries."""
    seen = 0
    for root, dirs, files in os.walk(base):
        dirs[:] = sorted(d for d in dirs if d not in skip_dirs)
        seen += len(dirs) + len(files)
        rel_root = os.path.relpath(root, base)
        for name in sorted(files):
            rel = name if rel_root == "." else f"{rel_root}/{name}"
            yield rel, Path(root) / name
        if seen > MAX_WALK:
            return


def _mtime(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except OSError:
        return 0.0


# -- Glob ------------------------------------------------------------------------------------


def run_glob(call: SearchCall, tool_input: JsonDict) -> ToolOutcome:
    started = time.monotonic()
    given: str | None = tool_input.get("path")
    base = call.resolve(given)
    if given:
        if not base.exists():
            raise ToolError(f"Directory does not exist: {given}. {call.note()}")
        if not base.is_dir():
            raise ToolError(f"Path is not a directory: {given}")
    pattern: str = tool_input["pattern"]
    if os.path.isabs(pattern) and Path(pattern).is_relative_to(base):
        pattern = os.path.relpath(pattern, base)
    matcher = glob_matcher(pattern)
    found = [path for rel, path in walk_files(base) if matches_glob(rel, matcher)]
    found.sort(key=lambda p: (_mtime(p), str(p)))
    shown = [call.show(p) for p in found[:GLOB_LIMIT]]
    truncated = len(found) > GLOB_LIMIT
    result: JsonDict = {
        "filenames": shown,
        "durationMs": round((time.monotonic() - started) * 1000),
        "numFiles": len(shown),
        "truncated": truncated,
        "totalMatches": len(found),
        "countIsComplete": True,
    }
    if not shown:
        return ToolOutcome("No files found", result)
    lines = list(shown)
    if truncated:
        rest = len(found) - len(shown)
        lines.append(
            f"(Showing {len(shown)} of {len(found)} matching files; {rest} more are not "
            "listed. Narrow the pattern or path to see the rest.)"
        )
    return ToolOutcome("\n".join(lines), result)


# -- Grep ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class GrepQuery:
    pattern: str
    mode: str
    base: Path
    one_file: bool
    ignore_case: bool
    multiline: bool
    only_matching: bool
    line_numbers: bool
    before: int
    after: int
    globs: tuple[str, ...]
    file_type: str | None


def _split_globs(glob: str | None) -> tuple[str, ...]:
    """The ``glob`` input as ripgrep globs: split on spaces and commas outside braces."""
    if not glob:
        return ()
    parts, depth, current = [], 0, ""
    for c in glob:
        if c == "{":
            depth += 1
        elif c == "}":
            depth = max(depth - 1, 0)
        if c in " ," and depth == 0:
            if current:
                parts.append(current)
            current = ""
        else:
            current += c
    if current:
        parts.append(current)
    return tuple(parts)


def _number(value: object, default: int) -> int:
    if isinstance(value, int | float) and not isinstance(value, bool) and value >= 0:
        return int(value)
    return default


def parse_grep(call: SearchCall, tool_input: JsonDict) -> GrepQuery:
    given: str | None = tool_input.get("path")
    base = call.resolve(given)
    if not base.exists():
        raise ToolError(f"Path does not exist: {given}. {call.note()}")
    context = tool_input.get("context", tool_input.get("-C"))
    around = _number(context, 0)
    return GrepQuery(
        pattern=tool_input["pattern"],
        mode=tool_input.get("output_mode") or "files_with_matches",
        base=base,
        one_file=base.is_file(),
        ignore_case=bool(tool_input.get("-i")),
        multiline=bool(tool_input.get("multiline")),
        only_matching=bool(tool_input.get("-o")),
        line_numbers=tool_input.get("-n", True) is not False,
        before=_number(tool_input.get("-B"), around),
        after=_number(tool_input.get("-A"), around),
        globs=_split_globs(tool_input.get("glob")),
        file_type=tool_input.get("type"),
    )


def run_grep(call: SearchCall, tool_input: JsonDict) -> ToolOutcome:
    query = parse_grep(call, tool_input)
    lines = _ripgrep(call, query) if call.ripgrep is not None else _python_grep(call, query)
    limit = _number(tool_input.get("head_limit"), GREP_HEAD_LIMIT)
    skip = _number(tool_input.get("offset"), 0)
    if query.mode == "files_with_matches":
        lines = _newest_first(call, lines)
    page = lines[skip:] if not limit else lines[skip : skip + limit]
    applied: JsonDict = {}
    if limit and len(lines) - skip > limit:
        applied["appliedLimit"] = limit
    if skip:
        applied["appliedOffset"] = skip
    paging = ""
    if applied:
        said = [f"limit: {applied['appliedLimit']}"] if "appliedLimit" in applied else []
        said += [f"offset: {skip}"] if skip else []
        paging = f"\n\n[Showing results with pagination = {', '.join(said)}]"
    result: JsonDict
    if query.mode == "files_with_matches":
        result = {"mode": query.mode, "filenames": page, "numFiles": len(page)}
        result |= {"totalFiles": len(lines), **applied}
        if not page:
            return ToolOutcome("No files found", result)
        noun = "file" if len(page) == 1 else "files"
        text = f"Found {len(page)} {noun}\n" + "\n".join(page) + paging
        return ToolOutcome(text, result)
    content = "\n".join(page)
    if query.mode == "count":
        total = sum(int(line.rsplit(":", 1)[-1]) for line in page)
        result = {"mode": "count", "numFiles": len(page), "filenames": [], "content": content}
        result |= {"numMatches": total, **applied}
        if not page:
            return ToolOutcome("No matches found", result)
        files = "file" if len(page) == 1 else "files"
        times = "occurrence" if total == 1 else "occurrences"
        summary = f"\n\nFound {total} total {times} across {len(page)} {files}."
        return ToolOutcome(content + summary + paging, result)
    result = {"mode": "content", "numFiles": 0, "filenames": [], "content": content}
    result |= {"numLines": len(page), "totalLines": len(lines), **applied}
    return ToolOutcome((content or "No matches found") + paging, result)


def _newest_first(call: SearchCall, shown: list[str]) -> list[str]:
    return sorted(shown, key=lambda s: (-_mtime(call.cwd / s), s))


def _search_target(call: SearchCall, query: GrepQuery) -> list[str]:
    if query.base == call.cwd:
        return []
    return [call.show(query.base)]


def _ripgrep(call: SearchCall, query: GrepQuery) -> list[str]:
    assert call.ripgrep is not None
    argv = [call.ripgrep, "--hidden", "--max-columns", str(MAX_COLUMNS), "--sort", "path"]
    for folder in VCS_DIRS:
        argv += ["--glob", f"!{folder}"]
    if query.ignore_case:
        argv.append("-i")
    if query.multiline:
        argv += ["-U", "--multiline-dotall"]
    if query.file_type:
        argv += ["--type", query.file_type]
    for glob in query.globs:
        argv += ["--glob", glob]
    if query.mode == "files_with_matches":
        argv.append("-l")
    elif query.mode == "count":
        argv.append("-c")
    else:
        argv.append("-n" if query.line_numbers else "-N")
        if query.before:
            argv += ["-B", str(query.before)]
        if query.after:
            argv += ["-A", str(query.after)]
        if query.only_matching:
            argv.append("-o")
    argv += ["-e", query.pattern, "--", *_search_target(call, query)]
    proc = subprocess.run(
        argv, cwd=call.cwd, env=call.env, stdin=subprocess.DEVNULL, capture_output=True, check=False
    )
    out = proc.stdout.decode("utf-8", errors="replace")
    if proc.returncode == 2 and not out:
        raise ToolError(
            "Search failed \u2014 ripgrep rejected the pattern, glob, or file type without "
            "searching:\n" + proc.stderr.decode("utf-8", errors="replace").strip()
        )
    return [line for line in out.split("\n") if line]


# -- the Python search, when there is no ripgrep ---------------------------------------------


def _candidates(call: SearchCall, query: GrepQuery) -> list[tuple[str, Path]]:
    """The files ripgrep would search: git-ignored ones and VCS folders left out."""
    if query.one_file:
        return [(query.base.name, query.base)]
    listed = _git_files(query.base, call)
    if listed is not None:
        return [(rel, query.base / rel) for rel in listed]
    return list(walk_files(query.base, skip_dirs=VCS_DIRS))


def _git_files(base: Path, call: SearchCall) -> list[str] | None:
    """The files git does not ignore under ``base`` (tracked and untracked), None when
    ``base`` is not in a git work tree or git is missing."""
    git = call.git
    if git is None:
        return None
    try:
        proc = subprocess.run(
            [git, "-C", str(base), "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
            env=call.env,
            capture_output=True,
            check=False,
            timeout=60,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    if proc.returncode != 0:
        return None
    names = sorted({n for n in proc.stdout.decode("utf-8", "replace").split("\0") if n})
    return [n for n in names if (base / n).is_file() and not (base / n).is_symlink()]


def _wanted(rel: str, query: GrepQuery) -> bool:
    if query.file_type is not None:
        kinds = FILE_TYPES.get(query.file_type)
        if kinds is None:
            raise ToolError(
                "Search failed \u2014 ripgrep rejected the pattern, glob, or file type without "
                f"searching:\nunrecognized file type: {query.file_type}"
            )
        if not any(matches_glob(rel, glob_matcher(k)) for k in kinds):
            return False
    keep = [g for g in query.globs if not g.startswith("!")]
    drop = [g[1:] for g in query.globs if g.startswith("!")]
    if any(matches_glob(rel, glob_matcher(g)) for g in drop):
        return False
    return not keep or any(matches_glob(rel, glob_matcher(g)) for g in keep)


def _compile(query: GrepQuery) -> re.Pattern[str]:
    flags = re.IGNORECASE if query.ignore_case else 0
    if query.multiline:
        flags |= re.DOTALL | re.MULTILINE
    try:
        return re.compile(query.pattern, flags)
    except re.error as exc:
        raise ToolError(
            "Search failed \u2014 ripgrep rejected the pattern, glob, or file type without "
            f"searching:\nregex parse error: {exc}"
        ) from None


def _read_text(path: Path) -> str | None:
    """The file's text, None for a binary file (a NUL byte) or one that cannot be read."""
    try:
        st = path.stat()
        if not stat.S_ISREG(st.st_mode):
            return None
        data = path.read_bytes()
    except OSError:
        return None
    if b"\x00" in data[:8192]:
        return None
    return data.decode("utf-8", errors="replace")


def _python_grep(call: SearchCall, query: GrepQuery) -> list[str]:
    regex = _compile(query)
    out: list[str] = []
    for rel, path in _candidates(call, query):
        if not query.one_file and not _wanted(rel, query):
            continue
        text = _read_text(path)
        if text is None:
            continue
        lines = text.split("\n")
        if lines and lines[-1] == "":
            lines.pop()
        hits = _hit_lines(regex, text, lines, query.multiline)
        if not hits:
            continue
        shown = call.show(path)
        prefix = "" if query.one_file else f"{shown}:"
        if query.mode == "files_with_matches":
            out.append(shown)
        elif query.mode == "count":
            out.append(f"{prefix}{len(hits)}")
        else:
            out.extend(_content_lines(regex, lines, hits, query, "" if query.one_file else shown))
    return out


def _hit_lines(regex: re.Pattern[str], text: str, lines: list[str], multiline: bool) -> list[int]:
    """The 0-based numbers of the lines a match touches."""
    if not multiline:
        return [n for n, line in enumerate(lines) if regex.search(line)]
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line) + 1)
    hit: set[int] = set()
    for match in regex.finditer(text):
        first = _line_at(starts, match.start())
        last = _line_at(starts, max(match.end() - 1, match.start()))
        hit.update(range(first, min(last, len(lines) - 1) + 1))
    return sorted(hit)


def _line_at(starts: list[int], offset: int) -> int:
    lo, hi = 0, len(starts) - 1
    while lo < hi - 1:
        mid = (lo + hi) // 2
        if starts[mid] <= offset:
            lo = mid
        else:
            hi = mid
    return lo


def _content_lines(
    regex: re.Pattern[str], lines: list[str], hits: list[int], query: GrepQuery, shown: str
) -> list[str]:
    """ripgrep's ``content`` lines for one file: matches ``:``, context ``-``, and ``--``
    between groups that do not touch."""
    hit_set = set(hits)
    wanted: set[int] = set()
    for n in hits:
        wanted.update(range(max(n - query.before, 0), min(n + query.after, len(lines) - 1) + 1))
    out: list[str] = []
    previous = -2
    for n in sorted(wanted):
        if out and n != previous + 1 and (query.before or query.after):
            out.append("--")
        previous = n
        sep = ":" if n in hit_set else "-"
        head = (shown + sep if shown else "") + (f"{n + 1}{sep}" if query.line_numbers else "")
        line = lines[n]
        if query.only_matching and n in hit_set:
            out.extend(head + m.group(0) for m in regex.finditer(line) if m.group(0))
            continue
        if len(line) > MAX_COLUMNS:
            found = len(regex.findall(line)) if n in hit_set else 0
            line = f"[Omitted long line with {found} matches]"
        out.append(head + line)
    return out
