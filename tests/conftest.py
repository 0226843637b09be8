"""Fixtures shared by every test area.

Only what several areas need lives here:

- ``live_server``: the real app under uvicorn on 127.0.0.1 and a free port, for the browser
  tests and anything else that must talk HTTP over a socket.
- ``browser_type_launch_args``: points pytest-playwright at Debian's Chromium, because
  Playwright cannot download its own browser on our machines.
- ``base_url``: pytest-playwright's, restated (see its docstring for why).
- ``postgres_url``: a real PostgreSQL server for the session (tests/support/pgcluster.py), for
  the workshop-storage tests.

Fixtures for one area belong in that area's conftest (tests/engine/, tests/web/,
tests/browser/, tests/pipeline/).

Browser tests and a missing /usr/bin/chromium: on a developer's machine they are skipped with
the reason; with CI set they fail, so a CI run can never pass without exercising the browser.
This rides on ``browser_type_launch_args``, which every Playwright fixture (``browser``,
``context``, ``page``) depends on; a test that launches a browser by hand bypasses it.

PostgreSQL (Debian's, under /usr/lib/postgresql/*/bin) is treated the same way: without it,
tests that use ``postgres_url`` are skipped with the reason, or fail when CI is set.
"""

import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from tests.support.pgcluster import find_pg_bin, temporary_cluster

REPO_ROOT = Path(__file__).resolve().parent.parent
CHROMIUM_PATH = Path("/usr/bin/chromium")
# Chromium's background services try to reach Google; our network refuses them, noisily.
CHROMIUM_ARGS = [
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
SERVER_START_TIMEOUT_S = 30
SERVER_STOP_TIMEOUT_S = 10
SERVER_POLL_INTERVAL_S = 0.1


def running_in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() not in ("", "0", "false")


def free_port() -> int:
    # The OS picks an unused port; there is a small window before uvicorn binds it, which is
    # acceptable for one server per test session.
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_until_answering(base_url: str, process: subprocess.Popen, log_path: Path) -> None:
    deadline = time.monotonic() + SERVER_START_TIMEOUT_S
    while time.monotonic() < deadline:
        if process.poll() is not None:
            log = log_path.read_text(errors="replace")
            pytest.fail(f"uvicorn exited with {process.returncode} before answering:\n{log}")
        try:
            with urllib.request.urlopen(base_url + "/", timeout=1):
                return
        except urllib.error.HTTPError:
            return  # any HTTP answer, even an error status, means the server is up
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            time.sleep(SERVER_POLL_INTERVAL_S)
    log = log_path.read_text(errors="replace")
    pytest.fail(f"uvicorn did not answer on {base_url} within {SERVER_START_TIMEOUT_S} s:\n{log}")


@pytest.fixture(scope="session")
def live_server(tmp_path_factory):
    """Base URL (``http://127.0.0.1:PORT``, no trailing slash) of the app served by uvicorn."""
    port = free_port()
    base_url = f"http://127.0.0.1:{port}"
    log_path = tmp_path_factory.mktemp("live_server") / "uvicorn.log"
    command = [
        sys.executable, "-m", "uvicorn", "app.main:app",
        "--host", "127.0.0.1", "--port", str(port), "--log-level", "warning",
    ]  # fmt: skip
    # workshops made by the tests go to a throwaway SQLite file, not the checkout's var/
    env = {**os.environ, "BUILD_KAFKA_DATA_DIR": str(log_path.parent / "data")}
    env.pop("DATABASE_URL", None)
    with open(log_path, "wb") as log:
        process = subprocess.Popen(command, cwd=REPO_ROOT, stdout=log, stderr=subprocess.STDOUT, env=env)
    try:
        wait_until_answering(base_url, process, log_path)
        yield base_url
    finally:
        # Stop exactly the process we started.
        process.terminate()
        try:
            process.wait(timeout=SERVER_STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@pytest.fixture(scope="session")
def base_url(pytestconfig):
    """``--base-url`` or the ``base_url`` ini value, else None: pytest-playwright's own meaning.

    Redefined only because pytest-playwright 0.10 declares this fixture as a method of a plugin
    object, which pytest 9.2 deprecates; with warnings as errors, every browser test would error.
    A test area may override it, e.g. to return ``live_server``.
    """
    return pytestconfig.getoption("--base-url", default=None) or pytestconfig.getini("base_url") or None


@pytest.fixture(scope="session")
def browser_type_launch_args(browser_type_launch_args):
    """pytest-playwright's launch arguments, aimed at Debian's Chromium."""
    if not CHROMIUM_PATH.exists():
        if running_in_ci():
            pytest.fail(f"CI is set but {CHROMIUM_PATH} is missing; scripts/test.sh installs it")
        pytest.skip(f"{CHROMIUM_PATH} is missing; run `apt-get install chromium` or scripts/test.sh")
    return {**browser_type_launch_args, "executable_path": str(CHROMIUM_PATH), "args": CHROMIUM_ARGS}


@pytest.fixture(scope="session")
def postgres_url():
    """``postgresql://bk@127.0.0.1:PORT/buildkafka_test``: an empty database on a fresh server
    that lives for the session (bk is a superuser, no password)."""
    if find_pg_bin() is None:
        if running_in_ci():
            pytest.fail("CI is set but no PostgreSQL is in /usr/lib/postgresql; scripts/test.sh installs it")
        pytest.skip("PostgreSQL is missing; run `apt-get install postgresql` or scripts/test.sh")
    with temporary_cluster() as url:
        yield url
