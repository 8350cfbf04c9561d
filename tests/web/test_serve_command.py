"""``sessiontree serve`` itself: the real server in a subprocess (the password, the Host
check), and what the command does before it serves (the browser, a port in use)."""

from __future__ import annotations

import base64
import contextlib
import http.client
import os
import re
import shutil
import socket
import ssl
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

import sessiontree
from sessiontree.cli.main import cli
from sessiontree.demo import DemoSummary


def start(
    root: Path, *args: str, env: dict[str, str] | None = None
) -> tuple[subprocess.Popen[str], int, Path]:
    log = root.parent / "serve.log"
    environ = {
        **os.environ,
        "PYTHONPATH": str(Path(sessiontree.__file__).parents[1]),
        **(env or {}),
    }
    with log.open("w") as stderr:
        process = subprocess.Popen(
            [sys.executable, "-c", "from sessiontree.cli.main import main; main()",
             "--root", str(root), "serve", "--no-open", *args],
            stderr=stderr, text=True, env=environ,
        )  # fmt: skip
    for _ in range(200):
        found = re.search(r"on https?://127\.0\.0\.1:(\d+)/", log.read_text())
        if found or process.poll() is not None:
            break
        time.sleep(0.05)
    assert found, log.read_text()
    return process, int(found.group(1)), log


@pytest.fixture
def guarded(demo: DemoSummary) -> Iterator[int]:
    process, port, log = start(
        demo.root, "--port", "0", env={"SESSIONTREE_SERVE_PASSWORD": "s3cret"}
    )
    try:
        yield port
    finally:
        process.terminate()
        process.wait(timeout=10)
    assert "Traceback" not in log.read_text()


def get(port: int, path: str, headers: dict[str, str]) -> tuple[int, str]:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    connection.request("GET", path, headers=headers)
    response = connection.getresponse()
    body = response.read().decode()
    connection.close()
    return response.status, body


def test_the_real_server_asks_for_the_password_and_checks_the_host(guarded: int) -> None:
    auth = "Basic " + base64.b64encode(b"me:s3cret").decode()
    host = f"127.0.0.1:{guarded}"
    assert get(guarded, "/", {"Host": host})[0] == 401
    status, body = get(guarded, "/", {"Host": host, "Authorization": auth})
    assert status == 200 and "Sessions" in body
    assert get(guarded, "/", {"Host": f"localhost:{guarded}", "Authorization": auth})[0] == 200
    assert get(guarded, "/", {"Host": f"evil.example:{guarded}", "Authorization": auth})[0] == 421


def test_serve_opens_the_browser_unless_told_not_to(
    demo: DemoSummary, monkeypatch: pytest.MonkeyPatch
) -> None:
    import uvicorn

    opened: list[str] = []
    served: list[object] = []
    monkeypatch.setattr("webbrowser.open", opened.append)
    monkeypatch.setattr(uvicorn.Server, "run", lambda self, sockets: served.append(sockets))
    runner = CliRunner()
    result = runner.invoke(cli, ["--root", str(demo.root), "serve", "--port", "0"])
    assert result.exit_code == 0, result.output
    for _ in range(100):
        if opened:
            break
        time.sleep(0.02)
    url = re.search(r"on (http://127\.0\.0\.1:\d+/)", result.output).group(1)  # type: ignore[union-attr]
    assert opened == [url] and len(served) == 1
    for flag in ("--no-open",):
        opened.clear()
        result = runner.invoke(cli, ["--root", str(demo.root), "serve", "--port", "0", flag])
        assert result.exit_code == 0 and opened == []
    result = runner.invoke(cli, ["--root", str(demo.root), "serve", "--port", "0", "--open"])
    time.sleep(0.2)
    assert result.exit_code == 0 and len(opened) == 1


def test_a_port_in_use_is_one_line(demo: DemoSummary) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        result = CliRunner().invoke(
            cli, ["--root", str(demo.root), "serve", "--port", str(port), "--no-open"]
        )
    assert result.exit_code == 1
    assert result.output.strip().splitlines() == [
        f"sessiontree: port {port} on 127.0.0.1 is in use: pass --port N (0: any free one)"
    ]


def test_serve_refuses_a_missing_root(tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["--root", str(tmp_path / "nope"), "serve", "--no-open"])
    assert result.exit_code == 1
    assert result.output.strip().splitlines() == [
        f"sessiontree: --root {tmp_path / 'nope'} does not exist"
    ]


