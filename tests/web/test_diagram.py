"""The diagram draws what the engine knows and the learner needs: messages on the wire, the
leader's view of each follower, condition badges, the timers, truncated records under their own
offsets; its visible signature ignores the clock; and D4's rack-aware run no longer hatches the
surviving copies as lost. Hand-made snapshots pin the drawing; a few real beats pin the wiring."""

from __future__ import annotations

import copy

import pytest
from test_presenters import SAMPLE_RESULT, snapshot

import scenes
from app import presenters
from app.settings import Settings
from app.simulation import Simulator, Timeline, build_timeline
from app.state import parse_state


def timeline_of(view, step=3, result=SAMPLE_RESULT, step_count=4):
    return Timeline(
        scenario={"producer": {"acks": "all"}, "brokers": [{"id": i} for i in (1, 2, 3)]},
        result=result,
        view=view,
        step=step,
        step_count=step_count,
        first_step=0,
        last_step=step_count,
    )


def engine_snapshot(**kw):
    """The sample snapshot with the fields the engine adds for the diagram (issue 8)."""
    view = snapshot(**kw)
    view["t_ms"] = 12_000
    view["partition"]["replica_lag_time_max_ms"] = 30_000
    view["partition"]["replica_fetch_wait_max_ms"] = 500
    view["controller"] = {
        "kraft": True,
        "broker_session_timeout_ms": 9_000,
        "broker_heartbeat_interval_ms": 2_000,
    }
    for b in view["brokers"].values():
        b.update(
            caught_up_ms=None, last_heartbeat_ms=11_500, reported_leo=None, fetch_delay_ms=0, replica=True
        )
    view["messages"] = []
    view["ledger"] = {"acked": [], "failed": [], "sent": [], "lost": []}
    return view


def rows_of(d):
    return {r["id"]: r for r in d["rows"]}


def test_messages_in_flight_are_drawn_at_their_sender_with_an_arrow_to_the_receiver():
    view = engine_snapshot()
    view["messages"] = [
        {
            "kind": "fetch",
            "src": 2,
            "dst": 1,
            "sent_ms": 11_999,
            "arrive_ms": 12_001,
            "offset": 2,
            "epoch": 0,
            "label": "Fetch offset 2, epoch 0",
        },
        {
            "kind": "fetch_response",
            "src": 1,
            "dst": 3,
            "sent_ms": 11_999,
            "arrive_ms": 12_001,
            "records": 2,
            "hw": 1,
            "diverging": False,
            "error": None,
            "label": "2 records, HW 1",
        },
        {
            "kind": "fetch_response",
            "src": 1,
            "dst": 2,
            "sent_ms": 11_999,
            "arrive_ms": 12_001,
            "records": 2,
            "hw": 1,
            "diverging": False,
            "error": None,
            "label": "2 records, HW 1",
        },
        {
            "kind": "produce",
            "src": "producer",
            "dst": 1,
            "sent_ms": 11_999,
            "arrive_ms": 12_001,
            "records": ["c"],
            "index": 1,
            "label": "Produce c acks=all",
        },
        {
            "kind": "alter_partition",
            "src": 1,
            "dst": "controller",
            "sent_ms": 11_999,
            "arrive_ms": 12_001,
            "isr": [1, 2],
            "label": "AlterPartition ISR {1, 2}",
        },
        {
            "kind": "fetch_held",
            "src": 3,
            "dst": 1,
            "sent_ms": 11_900,
            "arrive_ms": 11_900,
            "offset": 2,
            "until_ms": 12_400,
            "label": "Fetch offset 2 waits for data until 12400 ms",
        },
    ]
    d = presenters.diagram(timeline_of(view), {"producer": {"acks": "all"}})
    texts = {p["full"] for p in d["pills"]}
    assert "fetch @2 → B1" in texts
    assert "2 records, HW 1 → B3, B2" in texts  # one pill for the same answer to two followers
    assert "produce c → B1" in texts and "AlterPartition ISR {1, 2} → controller" in texts
    held = next(p for p in d["pills"] if p["kind"] == "fetch_held")
    assert held["at"] == "b1" and held["text"] == "holds B3's fetch @2"
    assert d["clock"]["waits"][held["key"]] == "400 ms left"  # the wait ticks with the clock
    rows = rows_of(d)
    assert [a["shown"] for a in rows[2]["acts"]] == ["fetch @2 → B1"]
    assert any(a["type"] == "pill" and a["kind"] == "produce" for a in d["boxes"][0]["acts"])
    # wide: one arrow per destination (fetch, 2 responses, produce, AlterPartition); phone: none
    assert len(d["arrows"]) == 5 and d["narrow"]["arrows"] == []
    # the phone puts the same pills under the sender's log
    assert [a["shown"] for a in rows_of(d["narrow"])[2]["acts"]] == ["fetch @2 → B1"]
    text = " ".join(d["description"])
    assert "B2 sends fetch @2 → B1" in text and "holds B3's fetch @2 (long poll, 400 ms left)" in text


