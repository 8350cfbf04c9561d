"""A transcript whose file name is not UTF-8: every read face answers, none traces back.

The client names transcripts ``<session id>.jsonl``; a file renamed by hand (or by a sync
tool on another file system) may carry bytes that are not UTF-8. Named by its path, it is
read like any other; JSON shows the stray bytes as U+FFFD; ``doctor`` says the client
neither lists nor resumes it.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from sessiontree.cli.main import cli


@pytest.fixture
def misnamed(fixture_root: Any) -> tuple[Path, str]:
    root: Path = fixture_root("01-basic")
    (transcript,) = (root / "projects").glob("*/*.jsonl")
    raw = os.fsencode(transcript.parent) + b"/caf\xe9-notes.jsonl"
    os.rename(transcript, raw)
    return root, os.fsdecode(raw)


def run(root: Path, *args: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli, ["--root", str(root), *args], catch_exceptions=False)
    return result.exit_code, result.output


@pytest.mark.parametrize("command", ["show", "tree", "context", "prompts", "checkpoints"])
def test_read_commands_answer_in_json_with_the_stray_byte_shown(
    misnamed: tuple[Path, str], command: str
) -> None:
    root, path = misnamed
    code, out = run(root, command, path, "--json")
    assert code == 0, out
    document = json.loads(out)
    if isinstance(document, dict) and "sessionId" in document:
        assert document["sessionId"] == "caf\ufffd-notes"


@pytest.mark.parametrize("command", ["show", "tree", "prompts"])
def test_read_commands_answer_in_text(misnamed: tuple[Path, str], command: str) -> None:
    root, path = misnamed
    code, out = run(root, command, path)
    assert code == 0, out
    assert out.strip()


def test_doctor_says_the_client_neither_lists_nor_resumes_it(misnamed: tuple[Path, str]) -> None:
    root, _ = misnamed
    code, out = run(root, "doctor", "--json")
    assert code == 1  # problems found
    found = [p for p in json.loads(out)["problems"] if p["kind"] == "misnamed-transcript"]
    assert len(found) == 1
    assert found[0]["path"].endswith("caf\ufffd-notes.jsonl")
    assert "not UTF-8" in found[0]["detail"]
    _, out = run(root, "doctor")
    assert "misnamed-transcript" in out and "not UTF-8" in out


@pytest.mark.parametrize("fmt", ["md", "html", "json"])
def test_export_writes_it(misnamed: tuple[Path, str], fmt: str) -> None:
    root, path = misnamed
    result = CliRunner().invoke(
        cli, ["--root", str(root), "export", path, "--format", fmt, "-o", "-"]
    )
    assert result.exit_code == 0, result.output
    assert result.stdout_bytes.decode("utf-8")  # valid UTF-8 throughout
