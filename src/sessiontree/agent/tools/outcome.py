"""What a tool call gives back, and how its errors read (as client 2.1.328 words them)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sessiontree.model.builders.envelope import JsonDict

#: The tool_result of a call the user refused, and its ``toolUseResult`` (the client's).
REJECTED_TEXT = (
    "The user doesn't want to proceed with this tool use. The tool use was rejected (eg. if "
    "it was a file edit, the new_string was NOT written to the file). STOP what you are "
    "doing and wait for the user to tell you how to proceed."
)
REJECTED_RESULT = "User rejected tool use"


@dataclass(frozen=True)
class ToolOutcome:
    """One tool call's result.

    ``content`` is the ``tool_result`` content the model gets; ``tool_use_result`` the
    record's ``toolUseResult`` in the shape the client writes for that tool (for an
    error, the client's ``"Error: <message>"`` string); ``is_error`` the block's
    ``is_error``. See :func:`sessiontree.agent.tools.record_outcome` for writing it.
    ``permission_decision``: the record's ``permissionDecision`` as the client writes it
    (None for a call refused before permission was asked: the client writes none)."""

    content: str | list[JsonDict]
    tool_use_result: Any
    is_error: bool = False
    permission_decision: JsonDict | None = None


class ToolError(Exception):
    """A tool call that failed. ``validation``: the input was refused before anything was
    done, which the client wraps in ``<tool_use_error>`` for the model; otherwise the
    message goes as it is (a file that cannot be read, a command that failed)."""

    def __init__(self, message: str, *, validation: bool = False) -> None:
        super().__init__(message)
        self.message = message
        self.validation = validation

    def outcome(self) -> ToolOutcome:
        content = (
            f"<tool_use_error>{self.message}</tool_use_error>" if self.validation else self.message
        )
        return ToolOutcome(content, f"Error: {self.message}", is_error=True)


def error_outcome(message: str, *, validation: bool = False) -> ToolOutcome:
    return ToolError(message, validation=validation).outcome()


def validate_input(tool: str, schema: JsonDict, tool_input: object) -> None:
    """Check ``tool_input`` against the tool's input schema as the client does before a
    call; raises a validation :class:`ToolError` worded like the client's
    ``InputValidationError``."""
    if not isinstance(tool_input, dict):
        raise ToolError(
            f"InputValidationError: {tool} failed due to the following issue:\n"
            "The input is expected to be an object",
            validation=True,
        )
    properties: JsonDict = schema["properties"]
    issues = [
        f"The required parameter `{name}` is missing"
        for name in schema["required"]
        if name not in tool_input
    ]
    for name, value in tool_input.items():
        spec = properties.get(name)
        if spec is None:
            issues.append(f"An unexpected parameter `{name}` was provided")
            continue
        expected = spec["type"]
        if not _has_type(value, expected):
            issues.append(
                f"The parameter `{name}` type is expected as `{expected}` but provided as "
                f"`{_type_name(value)}`"
            )
        elif "enum" in spec and value not in spec["enum"]:
            allowed = " | ".join(repr(v) for v in spec["enum"])
            issues.append(f"The parameter `{name}` must be one of {allowed}")
        elif expected in ("integer", "number") and not _in_range(value, spec):
            issues.append(f"The parameter `{name}` is out of range")
    if issues:
        plural = "issue" if len(issues) == 1 else "issues"
        raise ToolError(
            f"InputValidationError: {tool} failed due to the following {plural}:\n"
            + "\n".join(issues),
            validation=True,
        )


def _has_type(value: object, expected: str) -> bool:
    if expected == "string":
        return isinstance(value, str)
    if expected == "boolean":
        return isinstance(value, bool)
    if expected == "integer":
        return isinstance(value, int) and not isinstance(value, bool)
    if expected == "number":
        return isinstance(value, int | float) and not isinstance(value, bool)
    return True


def _in_range(value: Any, spec: JsonDict) -> bool:
    if "minimum" in spec and value < spec["minimum"]:
        return False
    if "exclusiveMinimum" in spec and value <= spec["exclusiveMinimum"]:
        return False
    return not ("maximum" in spec and value > spec["maximum"])


def _type_name(value: object) -> str:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if value is None:
        return "null"
    if isinstance(value, list):
        return "array"
    return "object"
