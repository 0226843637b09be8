"""The workshop store (app/workshops/store.py) on SQLite and on PostgreSQL, and the event stream
(app/workshops/routes.py `_stream`) on top of it.

Both stores run the same SQL through different drivers, and the room's live view rests on it: a
sequence number that skips or repeats, an event read back out of order or without its data, a
poll left open when the next one opens, an answer counted twice, or an expired workshop whose rows
stay behind, all break a workshop in ways a page test would not notice. So every store check runs
on both databases: SQLite in tmp_path, PostgreSQL in a fresh schema of the session's server (so
runs never see each other's rows, and `purge_expired` can be counted exactly).

The stream is driven without a browser: the route's async generator is iterated directly. The
`asyncio.wait_for` timeouts are hang guards, not timing assertions.
"""

import asyncio
import json
import time
import uuid

import pytest

from app.settings import Settings
from app.workshops.routes import Workshops, _stream
from app.workshops.store import PostgresStore, SqliteStore, Workshop
from tests.support.loops import run_in_own_loop

GUARD_S = 10.0  # a hang guard only: every await here completes in milliseconds


@pytest.fixture(params=["sqlite", "postgres"])
def make_store(request, tmp_path):
    """A function returning a new, unopened store on a database of its own."""
    if request.param == "sqlite":
        yield lambda: SqliteStore(tmp_path / "workshops.sqlite3")
        return
    import psycopg

    base = request.getfixturevalue("postgres_url")
    schema = f"t_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(base, autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {schema}")
    sep = "&" if "?" in base else "?"
    yield lambda: PostgresStore(f"{base}{sep}options=-csearch_path%3D{schema}")
    with psycopg.connect(base, autocommit=True) as conn:
        conn.execute(f"DROP SCHEMA {schema} CASCADE")


def run(make_store, body):
    """Open a store, `await body(store)`, close it; all on one fresh event loop."""

    async def main():
        store = make_store()
        await store.open()
        try:
            return await asyncio.wait_for(body(store), GUARD_S)
        finally:
            await store.close()

    return run_in_own_loop(main())


def workshop(code, *, now=1000.0, ttl=3600.0, url="/scenes/04?step=0"):
    return Workshop(code, "hash-" + code, f"Title {code}", now, now + ttl, 0, url, None)


# -- the store ------------------------------------------------------------------------------------


def test_a_workshop_is_created_and_read_back(make_store):
    async def body(store):
        assert await store.get_workshop("AAAAAA") is None
        await store.create_workshop(workshop("AAAAAA"))
        got = await store.get_workshop("AAAAAA")
        assert got == workshop("AAAAAA")
        assert not got.expired(1000.0 + 3599) and got.expired(1000.0 + 3600)

    run(make_store, body)


def test_publish_numbers_events_1_2_3_and_replays_them_in_order(make_store):
    async def body(store):
        await store.create_workshop(workshop("AAAAAA"))
        await store.create_workshop(workshop("BBBBBB"))
        seqs = []
        for i in range(5):
            seqs.append(await store.publish("AAAAAA", "state", {"url": f"/scenes/04?step={i}", "n": i}))
        assert seqs == [1, 2, 3, 4, 5]
        assert await store.publish("BBBBBB", "state", {"url": "/scenes/05"}) == 1  # per workshop
        events = await store.events_after("AAAAAA", 0)
        assert [e.seq for e in events] == [1, 2, 3, 4, 5]
        assert [e.kind for e in events] == ["state"] * 5
        assert [e.data for e in events] == [{"url": f"/scenes/04?step={i}", "n": i} for i in range(5)]
        assert [e.seq for e in await store.events_after("AAAAAA", 3)] == [4, 5]
        assert await store.events_after("AAAAAA", 5) == []
        assert [e.seq for e in await store.events_after("AAAAAA", 0, limit=2)] == [1, 2]
        assert await store.oldest_event("AAAAAA") == 1 and await store.oldest_event("ZZZZZZ") is None
        assert await store.sequences(["AAAAAA", "BBBBBB", "ZZZZZZ"]) == {"AAAAAA": 5, "BBBBBB": 1}
        with pytest.raises(KeyError):
            await store.publish("ZZZZZZ", "state", {})

    run(make_store, body)


