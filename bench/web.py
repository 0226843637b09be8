"""Web benchmark: server time of a step update, and the bytes of a first load of scene 05.

Starts uvicorn on a free 127.0.0.1 port (stopped by its own pid), then:

1. first load: GET /scenes/05 plus every stylesheet and script it links, summing the bytes on
   the wire (as sent, possibly gzipped) and the decoded bytes;
2. step updates: CLIENTS concurrent httpx clients each walk the timeline with htmx fragment
   requests (`HX-Request: true`), for at most REQUESTS_PER_CLIENT requests or DURATION_S
   seconds. "Server time" is the time to the full response as seen on 127.0.0.1.

Prints its figures with the sample count; asserts nothing. Targets: p99 <= 50 ms, first load
<= 150 KB. Run: `.venv/bin/python bench/web.py`.
"""

from __future__ import annotations

import asyncio
import re
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path

import httpx

REPO_ROOT = Path(__file__).resolve().parent.parent
CLIENTS = 20
REQUESTS_PER_CLIENT = 60
DURATION_S = 30.0
START_TIMEOUT_S = 30.0
REQUEST_TIMEOUT_S = 10.0
SCENE_PATH = "/scenes/05"
TARGET_P99_MS = 50
TARGET_FIRST_LOAD_KB = 150


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def start_server(port: int) -> subprocess.Popen:
    command = [sys.executable, "-m", "uvicorn", "app.main:app", "--host", "127.0.0.1", "--port", str(port),
               "--log-level", "warning"]  # fmt: skip
    process = subprocess.Popen(command, cwd=REPO_ROOT)
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        try:
            httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=1)
            return process
        except httpx.HTTPError:
            time.sleep(0.1)
    process.terminate()
    raise SystemExit("uvicorn did not start")


def first_load(base: str) -> None:
    with httpx.Client(base_url=base, headers={"Accept-Encoding": "gzip"}) as client:
        wire = decoded = 0
        rows = []
        page = client.get(SCENE_PATH)
        assets = re.findall(r'<(?:link rel="stylesheet"|script) (?:href|src)="([^"]+)"', page.text)
        for response in [page] + [client.get(url) for url in assets]:
            sent = int(response.headers.get("content-length", len(response.content)))
            wire += sent
            decoded += len(response.content)
            rows.append((str(response.url.path), sent, len(response.content)))
    print("first load of scene 05 (HTML + linked CSS/JS):")
    for path, sent, raw in rows:
        print(f"  {path:44s} {sent / 1024:7.1f} KB on the wire, {raw / 1024:7.1f} KB decoded")
    print(
        f"  total: {wire / 1024:.1f} KB on the wire, {decoded / 1024:.1f} KB decoded "
        f"(target <= {TARGET_FIRST_LOAD_KB} KB)"
    )


async def step_client(
    base: str, urls: list[str], offset: int, deadline: float, samples: list[float], server_ms: list[float]
) -> None:
    async with httpx.AsyncClient(base_url=base, timeout=REQUEST_TIMEOUT_S) as client:
        for n in range(REQUESTS_PER_CLIENT):
            if time.monotonic() > deadline:
                return
            url = urls[(offset + n) % len(urls)]
            started = time.perf_counter()
            response = await client.get(url, headers={"HX-Request": "true", "HX-Current-URL": base + url})
            samples.append((time.perf_counter() - started) * 1000)
            response.raise_for_status()
            match = re.search(r"app;dur=([0-9.]+)", response.headers.get("server-timing", ""))
            if match:
                server_ms.append(float(match.group(1)))


def step_urls(base: str) -> list[str]:
    page = httpx.get(base + SCENE_PATH + "?step=0")
    count = int(re.search(r"step 0 of (\d+)", page.text).group(1))
    template = re.search(r'id="step-forward" href="([^"]+)"', page.text).group(1).replace("&amp;", "&")
    return [re.sub(r"step=\d+", f"step={i}", template) for i in range(count + 1)]


async def step_updates(base: str) -> None:
    urls = step_urls(base)
    samples: list[float] = []
    server_ms: list[float] = []
    deadline = time.monotonic() + DURATION_S
    started = time.perf_counter()
    await asyncio.gather(
        *(step_client(base, urls, i * 3, deadline, samples, server_ms) for i in range(CLIENTS))
    )
    elapsed = time.perf_counter() - started
    print(f"step updates (htmx fragments), {CLIENTS} concurrent clients, {len(urls)} distinct steps:")
    print(f"  samples {len(samples)} in {elapsed:.1f} s ({len(samples) / elapsed:.0f} req/s)")
    for label, values in (
        ("server time (Server-Timing: in the app, excluding queueing)", server_ms),
        ("client-observed latency (includes queueing behind 19 others)", samples),
    ):
        values.sort()
        if not values:
            continue
        p50 = statistics.median(values)
        p99 = values[min(len(values) - 1, int(round(0.99 * (len(values) - 1))))]
        print(
            f"  {label}: n={len(values)} p50 {p50:.1f} ms, p99 {p99:.1f} ms, max {values[-1]:.1f} ms "
            f"(target p99 <= {TARGET_P99_MS} ms)"
        )


def main(argv: list[str]) -> int:
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    process = start_server(port)
    try:
        first_load(base)
        asyncio.run(step_updates(base))
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
