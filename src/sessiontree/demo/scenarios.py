"""The demo's sessions, step by step: what the user typed and what the model did."""

from __future__ import annotations

from datetime import datetime, timedelta
from pathlib import Path

from sessiontree.demo.agent import MODEL, Agent, IdSource, Project
from sessiontree.demo.content import APP, ISO_LINES, LOG, NOTES, PARSER, WEATHER, WEATHER_TEST
from sessiontree.model import builders as b
from sessiontree.storage.layout import Layout, subagents_dir


def _title(agent: Agent, title: str, *, custom: bool = False) -> str:
    if custom:
        agent.session.set_title(title)
    else:
        agent.session.set_ai_title(title)
    return title


def _weather(
    layout: Layout, ids: IdSource, project: Project, sid: str, start: datetime
) -> tuple[Agent, str]:
    s = Agent.start(layout, project, sid, start, ids)
    s.prompt(
        "Add a --units flag to weather.py so it can print Fahrenheit too", after_s=0, first=True
    )
    s.read_all(["weather.py", "README.md"], "Let me read the script and its README first.")
    s.edit(
        "weather.py",
        "    args = parser.parse_args()\n"
        '    print(f"{args.city}: {TEMPS_C[args.city.lower()]} C")\n',
        '    parser.add_argument("--units", choices=["c", "f"], default="c")\n'
        "    args = parser.parse_args()\n    temp = TEMPS_C[args.city.lower()]\n"
        '    if args.units == "f":\n        temp = temp * 9 / 5 + 32\n'
        '    print(f"{args.city}: {temp:.1f} {args.units.upper()}")\n',
        "Adding the flag and the conversion.",
    )
    s.reply("Done: `python weather.py oslo --units f` prints `oslo: 39.2 F`.")
    s.end_turn()
    s.prompt("Write a test for the Fahrenheit conversion", after_s=48)
    s.write("tests/test_units.py", WEATHER_TEST, "A small test that runs the script.")
    s.bash("python -m pytest -q tests", "1 passed in 0.21s", "Running the tests.")
    s.reply("Added tests/test_units.py; it passes.")
    s.end_turn()
    p3 = s.prompt("Rename --units to --system and make it take metric/imperial", after_s=63)
    s.edit(
        "weather.py",
        'choices=["c", "f"], default="c"',
        'choices=["metric", "imperial"], default="metric"',
        "Renaming the choices.",
    )
    s.reply('Renamed. The conversion check still compares with "f"; shall I update it too?')
    s.end_turn()
    s.rewind(p3, after_s=31)
    p3b = s.prompt("Keep --units, but also support kelvin (k)", after_s=9)
    s.edit("weather.py", 'choices=["c", "f"]', 'choices=["c", "f", "k"]', "Adding the choice.")
    s.edit(
        "weather.py",
        "        temp = temp * 9 / 5 + 32\n",
        '        temp = temp * 9 / 5 + 32\n    elif args.units == "k":\n'
        "        temp = temp + 273.15\n",
        "And the conversion.",
    )
    s.reply("`--units k` prints kelvin now.")
    s.end_turn()
    s.rewind(p3b, after_s=27)
    s.prompt("Keep --units as it is and document it in the README", after_s=11)
    s.edit(
        "README.md",
        "Usage: `python weather.py CITY`\n",
        "Usage: `python weather.py CITY [--units c|f]`\n\n"
        "`--units f` prints Fahrenheit; the default is Celsius.\n",
        "Documenting the flag.",
    )
    s.reply("README updated.")
    s.end_turn()
    p4 = s.prompt("Add a --json option", after_s=74)
    s.edit(
        "weather.py",
        '    print(f"{args.city}: {temp:.1f} {args.units.upper()}")\n',
        '    print(json.dumps({"city": args.city, "temp": temp}))\n',
        "Printing JSON.",
    )
    s.reply("The script prints JSON now.")
    s.end_turn()
    s.rewind(p4, after_s=22)
    s.prompt("Add a --json option, but keep plain text as the default output", after_s=8)
    s.edit("weather.py", "import argparse\n", "import argparse\nimport json\n", "The import.")
    s.edit(
        "weather.py",
        '    parser.add_argument("--units", choices=["c", "f"], default="c")\n',
        '    parser.add_argument("--units", choices=["c", "f"], default="c")\n'
        '    parser.add_argument("--json", action="store_true")\n',
        "The flag.",
    )
    s.edit(
        "weather.py",
        '    print(f"{args.city}: {temp:.1f} {args.units.upper()}")\n',
        "    if args.json:\n"
        '        print(json.dumps({"city": args.city, "temp": temp, "units": args.units}))\n'
        "        return\n"
        '    print(f"{args.city}: {temp:.1f} {args.units.upper()}")\n',
        "JSON only when asked.",
    )
    s.reply("`--json` prints one JSON object; plain text stays the default.")
    s.end_turn()
    return s, _title(s, "Weather CLI: units and JSON output")