def test_publish_moves_the_state_url_and_poll_id_only_when_given(make_store):
    async def body(store):
        await store.create_workshop(workshop("AAAAAA"))
        await store.publish("AAAAAA", "state", {"url": "/scenes/04?step=3"}, state_url="/scenes/04?step=3")
        got = await store.get_workshop("AAAAAA")
        assert (got.seq, got.state_url, got.poll_id) == (1, "/scenes/04?step=3", None)
        await store.publish("AAAAAA", "poll", {"poll": 7}, poll_id=7)
        got = await store.get_workshop("AAAAAA")
        assert (got.seq, got.state_url, got.poll_id) == (2, "/scenes/04?step=3", 7)
        await store.publish("AAAAAA", "state", {"url": "/scenes/05"}, state_url="/scenes/05")
        got = await store.get_workshop("AAAAAA")
        assert (got.seq, got.state_url, got.poll_id) == (3, "/scenes/05", 7)

    run(make_store, body)


def test_join_seen_and_the_room(make_store):
    async def body(store):
        now = 5000.0
        await store.create_workshop(workshop("AAAAAA"))
        for pid, name in (("p1", "Ann"), ("p2", None), ("p3", "Cy"), ("p4", "Dee")):
            await store.join("AAAAAA", pid, name, now)
        await store.join("AAAAAA", "p1", None, now + 1)  # no name: the old one stays
        await store.join("AAAAAA", "p3", "Cyd", now + 1)  # a name: it replaces
        assert await store.participant_count("AAAAAA") == 4
        assert await store.is_participant("AAAAAA", "p1") and not await store.is_participant("AAAAAA", "px")
        assert not await store.is_participant("BBBBBB", "p1")
        # nobody's stream is open yet
        assert (await store.room("AAAAAA", now - 15, 40)).connected == 0
        await store.seen("AAAAAA", ["p1", "p2", "p3"], now)
        await store.seen("AAAAAA", ["p4"], now - 60)  # seen long ago: gone
        await store.seen("AAAAAA", [], now)  # a no-op, not an error
        await store.set_detached("AAAAAA", "p3", True)
        room = await store.room("AAAAAA", now - 15, 40)
        assert (room.connected, room.detached, room.names) == (3, 1, ["Ann", "Cyd"])
        assert (await store.room("AAAAAA", now - 15, 1)).names == ["Ann"]
        await store.seen("AAAAAA", ["p1"], 0.0)  # its stream closed
        await store.set_detached("AAAAAA", "p3", False)
        room = await store.room("AAAAAA", now - 15, 40)
        assert (room.connected, room.detached, room.names) == (2, 0, ["Cyd"])

    run(make_store, body)


def test_a_new_poll_closes_the_open_one_and_answers_are_one_per_participant(make_store):
    async def body(store):
        await store.create_workshop(workshop("AAAAAA"))
        await store.create_workshop(workshop("BBBBBB"))
        first = await store.open_poll("AAAAAA", "04", "followers-pull", "/scenes/04?step=0", 1.0)
        other = await store.open_poll("BBBBBB", "04", "followers-pull", "/scenes/04?step=0", 1.0)
        second = await store.open_poll("AAAAAA", "04", "rejoin", "/scenes/04?beat=rejoin", 2.0)
        assert len({first, second, other}) == 3
        assert (await store.get_poll(first)).status == "closed"
        poll = await store.get_poll(second)
        assert (poll.code, poll.scene, poll.beat, poll.state_url, poll.status) == (
            "AAAAAA", "04", "rejoin", "/scenes/04?beat=rejoin", "open"
        )
        assert (await store.get_poll(other)).status == "open"  # another workshop's poll is untouched
        assert await store.get_poll(999_999) is None
        await store.answer(second, "p1", "A", 3.0)
        await store.answer(second, "p1", "B", 4.0)  # a changed mind replaces the answer
        await store.answer(second, "p2", "B", 4.0)
        await store.answer(second, "p3", "C", 4.0)
        await store.answer(first, "p1", "D", 4.0)
        assert await store.tally(second) == {"B": 2, "C": 1}
        assert await store.tally(first) == {"D": 1}
        assert await store.answer_of(second, "p1") == "B" and await store.answer_of(second, "p9") is None
        seq = await store.publish(
            "AAAAAA", "poll", {"poll": second, "action": "reveal"}, poll_status=(second, "revealed")
        )
        assert (await store.get_poll(second)).status == "revealed"
        assert [(e.seq, e.kind) for e in await store.events_after("AAAAAA", seq - 1)] == [(seq, "poll")]

    run(make_store, body)


