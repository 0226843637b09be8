"""Settings for one app instance, with every limit the web shell enforces.

`create_app(settings)` takes one of these; tests build their own with smaller caps. Every cap is
a plain number with its unit in the name, so a reader can see at a glance what a request may
cost.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parent.parent


def env_number(env: dict[str, str] | os._Environ[str], name: str, default: Any, kind: type = int) -> Any:
    """A number from the environment, or `default` when the variable is unset or blank. A value
    that is not a number of that kind, or is negative, stops the process with a message naming
    the variable (never a traceback)."""
    raw = env.get(name, "").strip()
    if not raw:
        return default
    try:
        value = kind(raw)
    except ValueError:
        raise SystemExit(f"{name}={raw!r} is not a number") from None
    if value < 0:
        raise SystemExit(f"{name}={raw!r} must not be negative")
    return value


@dataclass(frozen=True, slots=True)
class Settings:
    templates_dir: Path = REPO_ROOT / "templates"
    static_dir: Path = REPO_ROOT / "static"
    # Markdown pages served at /docs (app/docs.py); the repository's README.md beside it is /docs/readme
    docs_dir: Path = REPO_ROOT / "docs"
    # Request-size limits: state is the URL, so the URL is the attack surface.
    max_query_chars: int = 4096
    max_body_bytes: int = 256 * 1024
    # A learner or a workshop injects a handful of faults into one beat; 20 leaves room for a
    # long experiment, and each one costs a run of the forked scenario when the URL is new.
    max_injected_actions: int = 20
    max_step: int = 100_000  # any step above this is a malformed URL, not "past the end"
    max_ask_chars: int = 200
    max_log_lines: int = 400  # event-log lines rendered at once (the newest ones)
    gzip_min_bytes: int = 1024  # responses smaller than this go out uncompressed
    # Engine result caches (state is the URL, so a result is a pure function of its key).
    simulate_cache_entries: int = 512
    # ... and bounded by their estimated size in bytes, per process: a crafted URL's results are
    # evicted (or never kept, when one alone is larger) instead of holding memory for good.
    simulate_cache_bytes: int = 96 * 1024 * 1024
    # Rendered step updates (the htmx fragment), keyed by everything the fragment is a function
    # of: the URL, the htmx headers that say what the page already shows, the host and the theme.
    # In a workshop many learners step through the same beat, so most of their updates are the
    # same request; a learner alone rarely repeats one. 0 turns it off.
    step_cache_bytes: int = 24 * 1024 * 1024
    step_cache_entries: int = 4096
    # The API's result (steps included) may hold at most this much memory, estimated while it
    # runs (engine.estimate_bytes): e.g. 18 produces of 1,000 records on 3 replicas with steps,
    # about 4 MB of JSON; the 499 x 1,000 records on 9 replicas of issue 9 is refused up front.
    max_api_result_bytes: int = 16 * 1024 * 1024
    # Engine events one API run may take, all partitions together (the engine's own cap is
    # 2,000,000, 4-6 s of CPU). 500,000 is about 1-1.5 s on one core, under run_deadline_s, so a
    # scenario too heavy for this server is refused the same way every time (422, naming the
    # cap) instead of a 503 "try again" that would never succeed; the deadline stays the backstop
    # on a slow or busy machine. Scene pages need at most ~13,000 (d3).
    max_api_events: int = 500_000
    # Shown in the page footer and in error pages.
    site_name: str = "Build Kafka"
    extra_headers: dict[str, str] = field(default_factory=dict)
    # Addresses (or CIDR networks) of the reverse proxies whose X-Forwarded-Proto and
    # X-Forwarded-Host are believed, so share and embed URLs say https:// behind a TLS-terminating
    # proxy. Empty: no proxy is trusted and the headers are ignored.
    trusted_proxies: tuple[str, ...] = ()
    # Engine work off the event loop (app/workers.py). 0: scene pages and the API run inline on
    # the event loop (tests read `response.context` that way); N > 0: they run in N worker
    # processes, and /healthz, static files and every other page stay on the event loop.
    engine_workers: int = 0
    # Wall-clock budget of one scene page or API run, counted from the request's arrival
    # (queueing included); the engine stops itself at it (engine.budget).
    run_deadline_s: float = 2.0
    # Backstop: a worker that has not answered this long after the deadline is killed and
    # replaced, and the request answered 503.
    engine_kill_grace_s: float = 1.0
    # Requests waiting for or running on one worker; beyond it a request gets 503 + Retry-After.
    engine_queue_per_worker: int = 64
    # A worker busy on one job for longer than this is passed over by new requests (affinity
    # falls back to the next worker in the key's ranking).
    engine_spill_after_s: float = 0.25
    # -- instructor-led workshops (app/workshops/) ----------------------------------------------
    # Where the SQLite file of workshops lives (the default store); DATABASE_URL=postgresql://...
    # puts them in PostgreSQL instead, which several workers and machines can share.
    data_dir: Path = REPO_ROOT / "var"
    database_url: str | None = None
    workshop_ttl_s: float = 12 * 3600  # a join code works this long after the workshop is made
    workshop_max_participants: int = 500
    workshop_name_chars: int = 40  # a participant's display name, at most
    workshop_title_chars: int = 80
    # Per client address, per minute: joining a workshop (a room behind one NAT joins at once, so
    # generous), and asking for codes that do not exist (guessing codes, so tight).
    workshop_joins_per_min: int = 300
    workshop_misses_per_min: int = 20
    # Per participant, per minute: poll answers (changing one's answer counts again).
    workshop_answers_per_min: int = 20
    # Per workshop, per minute: presenter updates (a clicker held down is about 10 a second).
    workshop_updates_per_min: int = 1200

    @classmethod
    def from_env(cls, environ: dict[str, str] | None = None) -> Settings:
        """Settings from the environment: BUILD_KAFKA_TRUSTED_PROXIES is a comma-separated list
        of proxy addresses or networks (e.g. "127.0.0.1,10.0.0.0/8"); BUILD_KAFKA_ENGINE_WORKERS
        the number of engine worker processes (0, the default here, runs the engine inline on
        the event loop; `python -m app.serve`, the production entry, defaults it to
        `default_engine_workers()`); BUILD_KAFKA_RUN_DEADLINE_S the per-request deadline;
        BUILD_KAFKA_STEP_CACHE_BYTES the step-update cache's size (0 turns it off);
        BUILD_KAFKA_DATA_DIR the directory of the workshops' SQLite file; DATABASE_URL
        (postgresql://...) the PostgreSQL database for workshops instead; BUILD_KAFKA_WORKSHOP_TTL_H
        how many hours a workshop's join code works (12)."""
        env = os.environ if environ is None else environ
        proxies = tuple(p.strip() for p in env.get("BUILD_KAFKA_TRUSTED_PROXIES", "").split(",") if p.strip())
        data_dir = env.get("BUILD_KAFKA_DATA_DIR", "").strip()
        database_url = env.get("DATABASE_URL", "").strip()
        base = cls()
        ttl_h = env_number(env, "BUILD_KAFKA_WORKSHOP_TTL_H", base.workshop_ttl_s / 3600, float)
        chosen: dict[str, object] = {
            "trusted_proxies": proxies,
            "engine_workers": env_number(env, "BUILD_KAFKA_ENGINE_WORKERS", base.engine_workers),
            "run_deadline_s": env_number(env, "BUILD_KAFKA_RUN_DEADLINE_S", base.run_deadline_s, float),
            "step_cache_bytes": env_number(env, "BUILD_KAFKA_STEP_CACHE_BYTES", base.step_cache_bytes),
            "workshop_ttl_s": ttl_h * 3600,
        }
        if data_dir:
            chosen["data_dir"] = Path(data_dir)
        if database_url:
            chosen["database_url"] = database_url
        return cls(**chosen)


def default_engine_workers() -> int:
    """One engine worker per CPU this process may use, and at least two, so that one heavy run
    never holds every scene page."""
    try:
        cpus = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        cpus = os.cpu_count() or 1
    return max(2, cpus)
