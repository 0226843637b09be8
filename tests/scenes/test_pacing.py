"""Pacing: every beat's default path (its stops) is short, every stop shows a change, key moments
are stops, and a late fault plays out with "run until quiet".

The timelines are built the way the app builds them (app.simulation.build_timeline on a parsed
URL), so these tests see exactly the stops a learner walks with the Step button.
"""

from __future__ import annotations

import pytest

import scenes
from app import frames, presenters
from app.settings import Settings
from app.simulation import Simulator, Timeline, build_timeline
from app.state import QUIET, InjectedAction, parse_state
from engine.steps import STEP_KINDS

MAX_STOPS = 60
SETTINGS = Settings()
SIM = Simulator(128)
BEATS = [(s.id, b.id) for s in scenes.list_scenes() if s.built for b in scenes.load_scene(s.id).beats]


def page(scene_id: str, pairs: list[tuple[str, str]]):
    scene = scenes.load_scene(scene_id)
    state, _ = parse_state(scene, pairs, SETTINGS)
    timeline, state = build_timeline(SIM, scene, state)
    return scene, state, timeline


def beat_stops(scene, state, timeline) -> list[frames.Stop]:
    return frames.timeline_stops(SIM, timeline, frames.beat_key_moments(scene.beat(state.beat)))


def signature_at(timeline: Timeline, step: int) -> str | None:
    views = SIM.views(timeline.scenario)
    if views is None:
        return None
    at = Timeline(scenario=timeline.scenario, result=timeline.result, view=views[step], step=step,
                  step_count=timeline.step_count, first_step=0, last_step=timeline.step_count)
    return frames.visible_signature(presenters.diagram(at, timeline.scenario))


@pytest.mark.parametrize(("scene_id", "beat_id"), BEATS)
def test_default_path_is_short_and_every_stop_shows_a_change(scene_id, beat_id):
    scene, state, timeline = page(scene_id, [("beat", beat_id)])
    stops = beat_stops(scene, state, timeline)
    assert len(stops) <= MAX_STOPS, f"{scene_id}/{beat_id}: {len(stops)} stops"
    # the stops partition the timeline: step 0, then consecutive ranges up to the last step
    assert stops[0].step == 0
    for before, stop in zip(stops, stops[1:], strict=False):
        assert stop.first_step == before.step + 1 and stop.step >= stop.first_step
        assert stop.title
    assert stops[-1].step == timeline.step_count
    signatures = [signature_at(timeline, s.step) for s in stops]
    if signatures[0] is None:
        pytest.skip("no per-step states for this run (several partitions): nothing to compare")
    for k in range(1, len(stops)):
        assert signatures[k] != signatures[k - 1], (
            f"{scene_id}/{beat_id}: stops {k} and {k + 1} (steps {stops[k - 1].step}, {stops[k].step}) "
            "look the same"
        )


@pytest.mark.parametrize(("scene_id", "beat_id"), BEATS)
def test_key_moments_are_named_and_land_on_stops(scene_id, beat_id):
    scene, state, timeline = page(scene_id, [("beat", beat_id)])
    beat = scene.beat(beat_id)
    assert 1 <= len(beat.key_moments) <= 3, f"{scene_id}/{beat_id} names no key moment"
    stops = beat_stops(scene, state, timeline)
    for moment in frames.beat_key_moments(beat):
        assert moment.kind in STEP_KINDS, moment
        step = frames.find_key_moment(timeline.steps, moment)
        assert step is not None, f"{scene_id}/{beat_id}: {moment.title!r} does not happen as written"
        stop = stops[frames.stop_index(stops, step)]
        assert stop.first_step <= step <= stop.step
        assert moment.title in (stop.key_moment or "")
    links = presenters.key_moments_panel(beat, state, timeline, stops, embed=False)
    assert all(link["url"] and link["step"] in {s.step for s in stops} for link in links)


def test_a_key_moment_the_knobs_remove_says_so():
    # with acks=1 nothing waits for the ISR: 04's first beat never completes a parked request
    scene, state, timeline = page("04", [("beat", "followers-pull"), ("acks", "1")])
    links = presenters.key_moments_panel(scene.beat(state.beat), state, timeline,
                                         beat_stops(scene, state, timeline), embed=False)
    missing = [link for link in links if link["url"] is None]
    assert missing and all(link["note"] == "does not happen with these knobs" for link in missing)


