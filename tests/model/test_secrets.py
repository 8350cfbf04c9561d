"""Secrets in transcript lines, found and redacted (model/secrets.py)."""

from __future__ import annotations

import json
import random
import re
import string
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sessiontree.model.secrets import (
    _ALL_STARTS,
    KINDS,
    Finding,
    _places,
    count_by_kind,
    find_secrets,
    redact,
    redaction_marker,
    secrets_by_line,
    suspect_lines,
)

BASE62 = string.ascii_letters + string.digits


def _random(seed: str, size: int, alphabet: str = BASE62) -> str:
    """A fixed string that looks generated: the same for a seed, every run."""
    rng = random.Random(seed)
    return "".join(rng.choice(alphabet) for _ in range(size))


# Made of parts, so the file itself holds no string a secret scanner would flag.
ANTHROPIC = "sk-" + "ant-" + "api03-" + _random("anthropic", 93, BASE62 + "_-") + "AA"
OPENAI = "sk-" + "proj-" + _random("openai", 120, BASE62 + "_-")
OPENAI_OLD = "sk-" + _random("openai-old", 48)
AWS_ACCESS = "AK" + "IA" + _random("aws", 16, string.ascii_uppercase + string.digits)
AWS_SECRET = _random("aws-secret", 40, BASE62 + "/+")
GITHUB = "gh" + "p_" + _random("github", 36)
GITHUB_PAT = "github" + "_pat_" + _random("pat", 22) + "_" + _random("pat2", 59)
SLACK = "xo" + "xb-" + "1234567890123-9876543210987-" + _random("slack", 24)
SLACK_HOOK = "T0" + _random("t", 8).upper() + "/B0" + _random("b", 8).upper() + "/"
SLACK_HOOK += _random("hook", 24)
GOOGLE = "AI" + "za" + _random("google", 35, BASE62 + "_-")
PASSWORD = "Xk9#mQ2$vL7!pR4z"
PEM = (
    "-----BEGIN RSA PRIVATE KEY-----\n"
    + "\n".join(_random(f"pem{i}", 64, BASE62 + "+/") for i in range(4))
    + "\nAb3d==\n-----END RSA PRIVATE KEY-----"
)

TOKENS = {
    "anthropic-key": ANTHROPIC,
    "openai-key": OPENAI,
    "aws-access-key": AWS_ACCESS,
    "github-token": GITHUB,
    "slack-token": SLACK,
    "google-api-key": GOOGLE,
}


def _tool_result(output: str, *, stdout: bool = True) -> dict[str, Any]:
    """A user record holding a tool's result, as the client writes it."""
    record: dict[str, Any] = {
        "parentUuid": "3b9cea38-15f0-4330-bf6c-ccd3cbb3ee62",
        "isSidechain": False,
        "type": "user",
        "message": {
            "role": "user",
            "content": [
                {
                    "tool_use_id": "toolu_a45e4e2fdf234d0b931a332d",
                    "type": "tool_result",
                    "content": output,
                    "is_error": False,
                }
            ],
        },
        "uuid": "5a21e967-caa4-43bb-8e1d-55968e47c6c5",
        "timestamp": "2026-11-29T19:16:33.281Z",
        "sessionId": "0f31836f-46f1-45f6-85ba-7878a822a884",
        "version": "2.1.328",
        "cwd": "/home/dev/app",
    }
    if stdout:
        record["toolUseResult"] = {"stdout": output, "stderr": "", "interrupted": False}
    return record


def _line(record: Any, *, ensure_ascii: bool = False) -> bytes:
    """One JSONL line as the client writes it (compact, UTF-8 unless told)."""
    return json.dumps(record, separators=(",", ":"), ensure_ascii=ensure_ascii).encode()


def _escaped(text: str) -> bytes:
    """``text`` as it stands inside a JSON string."""
    return json.dumps(text, ensure_ascii=False)[1:-1].encode()


