"""Scene 07 (rebalances): each beat, eager beside cooperative (or static beside dynamic) on the
same seed and actions, as the groups engine runs it, with the numbers the narration quotes and the
answer of each prediction. Canonical scenarios: kafka-clients-logs §F.E E2 (a member joins), E3 (a
member crashes), E4 (a slow application), §E.7 (static membership), kafka-eos-kraft §E.C C1 (a
removed member's commit). The checks every scene passes are in test_every_built_scene.py."""

from __future__ import annotations

from typing import Any

import pytest

import engine
from app.groupview import downtime_at
from scenes import Scene, load_scene

BEATS = ["third-member-joins", "member-crashes", "slow-app", "rolling-restart", "slow-member-holds-up"]


@pytest.fixture(scope="module")
def s07() -> Scene:
    return load_scene("07")


_RUNS: dict[tuple[str, str, tuple[tuple[str, Any], ...]], dict[str, Any]] = {}


def run(scene: Scene, beat: str, lane: str = "main", **knobs: Any) -> dict[str, Any]:
    key = (beat, lane, tuple(sorted(knobs.items())))
    if key not in _RUNS:
        sc = scene.scenario_for(beat, knobs) if lane == "main" else scene.compare_scenario_for(beat, knobs)
        _RUNS[key] = engine.simulate(sc, steps=True)
    return _RUNS[key]


def generations(r: dict[str, Any]) -> list[tuple[int, dict[str, list[int]]]]:
    return [(h["generation"], h["assignment"]) for h in r["groups"]["billing"]["history"]]


def steps_of(r: dict[str, Any], kind: str) -> list[dict[str, Any]]:
    return [s for s in r["steps"] if s["kind"] == kind]


def down_since_start(r: dict[str, Any], cid: str) -> int:
    """A member's downtime from the group's first generation to the end of the run (the diagram's
    measure, app/groupview.py)."""
    start = r["groups"]["billing"]["history"][0]["t_ms"]
    end = r["steps"][-1]["t_ms"]
    return downtime_at(r["consumers"][cid]["downtime"], end, start)[0]


def test_header_knobs_and_beats(s07):
    assert (s07.id, s07.slug) == ("07", "rebalance")
    assert [k.key for k in s07.knobs] == [
        "partition.assignment.strategy", "session.timeout.ms", "heartbeat.interval.ms",
        "max.poll.interval.ms", "group.instance.id", "group.initial.rebalance.delay.ms"]
    assert [b.id for b in s07.beats] == BEATS
    assert all(b.compare is not None for b in s07.beats)
    assert s07.challenge.goal == "rolling_restart_no_rebalance"


def test_e2_eager_every_member_revokes_everything_and_range_moves_three(s07):
    r = run(s07, "third-member-joins")
    assert generations(r) == [(1, {"c0": [0, 1, 2], "c1": [3, 4, 5]}),
                              (2, {"c0": [0, 1], "c1": [2, 3], "c2": [4, 5]})]
    revokes = [(s["consumer"], s["partitions"], s["t_ms"]) for s in steps_of(r, "consumer_revoke")]
    assert revokes == [("c0", [0, 1, 2], 14000), ("c1", [3, 4, 5], 16000)]
    assert r["groups"]["billing"]["history"][1]["t_ms"] == 16003
    # c0 stopped 2 s waiting for c1's slower batch; c2 waited from its start to generation 2
    assert down_since_start(r, "c0") == 2004
    assert down_since_start(r, "c2") == 16004 - 11006


def test_e2_predict_all_six_partitions_stop(s07):
    """Beat 1's answer (A): between c1's revoke and the new assignment no member owns anything."""
    r = run(s07, "third-member-joins")
    last_revoke = steps_of(r, "consumer_revoke")[-1]["i"]
    view = engine.simulate(s07.scenario_for("third-member-joins"), at_step=last_revoke)["view"]
    assert all(not c["assigned"] for c in view["consumers"].values())
    assert s07.beat("third-member-joins").predict.answer == 0


