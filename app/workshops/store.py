"""Where workshops live: SQLite (a file in the data directory) or PostgreSQL (DATABASE_URL).

Both stores speak the same SQL, written once with `%s` placeholders (SQLite's `?` is substituted);
both have the same async methods, so the routes and the hub never know which one they hold.

Rows:
- workshops: the join code, a hash of the presenter's token, expiry, the last sequence number and
  the presenter's current scene URL;
- events: (code, seq) -> kind and JSON data, the replay log streams resume from (the newest
  `EVENTS_KEPT` per workshop);
- participants: one per browser that joined (a random id in a cookie), with an optional name,
  the time its stream was last seen open and whether it has detached to explore;
- polls and answers: one poll at a time per workshop, one answer per participant.

PostgreSQL also carries the fan-out between processes: `publish` NOTIFYs channel
`bk_workshop` with "code:seq" in the same transaction, so the notice arrives only after the
event is readable. `listen(callback)` runs a dedicated connection that calls back for each one.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import sqlite3
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

log = logging.getLogger("app.workshops")

CHANNEL = "bk_workshop"
EVENTS_KEPT = 500  # a stream that missed more than this resumes from the current state instead

SCHEMA = [
    """CREATE TABLE IF NOT EXISTS workshops (
        code TEXT PRIMARY KEY,
        token_hash TEXT NOT NULL,
        title TEXT NOT NULL,
        created_at DOUBLE PRECISION NOT NULL,
        expires_at DOUBLE PRECISION NOT NULL,
        seq BIGINT NOT NULL,
        state_url TEXT NOT NULL,
        poll_id BIGINT
    )""",
    """CREATE TABLE IF NOT EXISTS events (
        code TEXT NOT NULL,
        seq BIGINT NOT NULL,
        kind TEXT NOT NULL,
        data TEXT NOT NULL,
        at DOUBLE PRECISION NOT NULL,
        PRIMARY KEY (code, seq)
    )""",
    """CREATE TABLE IF NOT EXISTS participants (
        code TEXT NOT NULL,
        pid TEXT NOT NULL,
        name TEXT NOT NULL,
        joined_at DOUBLE PRECISION NOT NULL,
        last_seen DOUBLE PRECISION NOT NULL,
        detached INTEGER NOT NULL,
        PRIMARY KEY (code, pid)
    )""",
    """CREATE TABLE IF NOT EXISTS polls (
        id {serial} PRIMARY KEY,
        code TEXT NOT NULL,
        scene TEXT NOT NULL,
        beat TEXT NOT NULL,
        state_url TEXT NOT NULL,
        status TEXT NOT NULL,
        opened_at DOUBLE PRECISION NOT NULL
    )""",
    """CREATE TABLE IF NOT EXISTS answers (
        poll_id BIGINT NOT NULL,
        pid TEXT NOT NULL,
        choice TEXT NOT NULL,
        at DOUBLE PRECISION NOT NULL,
        PRIMARY KEY (poll_id, pid)
    )""",
]


@dataclass(frozen=True, slots=True)
class Workshop:
    code: str
    token_hash: str
    title: str
    created_at: float
    expires_at: float
    seq: int
    state_url: str
    poll_id: int | None

    def expired(self, now: float) -> bool:
        return now >= self.expires_at


@dataclass(frozen=True, slots=True)
class Event:
    seq: int
    kind: str
    data: dict[str, Any]


@dataclass(frozen=True, slots=True)
class Poll:
    id: int
    code: str
    scene: str
    beat: str
    state_url: str
    status: str  # open, closed (no more answers), revealed (answer shown everywhere)


@dataclass(frozen=True, slots=True)
class Room:
    connected: int
    detached: int
    names: list[str]


class Store:
    """The queries, once; a subclass runs them on its database."""

    placeholder = "%s"

    # -- to be provided by each database --------------------------------------------------------
    async def open(self) -> None:  # pragma: no cover - abstract
        raise NotImplementedError

    async def close(self) -> None:  # pragma: no cover - abstract
        raise NotImplementedError

    async def _run(self, work: Callable[[Any], Awaitable[Any]]) -> Any:  # pragma: no cover - abstract
        """Run `await work(q)` in one transaction and return its result; `await q(sql, params)`
        runs one statement and returns its rows."""
        raise NotImplementedError

    async def _exec(self, sql: str, params: tuple = ()) -> list[tuple]:
        """One statement in a transaction of its own."""

        async def work(q):
            return await q(sql, params)

        return await self._run(work)

    async def listen(self, callback: Callable[[str, int], Awaitable[None]]) -> None:
        """Call back for every event another process publishes. SQLite has no notices: the hub
        polls `sequences` instead (see hub.py)."""
        return None

    notifies = False  # whether `listen` delivers other processes' events

    # -- the queries ----------------------------------------------------------------------------
    def _sql(self, text: str) -> str:
        return text if self.placeholder == "%s" else text.replace("%s", self.placeholder)

    async def create_workshop(self, workshop: Workshop) -> None:
        sql = self._sql(
            "INSERT INTO workshops (code, token_hash, title, created_at, expires_at, seq, state_url,"
            " poll_id) VALUES (%s, %s, %s, %s, %s, %s, %s, NULL)"
        )
        w = workshop
        await self._exec(sql, (w.code, w.token_hash, w.title, w.created_at, w.expires_at, w.seq, w.state_url))

    async def get_workshop(self, code: str) -> Workshop | None:
        sql = self._sql(
            "SELECT code, token_hash, title, created_at, expires_at, seq, state_url, poll_id"
            " FROM workshops WHERE code = %s"
        )
        rows = await self._exec(sql, (code,))
        return Workshop(*rows[0]) if rows else None

    async def publish(
        self,
        code: str,
        kind: str,
        data: dict[str, Any],
        *,
        state_url: str | None = None,
        poll_id: int | None = None,
        poll_status: tuple[int, str] | None = None,
        now: float | None = None,
    ) -> int:
        """Append one event under the workshop's next sequence number and return that number.
        A `state` event also becomes the workshop's current state; a `poll` event its poll.
        `poll_status` (poll id, status) changes a poll's status in the same transaction, so the
        room never misses the event of a change made (close, reveal, hide)."""
        at = time.time() if now is None else now
        bump = self._sql(
            "UPDATE workshops SET seq = seq + 1, state_url = COALESCE(%s, state_url),"
            " poll_id = COALESCE(%s, poll_id) WHERE code = %s RETURNING seq"
        )
        insert = self._sql("INSERT INTO events (code, seq, kind, data, at) VALUES (%s, %s, %s, %s, %s)")
        trim = self._sql("DELETE FROM events WHERE code = %s AND seq <= %s")
        status = self._sql("UPDATE polls SET status = %s WHERE id = %s")
        payload = json.dumps(data, separators=(",", ":"))

        async def work(q):
            rows = await q(bump, (state_url, poll_id, code))
            if not rows:
                raise KeyError(code)
            if poll_status is not None:
                await q(status, (poll_status[1], poll_status[0]))
            seq = int(rows[0][0])
            await q(insert, (code, seq, kind, payload, at))
            if seq > EVENTS_KEPT and seq % 50 == 0:
                await q(trim, (code, seq - EVENTS_KEPT))
            await self._notify(q, code, seq)
            return seq

        return await self._run(work)

    async def _notify(self, q, code: str, seq: int) -> None:
        """Tell other processes (PostgreSQL only)."""

    async def events_after(self, code: str, seq: int, limit: int = EVENTS_KEPT) -> list[Event]:
        sql = self._sql(
            "SELECT seq, kind, data FROM events WHERE code = %s AND seq > %s ORDER BY seq LIMIT %s"
        )
        rows = await self._exec(sql, (code, seq, limit))
        return [Event(int(s), k, json.loads(d)) for s, k, d in rows]

    async def oldest_event(self, code: str) -> int | None:
        sql = self._sql("SELECT MIN(seq) FROM events WHERE code = %s")
        rows = await self._exec(sql, (code,))
        return int(rows[0][0]) if rows and rows[0][0] is not None else None

    async def end(self, code: str, now: float) -> None:
        """The presenter ended the workshop: its code expires now."""
        sql = self._sql("UPDATE workshops SET expires_at = %s WHERE code = %s")
        await self._exec(sql, (now, code))

    async def sequences(self, codes: list[str]) -> dict[str, int]:
        if not codes:
            return {}
        marks = ", ".join([self.placeholder] * len(codes))
        sql = f"SELECT code, seq FROM workshops WHERE code IN ({marks})"
        rows = await self._exec(sql, tuple(codes))
        return {c: int(s) for c, s in rows}

    async def join(self, code: str, pid: str, name: str | None, now: float) -> None:
        """Add a participant, or refresh one; a name given replaces the old one."""
        sql = self._sql(
            "INSERT INTO participants (code, pid, name, joined_at, last_seen, detached)"
            " VALUES (%s, %s, %s, %s, %s, 0) ON CONFLICT (code, pid) DO UPDATE SET"
            " name = CASE WHEN %s THEN excluded.name ELSE participants.name END"
        )
        await self._exec(sql, (code, pid, name or "", now, 0.0, name is not None))

    async def participant_count(self, code: str) -> int:
        sql = self._sql("SELECT COUNT(*) FROM participants WHERE code = %s")
        rows = await self._exec(sql, (code,))
        return int(rows[0][0])

    async def name_of(self, code: str, pid: str) -> str | None:
        """A participant's name ("" when they gave none), or None when they never joined."""
        sql = self._sql("SELECT name FROM participants WHERE code = %s AND pid = %s")
        rows = await self._exec(sql, (code, pid))
        return rows[0][0] if rows else None

    async def is_participant(self, code: str, pid: str) -> bool:
        return await self.name_of(code, pid) is not None

    async def seen(self, code: str, pids: list[str], at: float) -> None:
        """Mark these participants' streams as open at `at` (0 marks them closed)."""
        if not pids:
            return
        marks = ", ".join([self.placeholder] * len(pids))
        sql = self._sql("UPDATE participants SET last_seen = %s WHERE code = %s AND pid IN ") + f"({marks})"
        await self._exec(sql, (at, code, *pids))

    async def set_detached(self, code: str, pid: str, detached: bool) -> None:
        sql = self._sql("UPDATE participants SET detached = %s WHERE code = %s AND pid = %s")
        await self._exec(sql, (1 if detached else 0, code, pid))

    async def room(self, code: str, since: float, names_shown: int) -> Room:
        sql = self._sql(
            "SELECT name, detached FROM participants WHERE code = %s AND last_seen >= %s ORDER BY joined_at"
        )
        rows = await self._exec(sql, (code, since))
        names = [n for n, _ in rows if n][:names_shown]
        return Room(connected=len(rows), detached=sum(1 for _, d in rows if d), names=names)

    async def open_poll(self, code: str, scene: str, beat: str, state_url: str, now: float) -> int:
        """A new poll for the workshop (any open one is closed first)."""
        close = self._sql("UPDATE polls SET status = 'closed' WHERE code = %s AND status = 'open'")
        insert = self._sql(
            "INSERT INTO polls (code, scene, beat, state_url, status, opened_at)"
            " VALUES (%s, %s, %s, %s, 'open', %s) RETURNING id"
        )

        async def work(q):
            await q(close, (code,))
            return int((await q(insert, (code, scene, beat, state_url, now)))[0][0])

        return await self._run(work)

    async def get_poll(self, poll_id: int) -> Poll | None:
        sql = self._sql("SELECT id, code, scene, beat, state_url, status FROM polls WHERE id = %s")
        rows = await self._exec(sql, (poll_id,))
        return Poll(int(rows[0][0]), *rows[0][1:]) if rows else None

    async def answer(self, poll_id: int, pid: str, choice: str, now: float) -> None:
        sql = self._sql(
            "INSERT INTO answers (poll_id, pid, choice, at) VALUES (%s, %s, %s, %s)"
            " ON CONFLICT (poll_id, pid) DO UPDATE SET choice = excluded.choice, at = excluded.at"
        )
        await self._exec(sql, (poll_id, pid, choice, now))

    async def tally(self, poll_id: int) -> dict[str, int]:
        sql = self._sql("SELECT choice, COUNT(*) FROM answers WHERE poll_id = %s GROUP BY choice")
        rows = await self._exec(sql, (poll_id,))
        return {c: int(n) for c, n in rows}

    async def answer_of(self, poll_id: int, pid: str) -> str | None:
        sql = self._sql("SELECT choice FROM answers WHERE poll_id = %s AND pid = %s")
        rows = await self._exec(sql, (poll_id, pid))
        return rows[0][0] if rows else None

    async def purge_expired(self, now: float) -> int:
        """Delete workshops expired for a day, with their rows; returns how many went."""
        cutoff = now - 24 * 3600
        codes_sql = self._sql("SELECT code FROM workshops WHERE expires_at < %s")
        deletes = [
            self._sql("DELETE FROM answers WHERE poll_id IN (SELECT id FROM polls WHERE code = %s)"),
            self._sql("DELETE FROM polls WHERE code = %s"),
            self._sql("DELETE FROM participants WHERE code = %s"),
            self._sql("DELETE FROM events WHERE code = %s"),
            self._sql("DELETE FROM workshops WHERE code = %s"),
        ]

        async def work(q):
            codes = [c for (c,) in await q(codes_sql, (cutoff,))]
            for code in codes:
                for sql in deletes:
                    await q(sql, (code,))
            return len(codes)

        return await self._run(work)