def _found(data: bytes) -> list[tuple[str, bytes]]:
    return [(f.kind, data[f.start : f.end]) for f in find_secrets(data)]


def _check(data: bytes, findings: list[Finding]) -> None:
    """What holds of any scan: in order, apart, inside the data, masked."""
    previous_end = 0
    for finding in findings:
        assert finding.kind in KINDS
        assert previous_end <= finding.start < finding.end <= len(data)
        previous_end = finding.end
        value = data[finding.start : finding.end].decode("utf-8", "replace")
        assert "…" in finding.masked
        assert value not in finding.masked


# -- each kind, where tools print it ---------------------------------------------------

ENV = "\n".join(
    [
        "SHELL=/bin/bash",
        "PWD=/home/dev/app",
        "OLDPWD=/home/dev",
        "HOME=/home/dev",
        "LANG=C.UTF-8",
        "TERM=xterm-256color",
        "CLAUDE_CODE_ENTRYPOINT=cli",
        "SSH_AUTH_SOCK=/tmp/ssh-XXXXq3kJ/agent.1234",
        f"ANTHROPIC_API_KEY={ANTHROPIC}",
        f"OPENAI_API_KEY={OPENAI}",
        f"AWS_ACCESS_KEY_ID={AWS_ACCESS}",
        f"AWS_SECRET_ACCESS_KEY={AWS_SECRET}",
        f"GITHUB_TOKEN={GITHUB}",
        f"GH_PAT={GITHUB_PAT}",
        f"SLACK_BOT_TOKEN={SLACK}",
        f"SLACK_WEBHOOK_URL=https://hooks.slack.com/services/{SLACK_HOOK}",
        f"MAPS_KEY={GOOGLE}",
        f"DB_PASSWORD={PASSWORD}",
        "PATH=/home/dev/.local/bin:/usr/local/bin:/usr/bin:/bin",
        "HISTSIZE=100000",
    ]
)
ENV_SECRETS = [
    ("anthropic-key", ANTHROPIC),
    ("openai-key", OPENAI),
    ("aws-access-key", AWS_ACCESS),
    ("aws-secret-key", AWS_SECRET),
    ("github-token", GITHUB),
    ("github-token", GITHUB_PAT),
    ("slack-token", SLACK),
    ("slack-webhook", SLACK_HOOK),
    ("google-api-key", GOOGLE),
    ("password-assignment", PASSWORD),
]


def test_env_output_in_a_bash_result() -> None:
    line = _line(_tool_result(ENV))
    expected = [(kind, value.encode()) for kind, value in ENV_SECRETS]
    # once in the result's content, once in ``toolUseResult.stdout``
    assert _found(line) == expected + expected
    _check(line, find_secrets(line))


@pytest.mark.parametrize("ensure_ascii", [False, True], ids=["utf8", "ascii"])
def test_a_read_of_an_env_file(ensure_ascii: bool) -> None:
    """The Read tool numbers lines with an arrow (``\\u2192`` when escaped): a token
    right after it is still found, and quoted values are found inside their quotes."""
    env_file = "\n".join(
        [
            "     1→# local settings",
            f"     2→OPENAI_API_KEY={OPENAI_OLD}",
            f"     3→{AWS_ACCESS}",
            f'     4→DB_PASSWORD="{PASSWORD}"',
            "     5→SECRET_KEY='q8Zr2Lw5Nt0Vb7Xc4Mk1'",
            '     6→DEBUG="true"',
            "     7→api_key: 7f3a9c2e1b8d4f6a0c5e9b2d7a1f3c8e",
        ]
    )
    line = _line(_tool_result(env_file, stdout=False), ensure_ascii=ensure_ascii)
    assert _found(line) == [
        ("openai-key", OPENAI_OLD.encode()),
        ("aws-access-key", AWS_ACCESS.encode()),
        ("password-assignment", PASSWORD.encode()),
        ("password-assignment", b"q8Zr2Lw5Nt0Vb7Xc4Mk1"),
        ("password-assignment", b"7f3a9c2e1b8d4f6a0c5e9b2d7a1f3c8e"),
    ]


