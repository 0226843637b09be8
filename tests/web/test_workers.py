"""Engine workers (app/workers.py): pages rendered in worker processes are the pages rendered
inline; a worker that overruns the deadline is replaced and the request answered 503 with the
usual headers; /healthz answers while every worker is busy; a client that leaves cancels its work;
queues are bounded.

A worker is made "busy" deterministically by stopping its process (SIGSTOP): no test depends on
how long a simulation takes. Each test drives the ASGI app directly (httpx's ASGITransport), so
requests run concurrently on one event loop.
"""

import asyncio
import contextlib
import json
import os
import signal
import time

import httpx

from app.main import create_app
from app.settings import Settings
from app.workers import affinity_key, rank
from tests.support.loops import run_in_own_loop

EVENTUALLY_S = 30.0  # generous bound for "eventually"; never a performance assertion


@contextlib.asynccontextmanager
async def pooled(**settings):
    app = create_app(Settings(**settings))
    pool = app.state.engine_pool
    await pool.wait_ready()
    try:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as c:
            yield app, pool, c
    finally:
        for pid in pool.pids():  # a stopped worker must be resumed before SIGKILL is reaped
            if pid:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGCONT)
        await pool.stop()


async def eventually(predicate, what: str) -> None:
    deadline = time.monotonic() + EVENTUALLY_S
    while not predicate():
        assert time.monotonic() < deadline, what
        await asyncio.sleep(0.02)


def test_pages_render_in_a_worker_exactly_as_inline():
    inline = httpx.AsyncClient(transport=httpx.ASGITransport(app=create_app(Settings())), base_url="http://testserver")
    urls = ["/scenes/05?step=3", "/embed/05?step=2", "/scenes/02", "/scenes/nope", "/scenes/05?step=abc"]

    async def run():
        async with pooled(engine_workers=2) as (_app, pool, client), inline:
            for url in urls:
                for headers in ({}, {"HX-Request": "true", "HX-Current-URL": "http://testserver" + url}):
                    got, want = await client.get(url, headers=headers), await inline.get(url, headers=headers)
                    assert got.status_code == want.status_code, url
                    assert got.text == want.text, url
                    for name in ("content-security-policy", "x-content-type-options", "vary", "content-type"):
                        assert got.headers.get(name) == want.headers.get(name), (url, name)
            body = {"brokers": 3}
            got = await client.post("/api/v1/simulate", json=body)
            want = await inline.post("/api/v1/simulate", json=body)
            assert (got.status_code, got.json()) == (want.status_code, want.json())
            assert pool.stats["jobs"] == len(urls) * 2 + 1

    run_in_own_loop(run())


def test_a_worker_that_overruns_the_deadline_is_replaced_and_the_request_gets_503():
    async def run():
        async with pooled(engine_workers=1, run_deadline_s=1.5, engine_kill_grace_s=0.3) as (_, pool, c):
            stuck = pool.pids()[0]
            os.kill(stuck, signal.SIGSTOP)  # the worker stops answering, as in a run that never ends
            response = await c.get("/scenes/05?step=4")
            assert response.status_code == 503
            assert "could not be finished within" in response.text
            assert response.headers["retry-after"].isdigit()
            assert "frame-ancestors 'none'" in response.headers["content-security-policy"]
            assert response.headers["x-content-type-options"] == "nosniff"
            assert pool.pids()[0] != stuck and pool.stats["restarts"] == 1
            await pool.wait_ready()
            again = await c.get("/scenes/05?step=4")  # the new worker serves
            assert again.status_code == 200 and "05" in again.text

    run_in_own_loop(run())


def test_a_worker_that_died_between_requests_is_replaced_by_the_next_request():
    async def run():
        async with pooled(engine_workers=1) as (_app, pool, client):
            dead = pool.pids()[0]
            os.kill(dead, signal.SIGKILL)  # e.g. the kernel's OOM killer
            await eventually(lambda: pool.workers[0].dead, "the parent noticed")
            response = await client.get("/scenes/05?step=1")
            assert response.status_code == 200
            assert pool.pids()[0] not in (None, dead) and pool.stats["restarts"] == 1

    run_in_own_loop(run())


