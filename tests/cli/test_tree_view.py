"""``tree`` and ``show --all-branches`` for people (issue 28): each line fits the
terminal, no record the tree does not print is named by its id, a tool call shows as
what it acts on (never its ``toolu_`` id), and a compaction has one mark everywhere."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

from click.testing import CliRunner
from rich.cells import cell_len

from sessiontree.cli.main import cli
from tests.cli.test_cli import REWIND
from tests.conftest import FIXTURES

PLAIN = {"COLUMNS": "80", "NO_COLOR": "1"}
#: A 2.0.x client's compacted session: its boundary preserved no segment.
OLD_COMPACT = (
    FIXTURES.parent / "claude-code-2.0.76" / "02-par-task-compact" / "claude-home" / "projects"
)
#: A tree line: its branch drawing, its mark, its short id.
NODE = re.compile(r"^[│├└─ ]*([●○·]) ([0-9a-f]{8}) ")


def run(root: Path | None, *args: str) -> str:
    base = [] if root is None else ["--root", str(root)]
    result = CliRunner().invoke(cli, [*base, *args], env=PLAIN, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.stdout


def test_tree_fits_80_columns_and_names_only_records_it_prints(rewind: Path) -> None:
    out = run(rewind, "tree", REWIND)
    lines = out.splitlines()
    assert all(cell_len(line) <= 80 for line in lines), [x for x in lines if cell_len(x) > 80]
    assert any(line.endswith("…") for line in lines)  # a long prompt cut, and says so
    printed = {m.group(2) for line in lines if (m := NODE.match(line))}
    named = set(re.findall(r"\b[0-9a-f]{8}\b", out))
    assert named <= printed, f"ids of records the tree does not print: {named - printed}"
    # the fork point (a turn_duration note) is named by the reply above it
    doc = json.loads(run(rewind, "tree", REWIND, "--json"))
    types = {n["uuid"]: (n["type"], n["subtype"]) for n in doc["nodes"]}
    fork = doc["forkPoints"][0]["uuid"]
    assert types[fork] == ("system", "turn_duration") and fork[:8] not in out
    assert "⑂ 2 branches from c9221a09" in out
    # the id the footer gives for the rewound branch is one `switch --to` takes to its leaf
    footer = next(line for line in lines if line.startswith("branches to switch to"))
    (shown,) = re.findall(r"[0-9a-f]{8}", footer)
    switched = CliRunner().invoke(
        cli, ["--root", str(rewind), "switch", REWIND, "--to", shown, "--dry-run", "--json"]
    )
    assert json.loads(switched.stdout)["branchLeafUuid"] == doc["offPathLeaves"][0]


def test_tree_and_all_branches_show_tools_by_what_they_act_on(rewind: Path) -> None:
    for args in (["tree", REWIND], ["show", REWIND, "--all-branches"]):
        out = run(rewind, *args)
        assert "toolu_" not in out, args
        assert "→ Write: /home/dev/02-rewind-both/a.txt" in out
        assert "→ Edit: /home/dev/02-rewind-both/a.txt (alpha → gamma)" in out
    results = run(rewind, "show", REWIND, "--all-branches")
    assert "← Bash: " in results and "← Read: " in results  # a result after its tool's name


def test_a_compaction_has_one_mark_in_every_view(tmp_path: Path) -> None:
    """A 2.0.x boundary (no preserved segment): what it summarized is marked · (not ○,
    a rewind's) by tree, show --all-branches and prompts; its line is the same in all."""
    (original,) = OLD_COMPACT.glob("*/c0ebf95d-*.jsonl")
    path = tmp_path / original.name
    shutil.copy(original, path)
    tree, branches = run(None, "tree", str(path)), run(None, "show", str(path), "--all-branches")
    prompts, shown = run(None, "prompts", str(path)), run(None, "show", str(path), "--no-pager")
    for out in (tree, branches):
        marks = [m.group(1) for line in out.splitlines() if (m := NODE.match(line))]
        assert "○" not in marks and marks[0] == "·" and "●" in marks
    marks = [line.split()[0] for line in prompts.splitlines()[1:3]]
    assert marks == ["·", "·"], prompts
    line = "── compacted: what came before is summarized ──"
    assert all(line in out for out in (tree, branches, shown)), "one line for a compaction"