def test_tokens_right_after_escapes() -> None:
    text = f"\n{ANTHROPIC}\t{GITHUB}\r\n{GOOGLE}\u0000{SLACK}"
    for ensure_ascii in (False, True):
        line = _line({"content": text}, ensure_ascii=ensure_ascii)
        assert [kind for kind, _ in _found(line)] == [
            "anthropic-key",
            "github-token",
            "google-api-key",
            "slack-token",
        ]


def test_a_private_key_inside_a_json_string() -> None:
    line = _line(_tool_result(f"$ cat ~/.ssh/id_rsa\n{PEM}\n", stdout=False))
    assert _found(line) == [("private-key", _escaped(PEM))]
    openssh = PEM.replace("RSA", "OPENSSH")
    assert _found(_line({"content": openssh})) == [("private-key", _escaped(openssh))]
    # real newlines, as in a file that is not JSON
    assert _found(PEM.encode()) == [("private-key", PEM.encode())]


def test_a_private_key_in_json_printed_inside_json() -> None:
    """``cat key.json``: the key's newlines are ``\\\\n``, its quotes ``\\"``."""
    printed = json.dumps({"type": "service_account", "private_key": PEM}, indent=2)
    line = _line(_tool_result(printed, stdout=False))
    (finding,) = find_secrets(line)
    assert finding.kind == "private-key"
    assert line[finding.start : finding.end] == _escaped(json.dumps(PEM)[1:-1])


def test_a_private_key_cut_off_runs_to_the_end_of_its_string() -> None:
    cut = PEM[:150]
    line = _line({"content": cut, "next": "field"})
    (finding,) = find_secrets(line)
    assert finding.kind == "private-key"
    assert line[finding.start : finding.end] == _escaped(cut)
    assert line[finding.end : finding.end + 1] == b'"'


def test_a_json_key_and_value() -> None:
    """A record's own field, and JSON a tool printed (its quotes then ``\\"``)."""
    assert _found(_line({"password": PASSWORD})) == [("password-assignment", PASSWORD.encode())]
    secret = "q8Zr2Lw5Nt0Vb7Xc4Mk1yH6"
    printed = json.dumps({"client_id": "app", "client_secret": secret}, indent=2)
    line = _line(_tool_result(printed, stdout=False))
    assert _found(line) == [("password-assignment", secret.encode())]
    cli = json.dumps({"Credentials": {"AccessKeyId": AWS_ACCESS, "SecretAccessKey": AWS_SECRET}})
    assert _found(_line({"content": cli})) == [
        ("aws-access-key", AWS_ACCESS.encode()),
        ("aws-secret-key", AWS_SECRET.encode()),
    ]


@pytest.mark.parametrize(
    "text",
    [
        "password: Tr0ub4dor#3",
        "password: Tr0ub4dor#3.",
        "--password=Tr0ub4dor#3",
        "export API_KEY='Tr0ub4dor#3'",
        "passwd := Tr0ub4dor#3",
        "'apiKey' => 'Tr0ub4dor#3'",
        "https://example.org/cb?access_token=Tr0ub4dor#3&state=af0ifjsldkj",
    ],
)
def test_password_assignment_forms(text: str) -> None:
    assert _found(_line({"content": text})) == [("password-assignment", b"Tr0ub4dor#3")]


def test_a_longer_and_more_specific_finding_wins() -> None:
    """A token assigned to a key named like a secret is one finding, of the token."""
    for text, kind in [
        (f"OPENAI_API_KEY={OPENAI}", "openai-key"),
        (f'token: "{GITHUB}"', "github-token"),
        (f"api_key={GOOGLE}", "google-api-key"),
        (f"secret={AWS_SECRET}", "password-assignment"),
    ]:
        line = _line({"content": text})
        assert [kind for kind, _ in _found(line)] == [kind], text


