"""Every tool call the real client 2.1.328 made in tests/agent/tool_cases.py, made again
through the Toolbox on the same project: the recorded result (``tool_result`` content,
``is_error``, ``toolUseResult``) is the client's, byte for byte."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.agent.live import start
from tests.agent.tool_cases import GOLDEN, P, make_project

CASES: list[dict[str, Any]] = json.loads(GOLDEN.read_text())

#: Where ripgrep's own words differ by version: the client embeds a newer one (which
#: prefixes ``rg:`` and shows the wrapped pattern); only the first line is compared.
RG_MESSAGE = "Search failed \u2014 ripgrep rejected the pattern"


def _fill(value: Any, project: Path) -> Any:
    return json.loads(json.dumps(value).replace(P, str(project)))


def _normal(result: Any) -> Any:
    if isinstance(result, dict):
        return {k: v for k, v in result.items() if k != "durationMs"}
    return result


@pytest.mark.parametrize("ripgrep", ["rg", None], ids=["ripgrep", "python-search"])
def test_tool_results_match_the_real_client(
    tmp_path: Path, project: Path, ripgrep: str | None
) -> None:
    if ripgrep == "rg" and shutil.which("rg") is None:
        pytest.skip("ripgrep is not installed here")
    make_project(project)
    live = start(tmp_path, project, ripgrep=shutil.which("rg") if ripgrep else None)
    live.prompt("go")
    for case in CASES:
        _, record = live.call(case["tool"], _fill(case["input"], project))
        (block,) = record["message"]["content"]
        want = _fill(case, project)
        where = f"{case['tool']} {json.dumps(case['input'])}"
        if isinstance(want["content"], str) and want["content"].startswith(RG_MESSAGE):
            assert block["content"].startswith(RG_MESSAGE), where
            assert block.get("is_error") is True, where
            continue
        assert block["content"] == want["content"], where
        assert block.get("is_error") == want["is_error"], where
        assert _normal(record["toolUseResult"]) == _normal(want["toolUseResult"]), where


def test_every_schema_is_the_clients() -> None:
    """The schemas as the client sends them (captured alongside calls.json): every input
    sessiontree offers is the client's, with the client's types and requirements."""
    from sessiontree.agent.tools import build_tool_schemas

    names = [tool["name"] for tool in build_tool_schemas()]
    assert names == ["Bash", "Edit", "Glob", "Grep", "Read", "Write"]
    schemas = {tool["name"]: tool["input_schema"] for tool in build_tool_schemas()}
    assert schemas["Edit"]["required"] == ["file_path", "old_string", "new_string"]
    assert schemas["Edit"]["properties"]["replace_all"]["default"] is False
    assert schemas["Bash"]["required"] == ["command"]
    assert set(schemas["Bash"]["properties"]) == {"command", "timeout", "description"}
    assert set(schemas["Read"]["properties"]) == {"file_path", "offset", "limit", "allow_large"}
    assert schemas["Grep"]["properties"]["output_mode"]["enum"] == [
        "content",
        "files_with_matches",
        "count",
    ]
    for schema in schemas.values():
        assert schema["additionalProperties"] is False
        assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
