"""Engine and render work in worker processes, off the web server's event loop.

Theory of operation
-------------------
A scene page is CPU work: replay the scenario (cached), then render it. On the event loop one
crafted URL stops every other request, `/healthz` included, for as long as it runs. With
`Settings.engine_workers > 0` the app hands that work to a pool of worker processes instead:

- `EngineDispatch` (pure ASGI middleware, the innermost layer of the parent's app) sends the
  scene and embed pages and `POST /api/v1/simulate` to the pool; every other route (static
  files, `/healthz`, the glossary) stays on the parent's event loop and never waits for a worker.
- A worker (`python -m app.workers FD`) runs *the same app* built in inline mode
  (`engine_workers=0`) on a minimal picklable copy of the request's scope and sends back the
  ASGI messages it produced. There is one rendering code path; the worker has its own engine
  caches. The parent's middleware then passes those messages on unchanged (the worker already
  added the security headers and compressed the body; doing either again changes nothing).
- Affinity: requests whose *scenario* part of the URL is the same (the path and the query minus
  the view-only parameters in `VIEW_PARAMS`) go to the same worker, so scrubbing a timeline hits
  that worker's caches. Workers are ranked per key by rendezvous hashing; a request skips a
  worker that has been busy on one job for longer than `engine_spill_after_s` (it is stuck on a
  heavy run) and goes to the next one in the key's ranking, whose caches stay warm for that key
  too; it also goes to the key's second worker when the first is busy and the second idle.
- Deadline: the worker runs the job inside `engine.budget(deadline_s=..., cancelled=...)` with
  what is left of `run_deadline_s`, counted from the moment the parent received the request
  (queueing included). The engine stops itself at that deadline; as a backstop the parent kills
  a worker that has not answered `engine_kill_grace_s` after it, starts a new one and answers 503
  with a reason page (it goes through the parent's middleware, so it has the same headers as
  every page).
- Bounded queues: at most `engine_queue_per_worker` requests wait for or run on each worker;
  beyond that the request gets 503 with `Retry-After` at once.
- A client that disconnects cancels its work: a queued job is dropped, a running one is told to
  stop (the worker's `cancelled()` callable sees the parent's cancel frame on its socket).

Wire format between parent and worker: frames of a 4-byte big-endian length and a pickle.
Parent to worker: `("run", job_id, scope, body, deadline_s)` and `("cancel", job_id)`. Worker to
parent: `("ready", pid)` once, then `("done", job_id, outcome, messages)` per job, where outcome is
"ok" or "cancelled".
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import hashlib
import itertools
import logging
import os
import pickle
import select
import signal
import socket
import struct
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import engine
from app.settings import Settings

log = logging.getLogger("app.workers")

REPO_ROOT = Path(__file__).resolve().parent.parent
HEADER = struct.Struct(">I")
MAX_FRAME_BYTES = 512 * 1024 * 1024  # a corrupt length must not make the reader allocate forever

# Query parameters that change only what is shown of a scenario, not the scenario that runs
# (app/state.py): they stay out of the affinity key so every step of one timeline lands on the
# worker that already holds its replay. `inject` is here too: it forks the timeline the rest of
# the URL names, which is the one that worker has cached.
VIEW_PARAMS = frozenset({"step", "fine", "guess", "q", "ask", "lock", "from", "to", "inject"})
# The routes whose work runs in a worker: (method, path prefix).
WORKER_ROUTES = (("GET", "/scenes/"), ("HEAD", "/scenes/"), ("GET", "/embed/"), ("HEAD", "/embed/"))
API_ROUTE = ("POST", "/api/v1/simulate")
# The parts of an ASGI HTTP scope a worker needs; the rest (app, router, state) is not picklable
# or means nothing in another process.
SCOPE_KEYS = (
    "type", "asgi", "http_version", "server", "client", "scheme", "method",
    "root_path", "path", "raw_path", "query_string", "headers",
)  # fmt: skip
STARTUP_TIMEOUT_S = 60.0
CANCEL_POLL_INTERVAL_S = 0.005
WORKER_NICE = 10


# -- framing ----------------------------------------------------------------------------------


def encode(message: Any) -> bytes:
    payload = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
    return HEADER.pack(len(payload)) + payload


async def read_frame(reader: asyncio.StreamReader) -> Any:
    (size,) = HEADER.unpack(await reader.readexactly(HEADER.size))
    if size > MAX_FRAME_BYTES:
        raise ConnectionError(f"frame of {size} bytes from a worker")
    return pickle.loads(await reader.readexactly(size))


def _recv_exactly(sock: socket.socket, size: int) -> bytes:
    chunks = bytearray()
    while len(chunks) < size:
        chunk = sock.recv(size - len(chunks))
        if not chunk:
            raise EOFError("the parent closed the socket")
        chunks.extend(chunk)
    return bytes(chunks)


def recv_frame(sock: socket.socket) -> Any:
    (size,) = HEADER.unpack(_recv_exactly(sock, HEADER.size))
    return pickle.loads(_recv_exactly(sock, size))


# -- what goes where --------------------------------------------------------------------------


def routed(scope: dict[str, Any]) -> bool:
    """True for the requests that run in a worker."""
    method, path = scope.get("method", ""), scope.get("path", "")
    if (method, path) == API_ROUTE:
        return True
    return any(method == m and path.startswith(prefix) for m, prefix in WORKER_ROUTES)


def affinity_key(scope: dict[str, Any], body: bytes = b"", max_query_chars: int = 4096) -> bytes:
    """The scenario part of a request: the path and the sorted query pairs minus the view-only
    ones (for the API, the body). Same key, same worker."""
    from urllib.parse import parse_qsl

    query = scope.get("query_string", b"").decode("latin-1")
    if len(query) > max_query_chars:  # the app answers 400 without reading it; don't parse it here
        query = ""
    pairs = sorted((k, v) for k, v in parse_qsl(query, keep_blank_values=True) if k not in VIEW_PARAMS)
    key = repr((scope.get("path", ""), pairs)).encode()
    return key + hashlib.sha256(body).digest() if body else key


def rank(key: bytes, count: int) -> list[int]:
    """Rendezvous (highest random weight) order of the workers for one key: stable per key, and
    when a worker is skipped the key's second choice is the same every time."""
    weights = [hashlib.blake2b(key, digest_size=8, salt=str(i).encode()).digest() for i in range(count)]
    return sorted(range(count), key=lambda i: weights[i], reverse=True)