def _notes(
    layout: Layout, ids: IdSource, project: Project, sid: str, start: datetime
) -> tuple[Agent, str]:
    s = Agent.start(layout, project, sid, start, ids)
    s.prompt(
        "Add a `search` command to notes.py that matches titles case-insensitively",
        after_s=0,
        first=True,
    )
    s.read("notes.py", "Reading notes.py.")
    s.edit(
        "notes.py",
        "    for note in notes:\n",
        '    if argv[:1] == ["search"]:\n'
        '        notes = [n for n in notes if argv[1].lower() in n["title"].lower()]\n'
        "    for note in notes:\n",
        "Filtering before printing.",
    )
    s.reply("`python notes.py search milk` lists the matching notes.")
    s.end_turn()
    s.prompt("Support tags: `add TITLE --tag work`", after_s=95)
    s.edit(
        "notes.py",
        '        notes.append({"title": argv[1]})\n',
        '        tags = argv[3:4] if argv[2:3] == ["--tag"] else []\n'
        '        notes.append({"title": argv[1], "tags": tags})\n',
        "Storing tags.",
    )
    s.reply("Notes can carry one tag now.")
    s.end_turn()
    s.prompt("Write a CHANGELOG entry for search and tags", after_s=70)
    s.write(
        "CHANGELOG.md",
        "# Changelog\n\n## 0.2.0\n\n- `search TEXT`: case-insensitive "
        "title search.\n- `add TITLE --tag TAG`: tag a note.\n",
        "Creating CHANGELOG.md.",
    )
    s.reply("CHANGELOG.md has a 0.2.0 entry.")
    s.end_turn()
    s.compact(
        "1. Primary Request and Intent: the user is extending notes.py, a small "
        "JSON-backed notes CLI.\n2. Done so far: `search` (case-insensitive title "
        "match), `--tag` on `add`, a 0.2.0 CHANGELOG entry.\n3. Pending: nothing.",
        after_s=40,
    )
    s.prompt("Now add `export --markdown` that prints the notes as a Markdown list", after_s=30)
    s.edit(
        "notes.py",
        "    for note in notes:\n",
        '    if argv[:2] == ["export", "--markdown"]:\n'
        '        print("\\n".join(f"- {n[\'title\']}" for n in notes))\n        return\n'
        "    for note in notes:\n",
        "Adding the export.",
    )
    s.reply("`python notes.py export --markdown` prints `- title` lines.")
    s.end_turn()
    return s, _title(s, "Notes CLI: search, tags and export")


TASK = "List every route in app.py and say which ones lack an auth check."
FINDING = "/users has no auth check; /health is public, which is fine for a health probe."


