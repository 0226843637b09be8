"""The production entry point: `python -m app.serve`.

Theory of operation
-------------------
uvicorn's own multiprocess supervisor runs `BUILD_KAFKA_WEB_WORKERS` server processes on one
listening socket (it restarts a worker that dies, and SIGTERM stops them all gracefully); each
server process runs the app with `BUILD_KAFKA_ENGINE_WORKERS` engine worker processes
(app/workers.py), so the server's event loops only parse HTTP, serve static files and answer
/healthz. uvicorn's supervisor rather than gunicorn's: it does the same job for this app (spawn,
restart, graceful stop), takes uvicorn's protocol class directly (the slow-client guard below
is a uvicorn protocol), and leaves gunicorn and the deprecated `uvicorn.workers` shim out of the
image. gunicorn's extra (worker heartbeat timeout) would only catch a blocked event loop, which
the engine workers already prevent.

Slow clients: uvicorn has a keep-alive timeout but no header-read timeout, and no connection
cap short of the file-descriptor limit, so 20,000 idle connections used to lock out every new
client. `GuardedH11Protocol` / `GuardedHttpToolsProtocol` add:
- a head timeout: a connection whose request head (request line and headers) has not fully
  arrived `BUILD_KAFKA_HEADER_TIMEOUT_S` after it opened, or after its previous response, is
  closed, however slowly it trickles bytes (uvicorn's keep-alive timer restarts on every byte);
  likewise a request body not complete `BUILD_KAFKA_BODY_TIMEOUT_S` after its head;
- a connection cap per server process (`BUILD_KAFKA_MAX_CONNECTIONS`): at the cap, a new
  connection first evicts the oldest connection that is still waiting for its request head
  (idle sockets cannot lock out real clients); when every connection is busy with a request,
  the new one is closed;
- one log line per second at most about closed and refused connections, with counts.
At start, the soft RLIMIT_NOFILE is raised to the hard limit, and the cap kept below it.
"""

from __future__ import annotations

import asyncio
import collections
import importlib.util
import logging
import os
import resource
import socket
import time
from dataclasses import dataclass
from typing import Any

import uvicorn
from uvicorn.protocols.http.h11_impl import H11Protocol

from app.settings import default_engine_workers, env_number

log = logging.getLogger("uvicorn.error")

FD_RESERVE = 64  # descriptors kept free for the listening socket, logs, worker pipes and files
LOG_EVERY_S = 1.0