def picklable_scope(scope: dict[str, Any]) -> dict[str, Any]:
    picked = {k: scope[k] for k in SCOPE_KEYS if k in scope}
    picked["headers"] = [(bytes(k), bytes(v)) for k, v in scope.get("headers", [])]
    picked["state"] = {}
    return picked


# -- the parent's side ------------------------------------------------------------------------


@dataclasses.dataclass
class Job:
    id: int
    scope: dict[str, Any]
    body: bytes
    deadline: float  # time.monotonic() by which the answer is due
    sent: bool = False
    abandoned: bool = False  # the client left


@dataclasses.dataclass
class Outcome:
    kind: str  # "ok", "cancelled", "overrun", "lost"
    messages: list[dict[str, Any]] = dataclasses.field(default_factory=list)


class Worker:
    """One worker process and the parent's end of its socket."""

    def __init__(self, index: int, settings: Settings):
        self.index = index
        self.settings = settings
        self.lock = asyncio.Lock()  # one job at a time on the worker; waiters queue here (FIFO)
        self.pending = 0  # jobs queued for or running on this worker
        self.busy_since: float | None = None
        self.process: asyncio.subprocess.Process | None = None
        self.pid: int | None = None
        self.writer: asyncio.StreamWriter | None = None
        self.replies: dict[int, asyncio.Future] = {}
        self.ready: asyncio.Future | None = None
        self.reader_task: asyncio.Task | None = None
        self.generation = 0
        self.dead = True  # no process, or its socket closed (it crashed, or was killed)

    async def start(self) -> None:
        parent_end, child_end = socket.socketpair()
        env = {
            **os.environ,
            "BUILD_KAFKA_ENGINE_WORKERS": "0",  # the worker's own module-level app stays inline
            "PYTHONPATH": os.pathsep.join(p for p in (str(REPO_ROOT), os.environ.get("PYTHONPATH")) if p),
        }
        try:
            self.process = await asyncio.create_subprocess_exec(
                sys.executable, "-m", "app.workers", str(child_end.fileno()),
                pass_fds=(child_end.fileno(),), cwd=str(REPO_ROOT), env=env,
                stdin=asyncio.subprocess.DEVNULL,
            )  # fmt: skip
        finally:
            child_end.close()
        reader, self.writer = await asyncio.open_connection(sock=parent_end)
        self.generation += 1
        self.dead = False
        self.ready = asyncio.get_running_loop().create_future()
        self.writer.write(encode(self.settings))
        self.reader_task = asyncio.create_task(self._read(reader, self.ready))

    async def _read(self, reader: asyncio.StreamReader, ready: asyncio.Future) -> None:
        try:
            while True:
                frame = await read_frame(reader)
                if frame[0] == "ready":
                    self.pid = frame[1]
                    if not ready.done():
                        ready.set_result(True)
                elif frame[0] == "done":
                    _, job_id, kind, messages = frame
                    future = self.replies.pop(job_id, None)
                    if future is not None and not future.done():
                        future.set_result(Outcome(kind, messages))
        except (asyncio.IncompleteReadError, ConnectionError, EOFError):
            pass  # the worker exited or was killed
        except Exception:  # a garbled frame: treat the worker as gone (the next job restarts it)
            log.exception("engine worker %d sent something unreadable", self.index)
        finally:  # the worker is gone: every job waiting on it is lost
            self.dead = True
            for future in self.replies.values():
                if not future.done():
                    future.set_result(Outcome("lost"))
            self.replies.clear()
            if not ready.done():
                ready.set_result(False)

    def send(self, message: Any) -> None:
        if self.writer is not None and not self.writer.is_closing():
            self.writer.write(encode(message))

    async def kill(self) -> None:
        if self.writer is not None:
            self.writer.close()
        if self.process is not None and self.process.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                self.process.kill()
            await self.process.wait()
        if self.reader_task is not None:
            await asyncio.gather(self.reader_task, return_exceptions=True)
        self.pid = None

    async def restart(self) -> None:
        await self.kill()
        await self.start()

    async def run(self, job: Job) -> Outcome:
        """Run one job (the caller holds `self.lock`). Kills and restarts the worker when it
        overruns the deadline plus the grace."""
        if self.dead:  # it died since its last job (e.g. killed for memory): start a new one
            log.warning("engine worker %d (pid %s) is gone; starting a new one", self.index, self.pid)
            await self.restart()
        assert self.ready is not None
        kill_at = job.deadline + self.settings.engine_kill_grace_s
        try:
            ok = await asyncio.wait_for(asyncio.shield(self.ready), max(0.0, kill_at - time.monotonic()))
        except TimeoutError:  # still starting (a loaded machine): leave it to finish starting
            return Outcome("overrun")
        if not ok:  # it died while starting: try a fresh one
            await self.restart()
            return Outcome("lost")
        if job.abandoned:
            return Outcome("cancelled")
        remaining = job.deadline - time.monotonic()
        if remaining <= 0:
            return Outcome("overrun")
        future = asyncio.get_running_loop().create_future()
        self.replies[job.id] = future
        self.send(("run", job.id, job.scope, job.body, remaining))
        job.sent = True
        self.busy_since = time.monotonic()
        try:
            return await asyncio.wait_for(asyncio.shield(future), max(0.0, kill_at - time.monotonic()))
        except TimeoutError:
            log.warning(
                "engine worker %d (pid %s) overran the %.1f s deadline on %s; restarting it",
                self.index, self.pid, self.settings.run_deadline_s, job.scope.get("path"),
            )  # fmt: skip
            self.replies.pop(job.id, None)
            await self.restart()
            return Outcome("overrun")
        finally:
            self.busy_since = None