def _background_agent(s: Agent, task: str, finding: str) -> None:
    """The Agent tool run in the background: launch, the subagent's own sidechain file
    (and ``.meta.json``), the turn end, then the task notification that starts a turn."""
    agent_id = f"a{s.ids.hex(16)}"
    description = "Audit routes for auth"
    tool_id = s.tool_id()
    s.tools_used.add("Agent")
    s.respond(
        [
            b.text_block("Starting a background audit."),
            b.tool_use_block(
                tool_id,
                "Agent",
                {"description": description, "prompt": task, "subagent_type": "general-purpose"},
            ),
        ],
        "tool_use",
    )
    launched = {
        "isAsync": True,
        "status": "async_launched",
        "agentId": agent_id,
        "description": description,
        "resolvedModel": MODEL,
        "prompt": task,
        "outputFile": str(subagents_dir(s.session.path) / f"agent-{agent_id}.jsonl"),
        "canReadOutputFile": True,
        "canContinueAgent": True,
    }
    s.session.append_tool_result(
        tool_id,
        [b.text_block(f"Async agent launched successfully.\nagentId: {agent_id}")],
        tool_use_result=launched,
    )
    s.reply("The audit runs in the background; I'll report when it finishes.")
    s.end_turn(pending_agents=1)
    subagent = s.session.start_subagent(
        agent_id,
        task,
        agent_type="general-purpose",
        description=description,
        tool_use_id=tool_id,
        model=MODEL,
    )
    sub = Agent(s.layout, subagent, s.project, s.clock, s.ids)
    sub.read("app.py", "Reading the routes.")
    sub.reply(finding)
    s.clock.wait(2)
    s.session.append_task_notification(
        f"<task-notification>\n<task-id>{agent_id}</task-id>\n<tool-use-id>{tool_id}"
        f'</tool-use-id>\n<status>completed</status>\n<summary>Agent "{description}" '
        f"finished</summary>\n<result>{finding}</result>\n</task-notification>"
    )


def _api(
    layout: Layout, ids: IdSource, project: Project, sid: str, fork_sid: str, start: datetime
) -> tuple[Agent, str, Agent, str]:
    s = Agent.start(layout, project, sid, start, ids)
    s.prompt("Add a /health endpoint that returns the version", after_s=0, first=True)
    s.read("app.py", "Reading app.py.")
    s.edit(
        "app.py",
        '    "/users": lambda: [{"id": 1, "name": "ada"}],\n',
        '    "/users": lambda: [{"id": 1, "name": "ada"}],\n'
        '    "/health": lambda: {"status": "ok", "version": VERSION},\n',
        "Adding the route.",
    )
    s.reply('`GET /health` returns `{"status": "ok", "version": "1.4.2"}`.')
    s.end_turn()
    s.prompt("Run a background agent to audit every route for missing auth checks", after_s=58)
    _background_agent(s, TASK, FINDING)
    s.reply("The audit is back: /users needs an auth check; /health can stay public.")
    s.end_turn()
    s.prompt("Add a bearer-token check to /users and leave /health public", after_s=66)
    s.edit(
        "app.py",
        "        route = ROUTES.get(self.path)\n",
        "        route = ROUTES.get(self.path)\n"
        '        if self.path != "/health" and not self.headers.get("Authorization"):\n'
        "            self.send_error(401)\n            return\n",
        "Checking the header.",
    )
    s.reply("Every route but /health now answers 401 without an Authorization header.")
    s.end_turn()
    title = _title(s, "API health checks and auth", custom=True)
    fork_title = b.fork_title(title)
    fork = s.branch(fork_sid, fork_title, after_s=25)
    fork.prompt("Sketch the same API with FastAPI, as a reply only (no files)", after_s=14)
    fork.reply(
        'With FastAPI: `@app.get("/health")` returns the version, and a `Depends` '
        "on an `HTTPBearer` scheme guards /users."
    )
    fork.end_turn()
    return s, title, fork, fork_title