def test_purge_removes_workshops_expired_a_day_ago_with_all_their_rows(make_store):
    async def body(store):
        now = 10 * 86400.0
        await store.create_workshop(workshop("OLDOLD", now=now - 3 * 86400, ttl=3600))
        await store.create_workshop(workshop("RECENT", now=now - 7200, ttl=3600))  # ended an hour ago
        await store.create_workshop(workshop("LIVELY", now=now, ttl=3600))
        polls = {}
        for code in ("OLDOLD", "RECENT", "LIVELY"):
            await store.publish(code, "state", {"url": "/scenes/04"})
            await store.join(code, "p1", "Ann", now)
            polls[code] = await store.open_poll(code, "04", "followers-pull", "/scenes/04", now)
            await store.answer(polls[code], "p1", "A", now)
        assert await store.purge_expired(now) == 1
        assert await store.get_workshop("OLDOLD") is None
        assert await store.events_after("OLDOLD", 0) == []
        assert await store.participant_count("OLDOLD") == 0
        assert await store.get_poll(polls["OLDOLD"]) is None
        assert await store.tally(polls["OLDOLD"]) == {}
        for code in ("RECENT", "LIVELY"):
            assert await store.get_workshop(code) is not None
            assert len(await store.events_after(code, 0)) == 1
            assert await store.participant_count(code) == 1
            assert await store.tally(polls[code]) == {"A": 1}
        assert await store.purge_expired(now) == 0

    run(make_store, body)


# -- the event stream -----------------------------------------------------------------------------


async def next_event(stream):
    return await asyncio.wait_for(anext(stream), GUARD_S)


def run_workshops(tmp_path, body):
    """`await body(ws)` with a ready Workshops (store and hub) on SQLite in tmp_path."""

    async def main():
        ws = Workshops(Settings(data_dir=tmp_path))
        await ws.ready()
        try:
            await asyncio.wait_for(body(ws), GUARD_S * 3)
        finally:
            await ws.stop()

    run_in_own_loop(main())


async def three_states(ws, code="AAAAAA"):
    await ws.store.create_workshop(workshop(code, now=0.0, ttl=1e12))
    for i in range(3):
        url = f"/scenes/04?step={i}"
        await ws.store.publish(code, "state", {"url": url}, state_url=url)
    return code


def test_a_stream_from_0_says_hello_then_replays_every_event_in_order(tmp_path):
    async def body(ws):
        code = await three_states(ws)
        stream = _stream(ws, code, "p1", 0, presenter=False)
        try:
            hello = await next_event(stream)
            assert hello.comment == "hello" and hello.retry and hello.event is None
            for seq in (1, 2, 3):
                sse = await next_event(stream)
                assert (sse.event, sse.id) == ("state", str(seq))
                assert json.loads(sse.data) == {"seq": seq, "url": f"/scenes/04?step={seq - 1}"}
        finally:
            await stream.aclose()

    run_workshops(tmp_path, body)


def test_a_stream_resumed_after_n_gets_only_the_later_events_then_live_ones(tmp_path):
    async def body(ws):
        code = await three_states(ws)
        stream = _stream(ws, code, "p1", 2, presenter=False)  # Last-Event-ID: 2
        try:
            assert (await next_event(stream)).comment == "hello"
            sse = await next_event(stream)
            assert sse.id == "3" and json.loads(sse.data)["url"] == "/scenes/04?step=2"
            # the stream now waits; a publish and a wake reach it
            waiting = asyncio.ensure_future(next_event(stream))
            await asyncio.sleep(0)
            assert not waiting.done()
            seq = await ws.store.publish(code, "state", {"url": "/scenes/05"}, state_url="/scenes/05")
            await ws.hub.wake(code, seq)
            sse = await waiting
            assert (sse.event, sse.id) == ("state", "4") and json.loads(sse.data)["url"] == "/scenes/05"
            # a poll event, too, in order
            seq = await ws.store.publish(code, "poll", {"poll": 1, "action": "open"}, poll_id=1)
            await ws.hub.wake(code, seq)
            sse = await next_event(stream)
            assert (sse.event, sse.id, json.loads(sse.data)["action"]) == ("poll", "5", "open")
        finally:
            await stream.aclose()

    run_workshops(tmp_path, body)


def test_a_participants_open_stream_counts_in_the_room_until_it_closes(tmp_path):
    async def body(ws):
        code = await three_states(ws)
        await ws.store.join(code, "p1", "<b>Ann</b>", 0.0)
        stream = _stream(ws, code, "p1", 3, presenter=False)
        assert (await next_event(stream)).comment == "hello"
        assert (await ws.store.room(code, time.time() - 60, 40)).connected == 1
        await stream.aclose()
        assert (await ws.store.room(code, time.time() - 60, 40)).connected == 0

    run_workshops(tmp_path, body)


