"""``compact`` and ``summarize``: the summary from ``--summary TEXT``, ``--summary -``
(stdin) or ``--summary-file PATH``; exactly one of them, and never empty."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from sessiontree.cli.main import cli
from sessiontree.conversation.transcript import Transcript

BASIC = "0f31836f-46f1-45f6-85ba-7878a822a884"

#: The two commands that take a summary, each with what else it needs.
COMMANDS = {
    "compact": ["compact", BASIC],
    "summarize": ["summarize", BASIC, "--at", "2", "--from"],
}


@pytest.fixture
def root(fixture_root) -> Path:  # type: ignore[no-untyped-def]
    found: Path = fixture_root("01-basic")
    return found


def transcript_of(root: Path) -> Path:
    return next((root / "projects").glob("*/*.jsonl"))


def invoke(root: Path, args: list[str], stdin: str | bytes | None = None) -> Result:
    return CliRunner().invoke(cli, ["--root", str(root), *args], input=stdin)


def summary_written(root: Path) -> str:
    """The text of the newest compact summary in the session."""
    transcript = Transcript.open(transcript_of(root))
    summaries = [r for r in transcript.active_records() if r.get("isCompactSummary")]
    return summaries[-1].text()


@pytest.mark.parametrize("command", sorted(COMMANDS))
@pytest.mark.parametrize(
    ("options", "stdin"),
    [
        (["--summary", ""], None),
        (["--summary", " \n\t "], None),
        (["--summary", "-"], ""),
        (["--summary", "-"], "\n\n"),
        (["--summary-file", "-"], "  \n"),
        (["--summary-file", "{empty}"], None),
    ],
    ids=["empty", "whitespace", "stdin-empty", "stdin-newlines", "file-dash-blank", "file-empty"],
)
def test_an_empty_summary_is_refused_in_one_line(
    root: Path, tmp_path: Path, command: str, options: list[str], stdin: str | None
) -> None:
    empty = tmp_path / "empty.txt"
    empty.write_text("")
    before = transcript_of(root).read_bytes()
    args = [*COMMANDS[command], *(o.replace("{empty}", str(empty)) for o in options)]
    result = invoke(root, args, stdin)
    assert result.exit_code == 1, result.output
    assert result.stdout == ""
    assert result.stderr.startswith("sessiontree: the summary is empty")
    assert result.stderr.count("\n") == 1
    assert transcript_of(root).read_bytes() == before


@pytest.mark.parametrize("command", sorted(COMMANDS))
@pytest.mark.parametrize(
    ("options", "says"),
    [
        (["--summary", "S", "--summary-file", "-"], "--summary and --summary-file do not go"),
        ([], "the summary is required"),
    ],
    ids=["both", "neither"],
)
def test_both_or_neither_is_a_usage_error(
    root: Path, command: str, options: list[str], says: str
) -> None:
    before = transcript_of(root).read_bytes()
    result = invoke(root, [*COMMANDS[command], *options], "S\n")
    assert result.exit_code == 2, result.output
    assert says in result.stderr
    assert transcript_of(root).read_bytes() == before


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_the_summary_from_stdin(root: Path, command: str) -> None:
    result = invoke(root, [*COMMANDS[command], "--summary", "-"], "FROM STDIN\nline two\n\n")
    assert result.exit_code == 0, result.output
    # the newlines at the end are dropped, as $(cat FILE) drops them
    assert "Summary:\nFROM STDIN\nline two\n\n" in summary_written(root)


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_the_summary_from_a_file(root: Path, tmp_path: Path, command: str) -> None:
    source = tmp_path / "summary.md"
    source.write_text("FROM A FILE — ünïcode\r\n", encoding="utf-8")
    result = invoke(root, [*COMMANDS[command], "--summary-file", str(source)])
    assert result.exit_code == 0, result.output
    assert "Summary:\nFROM A FILE — ünïcode\n\n" in summary_written(root)


def test_summary_file_dash_reads_stdin_and_text_is_taken_as_given(root: Path) -> None:
    result = invoke(root, [*COMMANDS["compact"], "--summary-file", "-", "--dry-run"], "S\n")
    assert result.exit_code == 0, result.output
    result = invoke(root, [*COMMANDS["compact"], "--summary", "  kept as typed  "])
    assert result.exit_code == 0, result.output
    assert "Summary:\n  kept as typed  \n\n" in summary_written(root)


@pytest.mark.parametrize(
    ("where", "stdin", "says"),
    [
        ("{missing}", None, "missing.txt: No such file or directory"),
        ("-", b"\xff\xfe summary", "the summary from stdin is not UTF-8 text"),
        ("{latin1}", None, "latin1.txt is not UTF-8 text"),
    ],
    ids=["missing", "stdin-not-utf8", "file-not-utf8"],
)
def test_an_unreadable_summary_is_refused_in_one_line(
    root: Path, tmp_path: Path, where: str, stdin: bytes | None, says: str
) -> None:
    (tmp_path / "latin1.txt").write_bytes("caf\xe9".encode("latin-1"))
    where = where.format(missing=tmp_path / "missing.txt", latin1=tmp_path / "latin1.txt")
    before = transcript_of(root).read_bytes()
    result = invoke(root, [*COMMANDS["compact"], "--summary-file", where], stdin)
    assert result.exit_code == 1, result.output
    assert says in result.stderr and result.stderr.count("\n") == 1
    assert transcript_of(root).read_bytes() == before
