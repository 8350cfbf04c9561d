"""Secrets in a transcript line: keys, tokens and passwords a tool printed, found and
blanked before the line goes to a shared store.

Pure: the raw bytes of one JSONL line in, :class:`Finding` values out; no decode, so a
line that is not valid JSON or not valid UTF-8, or holds NUL bytes, is scanned the same
and never raises. What is found (:data:`KINDS`):

* ``private-key``: a PEM block, ``-----BEGIN … PRIVATE KEY-----`` through its END line,
  or when the END is not there (output cut short), through the end of the JSON string;
* ``anthropic-key``: ``sk-ant-api03-…``, ``sk-ant-admin01-…`` and older ``sk-ant-…``;
* ``openai-key``: ``sk-…``, ``sk-proj-…``, ``sk-svcacct-…``, ``sk-admin-…``;
* ``aws-access-key``: an access key id, ``AKIA``/``ASIA``/``ABIA``/``ACCA`` and 16 more;
* ``aws-secret-key``: the 40 characters after ``aws_secret_access_key =`` (or
  ``"SecretAccessKey": "…"``, the AWS CLI's JSON);
* ``github-token``: ``ghp_``/``gho_``/``ghu_``/``ghs_``/``ghr_`` tokens, ``github_pat_``;
* ``slack-webhook``: the path of a ``hooks.slack.com/services/…`` URL;
* ``slack-token``: ``xoxb-``/``xoxa-``/``xoxp-``/``xoxr-``/``xoxs-``;
* ``google-api-key``: ``AIza`` and 35 more;
* ``password-assignment``: the value given to a key named like a password, secret,
  token or API key (``DB_PASSWORD=…``, ``"client_secret": "…"``, ``token: …``), when
  the value looks random: at least 8 characters and varied (from 12 characters, two
  kinds of character and 3.0 bits a character; below that, three kinds), and neither a
  placeholder (``****``, ``<redacted>``, ``${VAR}``, ``changeme``), nor code
  (``getpass()``, ``None``, ``str``, ``settings.SECRET_KEY``), nor a path or a number.

A token's value is the whole token (its prefix names the service, its rest is the
secret); an assignment's is the value alone. A generated key mixes capitals, small
letters and digits, so an ``sk-`` or ``gh…_`` word that does not (a slug, a branch name)
is not one; the documentation's own AWS keys (``…EXAMPLE…``) are not secrets either.

Text in a JSON string holds escapes. A token is found right after ``\\n``, ``\\t``,
``\\r`` or ``\\u2192`` (the letter or digit just before it is then the escape's); a PEM
block's lines may end in ``\\n``; a quoted value's quotes may be a JSON string's own or,
in JSON printed inside JSON, ``\\"``. A value never starts or ends inside an escape, and
the marker :func:`redact` puts in its place is plain ASCII with no quote or backslash,
so a line that was valid JSON stays valid JSON.

:attr:`Finding.masked` is what a person is shown: the service's prefix, then at most a
fifth of the rest (up to four characters from its start and two from its end) around
``…``, so it never holds the value whole and a password under 10 characters shows
only its first. A private key shows its BEGIN line alone.

Speed: the scanner runs over gigabytes. Each pattern starts with a literal (a token's
prefix, a key's name), so a line is first searched for those alone: the prefixes in one
pass of one pattern, the names with ``bytes.find`` in the line made lower case (a
case-blind pattern is ten times slower); a line with none costs those few passes at C
speed. A full pattern is tried only where one is found, and none backtracks far: every
repeat is bounded (a PEM block at 32 KB, a value at 256 bytes), over one class with a
fixed end, and a token is not looked for again inside one already found.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any, Literal

import msgspec

SecretKind = Literal[
    "private-key",
    "anthropic-key",
    "openai-key",
    "aws-access-key",
    "aws-secret-key",
    "github-token",
    "slack-webhook",
    "slack-token",
    "google-api-key",
    "password-assignment",
]
#: Every kind, the most specific first: where two findings share bytes, the longer is
#: kept, and of two as long the one earlier here.
KINDS: tuple[SecretKind, ...] = (
    "private-key",
    "anthropic-key",
    "openai-key",
    "aws-access-key",
    "aws-secret-key",
    "github-token",
    "slack-webhook",
    "slack-token",
    "google-api-key",
    "password-assignment",
)


class Finding(msgspec.Struct, frozen=True, gc=False):
    """One secret in a scanned line."""

    kind: SecretKind
    #: Where the value is: ``data[start:end]`` of the bytes scanned, whole escapes.
    start: int
    end: int
    #: The value as a person may see it, never whole (see the module's notes).
    masked: str


# -- patterns --------------------------------------------------------------------------


def _left(alphabet: bytes) -> bytes:
    """Nothing of the token's ``alphabet`` just before it, or a JSON escape that ends in
    a letter or digit (``\\n``, ``\\t``, ``\\r``, ``\\uXXXX``)."""
    return rb"(?:(?<![" + alphabet + rb"])|(?<=\\[nrt])|(?<=\\u[0-9A-Fa-f]{4}))"


# A key's name: ``password``, ``DB_PASSWORD``, ``client_secret``, ``apiKey``, ``SECRET_KEY``.
_KEYWORD = rb"(?i:(?:passw(?:or)?d|pwd|secret|token|api[_-]?key)(?:[_.-]?(?:key|value|base)){0,2})"
# A key's closing quote, then the separator (``=``, ``:``, ``:=``, ``=>``; not ``==``).
_KEY_END = rb"""(?:\\?["'])?[ \t]{0,8}(?:=>|:=|:|=(?!=))[ \t]{0,8}"""
# One character of a value: not a control, space, quote or backslash, or a whole
# ``\\`` or ``\/`` escape (``\n`` and ``\"`` end it: a new line, a closing quote).
_DQ_CHAR = rb'(?:[^\x00-\x20"\\\x7f]|\\\\|\\/)'
_SQ_CHAR = rb"""(?:[^\x00-\x20"'\\\x7f]|\\\\|\\/)"""
_BARE_CHAR = rb"""(?:[^\x00-\x20"'\\,;&)\]}\x7f]|\\\\|\\/)"""

_PEM_LABEL = rb"(?:(?:RSA|EC|DSA|OPENSSH|ENCRYPTED|PGP) )?PRIVATE KEY(?: BLOCK)?-----"
_PEM_BODY = rb"(?:[A-Za-z0-9+/=:,.\s-]|\\\\|\\[nrt/])"

_PATTERNS: dict[str, bytes] = {
    # Through the END line, or else (the key's first character, then) the rest of the
    # JSON string, escapes whole.
    "private-key": (
        rb"(?P<v>-----BEGIN "
        + _PEM_LABEL
        + rb"(?:"
        + _PEM_BODY
        + rb"{0,32768}?-----END "
        + _PEM_LABEL
        + rb"|"
        + _PEM_BODY
        + rb'(?:[^"\\]|\\.){0,32768}))'
    ),
    "anthropic-key": _left(rb"A-Za-z0-9_-") + rb"(?P<v>sk-ant-[A-Za-z0-9_-]{32,1024})",
    "openai-key": (
        _left(rb"A-Za-z0-9_-")
        + rb"(?P<v>sk-(?!ant-)(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,1024})"
    ),
    "aws-access-key": (
        _left(rb"A-Za-z0-9") + rb"(?P<v>(?:AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16})(?![A-Za-z0-9])"
    ),
    "aws-secret-key": (
        rb"(?i:secret_?access_?key)"
        + _KEY_END
        + rb"""(?:\\?["'])?(?P<v>(?:[A-Za-z0-9+]|\\?/){40})(?![A-Za-z0-9+/=])"""
    ),
    "github-token": _left(rb"A-Za-z0-9_") + rb"(?P<v>gh[pousr]_[A-Za-z0-9]{36,255})",
    "github-pat": _left(rb"A-Za-z0-9_") + rb"(?P<v>github_pat_[A-Za-z0-9_]{60,255})",
    "slack-webhook": (
        rb"hooks\.slack\.com\\?/(?:services|workflows|triggers)\\?/"
        rb"(?P<v>[A-Za-z0-9_]{6,32}(?:\\?/[A-Za-z0-9_]{6,64}){1,3})"
    ),
    "slack-token": _left(rb"A-Za-z0-9_-") + rb"(?P<v>xox[baprs]-[A-Za-z0-9-]{10,255})",
    "google-api-key": (_left(rb"A-Za-z0-9_-") + rb"(?P<v>AIza[0-9A-Za-z_-]{35})(?![0-9A-Za-z_-])"),
    "assign-quoted": (
        _KEYWORD
        + _KEY_END
        + rb'(?:(?P<dq>\\?")(?P<v>'
        + _DQ_CHAR
        + rb"{1,256})(?P=dq)|(?P<sq>\\?')(?P<w>"
        + _SQ_CHAR
        + rb"{1,256})(?P=sq))"
    ),
    "assign-bare": _KEYWORD + _KEY_END + rb"(?P<v>" + _BARE_CHAR + rb"{1,256})",
}

# -- what a value must look like -------------------------------------------------------

_Span = tuple[int, int]
_Accept = Callable[[re.Match[bytes]], tuple[int, int] | None]


def _has_upper(value: bytes) -> bool:
    return value.lower() != value


def _has_lower(value: bytes) -> bool:
    return value.upper() != value


def _has_digit(value: bytes) -> bool:
    return any(48 <= byte <= 57 for byte in value)


def _random_token(value: bytes) -> bool:
    """A generated key mixes capitals, small letters and digits; a slug does not."""
    return _has_upper(value) and _has_lower(value) and _has_digit(value)


def _not_example(value: bytes) -> bool:
    return b"EXAMPLE" not in value


def _entropy(value: bytes) -> float:
    """Shannon entropy of the bytes, in bits a byte."""
    counts: dict[int, int] = {}
    for byte in value:
        counts[byte] = counts.get(byte, 0) + 1
    size = len(value)
    return -sum(n / size * math.log2(n / size) for n in counts.values())


_PLACEHOLDER_WORDS = (
    b"password",
    b"passwd",
    b"secret",
    b"token",
    b"changeme",
    b"change_me",
    b"change-me",
    b"example",
    b"placeholder",
    b"redacted",
    b"dummy",
    b"sample",
    b"your",
    b"xxxx",
    b"****",
    b"...",
    b"${",
    b"{{",
    b"%(",
    b"$(",
    b"<",
    b">",
    b"undefined",
    b"notset",
    b"not_set",
)
_CODE_START = frozenset(b"$%{[(*&!")
_WORDISH = re.compile(rb"[A-Za-z._-]+")
_WINDOWS_PATH = re.compile(rb"[A-Za-z]:[\\/]")
_VOWELS = frozenset(b"aeiouAEIOU")


def _looks_secret(raw: bytes) -> bool:
    """Whether an assigned value is a secret, not a placeholder, code or words."""
    value = raw.replace(b"\\\\", b"\\").replace(b"\\/", b"/")
    size = len(value)
    if size < 8 or len(set(value)) == 1:
        return False
    if value[0] in _CODE_START or any(mark in value for mark in b"()["):
        return False  # ``$PASSWORD``, ``getpass()``, ``Optional[str]``, a YAML ``*alias``
    lowered = value.lower()
    if any(word in lowered for word in _PLACEHOLDER_WORDS):
        return False
    if value.startswith((b"/", b"~/", b"./", b"../")) or _WINDOWS_PATH.match(value):
        return False  # ``PWD=/home/dev``
    if b"://" in value or value.isdigit():
        return False  # a URL; a number (an id, a time)
    if _WORDISH.fullmatch(value):
        # Letters, dots and dashes: ``settings.SECRET_KEY``, ``get_password_from_env``,
        # ``SecretStr``; only a long run of letters with few vowels is random.
        vowels = sum(byte in _VOWELS for byte in value)
        return value.isalpha() and size >= 20 and vowels <= size // 4 and _entropy(value) >= 3.5
    kinds = _has_lower(value) + _has_upper(value) + _has_digit(value) + (not value.isalnum())
    if size >= 12:
        return kinds >= 2 and _entropy(value) >= 3.0
    return kinds >= 3 and _entropy(value) >= 2.75


def _value(check: Callable[[bytes], bool] | None = None) -> _Accept:
    """Group ``v``, if it passes ``check``."""

    def accept(match: re.Match[bytes]) -> _Span | None:
        if check is not None and not check(match["v"]):
            return None
        return match.span("v")

    return accept


def _quoted(match: re.Match[bytes]) -> _Span | None:
    group = "v" if match.start("v") >= 0 else "w"
    return match.span(group) if _looks_secret(match[group]) else None


def _bare(match: re.Match[bytes]) -> _Span | None:
    start, end = match.span("v")
    if match.string.endswith(b"...", start, end):
        return None  # cut short: ``api_key: sk_test_123...``
    while end > start and match.string[end - 1] in b".:!?":
        end -= 1  # the end of a sentence: ``password: Tr0ub4dor#3.``
    return (start, end) if _looks_secret(match.string[start:end]) else None


class _Detector(msgspec.Struct, frozen=True, gc=False):
    """A pattern, the literals it starts with, and what its match must be."""

    #: The index of its kind in :data:`KINDS`.
    rank: int
    pattern: re.Pattern[bytes]
    #: A token's prefixes, as written; a key's names, in lower case.
    starts: tuple[bytes, ...]
    accept: _Accept


def _detector(
    kind: SecretKind, pattern: str, starts: tuple[bytes, ...], accept: _Accept
) -> _Detector:
    return _Detector(KINDS.index(kind), re.compile(_PATTERNS[pattern]), starts, accept)


#: Where a token may start; one pass of this finds them all (faster than a
#: ``bytes.find`` for each prefix).
_TOKEN_START = re.compile(
    rb"sk-|A(?:KIA|SIA|BIA|CCA|Iza)|gh[pousr]_|github_pat_|xox[baprs]-"
    rb"|-----BEGIN |hooks\.slack\.com"
)
_TOKENS: tuple[_Detector, ...] = (
    _detector("private-key", "private-key", (b"-----BEGIN ",), _value()),
    _detector("anthropic-key", "anthropic-key", (b"sk-ant-",), _value(_random_token)),
    _detector("openai-key", "openai-key", (b"sk-",), _value(_random_token)),
    _detector(
        "aws-access-key",
        "aws-access-key",
        (b"AKIA", b"ASIA", b"ABIA", b"ACCA"),
        _value(_not_example),
    ),
    _detector(
        "github-token",
        "github-token",
        (b"ghp_", b"gho_", b"ghu_", b"ghs_", b"ghr_"),
        _value(lambda v: _has_upper(v) and _has_lower(v)),
    ),
    _detector("github-token", "github-pat", (b"github_pat_",), _value()),
    _detector("slack-webhook", "slack-webhook", (b"hooks.slack.com",), _value()),
    _detector("slack-token", "slack-token", (b"xox",), _value(_has_digit)),
    _detector("google-api-key", "google-api-key", (b"AIza",), _value()),
)
#: A key's names, found with ``bytes.find`` in the line made lower case; ``api``
#: stands for ``apikey``, ``api_key`` and ``api-key``.
_KEY_NAMES = (b"passw", b"pwd", b"secret", b"token", b"api")
_KEYS: tuple[_Detector, ...] = (
    _detector(
        "aws-secret-key",
        "aws-secret-key",
        (b"secret",),
        _value(lambda v: _not_example(v) and _has_upper(v) and _has_lower(v)),
    ),
    _detector("password-assignment", "assign-quoted", _KEY_NAMES, _quoted),
    _detector("password-assignment", "assign-bare", _KEY_NAMES, _bare),
)

# -- masking ---------------------------------------------------------------------------

_PREFIX = re.compile(
    rb"-----BEGIN [A-Z ]{1,40}-----|sk-ant-(?:[a-z]{1,10}\d\d-)?|sk-(?:proj-|svcacct-|admin-)?"
    rb"|A[KSBC][IC]A|gh[pousr]_|github_pat_|xox[baprs]-|AIza"
)
_PREFIXED: frozenset[SecretKind] = frozenset(
    {
        "private-key",
        "anthropic-key",
        "openai-key",
        "aws-access-key",
        "github-token",
        "slack-token",
        "google-api-key",
    }
)


def _mask(kind: SecretKind, value: bytes) -> str:
    """The service's prefix, then at most a fifth of the rest around an ellipsis."""
    prefix = b""
    if kind in _PREFIXED and (match := _PREFIX.match(value)) is not None:
        prefix = match.group()
    shown = prefix.decode("ascii")
    if kind == "private-key":
        return shown + "…"
    rest = value[len(prefix) :].decode("utf-8", "replace")
    budget = min(6, len(rest) // 5)
    tail = budget // 3
    return shown + rest[: budget - tail] + "…" + (rest[-tail:] if tail else "")


# -- the scan --------------------------------------------------------------------------


def find_secrets(data: bytes) -> list[Finding]:
    """Every secret in ``data`` (one JSONL line's bytes, or any bytes), by position.

    Findings never overlap: of those that share bytes the longest is kept (of two as
    long, the more specific kind, see :data:`KINDS`), widened to cover all of them.
    """
    found: list[tuple[int, int, int]] = []

    def attempt(detector: _Detector, at: int) -> int:
        match = detector.pattern.match(data, at)
        if match is None or (span := detector.accept(match)) is None:
            return at
        found.append((span[0], span[1], detector.rank))
        return span[1]

    # A token is not looked for again inside one of its kind: a run of BEGIN lines
    # with no END would otherwise have each scan ahead as far as the bound.
    reach = [0] * len(_TOKENS)
    for start in _TOKEN_START.finditer(data):
        at = start.start()
        for index, detector in enumerate(_TOKENS):
            if at >= reach[index] and data.startswith(detector.starts, at):
                reach[index] = attempt(detector, at)
    folded = data.lower()
    for name in _KEY_NAMES:
        at = folded.find(name)
        while at >= 0:
            for detector in _KEYS:
                if name in detector.starts:
                    attempt(detector, at)
            at = folded.find(name, at + 1)
    if not found:
        return []
    return [
        Finding(KINDS[rank], start, end, _mask(KINDS[rank], data[start:end]))
        for start, end, rank in _resolve(found)
    ]


#: Where a token :func:`find_secrets` knows may start, lower case, for
#: :func:`suspect_lines`; all but the last two only where no letter or digit stands
#: just before (unless the end of an escape, as :func:`_left` allows).
_TOKEN_PREFIXES: tuple[bytes, ...] = (
    b"sk-", b"akia", b"asia", b"abia", b"acca", b"aiza", b"ghp_", b"gho_", b"ghu_",
    b"ghs_", b"ghr_", b"github_pat_", b"xoxb-", b"xoxa-", b"xoxp-", b"xoxr-", b"xoxs-",
    b"-----begin ", b"hooks.slack.com",
)  # fmt: skip
_LEFT_BOUND = len(_TOKEN_PREFIXES) - 2
#: A key's name, lower case, as far as :data:`_KEYWORD` and :data:`_KEY_END` must go on
#: for a match (``token`` then ``key``/``value``/``base`` or what ends a key):
#: ``tokens``, ``input_tokens`` and ``token-count`` cannot.
_KEY_STARTS: tuple[bytes, ...] = (
    b"passw", b"pwd", b"secret", b"apikey", b"api_key", b"api-key",
    *(b"token" + sep + word for sep in (b"", b"_", b".", b"-") for word in (b"k", b"v", b"b")),
    *(b"token" + bytes([end]) for end in b"\\\"' \t=:"),
)  # fmt: skip
_ALL_STARTS = (*_TOKEN_PREFIXES, *_KEY_STARTS)
_suspects: Any = None
#: The patterns another may start inside (a suffix of theirs begins or holds one:
#: ``akia`` then ``apikey``), and the longest pattern's length.
_INNER = frozenset(
    number
    for number, pattern in enumerate(_ALL_STARTS)
    if any(
        other.startswith(pattern[k:]) or other in pattern[k:]
        for k in range(1, len(pattern))
        for other in _ALL_STARTS
    )
)
_LONGEST = max(map(len, _ALL_STARTS))


def _places(folded: bytes) -> list[tuple[int, int]]:
    """``(pattern, where)`` of every place in ``folded`` where a pattern of
    :data:`_ALL_STARTS` starts, in order. One leftmost-first pass (its prefilter makes
    it four times as fast as a pass that reports overlaps), then, inside each match
    of a pattern another may start within (:data:`_INNER`), a pass that reports
    overlaps: what the first pass skips starts inside a match it reported. No two
    patterns start at one place (they differ by their first two letters, or one is
    a key's name that others go on from, all of one kind)."""
    global _suspects
    if _suspects is None:
        import ahocorasick_rs

        patterns = list(_ALL_STARTS)
        _suspects = (
            ahocorasick_rs.BytesAhoCorasick(
                patterns, matchkind=ahocorasick_rs.MATCHKIND_LEFTMOST_FIRST,
                implementation=ahocorasick_rs.Implementation.DFA,
            ),
            ahocorasick_rs.BytesAhoCorasick(
                patterns, implementation=ahocorasick_rs.Implementation.DFA
            ),
        )  # fmt: skip
    first, every = _suspects
    places: list[tuple[int, int]] = []
    for pattern, at, stop in first.find_matches_as_indexes(folded):
        places.append((pattern, at))
        if pattern in _INNER:
            window = folded[at + 1 : stop - 1 + _LONGEST]
            inside = every.find_matches_as_indexes(window, overlapping=True)
            inner = [(p, at + 1 + o) for p, o, _ in inside if at + 1 + o < stop]
            places += sorted(inner, key=lambda place: place[1])
    return places


_ALNUM = frozenset(b"abcdefghijklmnopqrstuvwxyz0123456789")
_HEX = frozenset(b"0123456789abcdef")


def suspect_lines(data: bytes) -> list[tuple[int, int]]:
    """The lines of ``data`` (many JSONL lines) :func:`find_secrets` may find something
    in: ``(start, end)`` of each, its newline included, in order. Every line with a
    secret is among them; most lines are not, so a scan of gigabytes looks at a few.

    One pass of a multi-pattern automaton (Aho-Corasick, a DFA in Rust) over ``data``
    lowered finds every place a pattern of :func:`find_secrets` could start, overlaps
    included: a prefix lowered matches more than the token's own case, never less; no
    pattern holds a newline, so each place is inside one line."""
    lines: list[tuple[int, int]] = []
    for start, end, _at, _pattern in _suspect_places(data):
        if not lines or lines[-1][0] != start:
            lines.append((start, end))
    return lines


def _suspect_places(data: bytes) -> Iterator[tuple[int, int, int, int]]:
    """Each place of ``data`` a pattern of :func:`find_secrets` could start (see
    :func:`suspect_lines`), in order: ``(start, end)`` of its line, where, and which of
    :data:`_ALL_STARTS` it begins with."""
    folded = data.lower()
    start = end = -1
    for pattern, at in _places(folded):
        if pattern < _LEFT_BOUND and _glued(folded, at):
            continue  # (a word's middle: "task-", "disk-")
        if at >= end:
            start = data.rfind(b"\n", 0, at) + 1
            newline = data.find(b"\n", at)
            end = len(data) if newline < 0 else newline + 1
        yield start, end, at, pattern


#: How far past where it starts a match of :func:`find_secrets` reaches at most: a PEM
#: block (two bytes a character of its at most 32,768, escapes) and any other (a token
#: of 1,024 characters, a value of 256 escaped, a key's name and separator), with room.
_PEM_REACH = 80 * 1024
_REACH = 4 * 1024
#: Bytes before a place a pattern's look-behind may read (``\\uXXXX``), with room.
_BEHIND = 16


def secrets_by_line(data: bytes) -> Iterator[tuple[int, int, list[Finding]]]:
    """Each line of ``data`` (many JSONL lines) in which :func:`find_secrets` finds
    something: ``(start, end)`` of it, its newline included, and the findings, at their
    places in the line; in order. The same as :func:`find_secrets` of each line alone,
    at a fraction of the cost: only the windows around the places of
    :func:`suspect_lines`' automaton are scanned (every match starts at one, and reaches
    at most :data:`_REACH`, a PEM block :data:`_PEM_REACH`, past it; a window begins
    :data:`_BEHIND` bytes before, or where its line does), windows that meet as one."""
    line_start = line_end = -1
    windows: list[list[int]] = []
    for start, end, at, pattern in _suspect_places(data):
        if start != line_start:
            if windows:
                yield from _scan_windows(data, line_start, line_end, windows)
            line_start, line_end, windows = start, end, []
        reach = _PEM_REACH if _ALL_STARTS[pattern] == b"-----begin " else _REACH
        window = [max(start, at - _BEHIND), min(end, at + reach)]
        if windows and window[0] <= windows[-1][1]:
            windows[-1][1] = max(windows[-1][1], window[1])
        else:
            windows.append(window)
    if windows:
        yield from _scan_windows(data, line_start, line_end, windows)


def _scan_windows(
    data: bytes, line_start: int, line_end: int, windows: list[list[int]]
) -> Iterator[tuple[int, int, list[Finding]]]:
    found = [
        msgspec.structs.replace(f, start=f.start + at - line_start, end=f.end + at - line_start)
        for at, stop in windows
        for f in find_secrets(data[at:stop])
    ]
    if found:
        yield line_start, line_end, found


def _glued(folded: bytes, at: int) -> bool:
    """Whether a letter or digit stands just before ``at`` that is not the end of a JSON
    escape (``\\n``, ``\\t``, ``\\r``, ``\\uXXXX``), in lowered bytes."""
    if at == 0 or folded[at - 1] not in _ALNUM:
        return False
    if at >= 2 and folded[at - 2] == 0x5C:  # (backslash)
        return False
    return not (
        at >= 6
        and folded[at - 6 : at - 4] == b"\\u"
        and all(c in _HEX for c in folded[at - 4 : at])
    )


def _resolve(found: list[tuple[int, int, int]]) -> list[tuple[int, int, int]]:
    """One finding per run of overlapping ones: their union, the best one's kind."""
    found.sort()
    resolved: list[tuple[int, int, int]] = []
    start, end, rank = found[0]
    best = (end - start, -rank)
    for next_start, next_end, next_rank in found[1:]:
        if next_start < end:
            end = max(end, next_end)
            if (next_end - next_start, -next_rank) > best:
                best, rank = (next_end - next_start, -next_rank), next_rank
            continue
        resolved.append((start, end, rank))
        start, end, rank = next_start, next_end, next_rank
        best = (end - start, -rank)
    resolved.append((start, end, rank))
    return resolved


def count_by_kind(findings: Iterable[Finding]) -> dict[SecretKind, int]:
    """How many findings of each kind, in the order each kind first comes."""
    counts: dict[SecretKind, int] = {}
    for finding in findings:
        counts[finding.kind] = counts.get(finding.kind, 0) + 1
    return counts


# -- redaction -------------------------------------------------------------------------


def redaction_marker(kind: SecretKind) -> bytes:
    """What :func:`redact` puts in a value's place: ``[REDACTED:<kind>]``."""
    return b"[REDACTED:" + kind.encode("ascii") + b"]"


def _escape_around(data: bytes, at: int) -> _Span | None:
    """The JSON escape (``\\n``, ``\\\\``, ``\\u00e9``) that offset ``at`` falls strictly
    inside, if any. The nearest backslash before ``at`` starts one unless it is the
    second of a pair (an odd number of backslashes before it)."""
    start = data.rfind(b"\\", max(at - 5, 0), at)
    if start < 0:
        return None
    first = start
    while first > 0 and data[first - 1] == 0x5C:
        first -= 1
    if (start - first) % 2:
        return None
    size = 6 if data[start + 1 : start + 2] == b"u" else 2
    return (start, min(start + size, len(data))) if at < start + size else None


def redact(data: bytes, findings: Sequence[Finding]) -> bytes:
    """``data`` with each finding's value replaced by :func:`redaction_marker`.

    A span that would cut an escape in two is widened to the whole escape, and findings
    that overlap become one marker, so a valid JSON line stays valid.
    """
    if not findings:
        return data
    parts: list[bytes] = []
    done = 0
    for finding in sorted(findings, key=lambda f: (f.start, f.end)):
        start, end = max(finding.start, 0), min(finding.end, len(data))
        if (escape := _escape_around(data, start)) is not None:
            start = escape[0]
        if (escape := _escape_around(data, end)) is not None:
            end = escape[1]
        if end <= done or start >= end:
            continue
        if start < done:  # overlaps the one before: its marker stands for both
            done = end
            continue
        parts += (data[done:start], redaction_marker(finding.kind))
        done = end
    parts.append(data[done:])
    return b"".join(parts)
