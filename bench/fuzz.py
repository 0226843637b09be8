"""Fuzz every route and parameter with hostile input; count 5xx, slow answers and memory.

`requests(seed, n)` generates the requests (one generator, used here against a running server
and by tests/web/test_fuzz_smoke.py in process). Each is (method, path, headers, body): scene
and embed pages with broken, out-of-range and hostile knobs, steps, seeds, beats, injected
faults, questions, predictions and embed ranges; odd htmx headers; unknown routes; /theme,
/glossary, /healthz and /static; the simulate API with hostile JSON (deep nesting, huge
integers, wrong types, the heaviest scenarios the caps allow) and wrong content types.

Against a server: starts `python -m app.serve` on a free port (or --server-cmd), sends the
requests with --concurrency connections, samples the server's process tree RSS every 100 ms,
and prints status counts, every 5xx (with the request to replay it), the slowest requests and
the peak memory against the targets (0 5xx, no answer slower than the 2 s per-run deadline plus
a 1 s margin, RSS <= 400 MB).

Run: `.venv/bin/python bench/fuzz.py --count 10000 --concurrency 8`.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import json
import random
import sys
import time
from pathlib import Path
from urllib.parse import quote

sys.path.insert(0, str(Path(__file__).resolve().parent))  # bench/_server.py, also when imported by a test
import _server  # noqa: E402

SCENES = ["04", "04a", "05", "06", "d1", "d2", "d3", "d4", "01", "nope", "05/../06", "%00", "ZZ" * 40]
KNOBS = [
    "acks",
    "min.insync.replicas",
    "replication.factor",
    "unclean.leader.election.enable",
    "eligible.leader.replicas.version",
    "kafka_version",
    "replica.lag.time.max.ms",
    "enable.idempotence",
    "retries",
    "flush.messages",
    "delivery.timeout.ms",
]
VALUES = [
    "all",
    "1",
    "0",
    "-1",
    "2",
    "3",
    "9",
    "99999999999999999999",
    "true",
    "false",
    "yes",
    "",
    "1.1",
    "0.8",
    "0.10",
    "3.6",
    "4.1",
    "9.9",
    "NaN",
    "1e9",
    "%",
    "\u00e9",
    "<script>",
    "'",
    "a" * 300,
    "None",
    "[]",
    "{}",
    "0x10",
]
VERBS = ["crash", "power", "stop", "resume", "restart", "shutdown", "isolate", "heal", "quiet", "boom"]
Request = tuple[str, str, dict[str, str], bytes]


def _value(rng: random.Random) -> str:
    return rng.choice(VALUES) if rng.random() < 0.8 else str(rng.randint(-(10**6), 10**6))


def _fault(rng: random.Random) -> str:
    if rng.random() < 0.1:
        return rng.choice(
            ["crash", "crash:", "crash:2@", ":@", "crash:x@1", "crash:2@-1", "@@", "crash:2@1e9"]
        )
    return f"{rng.choice(VERBS)}:{rng.choice([1, 2, 3, 4, 7, 0, 1000])}@{rng.randint(0, 400)}"


def _scene_request(rng: random.Random) -> Request:
    kind = rng.choice(["scenes", "scenes", "scenes", "embed"])
    scene = rng.choice(SCENES)
    pairs: list[tuple[str, str]] = []
    for _ in range(rng.randint(0, 6)):
        name = rng.choice(
            KNOBS
            + [
                "beat",
                "seed",
                "step",
                "fine",
                "guess",
                "q",
                "ask",
                "lock",
                "from",
                "to",
                "inject",
                "a",
                "zzz",
            ]
        )
        if name == "a":
            pairs += [("a", _fault(rng)) for _ in range(rng.choice([1, 1, 2, 5, 20, 21, 60]))]
        elif name == "inject":
            pairs.append((name, _fault(rng).split("@")[0]))
        elif name in ("step", "from", "to", "seed"):
            pairs.append((name, rng.choice([str(rng.randint(0, 600)), "-3", "abc", "99999999", "1" * 5000])))
        elif name == "beat":
            pairs.append((name, rng.choice(["standard-setup", "x", "", "../../etc"])))
        else:
            pairs.append((name, _value(rng)))
    query = "&".join(f"{quote(k)}={quote(v)}" for k, v in pairs)
    if rng.random() < 0.05:
        query = "%" + query + "&&=&%zz"
    headers = {}
    if rng.random() < 0.5:
        headers["HX-Request"] = rng.choice(["true", "false", "1", ""])
        headers["HX-Current-URL"] = rng.choice(
            ["http://[::1", f"http://x/{kind}/{scene}?step=3", "garbage", "http://x/scenes/05?" + query, ""]
        )
        headers["X-Diagram"] = rng.choice(["wide", "narrow", "", "both"])
        headers["X-Panels"] = rng.choice(["", "diagram:00", ("a:b:c " * 50).strip(), "::::", "caption:zz"])
    if rng.random() < 0.05:
        headers["HX-History-Restore-Request"] = "true"
    return "GET", f"/{kind}/{scene}" + (f"?{query}" if query else ""), headers, b""


def _nest(depth: int) -> bytes:
    return b'{"a":' * depth + b"1" + b"}" * depth


def _api_request(rng: random.Random) -> Request:
    choice = rng.randrange(12)
    steps = rng.choice(["", "?steps=true", "?steps=1", "?steps=maybe"])
    headers = {"Content-Type": "application/json"}
    if choice == 0:
        body = _nest(rng.choice([10, 3000, 50_000]))
    elif choice == 1:
        body = b'{"seed": ' + b"9" * rng.choice([10, 5000]) + b"}"
    elif choice == 2:  # the heaviest run the caps allow: 12 partitions, 1 ms fetch wait, long advance
        body = json.dumps(
            {
                "brokers": [{"id": i} for i in range(1, 10)],
                "topic": {"replication.factor": 9, "partitions": 12},
                "timing": {"replica.fetch.wait.max.ms": 1},
                "actions": [{"do": "produce", "records": ["a"]}, {"do": "advance", "ms": 230_000}],
            }
        ).encode()
    elif choice == 3:  # a large result: many big produces on many replicas, with steps
        body = json.dumps(
            {
                "brokers": [{"id": i} for i in range(1, 10)],
                "topic": {"replication.factor": 9},
                "actions": [{"do": "produce", "count": 1000} for _ in range(rng.choice([5, 60, 499]))],
            }
        ).encode()
        steps = "?steps=true"
    elif choice == 4:
        headers["Content-Type"] = rng.choice(["text/plain", "application/x-www-form-urlencoded", ""])
        body = b'{"actions": []}'
    elif choice == 5:
        body = rng.choice([b"", b"null", b"[]", b"\xff\xfe", b'"x"', b"1", b"{", b'{"actions": "x"}'])
    elif choice == 6:
        body = json.dumps(
            {
                "actions": [
                    {
                        "do": rng.choice(["slow", "crash", "isolate", "set", "elect"]),
                        "broker": rng.choice([1, 99, -1, "x", None]),
                        "ms": rng.randint(-5, 10**9),
                        "key": _value(rng),
                        "value": _value(rng),
                    }
                ]
            }
        ).encode()
    elif choice == 7:
        body = b" " * (300 * 1024)  # over the body cap
    else:  # random structure
        doc: dict = {}
        for key in rng.sample(
            [
                "version",
                "seed",
                "kafka_version",
                "brokers",
                "topic",
                "actions",
                "producer",
                "controller",
                "proposals",
                "x",
            ],
            rng.randint(1, 5),
        ):
            doc[key] = rng.choice([None, 1, -1, "4.1", [], {}, [1, 2], {"a": 1}, 10**30, 1.5, True])
        body = json.dumps(doc).encode()
    return "POST", "/api/v1/simulate" + steps, headers, body


def _other_request(rng: random.Random) -> Request:
    path = rng.choice(
        [
            "/",
            "/healthz",
            "/glossary",
            "/theme?set=dark&next=/scenes/05",
            "/theme?set=x&next=//evil.example",
            "/theme?next=http://evil",
            "/static/app.css",
            "/static/../app/main.py",
            "/static/%2e%2e/x",
            "/api/v1/simulate",
            "/nope",
            "/scenes/",
            "/embed/",
            "/%ff",
            "/scenes/05/extra",
        ]
    )
    method = rng.choice(["GET", "GET", "GET", "POST", "PUT", "DELETE", "HEAD"])
    return method, path, {}, b""


def requests(seed: int, n: int) -> list[Request]:
    """n fuzzed requests, the same ones for the same seed."""
    rng = random.Random(seed)
    makers = [_scene_request] * 6 + [_api_request] * 3 + [_other_request]
    return [rng.choice(makers)(rng) for _ in range(n)]


# -- against a running server -------------------------------------------------------------------


def tree_rss_mb(pid: int) -> tuple[float, int, float]:
    """Resident memory of a process and all its descendants (MB), how many processes, and the
    largest single process (MB)."""
    children: dict[int, list[int]] = collections.defaultdict(list)
    rss: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            status = (entry / "status").read_text()
        except OSError:
            continue
        fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
        children[int(fields["PPid"].strip())].append(int(entry.name))
        rss[int(entry.name)] = int(fields.get("VmRSS", "0 kB").split()[0])
    total, count, largest, stack = 0, 0, 0, [pid]
    while stack:
        p = stack.pop()
        total += rss.get(p, 0)
        largest = max(largest, rss.get(p, 0))
        count += 1
        stack += children.get(p, [])
    return total / 1024, count, largest / 1024


async def run_against(port: int, reqs: list[Request], concurrency: int, pid: int) -> dict:
    import httpx

    statuses: collections.Counter = collections.Counter()
    errors: list[tuple[int, Request]] = []
    timings: list[tuple[float, Request, int]] = []
    peak = [0.0, 0, 0.0]
    queue: asyncio.Queue = asyncio.Queue()
    for r in reqs:
        queue.put_nowait(r)

    async def sample() -> None:
        while True:
            mb, n, largest = tree_rss_mb(pid)
            peak[:] = [max(peak[0], mb), max(peak[1], n), max(peak[2], largest)]
            await asyncio.sleep(0.1)

    async def worker() -> None:
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=30) as client:
            while not queue.empty():
                method, path, headers, body = queue.get_nowait()
                started = time.perf_counter()
                try:
                    response = await client.request(method, path, headers=headers, content=body or None)
                    status = response.status_code
                except httpx.HTTPError as exc:
                    status = 599
                    statuses[f"client error {type(exc).__name__}"] += 1
                elapsed = time.perf_counter() - started
                statuses[status] += 1
                timings.append((elapsed, (method, path[:200], headers, body[:200]), status))
                if status >= 500 and status != 503:
                    errors.append((status, (method, path, headers, body[:500])))

    sampler = asyncio.create_task(sample())
    started = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    sampler.cancel()
    return {
        "statuses": statuses,
        "errors": errors,
        "timings": timings,
        "peak": peak,
        "elapsed": time.perf_counter() - started,
    }


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=10_000)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--seed", type=int, default=9)
    parser.add_argument("--deadline-s", type=float, default=2.0)
    parser.add_argument("--server-cmd", default=f"{sys.executable} -m app.serve")
    args = parser.parse_args(argv)
    port = _server.free_port()
    env = _server.serve_env(port, BUILD_KAFKA_RUN_DEADLINE_S=str(args.deadline_s))
    reqs = requests(args.seed, args.count)
    with _server.running(args.server_cmd.split(), port, env, Path("/tmp/fuzz-server.log")) as server:
        out = asyncio.run(run_against(port, reqs, args.concurrency, server.pid))
    print(f"{len(reqs)} requests in {out['elapsed']:.0f} s, concurrency {args.concurrency}, seed {args.seed}")
    print("status counts:", dict(sorted(out["statuses"].items(), key=lambda kv: str(kv[0]))))
    limit = args.deadline_s + 1.0
    slow = sorted(out["timings"], key=lambda t: -t[0])
    over = [t for t in slow if t[0] > limit]
    print("slowest:")
    for elapsed, (method, path, _h, _b), status in slow[:10]:
        print(f"  {elapsed * 1000:7.0f} ms  {status}  {method} {path[:110]}")
    five = out["errors"]
    print(f"5xx other than 503: {len(five)}")
    for status, (method, path, headers, body) in five[:20]:
        print(f"  {status} {method} {path[:300]} headers={headers} body={body[:120]!r}")
    mb, procs, largest = out["peak"]
    print(f"peak RSS: the server tree {mb:.0f} MB over {procs} processes; the largest one {largest:.0f} MB")
    print(
        "targets: "
        f"0 5xx: {'met' if not five else 'NOT met'}; "
        f"no answer over {limit:g} s: {'met' if not over else f'NOT met ({len(over)})'}; "
        f"RSS <= 400 MB per process: {'met' if largest <= 400 else 'NOT met'}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