def test_healthz_answers_while_every_worker_is_busy():
    async def run():
        async with pooled(engine_workers=2, run_deadline_s=60) as (_app, pool, client):
            for pid in pool.pids():
                os.kill(pid, signal.SIGSTOP)
            pages = [asyncio.create_task(client.get(f"/scenes/05?seed={i}")) for i in range(4)]
            await eventually(lambda: sum(w.pending for w in pool.workers) == 4, "pages queued")
            health = await client.get("/healthz")
            home = await client.get("/")
            assert health.status_code == 200 and health.json() == {"ok": True}
            assert home.status_code == 200
            assert not any(p.done() for p in pages)
            for pid in pool.pids():
                os.kill(pid, signal.SIGCONT)
            assert [r.status_code for r in await asyncio.gather(*pages)] == [200] * 4

    run_in_own_loop(run())


def test_a_client_that_disconnects_cancels_its_work():
    async def run():
        async with pooled(engine_workers=1, run_deadline_s=60) as (app, pool, _client):
            worker = pool.workers[0]
            os.kill(worker.pid, signal.SIGSTOP)
            left = asyncio.Event()
            sent: list[dict] = []

            async def receive():
                if not receive.delivered:
                    receive.delivered = True
                    return {"type": "http.request", "body": b"", "more_body": False}
                await left.wait()
                return {"type": "http.disconnect"}

            receive.delivered = False

            async def send(message):
                sent.append(message)

            scope = {
                "type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "GET",
                "scheme": "http", "path": "/scenes/05", "raw_path": b"/scenes/05", "query_string": b"step=2",
                "root_path": "", "headers": [(b"host", b"testserver")], "client": ("127.0.0.1", 5000),
                "server": ("testserver", 80),
            }  # fmt: skip
            request = asyncio.create_task(app(scope, receive, send))
            await eventually(lambda: worker.replies, "the job reached the worker")
            left.set()
            await asyncio.wait_for(request, EVENTUALLY_S)  # returns without waiting for the worker
            assert sent == []
            os.kill(worker.pid, signal.SIGCONT)
            await eventually(lambda: pool.stats["cancelled"] == 1, "the worker dropped the job")
            assert pool.stats["overrun"] == 0 and pool.stats["restarts"] == 0

    run_in_own_loop(run())


def test_queues_are_bounded_and_the_overflow_gets_503_with_retry_after():
    async def run():
        async with pooled(engine_workers=1, run_deadline_s=60, engine_queue_per_worker=2) as (_, pool, c):
            os.kill(pool.pids()[0], signal.SIGSTOP)
            queued = [asyncio.create_task(c.get(f"/scenes/05?seed={i}")) for i in range(2)]
            await eventually(lambda: pool.workers[0].pending == 2, "two requests queued")
            overflow = await c.get("/scenes/05?seed=9")
            assert overflow.status_code == 503 and overflow.headers["retry-after"].isdigit()
            assert "busy" in overflow.text
            assert "frame-ancestors" in overflow.headers["content-security-policy"]
            api = await c.post("/api/v1/simulate", json={"brokers": 3})
            assert api.status_code == 503 and api.json()["error"] == "try_again_shortly"
            os.kill(pool.pids()[0], signal.SIGCONT)
            assert [r.status_code for r in await asyncio.gather(*queued)] == [200, 200]

    run_in_own_loop(run())


def test_the_same_scenario_goes_to_the_same_worker_whatever_the_step():
    def key(path, query):
        return affinity_key({"path": path, "query_string": query.encode()})

    base = key("/scenes/05", "beat=b1&acks=all&seed=7&a=crash:1@3")
    for view in ("step=9", "fine=1&step=2", "guess=B", "q=why&ask=isr", "inject=crash:2&step=4"):
        assert key("/scenes/05", f"beat=b1&acks=all&seed=7&a=crash:1@3&{view}") == base, view
    assert key("/scenes/05", "seed=7&a=crash:1@3&acks=all&beat=b1") == base  # order does not matter
    assert key("/scenes/05", "beat=b1&acks=all&seed=8&a=crash:1@3") != base
    assert key("/embed/05", "beat=b1&acks=all&seed=7&a=crash:1@3") != base
    assert rank(base, 4) == rank(base, 4) and sorted(rank(base, 4)) == [0, 1, 2, 3]
    spread = {rank(key("/scenes/05", f"seed={i}"), 4)[0] for i in range(40)}
    assert spread == {0, 1, 2, 3}  # keys spread over every worker