def test_e2_cooperative_two_rebalances_and_only_the_movers_pause(s07):
    r = run(s07, "third-member-joins", "compare")
    assert generations(r) == [(1, {"c0": [0, 2, 4], "c1": [1, 3, 5]}),
                              (2, {"c0": [0, 2], "c1": [1, 3], "c2": []}),
                              (3, {"c0": [0, 2], "c1": [1, 3], "c2": [4, 5]})]
    revoked = [(s["consumer"], s["partitions"]) for s in steps_of(r, "consumer_revoke")]
    assert revoked == [("c0", [4]), ("c1", [5])]
    assert [h["t_ms"] for h in r["groups"]["billing"]["history"]] == [6005, 16003, 21003]
    assert down_since_start(r, "c0") == down_since_start(r, "c1") == 0
    assert down_since_start(r, "c2") == 21004 - 11006


def test_e3_a_crash_is_noticed_after_the_session_timeout_and_costs_one_rebalance(s07):
    r = run(s07, "member-crashes")
    crash = steps_of(r, "consumer_crash")[0]["t_ms"]
    expired = steps_of(r, "group_member_expired")[0]["t_ms"]
    assert (crash, expired) == (8006, 51005)  # 45 s after its last heartbeat, at 6.005 s
    assert r["groups"]["billing"]["history"][-1]["t_ms"] == 52003  # P2, P3 idle from 8.006 s: 44 s
    assert generations(r)[-1] == (2, {"c0": [0, 1, 2], "c2": [3, 4, 5]})
    coop = run(s07, "member-crashes", "compare")
    assert len(generations(coop)) == 2 and not steps_of(coop, "consumer_revoke")
    assert s07.beat("member-crashes").predict.answer == 1


def test_e4_a_stalled_member_leaves_by_itself_and_its_commit_is_refused(s07):
    r = run(s07, "slow-app")
    assert not steps_of(r, "group_member_expired")  # the heartbeats never stopped
    timeout = steps_of(r, "consumer_poll_timeout")[0]
    assert timeout["consumer"] == "c1" and timeout["t_ms"] == 40001  # 30 s after its poll at 10 s
    assert steps_of(r, "group_member_left")[0]["consumer"] == "c1"
    assert [(c["consumer"], c["error"]) for c in r["commits"]] == [("c1", "UNKNOWN_MEMBER_ID")]
    # c1 processed a and b before it stalled; its successor on P2 processes them again
    got = [(s["consumer"], s["records"]) for s in steps_of(r, "consumer_poll")]
    assert ("c1", ["a", "b"]) in got and ("c0", ["a", "b"]) in got
    assert s07.beat("slow-app").predict.answer == 2


def test_rolling_restart_dynamic_rebalances_twice_per_member(s07):
    r = run(s07, "rolling-restart")
    assert [g for g, _ in generations(r)] == [1, 2, 3, 4, 5]
    assert [h["t_ms"] for h in r["groups"]["billing"]["history"]][:3] == [6005, 10003, 20003]
    assert generations(r)[1] == (2, {"c1": [0, 1, 2, 3, 4, 5]})  # c0 closed at 8.788 s
    assert steps_of(r, "consumer_close")[0]["t_ms"] == 8006
    assert len(steps_of(r, "group_member_left")) == 2
    assert s07.beat("rolling-restart").predict.answer == 2


def test_a_slow_member_holds_up_an_eager_group_but_not_a_cooperative_one(s07):
    r = run(s07, "slow-member-holds-up")
    revokes = [(s["consumer"], s["t_ms"]) for s in steps_of(r, "consumer_revoke")]
    assert revokes == [("c0", 10000), ("c1", 27007)]
    assert steps_of(r, "group_join_complete")[-1]["t_ms"] == 27008
    assert down_since_start(r, "c0") == 27011 - 10000
    coop = run(s07, "slow-member-holds-up", "compare")
    assert down_since_start(coop, "c0") == 0
    assert s07.beat("slow-member-holds-up").predict.answer == 1


