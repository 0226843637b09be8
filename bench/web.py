"""Web benchmark: server time of a step update, and the bytes of a first load of scene 05.

Starts uvicorn on a free 127.0.0.1 port (stopped by its own pid), then:

1. first load: GET /scenes/05 plus every stylesheet and script it links, summing the bytes on
   the wire (as sent, possibly gzipped) and the decoded bytes;
2. step updates: CLIENTS concurrent keep-alive connections each walk the timeline with the
   htmx requests the browser sends (HX-Current-URL, X-Diagram, X-Panels), for DURATION_S
   seconds. "Server time" is Server-Timing (in the app); latency is as seen on 127.0.0.1.

Prints its figures with the sample count; asserts nothing. Targets (issue 9): a step update's
fragment <= 10 KB, >= 500 step updates/s on 2 cores, first load <= 150 KB.
Run: `.venv/bin/python bench/web.py --workers 2 --clients 20 --duration 20` (capacity), or
`--clients 200 --pause-ms 1000` (learners stepping once a second). By default every client walks
the same beat, as a workshop does, so the server's step-update cache answers most of them;
`--own-seed` gives each client a scenario of its own, as learners alone (no shared updates).
"""

from __future__ import annotations

import argparse
import asyncio
import gzip
import os
import re
import statistics
import sys
import time
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _server  # noqa: E402

CLIENTS = 20
DURATION_S = 30.0
REQUEST_TIMEOUT_S = 10.0
SCENE_PATH = "/scenes/05"
TARGET_P99_MS = 50
TARGET_FIRST_LOAD_KB = 150


def server_command(port: int, workers: int, serve: bool, engine_workers: int | None):
    """uvicorn on app.main:app (the engine inline), or with `serve` the production entry
    `python -m app.serve` (engine worker processes, slow-client guards): (command, env)."""
    if serve:
        extra = {"BUILD_KAFKA_WEB_WORKERS": str(workers)}
        if engine_workers is not None:
            extra["BUILD_KAFKA_ENGINE_WORKERS"] = str(engine_workers)
        return [sys.executable, "-m", "app.serve"], _server.serve_env(port, **extra)
    command = [sys.executable, "-m", "uvicorn", "app.main:app", "--host", "127.0.0.1",
               "--port", str(port), "--log-level", "warning", "--workers", str(workers)]  # fmt: skip
    return command, dict(os.environ)


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


class RawClient:
    """One keep-alive HTTP/1.1 connection over asyncio streams: a few µs of client CPU a request,
    so that on a 2-core machine the benchmark measures the server rather than httpx."""

    def __init__(self, host: str, port: int):
        self.host, self.port = host, port
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None

    async def get(self, path: str, headers: dict[str, str]) -> tuple[int, dict[str, str], bytes]:
        if self.writer is None:
            self.reader, self.writer = await asyncio.open_connection(self.host, self.port)
        lines = [f"GET {path} HTTP/1.1", f"Host: {self.host}:{self.port}", "Accept-Encoding: gzip"]
        lines += [f"{k}: {v}" for k, v in headers.items()]
        self.writer.write(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1"))
        head = await self.reader.readuntil(b"\r\n\r\n")
        status_line, *header_lines = head.decode("latin-1").split("\r\n")
        fields = {}
        for line in header_lines:
            if ":" in line:
                k, v = line.split(":", 1)
                fields[k.strip().lower()] = v.strip()
        body = await self.reader.readexactly(int(fields.get("content-length", "0")))
        if fields.get("connection", "").lower() == "close":
            await self.close()
        return int(status_line.split()[1]), fields, body

    async def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
            self.writer = None


def step_urls(base: str) -> list[str]:
    page = httpx.get(base + SCENE_PATH + "?step=0")
    count = int(re.search(r"step 0 of (\d+)", page.text).group(1))
    template = re.search(r'id="step-forward" href="([^"]+)"', page.text).group(1).replace("&amp;", "&")
    return [re.sub(r"step=\d+", f"step={i}", template) for i in range(count + 1)]


class Tally:
    def __init__(self) -> None:
        self.latency_ms: list[float] = []
        self.server_ms: list[float] = []
        self.wire: list[int] = []
        self.raw: list[int] = []
        self.errors = 0


async def learner(
    port: int, base: str, urls: list[str], offset: int, deadline: float, tally: Tally, pause_s: float
) -> None:
    """Steps through the timeline as the browser does: HX-Current-URL is the page's URL, X-Diagram
    names the geometry shown, X-Panels carries the hashes the last update sent."""
    client = RawClient("127.0.0.1", port)
    held = ""
    if pause_s:  # learners are not in lockstep: each starts at its own moment within one pause
        await asyncio.sleep(pause_s * (offset * 7919 % 1000) / 1000)
    n = offset % (len(urls) - 1)
    try:
        while time.monotonic() < deadline:
            current, target = urls[n], urls[n + 1]
            headers = {"HX-Request": "true", "HX-Current-URL": base + current, "X-Diagram": "wide",
                       "X-Panels": held}  # fmt: skip
            started = time.perf_counter()
            try:
                status, fields, body = await client.get(target, headers)
            except (OSError, asyncio.IncompleteReadError):
                tally.errors += 1
                await client.close()
                continue
            tally.latency_ms.append((time.perf_counter() - started) * 1000)
            if status != 200:
                tally.errors += 1
            raw = gzip.decompress(body) if fields.get("content-encoding") == "gzip" else body
            tally.wire.append(len(body))
            tally.raw.append(len(raw))
            match = re.search(rb'id="panel-hashes" hidden data-h="([^"]*)"', raw)
            held = match.group(1).decode() if match else ""
            timing = re.search(r"app;dur=([0-9.]+)", fields.get("server-timing", ""))
            if timing:
                tally.server_ms.append(float(timing.group(1)))
            n += 1
            if n >= len(urls) - 1:
                n, held = 0, ""
            if pause_s:
                await asyncio.sleep(pause_s)
    finally:
        await client.close()


def percentile(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(round(q * (len(values) - 1))))] if values else float("nan")