def test_serve_brings_the_search_index_up_to_date_as_it_starts(
    demo: DemoSummary, tmp_path: Path
) -> None:
    """Before any search: the index is built in the background, so the first search
    finds it ready (reading nothing) instead of building it while the page waits."""
    import sqlite3

    from sessiontree.catalog.search_index import update_index
    from sessiontree.storage.layout import Layout

    cache = tmp_path / "cache"
    process, _port, log = start(demo.root, "--port", "0", env={"SESSIONTREE_CACHE_DIR": str(cache)})
    try:
        indexed = 0
        for _ in range(200):
            for db in cache.glob("search-*.sqlite"):
                with sqlite3.connect(db) as conn, contextlib.suppress(sqlite3.Error):
                    indexed = conn.execute("SELECT count(*) FROM entries").fetchone()[0]
            if indexed:
                break
            time.sleep(0.05)
        assert indexed > 0, "no search was made, yet the index holds the demo's records"
        time.sleep(0.5)  # its last commit
        (db,) = cache.glob("search-*.sqlite")
        after = update_index(db, Layout(demo.root), history=False)
        assert after.bytes_read == 0 and after.rows_added == 0, after  # (racy mtimes: looked at)
    finally:
        process.terminate()
        process.wait(timeout=10)
    assert "Traceback" not in log.read_text()


@pytest.fixture
def certificate(tmp_path: Path) -> tuple[Path, Path]:
    """A self-signed certificate for 127.0.0.1 (made with the openssl command)."""
    if shutil.which("openssl") is None:
        pytest.skip("needs the openssl command")
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
         "-keyout", str(key), "-out", str(cert), "-subj", "/CN=127.0.0.1",
         "-addext", "subjectAltName=IP:127.0.0.1"],
        check=True, capture_output=True,
    )  # fmt: skip
    return cert, key


def test_serve_speaks_https_with_a_certificate(
    demo: DemoSummary, certificate: tuple[Path, Path]
) -> None:
    """--tls-cert and --tls-key: the viewer is served over HTTPS (the password then not
    in the clear), and plain HTTP gets no page."""
    cert, key = certificate
    process, port, log = start(
        demo.root, "--port", "0", "--tls-cert", str(cert), "--tls-key", str(key),
        env={"SESSIONTREE_SERVE_PASSWORD": "s3cret"},
    )  # fmt: skip
    try:
        assert f"on https://127.0.0.1:{port}/" in log.read_text()
        trusted = ssl.create_default_context(cafile=str(cert))
        connection = http.client.HTTPSConnection("127.0.0.1", port, timeout=10, context=trusted)
        auth = "Basic " + base64.b64encode(b"me:s3cret").decode()
        connection.request("GET", "/", headers={"Authorization": auth})
        response = connection.getresponse()
        assert response.status == 200 and "Sessions" in response.read().decode()
        connection.close()
        with pytest.raises((http.client.HTTPException, OSError)):
            get(port, "/", {"Authorization": auth})
    finally:
        process.terminate()
        process.wait(timeout=10)
    assert "Traceback" not in log.read_text()


def test_tls_options_go_together_and_a_bad_certificate_is_one_line(
    demo: DemoSummary, certificate: tuple[Path, Path]
) -> None:
    cert, key = certificate
    runner = CliRunner()
    base = ["--root", str(demo.root), "serve", "--no-open", "--port", "0"]
    alone = runner.invoke(cli, [*base, "--tls-cert", str(cert)])
    assert alone.exit_code == 2 and "--tls-cert and --tls-key go together" in alone.output
    swapped = runner.invoke(cli, [*base, "--tls-cert", str(key), "--tls-key", str(cert)])
    assert swapped.exit_code == 1
    assert "cannot serve HTTPS with" in swapped.output
    assert len(swapped.output.strip().splitlines()) == 1


def test_plain_http_off_loopback_warns_that_the_password_is_in_the_clear(
    demo: DemoSummary, monkeypatch: pytest.MonkeyPatch
) -> None:
    import uvicorn

    monkeypatch.setattr(uvicorn.Server, "run", lambda self, sockets: None)
    runner = CliRunner()
    base = ["--root", str(demo.root), "serve", "--no-open", "--port", "0"]
    off = runner.invoke(cli, [*base, "--host", "0.0.0.0"], env={"SESSIONTREE_SERVE_PASSWORD": "pw"})
    assert off.exit_code == 0, off.output
    assert "carries the password in the clear" in off.output
    local = runner.invoke(cli, base)
    assert local.exit_code == 0 and "in the clear" not in local.output
