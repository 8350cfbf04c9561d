"""A session pulled from the store onto another machine, into another project folder,
is resumed by the real client with the context sessiontree computes of the pulled file:
a rewind, a compaction, a subagent and big tool output each, synced from one config root
and pulled into another."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from sessiontree.cli.main import cli
from sessiontree.conversation.transcript import Transcript
from tests.conftest import FIXTURES, copy_writable
from tests.interop.realclient import normalize, resume

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
