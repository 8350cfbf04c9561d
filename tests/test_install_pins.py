"""The venv's installs are pinned by name and version, so that a clone anywhere makes
the same venv from the registries (a pin naming a local file installs nowhere else)."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PIN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*==[A-Za-z0-9.+!-]+$")


def pins() -> dict[str, str]:
    lines = (REPO / "constraints.txt").read_text().splitlines()
    found = {}
    for line in lines:
        text = line.split("#", 1)[0].strip()
        if text:
            assert PIN.match(text), f"constraints.txt: {text!r} is not NAME==VERSION"
            name, version = text.split("==")
            found[re.sub(r"[-_.]+", "-", name).lower()] = version
    return found


def test_every_pin_is_a_name_and_a_version() -> None:
    assert pins()


def test_every_dependency_is_pinned() -> None:
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    wanted = [*project["dependencies"], *project["optional-dependencies"]["dev"]]
    pinned = pins()
    for requirement in wanted:
        name = re.split(r"[\[<>=!~ ]", requirement, maxsplit=1)[0]
        assert re.sub(r"[-_.]+", "-", name).lower() in pinned, f"{name} is not pinned"