def test_static_members_restart_without_a_rebalance(s07):
    """§E.7 / F.E E3: a static member back within session.timeout.ms gets its old assignment, no
    rebalance, the generation stays 1; the rolling-restart challenge is met."""
    coop = run(s07, "rolling-restart", "compare")
    assert [g for g, _ in generations(coop)] == [1]
    assert len(steps_of(coop, "group_static_rejoin")) == 2
    static = run(s07, "rolling-restart", **{"group.instance.id": True})
    assert [g for g, _ in generations(static)] == [1]


def _judged(scene: Scene, pairs: list[tuple[str, str]]) -> tuple[bool, str]:
    from app.challenges import judge
    from app.settings import Settings
    from app.simulation import Simulator, build_timeline
    from app.state import parse_state

    state, _ = parse_state(scene, pairs + [("step", "100000")], Settings())
    timeline, _state = build_timeline(Simulator(8), scene, state)
    return judge(scene.challenge.goal, timeline)


def test_the_challenge_is_not_met_by_the_dynamic_rolling_restart(s07):
    met, said = _judged(s07, [("beat", "rolling-restart")])
    assert not met and said.startswith("4 rebalances completed since the group became Stable at t = 6.005 s")


def test_the_challenge_is_met_with_static_members(s07):
    met, said = _judged(s07, [("beat", "rolling-restart"), ("group.instance.id", "true")])
    assert met, said


def _page(scene: Scene, pairs: list[tuple[str, str]]) -> tuple[Any, Any]:
    """The main timeline and the comparison column the page builds for `pairs`."""
    from app import frames, presenters
    from app.settings import Settings
    from app.simulation import Simulator, build_compare, build_timeline
    from app.state import parse_state

    sim = Simulator(8)
    state, _ = parse_state(scene, pairs, Settings())
    timeline, state = build_timeline(sim, scene, state)
    run = build_compare(sim, scene, state, timeline)
    other = frames.timeline_path(sim, run.timeline, frames.beat_key_moments(scene.beat(state.beat)))
    return timeline, presenters.compare_panel(scene, state, timeline, run, box=other.box, stops=other.stops)


def test_e3_every_knob_reaches_the_comparison_lane_too(s07):
    """F.E E3 with session.timeout.ms=6000: both lanes notice the crash at 12.005 s (the learner
    saw 51.005 s on the right: the comparison's text was written for the preset); only the
    assignor differs between the lanes."""
    main = run(s07, "member-crashes", **{"session.timeout.ms": 6000})
    coop = run(s07, "member-crashes", "compare", **{"session.timeout.ms": 6000})
    assert [s["t_ms"] for s in steps_of(main, "group_member_expired")] == [12005]
    assert [s["t_ms"] for s in steps_of(coop, "group_member_expired")] == [12005]
    knobs = {"session.timeout.ms": 6000, "heartbeat.interval.ms": 1000, "max.poll.interval.ms": 60000,
             "group.initial.rebalance.delay.ms": 0}
    left = s07.scenario_for("member-crashes", knobs)
    right = s07.compare_scenario_for("member-crashes", knobs)
    for a, b in zip(left["consumers"], right["consumers"], strict=True):
        assert {k: v for k, v in a.items() if k != "partition.assignment.strategy"} == \
               {k: v for k, v in b.items() if k != "partition.assignment.strategy"}
    assert left["timing"] == right["timing"]
    _, panel = _page(s07, [("beat", "member-crashes"), ("session.timeout.ms", "6000"), ("step", "1")])
    assert "51.005" not in panel["now"] + str(panel["narration"])


def test_e2_the_comparison_says_its_own_current_step_never_its_end(s07):
    """F.E E2: before the first step the comparison has only a setup line; at each step it says
    what its own run did last, counted on its own path."""
    _, panel = _page(s07, [("beat", "third-member-joins"), ("step", "0")])
    assert panel["now"] == "Before its first step."
    text = "".join(str(x) for x in panel["narration"])
    assert "generation 3" not in text.lower() and " s later" not in text
    _, panel = _page(s07, [("beat", "third-member-joins"), ("step", "100000")])
    assert panel["now"].startswith("Last in this run: ")
    assert panel["position"].startswith("Step ") and "(this run's own steps)" in panel["position"]