def test_a_request_skips_a_stuck_worker_and_a_busy_one_when_another_is_idle():
    from app.workers import EnginePool

    pool = EnginePool(Settings(engine_workers=3, engine_queue_per_worker=2, engine_spill_after_s=0.25))
    key = affinity_key({"path": "/scenes/05", "query_string": b"seed=3"})
    first, second, third = (pool.workers[i] for i in rank(key, 3))
    assert pool.choose(key) is first  # all idle: the key's own worker
    first.pending = 1
    assert pool.choose(key) is second  # busy, and the second is idle
    second.pending = 1
    assert pool.choose(key) is third  # both busy, the third idle: replay there, do not queue
    third.pending = 1
    assert pool.choose(key) is first  # every worker busy: the warm caches' shorter queue
    first.busy_since = time.monotonic() - 1.0  # stuck on a heavy run
    assert pool.choose(key) is second
    second.pending = third.pending = 2  # full queues everywhere but the stuck one's
    assert pool.choose(key) is first
    first.pending = 2
    assert pool.choose(key) is None  # every queue full: 503


def _cpu_ticks(pid: int) -> int:
    """User + system CPU ticks a process has used so far (/proc/<pid>/stat fields 14 and 15)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])


def test_a_client_that_leaves_mid_run_stops_the_engine_in_the_middle():
    """The cancel frame reaches a worker already deep in a run: the engine's cancel check (every
    1,024 events) sees it and the job ends "cancelled", where an unchecked run would go on to
    answer. The run is long (12 partitions fetching every millisecond for ten simulated minutes,
    caps raised), so the worker is seen busy on the CPU before the client leaves."""
    heavy = {
        "topic": {"replication.factor": 3, "partitions": 12},
        "timing": {"replica.fetch.wait.max.ms": 1},
        "actions": [{"do": "produce", "records": ["a"]}, {"do": "advance", "ms": 600_000}],
    }

    async def run():
        async with pooled(engine_workers=1, run_deadline_s=120, max_api_events=10**9) as (app, pool, _c):
            worker = pool.workers[0]
            before = _cpu_ticks(worker.pid)
            left = asyncio.Event()
            body = json.dumps(heavy).encode()

            async def receive():
                if not receive.delivered:
                    receive.delivered = True
                    return {"type": "http.request", "body": body, "more_body": False}
                await left.wait()
                return {"type": "http.disconnect"}

            receive.delivered = False
            sent: list[dict] = []

            async def send(message):
                sent.append(message)

            scope = {
                "type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "POST",
                "scheme": "http", "path": "/api/v1/simulate", "raw_path": b"/api/v1/simulate",
                "query_string": b"", "root_path": "", "client": ("127.0.0.1", 5001),
                "headers": [(b"host", b"testserver"), (b"content-type", b"application/json"),
                            (b"content-length", str(len(body)).encode())],
                "server": ("testserver", 80),
            }  # fmt: skip
            request = asyncio.create_task(app(scope, receive, send))
            # busy on the CPU for a quarter of a second: past the check made before the run starts
            await eventually(
                lambda: _cpu_ticks(worker.pid) - before >= 25 or request.done(),
                "the worker is running the job",
            )
            assert pool.stats["cancelled"] == 0 and not request.done(), sent[:1]
            left.set()
            await asyncio.wait_for(request, EVENTUALLY_S)
            assert sent == []
            await eventually(lambda: pool.stats["cancelled"] == 1, "the engine stopped mid-run")
            assert pool.stats["overrun"] == 0 and pool.stats["restarts"] == 0 and pool.stats["lost"] == 0

    run_in_own_loop(run())