class SqliteStore(Store):
    """One SQLite file in WAL mode. Its statements take tens of microseconds, so they run on the
    event loop; a lock keeps one transaction at a time in this process (other processes on the
    same file wait on SQLite's own lock, up to `busy_timeout_ms`)."""

    placeholder = "?"

    def __init__(self, path: Path, busy_timeout_ms: int = 2000):
        self.path = path
        self.busy_timeout_ms = busy_timeout_ms
        self.conn: sqlite3.Connection | None = None
        self.lock = asyncio.Lock()

    async def open(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        conn = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
        conn.execute(f"PRAGMA busy_timeout = {int(self.busy_timeout_ms)}")
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("PRAGMA synchronous = NORMAL")
        for ddl in SCHEMA:
            conn.execute(ddl.format(serial="INTEGER"))
        self.conn = conn

    async def close(self) -> None:
        if self.conn is not None:
            self.conn.close()
            self.conn = None

    async def _run(self, work):
        conn = self.conn
        if conn is None:
            raise RuntimeError("the workshop store is not open")

        async def q(sql: str, params: tuple = ()) -> list[tuple]:
            return conn.execute(sql, params).fetchall()

        async with self.lock:  # `work` awaits only `q`, which never yields; the lock is a guard
            conn.execute("BEGIN IMMEDIATE")
            try:
                result = await work(q)
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")
        return result


class PostgresStore(Store):
    """PostgreSQL through psycopg 3: a small async pool for queries and one more connection
    that LISTENs for other processes' events."""

    notifies = True

    def __init__(self, url: str, pool_size: int = 4):
        self.url = url
        self.pool_size = pool_size
        self.pool: Any = None
        self._listener: asyncio.Task | None = None

    async def open(self) -> None:
        from psycopg_pool import AsyncConnectionPool

        pool = AsyncConnectionPool(self.url, min_size=1, max_size=self.pool_size, open=False, timeout=10)
        await pool.open(wait=True)
        async with pool.connection() as conn:
            # CREATE TABLE IF NOT EXISTS races with another worker creating the same table at the
            # same moment; an advisory lock makes the schema step one-at-a-time
            await conn.execute("SELECT pg_advisory_xact_lock(4711)")
            for ddl in SCHEMA:
                await conn.execute(ddl.format(serial="BIGSERIAL"))
        self.pool = pool

    async def close(self) -> None:
        if self._listener is not None:
            self._listener.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._listener
            self._listener = None
        if self.pool is not None:
            await self.pool.close()
            self.pool = None

    async def _run(self, work):
        if self.pool is None:
            raise RuntimeError("the workshop store is not open")
        async with self.pool.connection() as conn:
            async with conn.transaction():

                async def q(sql: str, params: tuple = ()) -> list[tuple]:
                    cur = await conn.execute(sql, params)
                    return await cur.fetchall() if cur.description else []

                return await work(q)

    async def _notify(self, q, code: str, seq: int) -> None:
        await q("SELECT pg_notify(%s, %s)", (CHANNEL, f"{code}:{seq}"))

    async def listen(self, callback: Callable[[str, int], Awaitable[None]]) -> None:
        self._listener = asyncio.create_task(self._listen(callback))

    async def _listen(self, callback) -> None:
        import psycopg

        while True:
            try:
                conn = await psycopg.AsyncConnection.connect(self.url, autocommit=True)
                async with conn:
                    await conn.execute(f"LISTEN {CHANNEL}")
                    async for notice in conn.notifies():
                        code, _, seq = notice.payload.rpartition(":")
                        with contextlib.suppress(ValueError):
                            await callback(code, int(seq))
            except asyncio.CancelledError:
                raise
            except Exception:  # a dropped connection: try again shortly, and say so
                log.warning("workshop LISTEN connection lost; reconnecting", exc_info=True)
                await asyncio.sleep(1.0)


def store_for(database_url: str | None, data_dir: Path) -> Store:
    """PostgreSQL when DATABASE_URL names it, else the SQLite file in the data directory."""
    if database_url and database_url.startswith(("postgresql://", "postgres://")):
        return PostgresStore(database_url)
    if database_url:
        raise ValueError("DATABASE_URL must start with postgresql:// (or be unset for SQLite)")
    return SqliteStore(data_dir / "workshops.sqlite3")