def own_seed(urls: list[str], client: int) -> list[str]:
    """The client's own scenario (seed = client + 1): no two clients send the same update, as
    learners on their own would, so the server's step-update cache never answers for another."""
    return [re.sub(r"\bseed=\d+", f"seed={client + 1}", url) for url in urls]


async def step_updates(
    port: int, base: str, clients: int, duration_s: float, pause_s: float, separate: bool = False
) -> None:
    urls = step_urls(base)
    tally = Tally()
    cpu0 = time.process_time()
    started = time.perf_counter()
    deadline = time.monotonic() + duration_s
    await asyncio.gather(
        *(
            learner(port, base, own_seed(urls, i) if separate else urls, i * 3, deadline, tally, pause_s)
            for i in range(clients)
        )
    )
    elapsed = time.perf_counter() - started
    client_cpu = (time.process_time() - cpu0) / elapsed * 100
    done = len(tally.latency_ms)
    print(
        f"step updates (htmx, as the browser sends them), {clients} clients, {len(urls)} steps, "
        f"pause {pause_s * 1000:.0f} ms, "
        + ("each on its own seed (no shared updates):" if separate else "all on one beat (a workshop):")
    )
    print(
        f"  {done} updates in {elapsed:.1f} s = {done / elapsed:.0f} updates/s; errors {tally.errors}; "
        f"benchmark client CPU {client_cpu:.0f} % of one core"
    )
    print(
        f"  fragment: raw p50 {statistics.median(tally.raw) / 1024:.1f} KB, "
        f"max {max(tally.raw) / 1024:.1f} KB; "
        f"on the wire (gzip) p50 {statistics.median(tally.wire) / 1024:.1f} KB, "
        f"max {max(tally.wire) / 1024:.1f} KB (target <= 10 KB)"
    )
    for label, values in (
        ("server time (Server-Timing)", tally.server_ms),
        ("client latency", tally.latency_ms),
    ):
        print(
            f"  {label}: p50 {percentile(values, 0.5):.1f} ms, p95 {percentile(values, 0.95):.1f} ms, "
            f"p99 {percentile(values, 0.99):.1f} ms, max {max(values):.1f} ms"
        )


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, default=1, help="server processes")
    parser.add_argument("--serve", action="store_true", help="run the production entry, python -m app.serve")
    parser.add_argument("--engine-workers", type=int, default=None, help="with --serve: per server process")
    parser.add_argument("--clients", type=int, default=CLIENTS)
    parser.add_argument("--duration", type=float, default=DURATION_S, help="seconds of step updates")
    parser.add_argument("--pause-ms", type=float, default=0, help="each client's pause between steps")
    parser.add_argument("--own-seed", action="store_true", help="each client on its own scenario")
    parser.add_argument("--no-step-cache", action="store_true", help="render every update (a cold server)")
    args = parser.parse_args(argv)
    port = _server.free_port()
    base = f"http://127.0.0.1:{port}"
    command, env = server_command(port, args.workers, args.serve, args.engine_workers)
    if args.no_step_cache:
        env = {**env, "BUILD_KAFKA_STEP_CACHE_BYTES": "0"}
    with _server.running(command, port, env):
        first_load(base)
        asyncio.run(
            step_updates(port, base, args.clients, args.duration, args.pause_ms / 1000, args.own_seed)
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