@dataclass(frozen=True)
class ServeConfig:
    host: str = "0.0.0.0"
    port: int = 8000
    web_workers: int = 2
    engine_workers: int = 2  # per web worker
    header_timeout_s: float = 10.0
    body_timeout_s: float = 30.0
    keepalive_timeout_s: float = 5.0
    max_connections: int = 1000  # per web worker
    log_level: str = "info"
    access_log: bool = True

    @classmethod
    def from_env(cls, environ: dict[str, str] | None = None) -> ServeConfig:
        env = os.environ if environ is None else environ
        try:
            cpus = len(os.sched_getaffinity(0))
        except AttributeError:
            cpus = os.cpu_count() or 1
        # one server process by default: it only parses HTTP and relays, the engine workers do
        # the work. On 2 cores, 1 server + 2 engine workers gave 321 step updates/s, 2 servers
        # + 2 x 2 engine workers 249-282/s (bench/web.py --serve), from less contention.
        web = env_number(env, "BUILD_KAFKA_WEB_WORKERS", 1 if cpus <= 4 else min(4, cpus // 2)) or 1
        # at least two per server process: a request skips a worker stuck on a heavy run (see
        # app/workers.py), which needs another worker to go to
        engine_default = max(2, default_engine_workers() // web)
        keepalive_default = cls.keepalive_timeout_s
        access_log = env.get("BUILD_KAFKA_ACCESS_LOG", "1").strip().lower()
        return cls(
            host=env.get("BUILD_KAFKA_HOST", "").strip() or cls.host,
            port=env_number(env, "BUILD_KAFKA_PORT", env_number(env, "PORT", cls.port)),
            web_workers=web,
            engine_workers=env_number(env, "BUILD_KAFKA_ENGINE_WORKERS", engine_default),
            header_timeout_s=env_number(env, "BUILD_KAFKA_HEADER_TIMEOUT_S", cls.header_timeout_s, float),
            body_timeout_s=env_number(env, "BUILD_KAFKA_BODY_TIMEOUT_S", cls.body_timeout_s, float),
            keepalive_timeout_s=env_number(env, "BUILD_KAFKA_KEEPALIVE_TIMEOUT_S", keepalive_default, float),
            max_connections=env_number(env, "BUILD_KAFKA_MAX_CONNECTIONS", cls.max_connections) or 1,
            log_level=env.get("BUILD_KAFKA_LOG_LEVEL", "").strip().lower() or cls.log_level,
            access_log=access_log not in ("0", "false", "no", "off"),
        )


def raise_open_file_limit() -> int:
    """Soft RLIMIT_NOFILE up to the hard limit; returns the soft limit now in force."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard == resource.RLIM_INFINITY or soft < hard:
        target = hard if hard != resource.RLIM_INFINITY else max(soft, 1 << 20)
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
            soft = target
        except (ValueError, OSError):
            pass
    return soft


class _RateLimitedLog:
    """At most one line per LOG_EVERY_S per kind of event, carrying how many it stands for."""

    def __init__(self) -> None:
        self.last: dict[str, float] = {}
        self.unlogged: collections.Counter[str] = collections.Counter()

    def note(self, kind: str, message: str, *args: Any) -> None:
        self.unlogged[kind] += 1
        now = time.monotonic()
        if now - self.last.get(kind, -LOG_EVERY_S) >= LOG_EVERY_S:
            count, self.unlogged[kind] = self.unlogged[kind], 0
            self.last[kind] = now
            log.warning(message + " (%d such since the previous line)", *args, count)


class _Guard:
    """Per server process: the limits, the connections still waiting for a request head (oldest
    first), and the rate-limited log."""

    def __init__(self) -> None:
        config = ServeConfig.from_env()
        self.header_timeout_s = config.header_timeout_s
        self.body_timeout_s = config.body_timeout_s
        self.max_connections = max(1, min(config.max_connections, raise_open_file_limit() - FD_RESERVE))
        self.waiting: collections.OrderedDict[Any, None] = collections.OrderedDict()
        self.log = _RateLimitedLog()


_guard: _Guard | None = None


def guard() -> _Guard:
    global _guard
    if _guard is None:
        _guard = _Guard()
    return _guard


def _no_delay(transport) -> None:
    """Send small responses at once. asyncio sets TCP_NODELAY only on sockets whose `proto` says
    TCP, and the listening socket uvicorn hands to several server processes loses that, so each
    keep-alive response waited for the client's delayed ACK: /healthz took 44 ms instead of 1."""
    sock = transport.get_extra_info("socket")
    if sock is not None and sock.family in (socket.AF_INET, socket.AF_INET6):
        try:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        except OSError:  # pragma: no cover - a socket closed under us
            pass


class _GuardMixin:
    """Head timeout and connection cap for a uvicorn HTTP protocol (see the module docstring).

    The moment a request head is complete is the moment uvicorn assigns a new request cycle to
    `self.cycle` (both protocol implementations do), so `cycle` is a property here."""

    _head_timer: asyncio.TimerHandle | None = None
    _body_timer: asyncio.TimerHandle | None = None
    _refused = False

    @property
    def cycle(self):
        return self.__dict__.get("_guarded_cycle")

    @cycle.setter
    def cycle(self, value) -> None:
        self.__dict__["_guarded_cycle"] = value
        if value is not None:
            self._head_arrived()

    def connection_made(self, transport) -> None:
        g = guard()
        if len(self.connections) >= g.max_connections:
            if g.waiting:
                oldest = next(iter(g.waiting))
                g.waiting.pop(oldest)
                oldest._close("evicted")
                g.log.note(
                    "evicted", "connection cap %d reached: closed the oldest connection without a request",
                    g.max_connections,
                )  # fmt: skip
            else:
                self._refused = True
                transport.abort()
                g.log.note(
                    "refused", "connection cap %d reached: refused a new connection", g.max_connections
                )
                return
        super().connection_made(transport)
        _no_delay(transport)
        self._await_head()

    def connection_lost(self, exc) -> None:
        if self._refused:
            return
        self._cancel_timers()
        guard().waiting.pop(self, None)
        super().connection_lost(exc)

    def on_response_complete(self) -> None:
        self._await_head()  # before uvicorn may start a pipelined request's cycle
        super().on_response_complete()

    def _await_head(self) -> None:
        g = guard()
        self._cancel_timers()
        if self.transport.is_closing():
            return
        g.waiting[self] = None
        self._head_timer = self.loop.call_later(g.header_timeout_s, self._head_timed_out)

    def _head_arrived(self) -> None:
        self._cancel_timers()
        g = guard()
        g.waiting.pop(self, None)
        if self.cycle is not None and getattr(self.cycle, "more_body", False):
            self._body_timer = self.loop.call_later(g.body_timeout_s, self._body_timed_out, self.cycle)

    def _body_timed_out(self, cycle) -> None:
        """A request body still incomplete this long after its head: a client trickling a body
        holds a connection (and a place under the cap) as long as one trickling a head."""
        self._body_timer = None
        if self.cycle is cycle and cycle.more_body and not self.transport.is_closing():
            g = guard()
            g.log.note("body", "closed a connection whose request body took over %g s", g.body_timeout_s)
            self._close("body timeout")

    def _cancel_timers(self) -> None:
        for name in ("_head_timer", "_body_timer"):
            timer = getattr(self, name)
            if timer is not None:
                timer.cancel()
                setattr(self, name, None)

    def _head_timed_out(self) -> None:
        g = guard()
        self._head_timer = None
        if self in g.waiting:
            g.waiting.pop(self)
            g.log.note(
                "timeout", "closed a connection that sent no request head within %g s", g.header_timeout_s
            )
            self._close("timeout")

    def _close(self, _why: str) -> None:
        self._cancel_timers()
        if not self.transport.is_closing():
            self.transport.close()


class GuardedH11Protocol(_GuardMixin, H11Protocol):
    pass


if importlib.util.find_spec("httptools") is not None:
    from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

    class GuardedHttpToolsProtocol(_GuardMixin, HttpToolsProtocol):
        pass

    HTTP_PROTOCOL = "app.serve:GuardedHttpToolsProtocol"
else:  # h11 is pure Python and slower; the image installs httptools from the lock file
    HTTP_PROTOCOL = "app.serve:GuardedH11Protocol"


def main() -> None:
    config = ServeConfig.from_env()
    raise_open_file_limit()
    # Read by Settings.from_env() in every server process (app/main.py builds the app from it).
    os.environ["BUILD_KAFKA_ENGINE_WORKERS"] = str(config.engine_workers)
    uvicorn.run(
        "app.main:app",
        host=config.host,
        port=config.port,
        workers=config.web_workers,
        http=HTTP_PROTOCOL,
        loop="uvloop" if importlib.util.find_spec("uvloop") is not None else "asyncio",
        lifespan="on",
        timeout_keep_alive=config.keepalive_timeout_s,
        timeout_graceful_shutdown=10,
        # X-Forwarded-* are read by the app itself, from the proxies in BUILD_KAFKA_TRUSTED_PROXIES
        proxy_headers=False,
        server_header=False,
        log_level=config.log_level,
        access_log=config.access_log,
    )


if __name__ == "__main__":
    main()