def test_routine_heartbeats_are_left_out_but_a_fenced_brokers_are_shown():
    view = engine_snapshot()
    beat = {
        "kind": "heartbeat",
        "src": 2,
        "dst": "controller",
        "sent_ms": 11_999,
        "arrive_ms": 12_001,
        "api": "BrokerHeartbeat",
        "label": "BrokerHeartbeat",
    }
    view["messages"] = [beat]
    assert presenters.diagram(timeline_of(view), {})["pills"] == []
    view["brokers"]["2"]["fenced"] = True
    assert [p["full"] for p in presenters.diagram(timeline_of(view), {})["pills"]] == [
        "BrokerHeartbeat → controller"
    ]


def test_each_follower_shows_where_the_leader_thinks_its_log_ends():
    view = engine_snapshot(follower_log=("a", "b"))
    view["brokers"]["2"]["reported_leo"] = 1
    d = presenters.diagram(timeline_of(view), {})
    m = rows_of(d)[2]["markers"]
    assert m["seen"] == 1 and m["leo"] == 2 and m["text"] == "LEO 2 · B1 thinks 1"
    assert m["seen_x"] < m["leo_x"]
    view["brokers"]["2"]["reported_leo"] = 2
    assert rows_of(presenters.diagram(timeline_of(view), {}))[2]["markers"]["text"] == "LEO 2 · B1 knows"
    assert "Leader B1 thinks its LEO is 2" in " ".join(
        presenters.diagram(timeline_of(view), {})["description"]
    )


def test_badges_name_a_slow_a_stopped_an_isolated_a_fenced_and_a_crashed_broker():
    view = engine_snapshot()
    view["brokers"]["1"]["fetch_delay_ms"] = 300
    view["brokers"]["2"].update(fetching=False, isolated_from=["controller"], fenced=True)
    d = presenters.diagram(timeline_of(view), {})
    badges = {bid: [c["text"] for c in r["conditions"]] for bid, r in rows_of(d).items()}
    assert badges[1] == ["slow link +300 ms"]
    assert badges[2] == ["⊘ fenced", "‖ stopped", "✂ isolated"]
    assert badges[3] == ["✖ crashed"]


def test_timers_show_time_since_caught_up_and_since_the_last_heartbeat():
    view = engine_snapshot()
    view["brokers"]["2"]["caught_up_ms"] = 0  # 12 s behind, in the ISR
    view["brokers"]["3"]["last_heartbeat_ms"] = 8_000  # crashed 4 s ago, not fenced yet
    d = presenters.diagram(timeline_of(view), {})
    keys = {t["key"]: t for t in d["timers"]}
    assert set(keys) == {"lag2", "session3"}
    assert d["clock"]["timers"]["lag2"]["text"] == "12 s / 30 s"
    assert d["clock"]["timers"]["lag2"]["frac"] == 0.4
    assert d["clock"]["timers"]["session3"]["text"] == "4 s / 9 s"
    assert "Timer: B2 last caught up 12 s ago" in " ".join(d["description"])
    # a fenced broker's session timer is over: the badge says so instead
    view["brokers"]["3"]["fenced"] = True
    assert "session3" not in {t["key"] for t in presenters.diagram(timeline_of(view), {})["timers"]}


def test_the_visible_signature_ignores_the_clock_but_not_a_message():
    view = engine_snapshot()
    view["brokers"]["2"]["caught_up_ms"] = 0
    first = presenters.diagram(timeline_of(view), {})
    later_view = copy.deepcopy(view)
    later_view["t_ms"] = 13_000
    later = presenters.diagram(timeline_of(later_view), {})
    assert first["clock"] != later["clock"]
    assert presenters.visible_signature(first) == presenters.visible_signature(later)
    later_view["messages"] = [
        {
            "kind": "fetch",
            "src": 2,
            "dst": 1,
            "sent_ms": 1,
            "arrive_ms": 2,
            "offset": 2,
            "epoch": 0,
            "label": "Fetch offset 2, epoch 0",
        }
    ]
    moved = presenters.diagram(timeline_of(later_view), {})
    assert presenters.visible_signature(moved) != presenters.visible_signature(first)


