"""The real client's interactive scenarios, played again through ``AgentHost``.

Each fixture scenario (``tests/fixtures/claude-code-2.1.328*``) was written by client
2.1.328 driven in a terminal against ``mock_api.py``: prompts with directives, then
``/rewind`` with one of its options, ``/compact``, ``/fork`` or ``/clear``. Here the same
steps run through the engine (the Anthropic provider against the same ``mock_api.py``, the
real tools, real files), and what both wrote must agree:

* the project's files at the end, byte for byte;
* the conversation resumed at the end (its user and assistant records, block by block,
  compact summaries marked), and how many fork points the file has;
* the file checkpoints per prompt (which files, at which version, present or not).

Where ``chat`` deliberately differs, the test names it:

* restoring code also undoes what Bash changed (``b.txt`` in the rewind scenarios), which
  the client's restore leaves (its "Bash changes to other files are not undone");
* ``/fork``: client 2.1.328 starts the copy as a background session and the user goes on
  in the original; :meth:`AgentHost.fork` is ``/branch`` (:meth:`Session.branch`): the
  user goes on in the copy. The files end the same; the conversations are not compared.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from sessiontree.agent.anthropic_provider import AnthropicProvider
from sessiontree.agent.loop import AgentHost
from sessiontree.agent.permissions import Permissions
from sessiontree.agent.tools import Toolbox
from sessiontree.checkpoints.capture import FileHistory
from sessiontree.checkpoints.read import read_checkpoints
from sessiontree.conversation.transcript import Transcript
from sessiontree.session.session import Session
from sessiontree.storage.layout import Layout
from tests.agent.loop_harness import mock_api, needs_mock_api

pytestmark = needs_mock_api

FIXTURES = Path(__file__).parents[1] / "fixtures"
SCENARIOS = [
    "claude-code-2.1.328/01-basic",
    "claude-code-2.1.328/02-rewind-both",
    "claude-code-2.1.328-extra/03-rewind-conversation-only",
    "claude-code-2.1.328-extra/04-rewind-code-only",
    "claude-code-2.1.328/05-resend-siblings",
    "claude-code-2.1.328/06-compact",
    "claude-code-2.1.328/07-summarize-from-here",
    "claude-code-2.1.328-extra/08-summarize-up-to-here",
    "claude-code-2.1.328/09-fork",
    "claude-code-2.1.328/12-big-paste",
    "claude-code-2.1.328/13-big-tool-output",
    "claude-code-2.1.328-extra/10-clear",
    "claude-code-2.1.328-par/17-par-plain",
    "claude-code-2.1.328-par/18-par-edits-rewind",
    "claude-code-2.1.328-par/19-par-compact",
]
MODEL = "claude-opus-5-5"


def play(scenario: Path, tmp_path: Path) -> tuple[AgentHost, Path, list[str]]:
    """The scenario's steps through a host: ``(host, project, prompts typed)``."""
    spec = json.loads((scenario / "scenario.json").read_text())
    original = spec["project"]
    cwd = tmp_path / "work" / scenario.name
    shutil.copytree(scenario / "workdir-before", cwd)
    layout = Layout(tmp_path / "root")
    session = Session.create(layout, cwd, entrypoint="cli", record_history=True)
    session.file_history = FileHistory(layout, session.session_id, str(cwd))
    toolbox = Toolbox(
        session, cwd=cwd, permissions=Permissions(project=cwd, ask=None, skip=True), env={}
    )
    typed: list[str] = []
    restored = ""  # the prompt a conversation rewind put back in the input
    with mock_api(tmp_path / "api") as api:
        provider = AnthropicProvider(api_key="sk-ant-mock", base_url=api.url)
        host = AgentHost(session, provider, toolbox, model=MODEL, layout=layout)
        for step in spec["steps"]:
            action = step["action"]
            if action == "prompt":
                text = step["text"].replace(original, str(cwd))
                typed.append(text)
                host.turn(text)
            elif action == "slash" and step["text"] == "/compact":
                host.compact()
            elif action == "slash" and step["text"] == "/fork":
                host.fork()
            elif action == "slash" and step["text"] == "/clear":
                host.clear()
            elif action == "rewind":
                prompts = [p.prompt_uuid for p in host.rewind_points()]
                at = prompts[step["prompt_index"] - 1]
                option = step["option"]
                if option in (1, 2, 3):
                    done = host.rewind(at, conversation=option in (1, 2), code=option in (1, 3))
                    restored = done.prompt_text if option in (1, 2) else ""
                else:
                    host.summarize(at, direction="from" if option == 4 else "up_to")
            elif action == "paste":  # a paste typed with text around it, then Enter
                home = scenario / "claude-home"
                entry = json.loads((home / "history.jsonl").read_text().splitlines()[0])
                (paste,) = entry["pastedContents"].values()
                text = (home / "paste-cache" / f"{paste['contentHash']}.txt").read_text()
                assert entry["display"].startswith(step["input_box_before_enter"])
                typed.append(entry["display"])
                host.turn(entry["display"], pastes={paste["id"]: text})
            elif action.startswith("resend"):  # Enter on the prompt the rewind put back
                typed.append(restored)
                host.turn(restored)
            else:
                assert action in ("start", "exit"), step
    return host, cwd, typed


