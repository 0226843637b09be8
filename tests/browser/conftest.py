"""Browser-test fixtures: console-error capture and a second origin to host embeds.

The uvicorn `live_server` and the Chromium launch arguments come from tests/conftest.py.
"""

import functools
import http.server
import threading
from pathlib import Path

import pytest

SCREENSHOT_DIR = Path(__file__).resolve().parents[2] / "screenshots"


@pytest.fixture
def console_errors(page):
    """Every console error and uncaught page error seen during the test (asserted empty by tests)."""
    errors: list[str] = []
    page.on("console", lambda msg: errors.append(f"console: {msg.text}") if msg.type == "error" else None)
    page.on("pageerror", lambda exc: errors.append(f"pageerror: {exc}"))
    return errors


@pytest.fixture
def other_origin(tmp_path):
    """A static http server on another 127.0.0.1 port: (base_url, directory to write pages into)."""
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(tmp_path))

    class QuietHandler(handler.func):  # type: ignore[misc,name-defined]
        def log_message(self, *args):  # keep test output clean
            pass

    server = http.server.ThreadingHTTPServer(
        ("127.0.0.1", 0), functools.partial(QuietHandler, directory=str(tmp_path))
    )
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", tmp_path
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


@pytest.fixture(scope="session")
def screenshot_dir():
    SCREENSHOT_DIR.mkdir(exist_ok=True)
    return SCREENSHOT_DIR
