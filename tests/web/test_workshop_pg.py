"""Workshops across two server processes sharing one PostgreSQL: what a presenter publishes on one
reaches the event streams held by the other (LISTEN/NOTIFY), every event once and in order, and
a stream that resumes with Last-Event-ID after its server died gets exactly what it missed.

Two real uvicorn processes on their own ports, DATABASE_URL pointing both at the session's
throwaway PostgreSQL (``postgres_url``). Participants read their streams in threads and parse
the SSE frames here. There are no timing assertions: every wait has a generous hang guard.
"""

from __future__ import annotations

import json
import os
import queue
import signal
import socket
import subprocess
import sys
import threading
import time
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
START_TIMEOUT_S = 30
STOP_TIMEOUT_S = 10
EVENT_TIMEOUT_S = 30  # hang guard for one event to arrive; never a latency expectation
SCENE = "04"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class Server:
    """One `uvicorn app.main:app` process on a fixed port; start and stop it as often as needed."""

    def __init__(self, port: int, env: dict[str, str], log_path: Path):
        self.port = port
        self.env = env
        self.log_path = log_path
        self.process: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> None:
        command = [
            sys.executable, "-m", "uvicorn", "app.main:app",
            "--host", "127.0.0.1", "--port", str(self.port), "--log-level", "warning",
        ]  # fmt: skip
        with open(self.log_path, "ab") as log:
            self.process = subprocess.Popen(
                command, cwd=REPO_ROOT, stdout=log, stderr=subprocess.STDOUT, env=self.env
            )
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                pytest.fail(f"uvicorn exited with {self.process.returncode}:\n{self.log()}")
            try:
                httpx.get(self.url + "/healthz", timeout=1)
                return
            except httpx.HTTPError:
                time.sleep(0.1)
        pytest.fail(f"uvicorn did not answer on {self.url} within {START_TIMEOUT_S} s:\n{self.log()}")

    def kill(self) -> None:
        """SIGKILL: a crash, no graceful goodbye to the streams."""
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
            self.process.wait(timeout=STOP_TIMEOUT_S)

    def stop(self) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        self.process.terminate()
        try:
            self.process.wait(timeout=STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")[-4000:]


@contextmanager
def servers(postgres_url: str, tmp_path: Path, count: int):
    """`count` servers sharing the PostgreSQL; every one stopped at exit, whatever happened."""
    env = {**os.environ, "DATABASE_URL": postgres_url, "BUILD_KAFKA_DATA_DIR": str(tmp_path / "data")}
    started = [Server(free_port(), env, tmp_path / f"uvicorn-{i}.log") for i in range(count)]
    try:
        for server in started:
            server.start()
        yield started
    finally:
        for server in started:
            server.stop()


@dataclass(frozen=True)
class SSE:
    event: str
    id: str | None
    data: dict


@dataclass(eq=False)
class Participant:
    """A joined browser: its cookie jar on one server, and its event stream read by a thread."""

    base_url: str
    code: str
    client: httpx.Client = field(init=False)
    events: queue.Queue = field(default_factory=queue.Queue)  # SSE frames, then None at the end
    error: list[BaseException] = field(default_factory=list)
    thread: threading.Thread | None = None

    def __post_init__(self):
        self.client = httpx.Client(base_url=self.base_url, timeout=10)
        response = self.client.get(f"/w/{self.code}")
        assert response.status_code == 200, response.text[:500]
        assert self.client.cookies.get("bk_pid")

    def connect(self, last_event_id: int | None = None) -> None:
        headers = {"Accept": "text/event-stream"}
        if last_event_id is not None:
            headers["Last-Event-ID"] = str(last_event_id)
        self.events = queue.Queue()
        self.thread = threading.Thread(target=self._read, args=(headers,), daemon=True)
        self.thread.start()

    def _read(self, headers: dict[str, str]) -> None:
        timeout = httpx.Timeout(10, read=120)
        try:
            with self.client.stream("GET", f"/w/{self.code}/events", headers=headers, timeout=timeout) as r:
                if r.status_code != 200:
                    raise AssertionError(f"events answered {r.status_code}")
                frame: dict[str, str] = {}
                for line in r.iter_lines():
                    if line == "":
                        if "data" in frame:
                            data = json.loads(frame["data"])
                            self.events.put(SSE(frame.get("event", "message"), frame.get("id"), data))
                        frame = {}
                    elif line.startswith(":"):
                        continue  # a comment: hello, pings
                    else:
                        name, _, value = line.partition(":")
                        value = value[1:] if value.startswith(" ") else value
                        if name == "data" and name in frame:
                            value = frame[name] + "\n" + value
                        frame[name] = value
        except httpx.HTTPError:
            pass  # the server went away: the end of this stream
        except BaseException as exc:  # noqa: BLE001 - reported by the test, not lost in the thread
            self.error.append(exc)
        finally:
            self.events.put(None)

    def states(self, count: int) -> list[tuple[int, str]]:
        """The next `count` state events as (seq, url), failing on a hang or a stream's end."""
        got = []
        while len(got) < count:
            try:
                frame = self.events.get(timeout=EVENT_TIMEOUT_S)
            except queue.Empty:
                pytest.fail(f"no event within {EVENT_TIMEOUT_S} s; had {got}")
            if frame is None:
                pytest.fail(f"the stream ended ({self.error}); had {got}")
            if frame.event != "state":
                continue
            assert frame.id == str(frame.data["seq"])
            got.append((frame.data["seq"], frame.data["url"]))
        return got

    def wait_ended(self) -> None:
        if self.thread is not None:
            self.thread.join(timeout=EVENT_TIMEOUT_S)
            assert not self.thread.is_alive(), "the stream did not end with its server"

    def close(self) -> None:
        self.client.close()


class Presenter:
    def __init__(self, code: str, token: str):
        self.code = code
        self.token = token
        self.step = 0

    def publish(self, base_url: str) -> tuple[int, str]:
        """The next step of the scene, on this server; returns (seq, canonical url)."""
        self.step += 1
        response = httpx.post(
            f"{base_url}/w/{self.code}/state",
            headers={"X-Presenter-Token": self.token},
            json={"url": f"/scenes/{SCENE}?step={self.step}"},
            timeout=10,
        )
        assert response.status_code == 200, response.text[:500]
        body = response.json()
        assert body["changed"] is True
        return body["seq"], body["url"]


def create_workshop(base_url: str) -> tuple[Presenter, tuple[int, str]]:
    response = httpx.post(f"{base_url}/workshops/new", data={"scene": SCENE}, timeout=10)
    assert response.status_code == 303
    _, w, code, present, token = urlsplit(response.headers["location"]).path.split("/")
    assert (w, present) == ("w", "present")
    state = httpx.get(f"{base_url}/w/{code}/state", timeout=10).json()
    return Presenter(code, token), (state["seq"], state["url"])


def test_events_cross_servers_both_ways_and_resume_after_a_crash(postgres_url, tmp_path):
    with servers(postgres_url, tmp_path, 2) as (a, b), ExitStack() as cleanup:
        presenter, first = create_workshop(a.url)
        assert first[0] == 1
        published = [first]

        # three participants on B; the first event (the workshop's start) tells each is subscribed
        on_b = [Participant(b.url, presenter.code) for _ in range(3)]
        for p in on_b:
            cleanup.callback(p.close)
            p.connect()
        for p in on_b:
            assert p.states(1) == [first]

        # A -> B: 30 steps published on A reach every stream on B once, in order
        for _ in range(30):
            published.append(presenter.publish(a.url))
        assert [seq for seq, _ in published] == list(range(1, 32))
        for p in on_b:
            assert p.states(30) == published[1:]

        # B -> A: a participant on A, the presenter publishing on B; B's streams follow too
        on_a = Participant(a.url, presenter.code)
        cleanup.callback(on_a.close)
        on_a.connect()
        assert on_a.states(len(published)) == published
        mark = len(published)
        for _ in range(10):
            published.append(presenter.publish(b.url))
        assert on_a.states(10) == published[mark:]
        for p in on_b:
            assert p.states(10) == published[mark:]

        # B crashes; steps go on on A meanwhile; B comes back on its port
        resuming = on_b[0]
        last_seen = published[-1][0]
        b.kill()
        for p in on_b:
            p.wait_ended()
        mark = len(published)
        for _ in range(5):
            published.append(presenter.publish(a.url))
        b.start()

        # the participant resumes on B from its last id: the missed steps, then live ones, once each
        resuming.connect(last_event_id=last_seen)
        assert resuming.states(5) == published[mark:]
        for _ in range(5):
            published.append(presenter.publish(a.url))
        assert resuming.states(5) == published[mark + 5 :]
        # nothing extra slipped in between: a final step is the very next event
        published.append(presenter.publish(a.url))
        assert resuming.states(1) == published[-1:]
        assert on_a.states(11) == published[mark:]
        assert not resuming.error and not on_a.error
