"""The demo's project files and pasted texts, as they were before the sessions ran."""

from __future__ import annotations

WEATHER = r'''"""weather: print today's temperature for a city."""
import argparse

TEMPS_C = {"oslo": 4.0, "lisbon": 19.5, "nairobi": 24.0}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("city")
    args = parser.parse_args()
    print(f"{args.city}: {TEMPS_C[args.city.lower()]} C")


if __name__ == "__main__":
    main()
'''
WEATHER_TEST = r"""import subprocess
import sys


def test_fahrenheit() -> None:
    out = subprocess.run([sys.executable, "weather.py", "oslo", "--units", "f"],
                         capture_output=True, text=True, check=True).stdout
    assert out.strip() == "oslo: 39.2 F"
"""
NOTES = r'''"""notes: a tiny JSON-backed notes CLI."""
import json
import sys
from pathlib import Path

STORE = Path("notes.json")


def main(argv: list[str]) -> None:
    notes = json.loads(STORE.read_text()) if STORE.exists() else []
    if argv[:1] == ["add"]:
        notes.append({"title": argv[1]})
        STORE.write_text(json.dumps(notes, indent=2))
    for note in notes:
        print(note["title"])


if __name__ == "__main__":
    main(sys.argv[1:])
'''
APP = r'''"""api-server: a small JSON API on the standard library."""
import json
from http.server import BaseHTTPRequestHandler, HTTPServer

VERSION = "1.4.2"
ROUTES = {
    "/users": lambda: [{"id": 1, "name": "ada"}],
}


class Handler(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        route = ROUTES.get(self.path)
        if route is None:
            self.send_error(404)
            return
        self.send_response(200)
        self.end_headers()
        self.wfile.write(json.dumps(route()).encode())


if __name__ == "__main__":
    HTTPServer(("127.0.0.1", 8080), Handler).serve_forever()
'''
PARSER = r'''"""logparse: count log lines by level."""
import re
import sys
from collections import Counter

LINE = re.compile(r"^(\S+) (\S+) \[(\w+)\] (.*)$")


def parse(lines):
    counts = Counter()
    for line in lines:
        date, time, level, message = LINE.match(line).groups()
        counts[level] += 1
    return counts


if __name__ == "__main__":
    print(dict(parse(open(sys.argv[1]))))
'''
LOG = "\n".join(
    [
        f"2025-03-0{1 + i // 12} 12:{i:02d}:07 [INFO] worker {i % 4} handled request {1000 + i}"
        for i in range(24)
    ]
    + [
        "2025-03-02 12:24:09 [ERROR] worker 2 failed: upstream timeout",
        "    retrying with backoff (attempt 2 of 5)",
        "Traceback (most recent call last):",
        '  File "logparse.py", line 19, in <module>',
        "    print(dict(parse(open(sys.argv[1]))))",
        '  File "logparse.py", line 12, in parse',
        "    date, time, level, message = LINE.match(line).groups()",
        "AttributeError: 'NoneType' object has no attribute 'groups'",
    ]
)
ISO_LINES = (
    "2025-03-01T12:00:07Z [WARN] disk 91% full\n"
    "2025-03-01T12:00:09Z [ERROR] disk 99% full\n"
    "2025-03-01T12:00:11Z [INFO] cleanup done"
)