class EnginePool:
    """The parent's view of the worker processes. Started lazily on the first request (or by the
    app's lifespan), stopped by the lifespan."""

    def __init__(self, settings: Settings):
        self.settings = settings
        self.workers = [Worker(i, settings) for i in range(settings.engine_workers)]
        self.ids = itertools.count(1)
        self.started: asyncio.Task | None = None
        self.stats = {"jobs": 0, "cancelled": 0, "overrun": 0, "lost": 0, "refused": 0, "restarts": 0}

    async def start(self) -> None:
        if self.started is None:
            self.started = asyncio.ensure_future(asyncio.gather(*(w.start() for w in self.workers)))
        await self.started

    async def stop(self) -> None:
        if self.started is not None:
            with contextlib.suppress(Exception):
                await self.started
            await asyncio.gather(*(w.kill() for w in self.workers), return_exceptions=True)
            self.started = None

    def pids(self) -> list[int | None]:
        return [w.pid for w in self.workers]

    async def wait_ready(self) -> None:
        """Every worker has said hello (tests use this; requests never wait for all of them)."""
        await self.start()
        await asyncio.gather(*(asyncio.shield(w.ready) for w in self.workers if w.ready is not None))

    def choose(self, key: bytes) -> Worker | None:
        """The key's first worker in rendezvous order, unless it is stuck on a long job or its
        queue is full; if it is busy, the next idle worker in the key's order; if every worker
        is busy, the shorter queue of the key's first two (where its caches are warm)."""
        order = [self.workers[i] for i in rank(key, len(self.workers))]
        now = time.monotonic()
        cap = self.settings.engine_queue_per_worker
        spill = self.settings.engine_spill_after_s

        def stuck(w: Worker) -> bool:
            return w.busy_since is not None and now - w.busy_since > spill

        usable = [w for w in order if w.pending < cap and not stuck(w)]
        if usable:
            idle = [w for w in usable if w.pending == 0]
            if idle:
                # the first idle worker in the key's order: its own warm caches when they are
                # free, else a cold worker that replays the scenario once (a few ms) rather than
                # a queue behind the warm one (a popular beat is many learners on one key)
                return idle[0]
            return min(usable[:2], key=lambda w: w.pending)
        open_workers = [w for w in order if w.pending < cap]
        return min(open_workers, key=lambda w: w.pending) if open_workers else None

    async def submit(self, job: Job, key: bytes) -> Outcome:
        worker = self.choose(key)
        if worker is None:
            self.stats["refused"] += 1
            return Outcome("busy")
        self.stats["jobs"] += 1
        worker.pending += 1
        try:
            async with worker.lock:
                generation = worker.generation
                outcome = await worker.run(job)
                if worker.generation != generation:
                    self.stats["restarts"] += 1
        finally:
            worker.pending -= 1
        if outcome.kind in self.stats:
            self.stats[outcome.kind] += 1
        return outcome