def test_offsets_name_the_value_exactly() -> None:
    """A NUL byte ends a value, bytes that are not UTF-8 are bytes like any other; the
    masked value shows them replaced."""
    line = b"\x00\xff" + GITHUB.encode() + b"\x00 password=" + PASSWORD.encode() + b"\x00\xfe"
    github, password = find_secrets(line)
    assert (github.kind, github.start, github.end) == ("github-token", 2, 2 + len(GITHUB))
    assert line[password.start : password.end] == PASSWORD.encode()
    odd_line = b"password=Tr0\xff\xfeub4\x00"
    (odd,) = find_secrets(odd_line)
    assert odd_line[odd.start : odd.end] == b"Tr0\xff\xfeub4"
    assert odd.masked == "T…"


# -- masking ---------------------------------------------------------------------------


def test_masked_never_shows_the_value() -> None:
    line = _line(_tool_result(ENV + "\n" + PEM))
    findings = find_secrets(line)
    assert len(findings) == 2 * (len(ENV_SECRETS) + 1)
    _check(line, findings)
    for finding in findings:
        assert len(finding.masked) < finding.end - finding.start


def test_masked_shows_the_prefix_and_little_more() -> None:
    line = _line({"c": ENV + "\n" + PEM})
    masked = {line[f.start : f.end].decode(): f.masked for f in find_secrets(line)}
    assert masked[ANTHROPIC] == "sk-ant-api03-" + ANTHROPIC[13:17] + "…AA"
    assert masked[AWS_ACCESS] == AWS_ACCESS[:6] + "…" + AWS_ACCESS[-1]
    assert masked[AWS_SECRET] == AWS_SECRET[:4] + "…" + AWS_SECRET[-2:]
    assert masked[GITHUB] == "ghp_" + GITHUB[4:8] + "…" + GITHUB[-2:]
    assert masked[_escaped(PEM).decode()] == "-----BEGIN RSA PRIVATE KEY-----…"
    assert masked[PASSWORD] == PASSWORD[:2] + "…" + PASSWORD[-1]
    (short,) = find_secrets(b"pwd=H7#nter2x")
    assert short.masked == "H…"


# -- what is not a secret --------------------------------------------------------------

NOT_SECRETS = [
    # code
    "password = getpass()",
    "token=None",
    "secret: str",
    "api_key: Optional[str] = None",
    "def check_password(password: str) -> bool:",
    "secret_key = settings.SECRET_KEY",
    "password = os.environ['DB_PASSWORD']",
    "token = request.headers.get('Authorization')",
    "const token = await getToken();",
    "password: get_password_from_env",
    "secret: SecretStr",
    "if password == expected_password:",
    "token = secrets.token_hex(16)",
    "max_tokens=4096",
    "token_count = 12345678",
    '"usage":{"input_tokens":1234,"cache_read_input_tokens":56789,"output_tokens":321}',
    # placeholders
    '"password": ""',
    "password: ****",
    'password="<redacted>"',
    "password=${DB_PASSWORD}",
    "export PASSWORD=$PASSWORD",
    "password: changeme",
    "password=password",
    "api_key=xxxxxxxxxxxxxxxx",
    "token: example-token-value",
    "secret=abcdefgh",
    "password = hunter2",
    "password: {{ vault_password }}",
    "token: ${{ secrets.GITHUB_TOKEN }}",
    "api_key: sk_test_123...",
    "token: 1712345678901",
    # paths, prose
    "PWD=/home/dev/project",
    "OLDPWD=/work/main",
    "pwd: C:\\Users\\dev",
    "Enter your password:\nPassword reset link sent.",
    "The password is stored in the keychain; the token expires in 3600 seconds.",
    # shapes that are not keys
    "pip install sk-learn-tutorial-for-beginners",
    "git checkout -b task-fix-the-login-flow-and-more",
    "xoxb-not-a-real-token-at-all",
    "AKIAIOSFODNN7EXAMPLE",
    "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    "-----BEGIN PUBLIC KEY-----\nMIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8A\n-----END PUBLIC KEY-----",
    "-----BEGIN CERTIFICATE-----\nMIIDdzCCAl+gAwIBAgIEAgAAuTANBgkq\n-----END CERTIFICATE-----",
    "-----BEGIN RSA PRIVATE KEY-----",
    "The Asia-Pacific region; sk- prefixes; ghp_ tokens; AIza keys.",
]