def _logs(
    layout: Layout, ids: IdSource, project: Project, sid: str, start: datetime
) -> tuple[Agent, str]:
    s = Agent.start(layout, project, sid, start, ids)
    s.prompt(
        f"The parser crashes on this log, why? {b.paste_placeholder(1, LOG)}",
        pastes={1: LOG},
        after_s=0,
        first=True,
    )
    s.read("logparse.py", "Reading the parser.")
    s.edit(
        "logparse.py",
        "        date, time, level, message = LINE.match(line).groups()\n",
        "        match = LINE.match(line)\n"
        "        if match is None:  # a continuation line of a multi-line message\n"
        "            continue\n        level = match.group(3)\n",
        "Continuation lines do not match the pattern; skipping them.",
    )
    s.reply(
        "The crash came from the indented continuation line after the ERROR entry: "
        "`LINE.match` returned None. Such lines are skipped now."
    )
    s.end_turn()
    second = s.prompt(
        f"Also accept this timestamp format: {b.paste_placeholder(1, ISO_LINES)}",
        pastes={1: ISO_LINES},
        after_s=81,
    )
    s.edit(
        "logparse.py",
        r'LINE = re.compile(r"^(\S+) (\S+) \[(\w+)\] (.*)$")',
        r'LINE = re.compile(r"^(\S+)(?: (\S+))? \[(\w+)\] (.*)$")',
        "Making the time optional.",
    )
    s.reply("ISO timestamps (`2025-03-01T12:00:07Z [WARN] ...`) parse too.")
    s.end_turn()
    # The crash hunt is long done: /rewind → "Summarize up to here" on the second prompt
    # keeps the timestamp work verbatim and folds the first turn into a summary.
    s.summarize(
        second,
        "The parser crashed on indented continuation lines (LINE.match returned None); "
        "logparse.py now skips lines that do not match.",
        direction="up_to",
        after_s=300,
    )
    s.prompt("Does the summary still know why lines are skipped?", after_s=20)
    s.reply("Yes: continuation lines of multi-line messages do not match LINE and are skipped.")
    s.end_turn()
    return s, _title(s, "Fix the log parser crash")


def _old(
    layout: Layout, ids: IdSource, project: Project, sid: str, start: datetime
) -> tuple[Agent, str]:
    """A short session from long ago: what ``cleanup`` would delete."""
    s = Agent.start(layout, project, sid, start, ids)
    s.prompt("Could the parser stream the file instead of reading it whole?", after_s=0)
    s.reply("Yes: iterate over the open file object; each line is read when it is needed.")
    s.end_turn()
    return s, _title(s, "Streaming the log file")


#: One written session: its agent, its role in the demo, its title and its project.
Written = tuple[Agent, str, str, Project]


def run(
    layout: Layout, ids: IdSource, base: Path, sids: dict[str, str], now: datetime
) -> list[Written]:
    """Write every session (``sids``: role → session id), oldest first, in project
    folders under ``base`` put back to their state before the sessions."""

    def project(name: str, files: dict[str, str], creates: tuple[str, ...] = ()) -> Project:
        return Project(name, base / name, files, creates)

    weather = project(
        "weather-cli",
        {"weather.py": WEATHER, "README.md": "# weather-cli\n\nUsage: `python weather.py CITY`\n"},
        ("tests/test_units.py",),
    )
    notes = project("notes-app", {"notes.py": NOTES}, ("CHANGELOG.md",))
    api = project("api-server", {"app.py": APP})
    logs = project("log-parser", {"logparse.py": PARSER})
    for folder in (weather, notes, api, logs):
        folder.reset()
    written = [
        (_old(layout, ids, logs, sids["old"], now - timedelta(days=45)), "old", logs),
        (_logs(layout, ids, logs, sids["paste"], now - timedelta(days=6, hours=3)), "paste", logs),
        (
            _notes(layout, ids, notes, sids["compacted"], now - timedelta(days=4, hours=5)),
            "compacted",
            notes,
        ),
    ]
    parent, title, fork, fork_title = _api(
        layout, ids, api, sids["subagent-and-fork"], sids["fork"], now - timedelta(days=2)
    )
    written += [
        ((parent, title), "subagent-and-fork", api),
        ((fork, fork_title), "fork", api),
        (
            _weather(layout, ids, weather, sids["rewinds"], now - timedelta(hours=3)),
            "rewinds",
            weather,
        ),
    ]
    return [(agent, role, title, project) for (agent, title), role, project in written]
