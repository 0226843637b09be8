"""A workshop room under a presenter: how long from a presenter's step to every participant's update.

Starts the app (`python -m uvicorn app.main:app`, or `python -m app.serve` with --serve) on a
free port, with workshops in SQLite in a temporary data directory, or in PostgreSQL with
--database-url. Creates a workshop on scene 04, joins PARTICIPANTS browsers (each its own cookie
and event stream), then the presenter steps STEPS times, one every INTERVAL seconds. With --fetch,
each participant also asks for the scene URL of every `state` event it receives as its page
would (the htmx step update: HX-Request, HX-Current-URL of the state it showed before).

The participants are raw asyncio HTTP/1.1 clients in this process (no HTTP library per event, so
100 streams cost this process little; its CPU is printed to show it was not the bottleneck).

Prints: delay from the presenter's POST (t0, taken just before it is sent) to each participant's
receipt of that step's event, p50/p90/p99/max over all (step, participant) pairs; updates dropped
(a published seq a participant never got); with --fetch, step -> fragment received; the server's
RSS before participants connect and with all connected (per participant); this machine's cores
and this client's CPU. Target (the project's): p99 <= 250 ms and 0 dropped, on 2 cores; the
verdict is printed, the exit status is 0 either way.

Run: `.venv/bin/python bench/workshop.py [--participants 100] [--steps 50] [--interval 0.25]
[--fetch] [--database-url postgresql://... | --temp-postgres] [--serve]`.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _server  # noqa: E402

SCENE = "04"
TARGET_P99_MS = 250.0
GRACE_S = 10.0  # after the last step, how long stragglers may still arrive before they count as dropped


# -- a minimal HTTP/1.1 client on asyncio streams ------------------------------------------------
async def read_head(reader: asyncio.StreamReader) -> tuple[int, dict[str, str], list[str]]:
    head = await reader.readuntil(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split(" ", 2)[1])
    headers: dict[str, str] = {}
    cookies = []
    for line in lines[1:]:
        if ":" in line:
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
            if name.strip().lower() == "set-cookie":
                cookies.append(value.strip())
    return status, headers, cookies


async def read_chunk(reader: asyncio.StreamReader) -> bytes:
    """One chunk of a chunked body (b"" at its end)."""
    size = int((await reader.readuntil(b"\r\n")).split(b";")[0], 16)
    data = await reader.readexactly(size + 2) if size else b""
    if not size:
        await reader.readuntil(b"\r\n")
    return data[:-2]


async def read_body(reader: asyncio.StreamReader, headers: dict[str, str]) -> bytes:
    if "content-length" in headers:
        return await reader.readexactly(int(headers["content-length"]))
    if headers.get("transfer-encoding", "").lower() == "chunked":
        body = bytearray()
        while chunk := await read_chunk(reader):
            body.extend(chunk)
        return bytes(body)
    return await reader.read()


def request_bytes(host: str, method: str, path: str, headers: dict[str, str], body: bytes = b"") -> bytes:
    lines = [f"{method} {path} HTTP/1.1", f"Host: {host}", *(f"{k}: {v}" for k, v in headers.items())]
    if body or method == "POST":
        lines.append(f"Content-Length: {len(body)}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + body


# -- the room ------------------------------------------------------------------------------------
@dataclass(eq=False)
class Participant:
    index: int
    pid_cookie: str = ""
    received: dict[int, float] = field(default_factory=dict)  # seq -> perf_counter at receipt
    duplicates: int = 0
    out_of_order: int = 0
    fragments: dict[int, float] = field(default_factory=dict)  # seq -> perf_counter of the whole body
    fetch_errors: int = 0
    connected: asyncio.Event = field(default_factory=asyncio.Event)


async def join(host: str, port: int, code: str, p: Participant) -> None:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        writer.write(request_bytes(host, "GET", f"/w/{code}", {"Connection": "close"}))
        status, headers, cookies = await read_head(reader)
        await read_body(reader, headers)
        if status != 200:
            raise SystemExit(f"joining answered {status}")
        for cookie in cookies:
            if cookie.startswith("bk_pid="):
                p.pid_cookie = cookie.split(";", 1)[0]
    finally:
        writer.close()


async def follow(host: str, port: int, code: str, p: Participant, fetch: bool, base: str) -> None:
    """Read the event stream until cancelled; with `fetch`, ask for each state's step update."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    fetches: asyncio.Queue = asyncio.Queue()
    fetcher = asyncio.create_task(fetch_loop(host, port, p, fetches, base)) if fetch else None
    try:
        writer.write(request_bytes(host, "GET", f"/w/{code}/events",
                                   {"Cookie": p.pid_cookie, "Accept": "text/event-stream"}))  # fmt: skip
        status, headers, _ = await read_head(reader)
        if status != 200:
            raise SystemExit(f"the event stream answered {status}")
        chunked = headers.get("transfer-encoding", "").lower() == "chunked"
        buffer = b""
        last = 0
        while True:
            data = await read_chunk(reader) if chunked else await reader.read(65536)
            now = time.perf_counter()
            if not data:
                return
            buffer += data.replace(b"\r\n", b"\n")
            while b"\n\n" in buffer:
                frame, buffer = buffer.split(b"\n\n", 1)
                fields = {}
                for line in frame.split(b"\n"):
                    if line and not line.startswith(b":"):
                        name, _, value = line.partition(b":")
                        fields[name] = value[1:] if value.startswith(b" ") else value
                p.connected.set()  # the hello comment, or the first event: subscribed
                if fields.get(b"event") != b"state":
                    continue
                event = json.loads(fields[b"data"])
                seq = event["seq"]
                if seq in p.received:
                    p.duplicates += 1
                    continue
                if seq < last:
                    p.out_of_order += 1
                last = max(last, seq)
                p.received[seq] = now
                if fetcher is not None:
                    fetches.put_nowait((seq, event["url"]))
    finally:
        if fetcher is not None:
            fetcher.cancel()
        writer.close()