Unavailable = Callable[[dict[str, Any], str, int], Awaitable[Any]]


class EngineDispatch:
    """Pure ASGI middleware: the routes in `routed()` run in the pool, everything else here.

    `unavailable(scope, reason, retry_after_s)` builds the 503 response (a reason page for
    pages, a JSON error for the API); it is sent through the parent's own middleware."""

    def __init__(self, app: Any, pool: EnginePool, unavailable: Unavailable):
        self.app = app
        self.pool = pool
        self.unavailable = unavailable

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http" or not routed(scope):
            await self.app(scope, receive, send)
            return
        await self.pool.start()
        started = time.monotonic()
        body = await self._read_body(scope, receive)
        if body is None:
            return  # the client left while sending its body
        deadline = started + self.pool.settings.run_deadline_s
        job = Job(next(self.pool.ids), picklable_scope(scope), body, deadline)
        key = affinity_key(scope, body, self.pool.settings.max_query_chars)

        async def submit() -> Outcome:
            return await self.pool.submit(job, key)

        work = asyncio.ensure_future(submit())
        left = asyncio.ensure_future(self._disconnected(receive))
        try:
            await asyncio.wait({work, left}, return_when=asyncio.FIRST_COMPLETED)
        except asyncio.CancelledError:
            left.cancel()
            self._abandon(job)
            raise
        if not work.done():  # the client left: stop the work, send nothing
            self._abandon(job)
            return
        left.cancel()
        outcome = work.result()
        if outcome.kind == "ok":
            for message in outcome.messages:
                await send(message)
            return
        retry = max(1, round(self.pool.settings.run_deadline_s))
        reasons = {
            "busy": "Every simulation worker is busy with a queue of requests. Please try again "
            "in a moment.",
            "overrun": "This request could not be finished within the "
            f"{self.pool.settings.run_deadline_s:g} s this server allows one request (the state is "
            "heavy, or the server is busy), so it was stopped. A shorter timeline (fewer injected "
            "faults) loads faster; or try again in a moment.",
            "lost": "The simulation worker for this request stopped unexpectedly and is being "
            "restarted. Please try again in a moment.",
            "cancelled": "The request was cancelled.",
        }
        response = await self.unavailable(scope, reasons.get(outcome.kind, reasons["lost"]), retry)
        await response(scope, receive, send)

    def _abandon(self, job: Job) -> None:
        job.abandoned = True
        if job.sent:
            for worker in self.pool.workers:
                if job.id in worker.replies:
                    worker.send(("cancel", job.id))

    async def _read_body(self, scope, receive) -> bytes | None:
        if scope.get("method") != "POST":
            return b""
        limit = self.pool.settings.max_body_bytes
        declared = dict(scope.get("headers", [])).get(b"content-length", b"")
        if declared.isdigit() and int(declared) > limit:
            return b""  # the worker's handler answers 413 from the header alone
        body = bytearray()
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return None
            body.extend(message.get("body", b""))
            if len(body) > limit or not message.get("more_body", False):
                return bytes(body[: limit + 1])  # one byte over is enough for the handler's 413

    @staticmethod
    async def _disconnected(receive) -> None:
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return


