"""A session pulled from the store onto another machine, into another project folder,
is resumed by the real client with the context sessiontree computes of the pulled file:
a rewind, a compaction, a subagent and big tool output each, synced from one config root
and pulled into another."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from sessiontree.cli.main import cli
from sessiontree.conversation.transcript import Transcript
from tests.conftest import FIXTURES, copy_writable, lay_out
from tests.interop.realclient import client_env, mock_api, normalize, resume

pytestmark = pytest.mark.interop

SCENARIOS = ["02-rewind-both", "06-compact", "13-big-tool-output", "14-subagent"]


def run(*args: str, state: Path) -> str:
    result = CliRunner().invoke(
        cli, list(args), catch_exceptions=False, env={"SESSIONTREE_STATE_DIR": str(state)}
    )
    assert result.exit_code == 0, result.output
    return result.output


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_the_real_client_resumes_a_pulled_session(
    claude: Path, tmp_path: Path, store_dsn: str, scenario: str
) -> None:
    a = copy_writable(FIXTURES / scenario / "claude-home", tmp_path / "a")
    run("--root", str(a), "--store", store_dsn, "sync", "--machine", "a", state=tmp_path / "sa")
    b, work = tmp_path / "b", tmp_path / "elsewhere" / "work"
    work.mkdir(parents=True)
    for row in json.loads(run("--store", store_dsn, "sessions", "--all", "--json",
                              state=tmp_path / "sb")):  # fmt: skip
        sid = row["sessionId"]
        report = json.loads(run("--root", str(b), "--store", store_dsn, "pull", sid,
                                "--project", str(work), "--force", "--json",
                                state=tmp_path / "sb"))  # fmt: skip
        ours = Transcript.open(report["path"]).context()
        assert ours, sid
        theirs = resume(claude, b, sid, work)
        assert normalize(ours) == normalize(theirs), sid


def extend(claude: Path, home: Path, sid: str, cwd: Path, prompt: str) -> None:
    """The real client goes on with ``sid`` in ``cwd``, its config root ``home/.claude``
    (no copy: its turn is appended to the file there)."""
    with mock_api() as (port, _bodies):
        done = subprocess.run(
            [str(claude), "-p", "-r", sid, prompt], cwd=cwd, env=client_env(home, port),
            capture_output=True, text=True, timeout=180, check=False,
        )  # fmt: skip
    assert done.returncode == 0, done.stderr[-500:]


def test_back_and_forth_between_two_machines(claude: Path, tmp_path: Path, store_dsn: str) -> None:
    """The issue's flow: written on A (a rewind, checkpoints), synced, pulled on B into
    another folder, resumed and extended there by the real client, synced, pulled back on
    A (a fast-forward), where the real client resumes it with B's turn; restore on B puts
    files back under B's folder."""
    a, a_work = lay_out("02-rewind-both", tmp_path / "a")
    (sid,) = [p.stem for p in a.glob("projects/*/*.jsonl")]
    store = ("--store", store_dsn)
    run("--root", str(a), *store, "sync", "--machine", "a", state=tmp_path / "sa")
    b_home, b_work = tmp_path / "hb", tmp_path / "b-machine" / "work"
    b = b_home / ".claude"
    b_work.mkdir(parents=True)
    run("--root", str(b), *store, "pull", sid, "--project", str(b_work), "--force",
        state=tmp_path / "sb")  # fmt: skip
    extend(claude, b_home, sid, b_work, "a turn on B")
    ours_b = Transcript.open(next(b.glob(f"projects/*/{sid}.jsonl"))).context()
    assert "a turn on B" in json.dumps(ours_b)
    run("--root", str(b), *store, "sync", "--machine", "b", state=tmp_path / "sb")
    back = json.loads(run("--root", str(a), *store, "pull", sid, "--force", "--json",
                          state=tmp_path / "sa"))  # fmt: skip
    assert back["action"] == "fast-forward" and back["machine"] == "b", back
    assert back["project"] == str(a_work)
    ours_a = Transcript.open(back["path"]).context()
    assert "a turn on B" in json.dumps(ours_a)
    assert normalize(resume(claude, a, sid, a_work)) == normalize(ours_a)
    restored = json.loads(run("--root", str(b), "restore", sid, "--to", "2", "--yes", "--json",
                              state=tmp_path / "sb"))  # fmt: skip
    written = [Path(f["path"] if isinstance(f, dict) else f) for f in restored["code"]["restored"]]
    assert written, restored
    for path in written:  # (from the backups pulled with it, under B's folder)
        assert path.is_relative_to(b_work) and path.is_file(), path
    assert (b_work / "a.txt").read_bytes() == (a_work / "a.txt").read_bytes()
