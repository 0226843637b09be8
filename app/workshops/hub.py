"""The fan-out of one server process: which event streams it serves, and waking them.

A stream subscribes to a workshop with the last sequence number it has; `wake(code)` (after a
publish here, a NOTIFY from PostgreSQL, or the SQLite poll seeing a higher sequence number) reads
the new events from the store *once* and hands them to every local stream of that workshop. A
stream that falls behind (its queue full) is told to resynchronise from the store instead of
holding memory.

The hub also keeps the room's presence: every stream's participant id is marked seen in the store
when it opens, every `HEARTBEAT_S` while it stays open, and with 0 when it closes, so a presenter on
any worker counts the whole room (app/workshops/store.py `room`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import defaultdict
from dataclasses import dataclass, field

from app.workshops.store import Event, Store

log = logging.getLogger("app.workshops")

HEARTBEAT_S = 5.0  # how often open streams are marked seen
PRESENT_WINDOW_S = 3 * HEARTBEAT_S  # a stream not seen for this long no longer counts
SQLITE_POLL_S = 0.1  # how often SQLite's sequence numbers are read for other processes' events
QUEUE_MAX = 256


@dataclass(eq=False)
class Subscriber:
    code: str
    pid: str | None  # None for the presenter's own stream
    queue: asyncio.Queue = field(default_factory=lambda: asyncio.Queue(QUEUE_MAX))
    presence: asyncio.Event = field(default_factory=asyncio.Event)  # the room changed (presenter)


RESYNC = Event(seq=-1, kind="resync", data={})


class Hub:
    def __init__(self, store: Store):
        self.store = store
        self.subs: dict[str, set[Subscriber]] = defaultdict(set)
        self.last: dict[str, int] = {}  # the newest sequence number handed out, per workshop
        self.locks: dict[str, asyncio.Lock] = defaultdict(asyncio.Lock)
        self.tasks: list[asyncio.Task] = []
        self.open_streams: asyncio.Event | None = None  # set while this process serves a stream

    async def start(self) -> None:
        # made here, on the loop that serves the streams; the pollers below wait on it, so a
        # process that has no stream open reads nothing and wakes for nothing
        self.open_streams = asyncio.Event()
        if self.store.notifies:
            await self.store.listen(self._noticed)
        else:
            self.tasks.append(asyncio.create_task(self._poll_sequences()))
        self.tasks.append(asyncio.create_task(self._heartbeat()))

    async def stop(self) -> None:
        for task in self.tasks:
            task.cancel()
        for task in self.tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        self.tasks.clear()

    # -- streams --------------------------------------------------------------------------------
    async def subscribe(self, code: str, pid: str | None, after: int) -> Subscriber:
        sub = Subscriber(code, pid)
        self.subs[code].add(sub)
        if self.open_streams is not None:
            self.open_streams.set()
        self.last.setdefault(code, after)
        if pid is not None:
            await self.store.seen(code, [pid], time.time())
            self.room_changed(code)
        return sub

    async def unsubscribe(self, sub: Subscriber) -> None:
        subs = self.subs.get(sub.code)
        if subs is not None:
            subs.discard(sub)
            if not subs:  # nothing of this workshop stays in this process
                self.subs.pop(sub.code, None)
                self.last.pop(sub.code, None)
                self.locks.pop(sub.code, None)
                if not self.subs and self.open_streams is not None:
                    self.open_streams.clear()
        if sub.pid is not None and not any(s.pid == sub.pid for s in self.subs.get(sub.code, ())):
            with contextlib.suppress(Exception):  # the store may be closing with the server
                await self.store.seen(sub.code, [sub.pid], 0.0)
            self.room_changed(sub.code)

    def room_changed(self, code: str) -> None:
        """A participant came, went or detached: wake this process's presenter streams."""
        for sub in self.subs.get(code, ()):
            if sub.pid is None:
                sub.presence.set()

    # -- waking ---------------------------------------------------------------------------------
    async def wake(self, code: str, seq: int | None = None) -> None:
        """Hand every event newer than the last one handed out to this workshop's streams."""
        if code not in self.subs:
            return
        if seq is not None and seq <= self.last.get(code, 0):
            return
        async with self.locks[code]:
            after = self.last.get(code, 0)
            events = await self.store.events_after(code, after)
            if not events:
                return
            self.last[code] = events[-1].seq
            for sub in list(self.subs.get(code, ())):
                for event in events:
                    try:
                        sub.queue.put_nowait(event)
                    except asyncio.QueueFull:  # a stalled client: it will read the state afresh
                        while not sub.queue.empty():
                            sub.queue.get_nowait()
                        sub.queue.put_nowait(RESYNC)
                        break

    async def _noticed(self, code: str, seq: int) -> None:
        await self.wake(code, seq)

    async def _poll_sequences(self) -> None:
        while True:
            await self.open_streams.wait()
            await asyncio.sleep(SQLITE_POLL_S)
            codes = list(self.subs)
            if not codes:
                continue
            try:
                seqs = await self.store.sequences(codes)
            except Exception:
                log.warning("reading workshop sequence numbers failed", exc_info=True)
                continue
            for code, seq in seqs.items():
                if seq > self.last.get(code, 0):
                    await self.wake(code, seq)

    async def _heartbeat(self) -> None:
        while True:
            await self.open_streams.wait()
            await asyncio.sleep(HEARTBEAT_S)
            now = time.time()
            for code, subs in list(self.subs.items()):
                pids = sorted({s.pid for s in subs if s.pid is not None})
                try:
                    await self.store.seen(code, pids, now)
                except Exception:
                    log.warning("marking workshop streams seen failed", exc_info=True)