def test_a_retry_loop_is_one_stop_that_says_what_repeated():
    scene, state, timeline = page("05", [("beat", "min-isr-refuses")])
    stops = beat_stops(scene, state, timeline)
    repeats = [s for s in stops if s.repeat]
    assert repeats
    loop = max(repeats, key=lambda s: s.folded_count)
    assert loop.folded_count > 400
    assert "retried" in loop.title and "NOT_ENOUGH_REPLICAS each time" in loop.title
    assert loop.time_jump and loop.time_jump.endswith("s later")


def test_find_runs_keeps_the_first_round_and_respects_key_moments():
    round_ = [{"kind": "producer_send", "actor": "producer"}, {"kind": "producer_retry", "actor": "producer"}]
    steps = [{"kind": "broker_crash", "actor": "operator"}] + round_ * 5
    (run,) = frames.find_runs(steps)
    assert (run.start, run.period, run.repeats) == (1, 2, 5)
    # a key moment in round 4 ends the run before that round
    (run,) = frames.find_runs(steps, barriers={7})
    assert run.repeats == 3


def test_fine_and_quiet_survive_a_url_round_trip():
    scene = scenes.load_scene("04")
    pairs = [("beat", "followers-pull"), ("a", "crash:1@13"), ("a", "quiet@14"), ("step", "14"),
             ("fine", "1")]
    state, notes = parse_state(scene, pairs, SETTINGS)
    assert not notes and state.fine
    assert state.actions == (InjectedAction("crash", 1, 13), InjectedAction(QUIET, None, 14))
    again, _ = parse_state(scene, state.query_pairs(), SETTINGS)
    assert again == state
    assert ("fine", "1") in state.query_pairs() and ("a", "quiet@14") in state.query_pairs()


@pytest.mark.parametrize("bad", ["quiet:1@3", "crash@3", "fine"])
def test_malformed_quiet_or_fine_is_a_bad_address(bad):
    scene = scenes.load_scene("04")
    pairs = [("beat", "followers-pull"), ("fine", "yes")] if bad == "fine" else [("a", bad)]
    with pytest.raises(Exception, match="quiet@STEP|fine must be"):
        parse_state(scene, pairs, SETTINGS)


def test_a_fault_at_the_end_comes_with_run_until_quiet():
    scene, state, timeline = page("04", [("beat", "followers-pull"), ("step", "999")])
    end = timeline.step_count
    _, state, timeline = page("04", [("beat", "followers-pull"), ("step", str(end)), ("inject", "crash:1")])
    assert [a.verb for a in state.actions] == ["crash", QUIET]
    assert timeline.steps[state.step - 1]["kind"] == "broker_crash"  # the page lands on the fault
    assert timeline.scenario["actions"][-1]["do"] == "settle"


def test_a_crashed_leader_at_the_end_is_replaced_after_run_until_quiet():
    # the 04 challenge hint: crash the leader once everything has happened
    scene, state, timeline = page("04", [("beat", "followers-pull"), ("step", "999")])
    end = timeline.step_count
    _, state, timeline = page("04", [("beat", "followers-pull"), ("step", str(end)), ("inject", "crash:1")])
    kinds = [s["kind"] for s in timeline.steps[state.step:]]
    assert "controller_fence_broker" in kinds and "controller_elect_leader" in kinds
    assert timeline.result["final"]["partition"]["leader"] not in (1, -1, None)


def test_step_and_back_walk_stops_and_fine_walks_engine_steps():
    scene, state, timeline = page("05", [("beat", "min-isr-refuses"), ("step", "18")])
    stops = beat_stops(scene, state, timeline)
    panel = presenters.timeline_panel(timeline, state, embed=False, stops=stops)
    after = frames.next_stop(stops, 18)
    before = frames.previous_stop(stops, 18)
    assert f"step={after.step}" in panel["forward_url"]
    assert f"step={before.step}" in panel["back_url"]
    # counted in presses of Step: the start is step 0, so the last stop is step len(stops) - 1
    assert panel["stop"]["at_stop"] and panel["stop"]["count"] == len(stops) - 1
    fine_state = state.replace(fine=True)
    fine = presenters.timeline_panel(timeline, fine_state, embed=False, stops=stops)
    assert "step=19" in fine["forward_url"] and "fine=1" in fine["forward_url"]
    assert "step=17" in fine["back_url"]
    assert fine["fold_url"] and "fine" not in fine["fold_url"]
