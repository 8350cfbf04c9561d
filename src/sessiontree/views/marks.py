"""The marks every human-readable view puts on a record (``tree``, ``show``,
``show --all-branches``, ``prompts``): one for each of the three places a record can be,
and one line for a compaction. docs/CLI.md gives the legend once."""

from __future__ import annotations

#: On the active path: what the client resumes.
ON_PATH = "●"
#: On a branch a rewind left (``switch`` goes back to it).
REWOUND = "○"
#: Summarized by a compaction: the client sends its summary instead.
SUMMARIZED = "·"

#: Where a compaction is, in the conversation (its boundary record).
COMPACTION = "── compacted: what came before is summarized ──"

LEGEND = (
    f"{ON_PATH} active path   {REWOUND} rewound branch   {SUMMARIZED} summarized by a compaction"
)


def mark(*, on_path: bool, summarized: bool) -> str:
    """The mark of a record: on the active path, summarized away, or rewound."""
    if on_path:
        return ON_PATH
    return SUMMARIZED if summarized else REWOUND