def final_transcript(scenario: Path, last_prompt: str, original: str) -> Path:
    """The client's transcript the scenario ended in: the one its last prompt went to."""
    for path in sorted((scenario / "claude-home" / "projects").rglob("*.jsonl")):
        if "subagents" in path.parts:
            continue
        for line in path.read_text().splitlines():
            record = json.loads(line)
            if record.get("type") == "user" and record.get("promptId"):
                content = record["message"]["content"]
                text = content if isinstance(content, str) else ""
                if text.replace(original, "") == last_prompt:
                    return path
    raise AssertionError("no transcript holds the last prompt")


def resumed_shape(path: Path) -> list[tuple[str, tuple[str, ...]]]:
    """The user and assistant records resuming sends (meta rows and the client's own
    commands' rows left out), block kinds, tool calls by name."""
    out = []
    for record in Transcript.open(path).active_records():
        if record.type not in ("user", "assistant") or record.is_meta:
            continue
        content = record.content
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
        text = str(blocks[0].get("text", "")) if blocks else ""
        if text.startswith(("<command-", "<local-command-")):
            continue
        kinds = tuple(
            f"tool_use:{b.get('name')}" if b.get("type") == "tool_use" else str(b.get("type"))
            for b in blocks
        )
        if record.is_compact_summary:
            kinds = ("compact-summary",)
        out.append((record.type, kinds))
    return out


def prompt_texts(path: Path) -> list[str]:
    """The prompts of the active path, a paste's random id left out."""
    return [
        re.sub(r'(</?pasted_content) id="[0-9a-f]+">', r"\1>", record.text())
        for record in Transcript.open(path).active_records()
        if record.is_prompt
    ]


def checkpoint_shape(path: Path) -> list[list[tuple[str, int, bool]]]:
    """Per checkpoint, in order: each file's name, version, and whether it had content."""
    return [
        sorted(
            (Path(entry.tracking_path).name, entry.version, entry.backup_file_name is not None)
            for entry in checkpoint.files.values()
        )
        for checkpoint in read_checkpoints(Transcript.open(path))
    ]


def files(folder: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()
    }


@pytest.mark.parametrize("name", SCENARIOS, ids=[s.split("/")[1] for s in SCENARIOS])
def test_a_client_scenario_played_through_the_host(tmp_path: Path, name: str) -> None:
    scenario = FIXTURES / name
    original = json.loads((scenario / "scenario.json").read_text())["project"]
    host, cwd, typed = play(scenario, tmp_path)
    expected = files(scenario / "workdir-after")
    if scenario.name in ("02-rewind-both", "04-rewind-code-only"):
        # beyond the client: restoring code undoes what Bash made (b.txt) too
        assert expected.pop("b.txt") == b"made-by-bash\n"
    assert files(cwd) == expected
    if scenario.name == "09-fork":  # the client goes on in the original; chat, in the copy
        assert host.session.path.read_text().count('"forkedFrom"') > 0
        return
    theirs = final_transcript(scenario, typed[-1].replace(str(cwd), ""), original)
    ours = host.session.path
    assert resumed_shape(ours) == resumed_shape(theirs)
    assert len(Transcript.open(ours).fork_points()) == len(Transcript.open(theirs).fork_points())
    assert checkpoint_shape(ours) == checkpoint_shape(theirs)
    if scenario.name == "12-big-paste":  # the paste sent as the client sends it
        assert prompt_texts(ours) == [t.replace(original, str(cwd)) for t in prompt_texts(theirs)]