@pytest.mark.parametrize("text", NOT_SECRETS)
def test_not_a_secret(text: str) -> None:
    assert find_secrets(text.encode()) == []
    assert find_secrets(_line(_tool_result(text))) == []


# -- robustness ------------------------------------------------------------------------

FRAGMENTS = [
    b"sk-",
    b"sk-ant-",
    b"AKIA",
    b"ghp_",
    b"xoxb-",
    b"AIza",
    b"hooks.slack.com/services/",
    b"-----BEGIN RSA PRIVATE KEY-----",
    b"-----END RSA PRIVATE KEY-----",
    b"password=",
    b'"token": "',
    b"\\n",
    b"\\",
    b'"',
    b"\\u2192",
    b"\x00",
    b"\xff\xfe",
    b"\xe2\x80\xa6",
    b" ",
    b"Tr0ub4dor#3",
    b"aB3dE6gH9jK2",
    *(value.encode() for value in TOKENS.values()),
]


@given(st.binary(max_size=2000))
def test_any_bytes_scan_without_raising(data: bytes) -> None:
    findings = find_secrets(data)
    _check(data, findings)
    redact(data, findings)


@given(st.lists(st.sampled_from(FRAGMENTS), max_size=40).map(b"".join))
def test_pieces_of_secrets_scan_without_raising(data: bytes) -> None:
    findings = find_secrets(data)
    _check(data, findings)
    redacted = redact(data, findings)
    for finding in findings:
        assert redaction_marker(finding.kind) in redacted


def test_long_runs_stay_bounded() -> None:
    """Runs that would make a careless pattern backtrack; each must simply finish."""
    for data in [
        b"-----BEGIN RSA PRIVATE KEY-----" + b"A" * 200_000,
        b"-----BEGIN PRIVATE KEY-----\\n" * 5_000,
        b"password=" * 20_000,
        b'"token": "' + b"a" * 100_000,
        b"sk-" * 50_000,
        b"sk-" + b"aB3" * 50_000,
        b"hooks.slack.com/services/" + b"T0123456/" * 10_000,
    ]:
        _check(data, find_secrets(data))


# -- redaction -------------------------------------------------------------------------


def test_redact_a_line() -> None:
    line = _line(_tool_result(ENV + "\n" + PEM))
    findings = find_secrets(line)
    redacted = redact(line, findings)
    record = json.loads(redacted)
    stdout = record["toolUseResult"]["stdout"]
    assert "ANTHROPIC_API_KEY=[REDACTED:anthropic-key]\n" in stdout
    assert "DB_PASSWORD=[REDACTED:password-assignment]\n" in stdout
    assert (
        f"https://hooks.slack.com/services/{redaction_marker('slack-webhook').decode()}" in stdout
    )
    assert stdout.endswith("\n[REDACTED:private-key]")
    for _, value in ENV_SECRETS:
        assert value.encode() not in redacted
    assert "PWD=/home/dev/app" in stdout
    assert find_secrets(redacted) == []
    assert count_by_kind(findings) == {
        "anthropic-key": 2,
        "openai-key": 2,
        "aws-access-key": 2,
        "aws-secret-key": 2,
        "github-token": 4,
        "slack-token": 2,
        "slack-webhook": 2,
        "google-api-key": 2,
        "password-assignment": 2,
        "private-key": 2,
    }


