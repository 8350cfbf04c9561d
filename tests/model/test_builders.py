"""The record builders rebuild real records of client 2.1.328 exactly: same keys, same
order, same values, from the fixtures written by the real client."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest

from sessiontree.model import builders as b
from sessiontree.model.records import NULL_UUID
from sessiontree.storage.layout import paste_hash
from tests.conftest import FIXTURES

Rec = dict[str, Any]


def lines(scenario: str, pattern: str = "projects/*/*.jsonl") -> list[Rec]:
    (path,) = sorted((FIXTURES / scenario / "claude-home").glob(pattern))
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def env_of(record: Rec, **extra: Any) -> b.Envelope:
    return b.Envelope(
        session_id=record["sessionId"],
        cwd=record["cwd"],
        version=record["version"],
        git_branch=record["gitBranch"],
        user_type=record["userType"],
        entrypoint=record["entrypoint"],
        slug=record.get("slug"),
        agent_id=record.get("agentId"),
        **extra,
    )


def same(built: Rec, real: Rec) -> None:
    """Equal values and the same key order, at every level."""
    assert built == real
    assert json.dumps(built) == json.dumps(real)


BASIC = lines("01-basic")
COMPACT = lines("06-compact")
SUB_MAIN = lines("14-subagent")
SUB = lines("14-subagent", "projects/*/*/subagents/*.jsonl")


def test_user_prompt() -> None:
    real = BASIC[5]
    built = b.build_user_prompt(
        env_of(real),
        uuid=real["uuid"],
        parent_uuid=None,
        prompt_id=real["promptId"],
        content=real["message"]["content"],
        timestamp=real["timestamp"],
        prompt_index=1,
        permission_mode="bypassPermissions",
    )
    same(built, real)


def test_assistant_blocks_share_one_response() -> None:
    first, second = BASIC[52], BASIC[53]
    built = b.build_assistant_blocks(
        env_of(first),
        uuids=[first["uuid"], second["uuid"]],
        parent_uuid=first["parentUuid"],
        message_id=first["message"]["id"],
        request_ref=first["requestRef"],
        blocks=[first["message"]["content"][0], second["message"]["content"][0]],
        timestamps=[first["timestamp"], second["timestamp"]],
        model="claude-opus-5-5",
        stop_reason="tool_use",
        usage=b.build_usage(input_tokens=120, output_tokens=30),
    )
    same(built[0], first)
    same(built[1], second)


def test_assistant_blocks_need_one_uuid_per_block() -> None:
    with pytest.raises(ValueError):
        b.build_assistant_blocks(
            b.Envelope(session_id="s", cwd="/p"),
            uuids=["u1"],
            parent_uuid="p",
            message_id="m",
            request_ref="r",
            blocks=[b.text_block("a"), b.text_block("b")],
            timestamps=["t", "t"],
            model="m",
            stop_reason="end_turn",
            usage={},
        )


def tool_result_like(real: Rec, result: tuple[str, Any], **options: Any) -> Rec:
    text, structured = result
    return b.build_tool_result(
        env_of(real),
        uuid=real["uuid"],
        parent_uuid=real["parentUuid"],
        prompt_id=real["promptId"],
        tool_use_id=real["message"]["content"][0]["tool_use_id"],
        content=text,
        tool_use_result=structured,
        timestamp=real["timestamp"],
        **options,
    )


def test_edit_tool_result() -> None:
    real = BASIC[54]
    path = "/home/dev/01-basic/a.txt"
    result = b.edit_result(path, original="alpha\n", old_string="alpha", new_string="gamma")
    same(tool_result_like(real, result), real)


def test_edit_tool_result_with_context_lines() -> None:
    real = COMPACT[45]
    result = b.edit_result(
        "/home/dev/06-compact/notes.md",
        original="# Notes\noriginal line\n",
        old_string="original line",
        new_string="edited line",
    )
    same(tool_result_like(real, result), real)


def test_write_read_and_bash_tool_results() -> None:
    write = COMPACT[23]
    created = b.write_result("/home/dev/06-compact/a.txt", "alpha\n")
    same(tool_result_like(write, created), write)
    read = COMPACT[39]
    text = b.read_result("/home/dev/06-compact/notes.md", "# Notes\noriginal line\n")
    same(tool_result_like(read, text), read)
    bash = BASIC[60]
    same(tool_result_like(bash, b.bash_result(""), is_error=False, sandboxed=False), bash)


def test_subagent_records() -> None:
    prompt = SUB[0]
    built = b.build_user_text(
        env_of(prompt),
        uuid=prompt["uuid"],
        parent_uuid=None,
        prompt_id=prompt["promptId"],
        content=prompt["message"]["content"],
        timestamp=prompt["timestamp"],
    )
    same(built, prompt)
    block = SUB[13]
    (assistant,) = b.build_assistant_blocks(
        env_of(block),
        uuids=[block["uuid"]],
        parent_uuid=block["parentUuid"],
        message_id=block["message"]["id"],
        request_ref=block["requestRef"],
        blocks=block["message"]["content"],
        timestamps=[block["timestamp"]],
        model="claude-opus-5-5",
        stop_reason="tool_use",
        usage=b.build_usage(input_tokens=120, output_tokens=30),
        attribution_agent="general-purpose",
    )
    same(assistant, block)
    result = SUB[15]
    created = b.write_result("/home/dev/14-subagent/sub.txt", "from subagent\n")
    same(tool_result_like(result, created), result)


def test_subagent_meta() -> None:
    (meta_path,) = (FIXTURES / "14-subagent/claude-home/projects").glob("*/*/subagents/*.json")
    real = json.loads(meta_path.read_text())
    built = b.build_subagent_meta(
        agent_type="general-purpose",
        description="mock subagent task",
        tool_use_id=real["toolUseId"],
        model="claude-opus-5-5",
    )
    same(built, real)


def test_task_notification_and_queue_operations() -> None:
    real = SUB_MAIN[47]
    built = b.build_task_notification(
        env_of(real),
        uuid=real["uuid"],
        parent_uuid=real["parentUuid"],
        prompt_id=real["promptId"],
        content=real["message"]["content"],
        timestamp=real["timestamp"],
        prompt_index=2,
        turn_index=3,
        run_id=real["origin"]["runId"],
        permission_mode="bypassPermissions",
    )
    same(built, real)
    enqueue, dequeue = SUB_MAIN[44], SUB_MAIN[45]
    same(
        b.build_queue_operation(
            enqueue["sessionId"],
            operation="enqueue",
            timestamp=enqueue["timestamp"],
            content=enqueue["content"],
        ),
        enqueue,
    )
    same(
        b.build_queue_operation(
            dequeue["sessionId"], operation="dequeue", timestamp=dequeue["timestamp"]
        ),
        dequeue,
    )


def test_attachments() -> None:
    real = BASIC[13]
    attachment, text = b.date_attachment("2026-11-29")
    built = b.build_attachment(
        env_of(real),
        uuid=real["uuid"],
        parent_uuid=real["parentUuid"],
        attachment=attachment,
        timestamp=real["timestamp"],
        rendered=[text],
        rendered_role="system",
        echo_session_id=True,
    )
    same(built, real)
    environment = BASIC[6]
    attachment, text = b.environment_attachment(
        "/home/dev/01-basic", os_version="Linux 6.18.44-fc-v669"
    )
    built = b.build_attachment(
        env_of(environment),
        uuid=environment["uuid"],
        parent_uuid=environment["parentUuid"],
        attachment=attachment,
        timestamp=environment["timestamp"],
        rendered=[text],
        rendered_role="system",
    )
    assert list(built) == list(environment)
    assert built["attachment"] == environment["attachment"]
    assert text.startswith(environment["rendered"][0]["content"].split(" - Downloaded")[0])


def test_turn_duration() -> None:
    for real, pending in ((BASIC[63], None), (SUB_MAIN[42], 1)):
        built = b.build_turn_duration(
            env_of(real),
            uuid=real["uuid"],
            parent_uuid=real["parentUuid"],
            duration_ms=real["durationMs"],
            message_count=real["messageCount"],
            timestamp=real["timestamp"],
            pending_background_agents=pending,
        )
        same(built, real)


def test_compaction_records() -> None:
    boundary, summary = COMPACT[69], COMPACT[70]
    segment = boundary["compactMetadata"]["preservedSegment"]
    built = b.build_compact_boundary(
        env_of(boundary),
        uuid=boundary["uuid"],
        logical_parent_uuid=boundary["logicalParentUuid"],
        timestamp=boundary["timestamp"],
        pre_tokens=150,
        post_tokens=2995,
        duration_ms=64,
        preserved=b.PreservedSegment(
            segment["headUuid"],
            segment["anchorUuid"],
            segment["tailUuid"],
            tuple(boundary["compactMetadata"]["preservedMessages"]["uuids"]),
        ),
    )
    same(built, boundary)
    text = b.format_compact_summary(
        "1. Primary Request and Intent: MOCK SUMMARY of 16 messages.",
        transcript_path="/home/dev/.claude/projects/-home-dev-06-compact/"
        "a5ca052c-392f-46b5-b4fb-f97672a6248e.jsonl",
        tools_used=["Write", "Read", "Edit", "Bash", "Edit"],
    )
    built = b.build_compact_summary(
        env_of(summary),
        uuid=summary["uuid"],
        boundary_uuid=boundary["uuid"],
        prompt_id=summary["promptId"],
        text=text,
        timestamp=summary["timestamp"],
        prompt_index=3,
    )
    same(built, summary)
    caveat, command = COMPACT[71], COMPACT[72]
    for real, meta in ((caveat, True), (command, False)):
        built = b.build_user_text(
            env_of(real),
            uuid=real["uuid"],
            parent_uuid=real["parentUuid"],
            prompt_id=real["promptId"],
            content=real["message"]["content"],
            timestamp=real["timestamp"],
            is_meta=meta,
        )
        same(built, real)
    assert caveat["message"]["content"] == b.LOCAL_COMMAND_CAVEAT


def test_partial_summary() -> None:
    real = lines("07-summarize-from-here")[68]
    text = b.format_compact_summary(
        "1. Primary Request and Intent: MOCK SUMMARY of 18 messages.",
        transcript_path="/home/dev/.claude/projects/-home-dev-07-summarize-from-here/"
        "5966e22d-9167-48de-80c2-0f95904ed98a.jsonl",
        tools_used=["Bash", "Edit", "Read", "Write"],
        continue_directly=False,
        has_preserved_messages=False,
    )
    built = b.build_compact_summary(
        env_of(real),
        uuid=real["uuid"],
        boundary_uuid=real["parentUuid"],
        prompt_id=real["promptId"],
        text=text,
        timestamp=real["timestamp"],
        prompt_index=3,
        direction="from",
        messages_summarized=18,
    )
    same(built, real)


def test_last_prompt_and_rewind_marker() -> None:
    real = BASIC[65]
    built = b.build_last_prompt(
        real["sessionId"], last_prompt=real["lastPrompt"], leaf_uuid=real["leafUuid"]
    )
    same(built, real)
    marker = lines("05-resend-siblings")[39]
    same(b.build_rewind_marker(marker["sessionId"]), marker)
    assert marker["leafUuid"] == NULL_UUID


def test_last_prompt_is_collapsed_and_cut() -> None:
    paste_records = lines("12-big-paste")
    (paste_file,) = (FIXTURES / "12-big-paste/claude-home/paste-cache").iterdir()
    typed = f"please look at this: {paste_file.read_text()} and reply"
    assert b.format_last_prompt(typed) == paste_records[22]["lastPrompt"]
    assert b.format_last_prompt("  short\n prompt ") == "short prompt"


def test_snapshots_and_deltas() -> None:
    for real in (BASIC[4], BASIC[59]):
        snapshot = real["snapshot"]
        tracked = {
            path: b.Backup(e["backupFileName"], e["version"], e["backupTime"], e["realParentDir"])
            for path, e in snapshot["trackedFileBackups"].items()
        }
        built = b.build_snapshot(
            real["messageId"],
            tracked,
            timestamp=snapshot["timestamp"],
            has_untracked_changes=snapshot.get("hasUntrackedChanges", False),
        )
        same(built, real)
    for real in (COMPACT[22], COMPACT[44]):
        e = real["backup"]
        built = b.build_snapshot_delta(
            real["messageId"],
            snapshot_message_id=real["snapshotMessageId"],
            tracking_path=real["trackingPath"],
            backup=b.Backup(e["backupFileName"], e["version"], e["backupTime"], e["realParentDir"]),
            timestamp=real["timestamp"],
        )
        same(built, real)


def test_history_entries_and_pastes() -> None:
    history = FIXTURES / "12-big-paste/claude-home/history.jsonl"
    real = [json.loads(line) for line in history.read_text().splitlines()]
    (paste_file,) = (FIXTURES / "12-big-paste/claude-home/paste-cache").iterdir()
    paste = paste_file.read_text()
    assert b.is_large_paste(paste) and paste_hash(paste) == paste_file.stem
    display = f"please look at this: {b.paste_placeholder(1, paste)} and reply"
    built = b.build_history_entry(
        display=display,
        timestamp_ms=real[0]["timestamp"],
        project=real[0]["project"],
        session_id=real[0]["sessionId"],
        pasted_contents={1: b.build_pasted_text(1, paste, content_hash=paste_hash(paste))},
    )
    same(built, real[0])
    same(
        b.build_history_entry(
            display="/exit",
            timestamp_ms=real[2]["timestamp"],
            project=real[2]["project"],
            session_id=real[2]["sessionId"],
        ),
        real[2],
    )
    sent = lines("12-big-paste")[4]["message"]["content"]
    assert b.expand_pastes(display, {1: paste}, tag_ids={1: "3957"}) == sent


def test_inline_paste() -> None:
    short = "a\nb\nc"
    assert not b.is_large_paste(short)
    assert b.paste_placeholder(2, short) == "[Pasted text #2 +2 lines]"
    assert b.paste_placeholder(3, "x" * 900) == "[Pasted text #3]"  # no newline: no count
    assert b.expand_pastes("[Pasted text #3]", {3: "one line"}) == "one line"
    assert b.build_pasted_text(2, short) == {"id": 2, "type": "text", "content": short}
    assert b.expand_pastes("see [Pasted text #2 +2 lines]!", {2: short}) == "see a\nb\nc!"
    assert b.expand_pastes("[Pasted text #9 +1 lines]", {2: short}) == "[Pasted text #9 +1 lines]"


def test_fork_records() -> None:
    source = [r for r in BASIC if r.get("type") in ("user", "assistant", "system")][:6]
    source[2] = {**source[2], "sessionKind": "bg"}
    sidechain = {**source[3], "uuid": "side", "isSidechain": True}
    copies = b.build_fork_records([*source, sidechain], new_session_id="new-session")
    assert [c["uuid"] for c in copies] == [r["uuid"] for r in source]
    assert [c["parentUuid"] for c in copies] == [None] + [r["uuid"] for r in source[:-1]]
    for copy, original in zip(copies, source, strict=True):
        assert copy["sessionId"] == "new-session"
        assert copy["forkedFrom"] == {
            "sessionId": original["sessionId"],
            "messageUuid": original["uuid"],
        }
        assert list(copy)[-1] == "forkedFrom" and "sessionKind" not in copy
        assert copy.get("session_id", "new-session") == "new-session"
        assert list(copy)[:-1] == [k for k in original if k != "sessionKind"]


def test_titles() -> None:
    assert b.build_custom_title("s", "Fix it") == {
        "type": "custom-title",
        "customTitle": "Fix it",
        "sessionId": "s",
    }
    assert b.build_ai_title("s", "Fix it") == {
        "type": "ai-title",
        "aiTitle": "Fix it",
        "sessionId": "s",
    }
    assert b.fork_title("Fix it") == "Fix it (Branch)"
    assert b.fork_title("Fix it", taken=["Fix it (Branch)"]) == "Fix it (Branch 2)"


def test_structured_patch_edges() -> None:
    assert b.build_structured_patch("a\n", "a\n") == []
    (hunk,) = b.build_structured_patch("", "new\n")
    # 1-based even when empty: client 2.1.328's Edit filling an empty file wrote oldStart 1
    assert hunk == {"oldStart": 1, "oldLines": 0, "newStart": 1, "newLines": 1, "lines": ["+new"]}
    text, result = b.write_result("/p/x", "two\n", original="one\n")
    assert result["type"] == "update" and result["structuredPatch"][0]["lines"] == ["-one", "+two"]
    assert text.startswith("The file /p/x has been updated")


def test_time_formats() -> None:
    moment = datetime(2026, 11, 29, 19, 16, 27, 352_999, tzinfo=UTC)
    assert b.format_timestamp(moment) == "2026-11-29T19:16:27.352Z"
    plus_two = moment.astimezone(timezone(timedelta(hours=2)))
    assert b.format_timestamp(plus_two) == "2026-11-29T19:16:27.352Z"
    assert b.format_timestamp(moment.replace(tzinfo=None)) == "2026-11-29T19:16:27.352Z"
    assert b.epoch_ms(moment) == 1795979787352


def _kind(record: Rec) -> str | None:
    kind = record.get("type")
    if kind == "user":
        if "toolUseResult" in record:
            return "tool-result"
        origin = record.get("origin")
        return "prompt" if isinstance(origin, dict) and origin.get("kind") == "human" else None
    if kind == "system":
        return "turn-duration" if record.get("subtype") == "turn_duration" else None
    if kind == "attachment":
        return "rendered-attachment" if "rendered" in record else None
    if kind == "last-prompt":
        return None if record.get("explicit") else kind
    return kind if kind in ("assistant", "file-history-snapshot", "file-history-delta") else None


def _built_examples() -> dict[str, Rec]:
    env = b.Envelope(session_id="s", cwd="/p")
    backup = b.Backup("h@v1", 1, "t", "/p")
    return {
        "prompt": b.build_user_prompt(
            env,
            uuid="u",
            parent_uuid=None,
            prompt_id="p",
            content="x",
            timestamp="t",
            prompt_index=1,
        ),
        "tool-result": b.build_tool_result(
            env,
            uuid="u",
            parent_uuid="a",
            prompt_id="p",
            tool_use_id="t",
            content="x",
            tool_use_result={},
            timestamp="t",
        ),
        "assistant": b.build_assistant_blocks(
            env,
            uuids=["u"],
            parent_uuid="p",
            message_id="m",
            request_ref="r",
            blocks=[b.text_block("x")],
            timestamps=["t"],
            model="m",
            stop_reason="end_turn",
            usage={},
        )[0],
        "turn-duration": b.build_turn_duration(
            env, uuid="u", parent_uuid="p", duration_ms=1, message_count=1, timestamp="t"
        ),
        "rendered-attachment": b.build_attachment(
            env, uuid="u", parent_uuid="p", attachment={}, timestamp="t", rendered=["x"]
        ),
        "last-prompt": b.build_last_prompt("s", last_prompt="x", leaf_uuid="u"),
        "file-history-snapshot": b.build_snapshot("m", {"a": backup}, timestamp="t"),
        "file-history-delta": b.build_snapshot_delta(
            "m", snapshot_message_id="p", tracking_path="a", backup=backup, timestamp="t"
        ),
    }


#: Keys the client writes on some records of a kind and not others.
OPTIONAL = {
    "slug",
    "sessionKind",
    "session_id",
    "agentId",
    "sandboxed",
    "toolInputStreamMs",
    "attributionAgent",
    "requestSessionId",
    "pendingBackgroundAgentCount",
    "permissionDecision",
    "renderedBesideToolResult",
}


def test_every_real_record_of_a_built_kind_has_the_built_key_set() -> None:
    """Across every fixture transcript, modulo the keys written only sometimes."""
    examples = _built_examples()
    seen: dict[str, int] = dict.fromkeys(examples, 0)
    for path in sorted(FIXTURES.glob("*/claude-home/projects/**/*.jsonl")):
        for line in path.read_text(encoding="utf-8").splitlines():
            record = json.loads(line)
            kind = _kind(record)
            if kind is None:
                continue
            seen[kind] += 1
            assert set(record) - OPTIONAL == set(examples[kind]) - OPTIONAL, (path.name, kind)
    assert all(seen.values()), seen


def test_partial_compact_boundary() -> None:
    real = lines("07-summarize-from-here")[67]
    meta = real["compactMetadata"]
    segment = meta["preservedSegment"]
    built = b.build_compact_boundary(
        env_of(real),
        uuid=real["uuid"],
        logical_parent_uuid=real["logicalParentUuid"],
        timestamp=real["timestamp"],
        pre_tokens=150,
        post_tokens=3248,
        duration_ms=34,
        messages_summarized=18,
        preserved=b.PreservedSegment(
            segment["headUuid"],
            segment["anchorUuid"],
            segment["tailUuid"],
            tuple(meta["preservedMessages"]["uuids"]),
        ),
    )
    same(built, real)


EXTRA = FIXTURES.parent / "claude-code-2.1.328-extra"


def test_clear_opens_the_new_session_like_the_client() -> None:
    """Fixture 10-clear: caveat, the /clear command, its empty stdout (no promptId)."""
    (path,) = (EXTRA / "10-clear" / "claude-home" / "projects").glob("*/f4c315df-*.jsonl")
    chain = [r for r in map(json.loads, path.read_text().splitlines()) if "uuid" in r]
    caveat, command, stdout = chain[:3]
    for real, meta in ((caveat, True), (command, False)):
        built = b.build_user_text(
            env_of(real),
            uuid=real["uuid"],
            parent_uuid=real["parentUuid"],
            prompt_id=None,
            content=real["message"]["content"],
            timestamp=real["timestamp"],
            is_meta=meta,
            echo_session_id=False,
        )
        same(built, real)
    assert command["message"]["content"] == b.format_command("clear")
    built = b.build_local_command(
        env_of(stdout),
        uuid=stdout["uuid"],
        parent_uuid=stdout["parentUuid"],
        content="<local-command-stdout></local-command-stdout>",
        timestamp=stdout["timestamp"],
        command="clear",
    )
    same(built, stdout)
