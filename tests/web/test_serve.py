"""The production entry (`python -m app.serve`) against slow and idle clients.

The real server runs in a subprocess on a free port, with two server processes, one engine
worker each, a 1 s head timeout and a cap of 40 connections per server process. Bounds are
"eventually" bounds, generous on purpose; nothing here measures speed.
"""

import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request

import pytest

from app.serve import ServeConfig, raise_open_file_limit
from tests.conftest import REPO_ROOT, free_port

HEADER_TIMEOUT_S = 1
CAP_PER_PROCESS = 40
EVENTUALLY_S = 30.0


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    port = free_port()
    log_path = tmp_path_factory.mktemp("serve") / "serve.log"
    env = {
        **os.environ,
        "BUILD_KAFKA_HOST": "127.0.0.1",
        "BUILD_KAFKA_PORT": str(port),
        "BUILD_KAFKA_WEB_WORKERS": "2",
        "BUILD_KAFKA_ENGINE_WORKERS": "1",
        "BUILD_KAFKA_HEADER_TIMEOUT_S": str(HEADER_TIMEOUT_S),
        "BUILD_KAFKA_BODY_TIMEOUT_S": str(HEADER_TIMEOUT_S),
        "BUILD_KAFKA_MAX_CONNECTIONS": str(CAP_PER_PROCESS),
        "BUILD_KAFKA_ACCESS_LOG": "0",
        "PYTHONPATH": str(REPO_ROOT),
    }
    with open(log_path, "wb") as log:
        process = subprocess.Popen(
            [sys.executable, "-m", "app.serve"], cwd=REPO_ROOT, env=env, stdout=log, stderr=subprocess.STDOUT
        )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + EVENTUALLY_S
        while fetch(base + "/healthz") is None:
            assert process.poll() is None, log_path.read_text(errors="replace")
            assert time.monotonic() < deadline, log_path.read_text(errors="replace")
            time.sleep(0.1)
        yield base, port, log_path
    finally:
        process.terminate()  # the supervisor stops its server processes, which stop their workers
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def fetch(url: str, timeout: float = 5.0) -> tuple[int, dict[str, str], str] | None:
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response:
            return response.status, dict(response.headers), response.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, dict(error.headers), error.read().decode()
    except (urllib.error.URLError, ConnectionError, TimeoutError, OSError):
        return None


def eventually_fetch(url: str) -> tuple[int, dict[str, str], str]:
    deadline = time.monotonic() + EVENTUALLY_S
    while True:
        got = fetch(url)
        if got is not None:
            return got
        assert time.monotonic() < deadline, f"{url} never answered"
        time.sleep(0.1)


def is_closed(sock: socket.socket) -> bool:
    sock.settimeout(0)
    try:
        return sock.recv(1) == b""
    except BlockingIOError:
        return False
    except OSError:  # reset
        return True


def test_scene_pages_are_served_by_the_engine_workers(server):
    base, _port, _log = server
    status, headers, text = eventually_fetch(base + "/scenes/05?step=3")
    assert status == 200 and "frame-ancestors 'none'" in headers["content-security-policy"]
    assert "05" in text
    assert eventually_fetch(base + "/healthz")[0] == 200


def test_idle_sockets_neither_lock_out_new_clients_nor_stay_open(server):
    base, port, log_path = server
    idle = []
    try:
        for _ in range(CAP_PER_PROCESS * 5):  # far past both server processes' caps
            idle.append(socket.create_connection(("127.0.0.1", port), timeout=5))
        # a new client is served at once: at the cap, the oldest socket without a request makes room
        status, _headers, body = eventually_fetch(base + "/healthz")
        assert status == 200 and body == '{"ok":true}'
        assert eventually_fetch(base + "/scenes/05?step=2")[0] == 200
        deadline = time.monotonic() + EVENTUALLY_S
        while not all(is_closed(s) for s in idle):
            assert time.monotonic() < deadline, "idle sockets still open long after the head timeout"
            time.sleep(0.2)
    finally:
        for s in idle:
            s.close()
    log = log_path.read_text(errors="replace")
    assert "Traceback" not in log
    # one line per second at most per kind of event, not one per connection
    assert len([line for line in log.splitlines() if "connection" in line]) < CAP_PER_PROCESS


def test_a_client_trickling_its_request_head_is_closed_after_the_head_timeout(server):
    _base, port, _log = server
    with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
        head = b"GET /healthz HTTP/1.1\r\nHost: x\r\n" + b"X-Slow: " + b"a" * 400
        deadline = time.monotonic() + EVENTUALLY_S
        for byte in head:  # keep sending a byte every 0.1 s: uvicorn's keep-alive timer alone never fires
            try:
                sock.sendall(bytes([byte]))
            except OSError:
                break
            if is_closed(sock):
                break
            assert time.monotonic() < deadline
            time.sleep(0.1)
        else:
            pytest.fail("the server kept reading a request head for 40 s")
    assert eventually_fetch(f"http://127.0.0.1:{port}/healthz")[0] == 200


def test_a_client_trickling_its_request_body_is_closed_too(server):
    _base, port, _log = server
    with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
        sock.sendall(
            b"POST /api/v1/simulate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            b"Content-Length: 1000\r\n\r\n"
        )
        deadline = time.monotonic() + EVENTUALLY_S
        while True:
            try:
                sock.sendall(b" ")
            except OSError:
                break
            if is_closed(sock):
                break
            assert time.monotonic() < deadline, "the server kept reading a trickled body"
            time.sleep(0.1)


def test_a_keep_alive_connection_serves_several_requests(server):
    _base, port, _log = server
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        for _ in range(3):
            sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
            reply = b""
            while b'{"ok":true}' not in reply:
                chunk = sock.recv(4096)
                assert chunk, reply
                reply += chunk
            assert reply.startswith(b"HTTP/1.1 200")


def test_serve_config_from_the_environment():
    config = ServeConfig.from_env(
        {
            "BUILD_KAFKA_PORT": "9000",
            "BUILD_KAFKA_WEB_WORKERS": "3",
            "BUILD_KAFKA_ENGINE_WORKERS": "4",
            "BUILD_KAFKA_HEADER_TIMEOUT_S": "2.5",
            "BUILD_KAFKA_MAX_CONNECTIONS": "100",
            "BUILD_KAFKA_ACCESS_LOG": "off",
        }
    )
    assert (config.port, config.web_workers, config.engine_workers) == (9000, 3, 4)
    assert (config.header_timeout_s, config.max_connections, config.access_log) == (2.5, 100, False)
    assert ServeConfig.from_env({"PORT": "8123"}).port == 8123
    defaults = ServeConfig.from_env({})
    assert defaults.web_workers >= 1 and defaults.engine_workers >= 1 and defaults.host == "0.0.0.0"
    with pytest.raises(SystemExit):
        ServeConfig.from_env({"BUILD_KAFKA_MAX_CONNECTIONS": "lots"})


def test_the_open_file_limit_is_raised_to_the_hard_limit():
    import resource

    soft = raise_open_file_limit()
    assert soft == resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    assert hard == resource.RLIM_INFINITY or soft == hard