def test_redact_never_cuts_an_escape() -> None:
    """Findings made by hand that start or end inside an escape are widened to it."""
    line = _line({"a": "x\ny\\z\u00e9w"}, ensure_ascii=True)  # {"a":"x\ny\\z\u00e9w"}
    at = line.index(b"\\n")
    inside_newline = Finding("password-assignment", at + 1, at + 3, "…")
    at = line.index(b"\\\\")
    inside_backslash = Finding("password-assignment", at - 1, at + 1, "…")
    at = line.index(b"\\u00e9")
    inside_unicode = Finding("password-assignment", at + 3, at + 7, "…")
    for finding in (inside_newline, inside_backslash, inside_unicode):
        json.loads(redact(line, [finding]))
    json.loads(redact(line, [inside_newline, inside_backslash, inside_unicode]))


def test_redact_overlapping_findings_once() -> None:
    data = b"0123456789"
    findings = [
        Finding("github-token", 2, 6, "…"),
        Finding("slack-token", 4, 8, "…"),
        Finding("slack-token", 5, 7, "…"),
    ]
    assert redact(data, findings) == b"01[REDACTED:github-token]89"
    assert redact(data, []) is data


#: Texts planted in generated JSON, each with what of it must be gone after redaction.
PLANTED: list[tuple[str, list[str]]] = [
    *((token, [token]) for token in TOKENS.values()),
    (OPENAI_OLD, [OPENAI_OLD]),
    (GITHUB_PAT, [GITHUB_PAT]),
    (PEM, PEM.split("\n")[1:-1]),
    (f"AWS_SECRET_ACCESS_KEY={AWS_SECRET}", [AWS_SECRET]),
    (f"https://hooks.slack.com/services/{SLACK_HOOK}", [SLACK_HOOK]),
    (f"DB_PASSWORD={PASSWORD}", [PASSWORD]),
    (f'"client_secret": "{PASSWORD}"', [PASSWORD]),
    ("token: q8Zr2Lw5Nt0Vb7Xc4Mk1", ["q8Zr2Lw5Nt0Vb7Xc4Mk1"]),
]
TEXT = st.text(st.characters(codec="utf-8"), max_size=12)
BEFORE = st.sampled_from([" ", "\n", "\t", "=", ": ", "→", "\u0000", "(", "'", '"'])
AFTER = st.sampled_from([" ", "\n", "\t", ",", '"', "\u0000", ")", "\r\n"])
PLANTED_TEXT = st.builds(
    lambda before, sep1, secret, sep2, after: before + sep1 + secret + sep2 + after,
    TEXT,
    BEFORE,
    st.sampled_from([text for text, _ in PLANTED]),
    AFTER,
    TEXT,
)
JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | TEXT | PLANTED_TEXT,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(TEXT, children, max_size=4),
    max_leaves=12,
)


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, list):
        return [text for item in value for text in _strings(item)]
    if isinstance(value, dict):
        return [text for key, item in value.items() for text in [key, *_strings(item)]]
    return []


@settings(max_examples=200)
@given(
    st.dictionaries(TEXT, JSON_VALUES, max_size=5),
    st.lists(PLANTED_TEXT, min_size=1, max_size=3),
    st.booleans(),
)
def test_redacted_json_stays_json_without_its_secrets(
    record: dict[str, Any], planted: list[str], ensure_ascii: bool
) -> None:
    record["content"] = planted
    line = _line(record, ensure_ascii=ensure_ascii)
    findings = find_secrets(line)
    _check(line, findings)
    redacted = redact(line, findings)
    texts = _strings(json.loads(redacted))
    for _, values in PLANTED:
        for value in values:
            assert not any(value in piece for piece in texts), value


def _lines_with_secrets(data: bytes) -> list[tuple[int, int]]:
    """Every line of ``data`` in which find_secrets finds something, scanned alone."""
    found, start = [], 0
    for line in re.findall(rb"[^\n]*\n|[^\n]+$", data):
        if find_secrets(line):
            found.append((start, start + len(line)))
        start += len(line)
    return found