def test_e2_key_moments_land_where_the_thing_happens(s07):
    """F.E E2 under eager: c1 revokes 2 s after c0 (the key moment is c1's), and c2 owns nothing
    until its own consumer_join of generation 2."""
    from app import frames

    r = run(s07, "third-member-joins")
    beat = s07.beat("third-member-joins")
    moments = {m.title: frames.find_key_moment(r["steps"], m) for m in beat.key_moments}
    revoke = r["steps"][moments["c1 revokes last: all six partitions have stopped"] - 1]
    assert (revoke["kind"], revoke["consumer"], revoke["t_ms"]) == ("consumer_revoke", "c1", 16000)
    join = r["steps"][moments["c2 takes its share of generation 2"] - 1]
    assert (join["kind"], join["consumer"]) == ("consumer_join", "c2")


def test_e2_a_partition_given_to_a_member_that_never_owned_it_is_not_called_revoked(s07):
    from app.groupview import idle_reason

    sc = s07.scenario_for("third-member-joins")
    r = run(s07, "third-member-joins")
    at = next(k for k, s in enumerate(r["steps"], 1)
              if s["kind"] == "group_sync_complete" and s["t_ms"] > 7000)
    view = engine.simulate(sc, at_step=at)["view"]
    assert idle_reason(view, "billing", 4) == "given to c2, not yet taken up"


def _timelines(scene: Scene, pairs: list[tuple[str, str]]) -> tuple[Any, Any]:
    from app.settings import Settings
    from app.simulation import Simulator, build_compare, build_timeline
    from app.state import parse_state

    sim = Simulator(8)
    state, _ = parse_state(scene, pairs, Settings())
    timeline, state = build_timeline(sim, scene, state)
    return timeline, build_compare(sim, scene, state, timeline).timeline


def test_e2_partition_idle_time_is_what_eager_and_cooperative_differ_on(s07):
    """F.E E2: under eager every partition is idle (c0's for the 2 s it waits for c1, c1's for
    the 4 ms of the rebalance); under cooperative only P4 and P5, for the 5 s between the rounds."""
    from app.groupview import outcomes, partition_idle

    main, coop = _timelines(s07, [("beat", "third-member-joins"), ("step", "100000")])
    assert partition_idle(main) == {0: 2004, 1: 2004, 2: 2004, 3: 4, 4: 4, 5: 4}
    assert partition_idle(coop) == {0: 0, 1: 0, 2: 0, 3: 0, 4: 5000, 5: 5000}
    assert "P0-P2 2.004 s, P3-P5 4 ms" in outcomes(main)["text"]


def test_e7_a_static_restart_leaves_its_partitions_idle_while_it_is_away(s07):
    """§E.7: no rebalance, but the restarted member's partitions are idle the 5 s it is gone (the
    member's own "down" time does not count a process that is not running)."""
    from app.groupview import partition_idle

    main, static = _timelines(s07, [("beat", "rolling-restart"), ("step", "100000")])
    assert partition_idle(static) == dict.fromkeys(range(6), 5004)
    assert max(partition_idle(main).values()) < 5004


def test_the_group_drawing_says_when_the_coordinator_moved(s07):
    """Crashing B1, which leads __consumer_offsets partition 9, moves billing's coordinator."""
    from app.groupview import group_content

    main, _ = _timelines(s07, [("beat", "member-crashes"), ("step", "100000")])
    assert "coordinator B1" in group_content(main, main.scenario)["sub"]
    crashed, _ = _timelines(s07, [("beat", "member-crashes"), ("a", "crash:1@30"), ("step", "100000")])
    assert "(moved from B1)" in group_content(crashed, crashed.scenario)["sub"]