def test_a_truncated_record_is_drawn_under_its_own_offset():
    view = engine_snapshot(follower_log=("b", "c"))
    view["brokers"]["2"]["truncated"] = [
        {"offset": 1, "epoch": 0, "record": "c", "why": "diverging_epoch", "t_ms": 5},
    ]
    d = presenters.diagram(timeline_of(view), {})
    for geometry in (d, d["narrow"]):
        row = rows_of(geometry)[2]
        (ghost,) = row["ghosts"]
        live = next(c for c in row["cells"] if c.offset == 1)
        assert ghost.offset == 1 and ghost.x == live.x  # the same column, in the lane below
        assert ghost.y > live.y + live.h


# ----------------------------------------------------------------------------------------------
# real beats


@pytest.fixture(scope="module")
def sim():
    return Simulator(16)


def real(sim, scene_id, beat, step):
    scene = scenes.load_scene(scene_id)
    state, _ = parse_state(scene, [("beat", beat)], Settings())
    tl, _ = build_timeline(sim, scene, state.replace(step=step))
    return tl


def test_04_beat_1_steps_5_to_8_each_draw_something_new(sim):
    """The issue's example: 04 beat 1 steps 6, 7 and 8 used to render identical pictures."""
    sigs = []
    for step in range(5, 9):
        tl = real(sim, "04", "followers-pull", step)
        sigs.append(presenters.visible_signature(presenters.diagram(tl, tl.scenario)))
    assert len(set(sigs)) == len(sigs)
    tl = real(sim, "04", "followers-pull", 6)
    d = presenters.diagram(tl, tl.scenario)
    assert {p["full"] for p in d["pills"]} >= {"fetch @2 → B1"}
    assert {c["text"] for c in rows_of(d)[3]["conditions"]} == {"slow link +300 ms"}


def test_d4_rack_aware_run_keeps_its_surviving_copies_unhatched(sim):
    """D4 beat 2: after rack a's power cut, partition 0's leader B1 is dead with an empty log until
    the controller fences it; the copies of a on B4 and B7 survive and must not be drawn lost."""
    scene = scenes.load_scene("d4")
    state, _ = parse_state(scene, [("beat", "rack-power-cut")], Settings())
    main, _ = build_timeline(sim, scene, state.replace(step=33))
    from app.simulation import build_compare

    run = build_compare(sim, scene, state.replace(step=33), main)
    other = run.timeline
    d = presenters.diagram(other, other.scenario, partition=0)
    rows = rows_of(d)
    copies = [c for bid in (4, 7) for c in rows[bid]["cells"] if c.record == "a"]
    assert len(copies) == 2 and all(c.state != "lost" for c in copies)
    assert other.result["partitions"][0]["lost_acked_records"] == []


def _box_text(d: dict) -> str:
    return " ".join([b["title"] for b in d["boxes"]] + [ln["text"] for b in d["boxes"] for ln in b["lines"]])


def test_the_producer_box_names_the_acks_the_writes_really_use(sim):
    """D2's legacy client names acks=2 on each write; the box must not say the producer's acks=all."""
    tl = real(sim, "d2", "acks-2-loses", 13)
    text = _box_text(presenters.diagram(tl, tl.scenario))
    assert "Producer · acks=2" in text and "acks=all" not in text


def test_a_zookeeper_era_controller_shows_no_elr(sim):
    old = real(sim, "d2", "acks-2-loses", 5)
    assert "ELR" not in _box_text(presenters.diagram(old, old.scenario))
    today = real(sim, "05", "standard-setup", 5)
    assert "ELR" in _box_text(presenters.diagram(today, today.scenario))


def test_before_kraft_the_session_timer_and_the_isr_write_speak_of_zookeeper():
    """Issue 9: the ZooKeeper-era profiles drew KRaft words (broker.session.timeout.ms,
    AlterPartition). The session timer names the ZooKeeper session, and the ISR change is the
    leader's own ZooKeeper write, with no AlterPartition in flight."""
    import engine

    view = engine_snapshot()
    view["brokers"]["3"]["last_heartbeat_ms"] = 8_000
    view["controller"]["kraft"] = False
    words = " ".join(presenters.diagram(timeline_of(view), {})["description"])
    assert "ZooKeeper session" in words and "broker.session.timeout.ms" not in words
    sc = {
        "version": 1,
        "kafka_version": "1.1",
        "actions": [{"do": "produce", "records": ["a"]}, {"do": "settle"},
                    {"do": "stop_fetching", "broker": 3}, {"do": "produce", "records": ["b"]},
                    {"do": "advance", "ms": 40_000}],
    }  # fmt: skip
    result = engine.simulate(sc, all_views=True, steps=True)
    # the leader writes the ISR to ZooKeeper itself: no AlterPartition request is ever in flight
    assert not [m for v in result["views"] for m in v["messages"] if m["kind"].startswith("alter_partition")]
    shrink = next(s for s in result["steps"] if s["kind"] == "leader_shrink_isr")
    assert "AlterPartition" not in shrink["text"]