def _suspects_hold_every_finding(data: bytes) -> None:
    by_line = [(start, end, find_secrets(data[start:end]))
               for start, end in _lines_with_secrets(data)]  # fmt: skip
    assert list(secrets_by_line(data)) == by_line
    suspects = suspect_lines(data)
    assert suspects == sorted(set(suspects))
    assert set(_lines_with_secrets(data)) <= set(suspects)
    for start, end in suspects:
        assert (start == 0 or data[start - 1 : start] == b"\n") and (
            end == len(data) or data[end - 1 : end] == b"\n"
        )


@settings(max_examples=300)
@given(st.lists(st.lists(st.sampled_from([*FRAGMENTS, b"\n", b"TOKEN", b"ApiKey"]), max_size=12)
                .map(b"".join), max_size=20).map(b"\n".join))  # fmt: skip
def test_suspect_lines_hold_every_line_with_a_finding(data: bytes) -> None:
    _suspects_hold_every_finding(data)


@settings(max_examples=100)
@given(st.lists(st.dictionaries(TEXT, JSON_VALUES, max_size=4), max_size=8), st.booleans())
def test_suspect_lines_of_json_lines(records: list[dict[str, Any]], ensure_ascii: bool) -> None:
    lines = (_line(r, ensure_ascii=ensure_ascii) + b"\n" for r in records)
    _suspects_hold_every_finding(b"".join(lines))


def test_a_planted_line_is_suspect_and_usage_is_not() -> None:
    usage = b'{"usage":{"input_tokens":3,"output_tokens":9,"cache_read_input_tokens":0}}\n'
    planted = _line({"content": [f"DB_PASSWORD={PASSWORD}"]}) + b"\n"
    data = usage * 3 + planted + usage
    assert suspect_lines(data) == [(3 * len(usage), 3 * len(usage) + len(planted))]


def test_a_prefix_inside_a_word_is_not_suspect_but_after_an_escape_it_is() -> None:
    assert suspect_lines(b'{"a":"<task-id> disk-1 thinking-token-count"}\n') == []
    line = _line({"content": f"out\n{OPENAI}"}) + b"\n"
    assert b"\\n" + OPENAI.encode() in line
    assert suspect_lines(line) == [(0, len(line))]


def test_secrets_by_line_scans_windows_as_the_whole_line() -> None:
    filler = "x " * 40_000  # (far more than a window reaches)
    key = _line({"content": [f"{filler}\n{PEM}\n{filler} DB_PASSWORD={PASSWORD} {filler}"]})
    data = b"{}\n" + key + b"\n" + _line({"content": [f"{filler}{OPENAI}"]}) + b"\n"
    by_line = list(secrets_by_line(data))
    assert [
        kinds for _, _, kinds in ((s, e, [f.kind for f in found]) for s, e, found in by_line)
    ] == [["private-key", "password-assignment"], ["openai-key"]]
    for start, end, found in by_line:
        assert found == find_secrets(data[start:end])


def _every_place(folded: bytes) -> list[tuple[int, int]]:
    """Every place a pattern starts, the slow way: each pattern looked for everywhere."""
    return sorted(
        ((number, at) for number, pattern in enumerate(_ALL_STARTS)
         for at in range(len(folded)) if folded.startswith(pattern, at)),
        key=lambda place: place[1],
    )  # fmt: skip


@settings(max_examples=300)
@given(st.lists(st.sampled_from([*(p[:k] for p in _ALL_STARTS for k in range(1, len(p) + 1)),
                                 b"x", b"\n", b" "]), max_size=40).map(b"".join))  # fmt: skip
def test_places_are_every_place_a_pattern_starts(data: bytes) -> None:
    assert _places(data) == _every_place(data)


def test_places_inside_a_match_are_found() -> None:
    folded = b"akiapikey= sk------begin  ghp_apikey tokentoken_key"
    assert _places(folded) == _every_place(folded)
    assert {at for _, at in _places(folded)} >= {3, 14}  # (apikey in akia, -----begin in sk-)