def test_the_presenters_stream_gets_room_events_as_json(tmp_path):
    async def body(ws):
        code = await three_states(ws)
        await ws.store.join(code, "p1", "<script>x</script>", 0.0)
        participant = _stream(ws, code, "p1", 3, presenter=False)
        presenter = _stream(ws, code, None, 3, presenter=True)
        try:
            assert (await next_event(participant)).comment == "hello"
            assert (await next_event(presenter)).comment == "hello"
            room = await next_event(presenter)
            assert room.event == "room"
            assert json.loads(room.data) == {
                "connected": 1, "detached": 0, "names": ["<script>x</script>"], "answers": 0, "tally": {}
            }
        finally:
            await presenter.aclose()
            await participant.aclose()

    run_workshops(tmp_path, body)


def test_a_stream_ends_after_the_end_event_live_or_replayed(tmp_path):
    async def body(ws):
        code = await three_states(ws)
        live = _stream(ws, code, "p1", 3, presenter=False)
        try:
            assert (await next_event(live)).comment == "hello"
            waiting = asyncio.ensure_future(next_event(live))
            await asyncio.sleep(0)
            seq = await ws.store.publish(code, "end", {})
            await ws.hub.wake(code, seq)
            assert (await waiting).event == "end"
            with pytest.raises(StopAsyncIteration):
                await next_event(live)
        finally:
            await live.aclose()
        # a stream that reconnects after it (from 2) replays up to the end, and stops there
        replay = _stream(ws, code, "p1", 2, presenter=False)
        try:
            kinds = [(await next_event(replay)).comment]
            kinds += [(await next_event(replay)).event for _ in range(2)]
            assert kinds == ["hello", "state", "end"]
            with pytest.raises(StopAsyncIteration):
                await next_event(replay)
        finally:
            await replay.aclose()

    run_workshops(tmp_path, body)


def test_the_hubs_pollers_wake_only_while_a_stream_is_open(tmp_path):
    """The SQLite sequence poll (every SQLITE_POLL_S) and the heartbeat wait while this process
    serves no stream: an idle server neither wakes to look at its streams nor reads the store."""
    from collections import defaultdict

    from app.workshops.hub import SQLITE_POLL_S

    looks = []

    class Streams(defaultdict):  # the hub's table of streams, counting the pollers' looks at it
        def __iter__(self):
            looks.append("poll")
            return super().__iter__()

        def items(self):
            looks.append("heartbeat")
            return super().items()

    async def body(ws):
        code = await three_states(ws)
        ws.hub.subs = Streams(set)
        reads = []
        sequences = ws.store.sequences

        async def counted(codes):
            reads.append(list(codes))
            return await sequences(codes)

        ws.store.sequences = counted
        await asyncio.sleep(SQLITE_POLL_S * 4)
        assert looks == [] and reads == []
        sub = await ws.hub.subscribe(code, "p1", 3)
        await asyncio.sleep(SQLITE_POLL_S * 4)
        assert reads and all(r == [code] for r in reads)
        await ws.hub.unsubscribe(sub)
        await asyncio.sleep(SQLITE_POLL_S * 2)  # a poll already past its wait looks once more
        seen = len(looks)
        await asyncio.sleep(SQLITE_POLL_S * 4)
        assert len(looks) == seen

    run_workshops(tmp_path, body)


def test_the_presenters_room_events_count_the_poll_each_open_event_names(tmp_path):
    """The room event's tally is of the workshop's poll: the one open when the stream started,
    then the one each later `open` event names, whether replayed or live."""

    async def body(ws):
        code = await three_states(ws)

        async def open_poll(beat):
            poll = await ws.store.open_poll(code, "04", beat, "/scenes/04", 1.0)
            seq = await ws.store.publish(code, "poll", {"poll": poll, "action": "open"}, poll_id=poll)
            await ws.hub.wake(code, seq)
            return poll

        async def room_event(stream):
            while True:
                sse = await next_event(stream)
                if sse.event == "room":
                    return json.loads(sse.data)

        first = await open_poll("followers-pull")
        await ws.store.join(code, "p1", "", 0.0)
        await ws.store.answer(first, "p1", "B", 1.0)
        presenter = _stream(ws, code, None, 0, presenter=True)  # replays the open
        try:
            assert (await room_event(presenter))["tally"] == {"B": 1}
            second = await open_poll("rejoin")
            await ws.store.answer(second, "p1", "A", 2.0)
            ws.hub.room_changed(code)
            room = await room_event(presenter)
            while room["tally"] != {"A": 1}:  # a room event may go out between the open and the answer
                assert room["tally"] in ({}, {"B": 1})
                ws.hub.room_changed(code)
                room = await room_event(presenter)
            assert room["answers"] == 1
        finally:
            await presenter.aclose()

    run_workshops(tmp_path, body)
