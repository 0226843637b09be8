"""Start and stop the app for a benchmark: one place for the port, the wait and the stop."""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx

REPO_ROOT = Path(__file__).resolve().parent.parent
START_TIMEOUT_S = 30.0


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def serve_env(port: int, **extra: str) -> dict[str, str]:
    """The environment of `python -m app.serve` on 127.0.0.1:port, quiet, plus `extra`."""
    env = dict(os.environ, BUILD_KAFKA_HOST="127.0.0.1", BUILD_KAFKA_PORT=str(port))
    env.update(BUILD_KAFKA_ACCESS_LOG="0", BUILD_KAFKA_LOG_LEVEL="warning", **extra)
    return env


@contextlib.contextmanager
def running(command: list[str] | None, port: int, env: dict[str, str] | None = None,
            log: Path | None = None) -> Iterator[subprocess.Popen]:  # fmt: skip
    """Run `command` (default `python -m app.serve`) until /healthz answers; stop exactly that
    process afterwards."""
    command = command or [sys.executable, "-m", "app.serve"]
    out = open(log, "wb") if log else None  # noqa: SIM115 - closed below
    process = subprocess.Popen(command, cwd=REPO_ROOT, env=env or serve_env(port), stdout=out,
                               stderr=subprocess.STDOUT if out else None)  # fmt: skip
    try:
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            try:
                httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=1)
                break
            except httpx.HTTPError:
                if time.monotonic() > deadline or process.poll() is not None:
                    raise SystemExit(f"the server did not start: {' '.join(command)}") from None
                time.sleep(0.1)
        yield process
    finally:
        process.terminate()
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        if out:
            out.close()