async def fetch_loop(host: str, port: int, p: Participant, fetches: asyncio.Queue, base: str) -> None:
    """A following browser: each state's step update, one at a time, on one keep-alive connection
    (newest wins when it falls behind, as static/workshop.js keeps only the pending one)."""
    reader = writer = None
    shown = None
    try:
        while True:
            seq, url = await fetches.get()
            while not fetches.empty():
                seq, url = fetches.get_nowait()
            if writer is None:
                reader, writer = await asyncio.open_connection("127.0.0.1", port)
            headers = {"HX-Request": "true", "Cookie": p.pid_cookie}
            if shown is not None:
                headers["HX-Current-URL"] = base + shown
            writer.write(request_bytes(host, "GET", url, headers))
            status, head, _ = await read_head(reader)
            await read_body(reader, head)
            if status == 200:
                p.fragments[seq] = time.perf_counter()
                shown = url
            else:
                p.fetch_errors += 1
            if head.get("connection", "").lower() == "close":
                writer.close()
                reader = writer = None
    finally:
        if writer is not None:
            writer.close()


# -- measuring -----------------------------------------------------------------------------------
def rss_kib(pid: int) -> int:
    """VmRSS of `pid` and every process under it (app.serve's workers), in KiB."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            ppid = int(stat.rsplit(")", 1)[1].split()[1])
            children.setdefault(ppid, []).append(int(entry))
    total, todo = 0, [pid]
    while todo:
        current = todo.pop()
        todo.extend(children.get(current, []))
        try:
            status = Path(f"/proc/{current}/status").read_text()
        except OSError:
            continue
        m = re.search(r"^VmRSS:\s+(\d+) kB", status, re.M)
        total += int(m.group(1)) if m else 0
    return total


def percentile(sorted_values: list[float], q: float) -> float:
    return sorted_values[min(len(sorted_values) - 1, int(q * (len(sorted_values) - 1) + 0.5))]


def verdict(ok: bool) -> str:
    return "PASS" if ok else "MISS"


async def run(args, port: int, server: subprocess.Popen) -> None:
    host = f"127.0.0.1:{port}"
    base = f"http://{host}"
    # the workshop, and one participant page rendered so the scene's first page is warm
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    form = {"Content-Type": "application/x-www-form-urlencoded", "Connection": "close"}
    writer.write(request_bytes(host, "POST", "/workshops/new", form, f"scene={SCENE}".encode()))
    status, headers, _ = await read_head(reader)
    writer.close()
    if status != 303:
        raise SystemExit(f"creating the workshop answered {status}")
    _, _, code, _, token = urlsplit(headers["location"]).path.split("/")
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(request_bytes(host, "GET", f"/w/{code}/present/{token}", {"Connection": "close"}))
    status, headers, _ = await read_head(reader)
    await read_body(reader, headers)
    writer.close()
    await asyncio.sleep(0.5)
    rss_before = rss_kib(server.pid)

    people = [Participant(i) for i in range(args.participants)]
    started = time.perf_counter()
    for batch in range(0, len(people), 20):
        await asyncio.gather(*(join(host, port, code, p) for p in people[batch : batch + 20]))
    joined_s = time.perf_counter() - started
    rss_joined = rss_kib(server.pid)
    cpu0, wall0 = time.process_time(), time.perf_counter()
    streams = [asyncio.create_task(follow(host, port, code, p, args.fetch, base)) for p in people]
    await asyncio.wait_for(asyncio.gather(*(p.connected.wait() for p in people)), 30)
    await asyncio.sleep(1.0)
    rss_all = rss_kib(server.pid)

    # the presenter, on its own keep-alive connection
    sent: dict[int, float] = {}
    posted: dict[int, float] = {}  # seq -> the POST's round trip, ms
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    first = time.perf_counter()
    for step in range(1, args.steps + 1):
        await asyncio.sleep(max(0.0, first + (step - 1) * args.interval - time.perf_counter()))
        body = json.dumps({"url": f"/scenes/{SCENE}?step={step}"}).encode()
        t0 = time.perf_counter()
        if writer.is_closing() or reader.at_eof():  # the server closed the idle keep-alive connection
            writer.close()
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(request_bytes(host, "POST", f"/w/{code}/state", {
            "X-Presenter-Token": token, "Content-Type": "application/json"}, body))  # fmt: skip
        status, head, _ = await read_head(reader)
        answer = json.loads(await read_body(reader, head))
        if status != 200 or not answer.get("changed"):
            raise SystemExit(f"step {step} answered {status} {answer}")
        sent[answer["seq"]] = t0
        posted[answer["seq"]] = (time.perf_counter() - t0) * 1000
    writer.close()
    last_seq = max(sent)
    deadline = time.perf_counter() + GRACE_S
    while time.perf_counter() < deadline and not all(
        last_seq in p.received and (not args.fetch or last_seq in p.fragments) for p in people
    ):
        await asyncio.sleep(0.05)
    await asyncio.sleep(0.2)
    cpu_s, wall_s = time.process_time() - cpu0, time.perf_counter() - wall0
    for task in streams:
        task.cancel()
    await asyncio.gather(*streams, return_exceptions=True)

    delays = sorted((p.received[s] - t0) * 1000 for p in people for s, t0 in sent.items() if s in p.received)
    dropped = sum(1 for p in people for s in sent if s not in p.received)
    pairs = len(people) * len(sent)
    cores = len(os.sched_getaffinity(0))
    store = "PostgreSQL" if args.database_url else "SQLite"
    served = f"app.serve x{args.web_workers}" if args.serve else "uvicorn"
    print(f"workshop room: {args.participants} participants, {args.steps} steps every {args.interval:g} s, "
          f"store {store}, server {served}, fetch {'on' if args.fetch else 'off'}; "
          f"this machine has {cores} cores (os.cpu_count {os.cpu_count()})")  # fmt: skip
    print(f"  joined in {joined_s:.2f} s ({joined_s / len(people) * 1000:.1f} ms a page)")
    if delays:
        p99 = percentile(delays, 0.99)
        print(f"  step -> event received, over {len(delays)} of {pairs} (step, participant) pairs: "
              f"p50 {percentile(delays, 0.5):.1f} ms, p90 {percentile(delays, 0.9):.1f} ms, "
              f"p99 {p99:.1f} ms, max {delays[-1]:.1f} ms   "
              f"[target p99 <= {TARGET_P99_MS:g} ms: {verdict(p99 <= TARGET_P99_MS)}]")  # fmt: skip
    by_step = sorted((max(p.received.get(s, t0) - t0 for p in people) * 1000, s) for s, t0 in sent.items())
    print("  slowest steps (max over participants, ms, seq):", [(round(d, 1), s) for d, s in by_step[-5:]])
    print("  their POST round trips (ms):", [round(posted[s], 1) for _, s in by_step[-5:]])
    duplicates, disorder = sum(p.duplicates for p in people), sum(p.out_of_order for p in people)
    print(f"  dropped updates: {dropped}   [target 0: {verdict(dropped == 0)}]; "
          f"duplicates {duplicates}, out of order {disorder}")  # fmt: skip
    if args.fetch:
        frag = sorted(
            (p.fragments[s] - t0) * 1000 for p in people for s, t0 in sent.items() if s in p.fragments
        )
        skipped = pairs - len(frag)
        errors = sum(p.fetch_errors for p in people)
        if frag:
            print(f"  step -> fragment received ({len(frag)} fetched; {skipped} steps skipped by a "
                  f"browser still busy with the previous one, {errors} errors): "
                  f"p50 {percentile(frag, 0.5):.1f} ms, "
                  f"p99 {percentile(frag, 0.99):.1f} ms, max {frag[-1]:.1f} ms")  # fmt: skip
    n = max(1, len(people))
    print(f"  server RSS: {rss_before / 1024:.1f} MiB before participants (presenter page rendered), "
          f"{rss_joined / 1024:.1f} MiB after their joins, {rss_all / 1024:.1f} MiB with all {len(people)} "
          f"streams open: {(rss_all - rss_before) / n:.0f} KiB per participant "
          f"({(rss_all - rss_joined) / n:.0f} KiB of it the open stream)")  # fmt: skip
    print(f"  this client: {cpu_s:.2f} s CPU over {wall_s:.1f} s ({cpu_s / wall_s * 100:.0f}% of one core)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--participants", type=int, default=100)
    parser.add_argument("--steps", type=int, default=50)
    parser.add_argument("--interval", type=float, default=0.25, help="seconds between presenter steps")
    parser.add_argument("--fetch", action="store_true", help="participants also GET each step update")
    parser.add_argument("--database-url", default="", help="postgresql://... (default: SQLite in a temp dir)")
    parser.add_argument(
        "--temp-postgres", action="store_true",
        help="start a throwaway PostgreSQL (Debian's, as the tests do) and use it",
    )  # fmt: skip
    parser.add_argument("--serve", action="store_true", help="run `python -m app.serve` instead of uvicorn")
    parser.add_argument("--web-workers", type=int, default=1, help="with --serve: BUILD_KAFKA_WEB_WORKERS")
    args = parser.parse_args()
    if args.temp_postgres:
        sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
        from tests.support.pgcluster import temporary_cluster

        with temporary_cluster("bench") as url:
            args.database_url = url
            bench(args)
    else:
        bench(args)


def bench(args: argparse.Namespace) -> None:
    port = _server.free_port()
    with tempfile.TemporaryDirectory(prefix="bk-bench-ws-") as data_dir:
        env = _server.serve_env(port, BUILD_KAFKA_DATA_DIR=data_dir)
        env.pop("DATABASE_URL", None)
        if args.database_url:
            env["DATABASE_URL"] = args.database_url
        if args.serve:
            env["BUILD_KAFKA_WEB_WORKERS"] = str(args.web_workers)
            command = None
        else:
            command = [sys.executable, "-m", "uvicorn", "app.main:app", "--host", "127.0.0.1",
                       "--port", str(port), "--log-level", "warning", "--no-access-log"]  # fmt: skip
        with _server.running(command, port, env, log=Path(data_dir) / "server.log") as server:
            asyncio.run(run(args, port, server))


if __name__ == "__main__":
    main()