# -- the worker's side ------------------------------------------------------------------------


class _Cancellation:
    """The worker's `cancelled()` callable: looks (at most every few ms, without blocking) for a
    cancel frame on the socket. Frames for other jobs are kept for the main loop."""

    def __init__(self, sock: socket.socket):
        self.sock = sock
        self.job_id: int | None = None
        self.hit = False
        self.parent_gone = False
        self.checked = 0.0
        self.backlog: list[Any] = []

    def start(self, job_id: int) -> None:
        self.job_id, self.hit, self.checked = job_id, False, 0.0

    def __call__(self) -> bool:
        if self.hit:
            return True
        now = time.monotonic()
        if now - self.checked < CANCEL_POLL_INTERVAL_S:
            return False
        self.checked = now
        while select.select([self.sock], [], [], 0)[0]:
            try:
                frame = recv_frame(self.sock)
            except EOFError:
                self.parent_gone = self.hit = True
                break
            if frame[0] == "cancel":
                if frame[1] == self.job_id:
                    self.hit = True
            else:
                self.backlog.append(frame)
        return self.hit


def _keep(message: dict[str, Any]) -> bool:
    # `http.response.debug` carries the template and its context, for the TestClient only.
    return message["type"] in ("http.response.start", "http.response.body")


async def run_job(app: Any, scope: dict[str, Any], body: bytes) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = []
    delivered = False

    async def receive() -> dict[str, Any]:
        nonlocal delivered
        if not delivered:
            delivered = True
            return {"type": "http.request", "body": body, "more_body": False}
        return {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        if _keep(message):
            messages.append(message)

    await app(scope, receive, send)
    return messages


def serve(fd: int) -> None:
    sock = socket.socket(fileno=fd)
    settings: Settings = recv_frame(sock)
    from app.main import create_app

    app = create_app(dataclasses.replace(settings, engine_workers=0))
    cancellation = _Cancellation(sock)
    loop = asyncio.new_event_loop()
    sock.sendall(encode(("ready", os.getpid())))
    while True:
        if cancellation.parent_gone:
            return
        if cancellation.backlog:
            frame = cancellation.backlog.pop(0)
        else:
            try:
                frame = recv_frame(sock)
            except EOFError:
                return
        if frame[0] != "run":
            continue  # a cancel for a job already answered
        _, job_id, scope, body, deadline_s = frame
        cancellation.start(job_id)
        started = time.monotonic()
        if cancellation():  # cancelled while it waited in the socket
            if cancellation.parent_gone:
                return
            sock.sendall(encode(("done", job_id, "cancelled", [])))
            continue
        left = deadline_s - (time.monotonic() - started)
        try:
            with engine.budget(deadline_s=left, cancelled=cancellation):
                messages = loop.run_until_complete(run_job(app, scope, body))
        except Exception:  # the app's CatchAll answers errors; this is a bug in the plumbing
            log.exception("engine worker failed on %s", scope.get("path"))
            messages = []
        kind = "cancelled" if cancellation.hit else "ok"
        if kind == "ok" and not messages:
            kind = "lost"
        try:
            sock.sendall(encode(("done", job_id, kind, messages)))
        except OSError:  # the parent is gone
            return


def main() -> None:
    # The parent stops a worker with SIGKILL; SIGINT (Ctrl-C in a terminal) is the parent's to handle.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    # Below the server's priority: when simulations use every core, the scheduler still runs the
    # event loop at once, so /healthz and static files do not queue behind engine work.
    with contextlib.suppress(OSError):
        os.nice(WORKER_NICE)
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    serve(int(sys.argv[1]))


if __name__ == "__main__":
    main()
