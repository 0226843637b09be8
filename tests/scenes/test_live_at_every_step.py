"""Everything "live" on a scene page follows the current step (issue 8).

For every step of every beat of every built scene, render what the page shows about the run as of
that step: every live answer of the scene's Q&A, the comparison's "what the producer heard" texts,
and the challenge verdict. Then hold each against the engine's ledger at that step
(docs/scenario-format.md, `snapshot["ledger"]`):

- a record named in the text has been handed to the network, acknowledged or failed by then
  (never a record of the future, as "c was acknowledged" at step 0 of 05's unclean beat was);
- a record called acknowledged is in the ledger's `acked` at that step;
- a record called lost is in the ledger's `lost` at that step (the challenge may name the step of
  the first loss, so its records are checked against every step so far).

Records are short names (a, b, m12) found as whole words. "a" is also an English article, so it
counts as a record only where a record name can stand: before punctuation, at the end, or before
"is", "was", "were" or "and".

It also checks that every `{placeholder}` in a narration or comparison text names a knob of the
scene, so the narration's values follow the learner's knobs.

Speed: each beat (and its comparison) is replayed once with every step's state, through the app's
Simulator cache, so every step is a lookup; a topic with several partitions included.
"""

from __future__ import annotations

import dataclasses
import re

import pytest

import scenes
from app import presenters
from app.challenges import judge
from app.formats import clock
from app.presenters import KNOB_PLACEHOLDER
from app.qa import live_answer
from app.qa_panel import live_context
from app.settings import Settings
from app.simulation import Simulator, build_compare, build_timeline
from app.state import parse_state

BUILT = [s.id for s in scenes.list_scenes() if s.built]
CASES = [(sid, beat.id) for sid in BUILT for beat in scenes.load_scene(sid).beats]
SIM = Simulator(cache_entries=256, views_cache_entries=4)
SETTINGS = Settings()

CLAUSE = re.compile(r"(?<=[.;])\s+")
CHECKED: dict[str, int] = {"steps": 0, "texts": 0}


def _names(text: str, records: set[str]) -> set[str]:
    found = set()
    for name in records:
        for m in re.finditer(rf"(?<![\w=.-]){re.escape(name)}(?![\w=-])", text):
            if name == "a":
                rest = text[m.end():]
                if not re.match(r"\s*($|[,.;:)]|\s(is|was|were|and)\b)", rest):
                    continue  # the article
            found.add(name)
            break
    return found


def _check(where: str, text: str, records: set[str], ledger: dict[str, list[str]],
           lost_so_far: set[str]) -> None:
    CHECKED["texts"] += 1
    known = set(ledger["sent"]) | set(ledger["acked"]) | set(ledger["failed"])
    named = _names(text, records)
    assert named <= known, f"{where}: names {sorted(named - known)} before the producer sent them: {text}"
    for clause in CLAUSE.split(text):
        names = _names(clause, records)
        if not names:
            continue
        low = clause.lower()
        called_lost = bool(re.search(r"\b(lost|gone)\b", low))
        if "acknowledged" in low and not called_lost:
            missing = names - set(ledger["acked"])
            assert not missing, f"{where}: calls {sorted(missing)} acknowledged, not in the ledger: {clause}"
        if called_lost:
            missing = names - lost_so_far
            assert not missing, f"{where}: calls {sorted(missing)} lost, not in the ledger: {clause}"


@pytest.mark.parametrize(("scene_id", "beat_id"), CASES)
def test_live_texts_never_speak_of_the_future(scene_id, beat_id):
    scene = scenes.load_scene(scene_id)
    state, _ = parse_state(scene, [("beat", beat_id)], SETTINGS)
    start, state = build_timeline(SIM, scene, state)
    scenario = start.scenario
    records = {str(r) for b in start.result.get("produce", []) for r in b.get("records", [])}
    views = SIM.views(scenario)
    assert views is not None and len(views) == start.step_count + 1
    live_qas = [qa for qa in scene.qa if qa.live]
    lost_so_far: set[str] = set()
    for k in range(start.step_count + 1):
        at = SIM.view_result(scenario, k)
        timeline = dataclasses.replace(start, view=at["view"], step=k, partitions=at.get("partitions", []))
        ledger = presenters.ledger_at(timeline)
        lost_now = set(ledger["lost"])
        lost_so_far |= lost_now
        CHECKED["steps"] += 1
        where = f"{scene_id}/{beat_id} step {k}"

        context = live_context(timeline)
        for qa in live_qas:
            text = live_answer(qa, context)
            if text:
                _check(f"{where} live {qa.id}", text, records, ledger, lost_now)

        run = build_compare(SIM, scene, state.replace(step=k), timeline)
        panel = presenters.compare_panel(scene, state.replace(step=k), timeline, run)
        if panel is not None:
            _check(f"{where} compare (this run)", panel["main_outcomes"]["text"], records, ledger, lost_now)
            if run.timeline is not None:
                other = run.timeline
                other_records = {str(r) for b in other.result.get("produce", []) for r in b["records"]}
                _check(f"{where} compare (other run)", panel["outcomes"]["text"], other_records,
                       presenters.ledger_at(other), set(presenters.ledger_at(other)["lost"]))

        met = None
        if scene.challenge.goal != "lose_acked_write":  # judged from the run (app/challenges.py)
            met, _said = judge(scene.challenge.goal, timeline)
        for sandbox in (False, True):
            challenge = presenters.challenge_panel(scene, timeline, sandbox=sandbox, views=views)
            _check(f"{where} challenge", challenge["verdict"], records, ledger, lost_so_far)
            if met is None:
                assert challenge["verdict"].startswith("Not yet") == (not lost_so_far), where
            else:
                assert challenge["verdict"].startswith("Not yet") == (not met), where
                assert challenge["solved"] == (met and sandbox), where


def test_the_issue_example_step_0_of_the_unclean_beat_says_nothing_of_c():
    scene = scenes.load_scene("05")
    state, _ = parse_state(scene, [("beat", "unclean-election")], SETTINGS)
    timeline, state = build_timeline(SIM, scene, state)
    assert timeline.step == 0
    texts = [live_answer(qa, live_context(timeline)) or "" for qa in scene.qa if qa.live]
    assert not any(re.search(r"\bc\b", t) for t in texts), texts
    assert "You have not sent any write" in live_answer(
        next(qa for qa in scene.qa if qa.live == "live_last_write"), live_context(timeline))
    verdict = presenters.challenge_panel(scene, timeline, sandbox=False, views=SIM.views(timeline.scenario))
    assert verdict["verdict"].startswith("Not yet")
    # at the end, the same beat has lost b and c, and the verdict says at which step
    end_state = state.replace(step=timeline.step_count)
    end, _ = build_timeline(SIM, scene, end_state)
    verdict = presenters.challenge_panel(scene, end, sandbox=False, views=SIM.views(end.scenario))
    lost_t = end.steps[verdict["lost_step"] - 1]["t_ms"]
    assert verdict["lost_step"] is not None and f"at {clock(lost_t)}" in verdict["verdict"]
    assert set(verdict["lost"]) == {"b", "c"}


@pytest.mark.parametrize("scene_id", BUILT)
def test_every_narration_placeholder_names_a_knob_of_the_scene(scene_id):
    scene = scenes.load_scene(scene_id)
    keys = {k.key for k in scene.knobs}
    for beat in scene.beats:
        texts = [beat.narration] + ([beat.compare.narration] if beat.compare else [])
        for text in texts:
            for name in KNOB_PLACEHOLDER.findall(text):
                assert name in keys, f"{scene_id}/{beat.id}: {{{name}}} is not a knob of the scene"


def test_placeholders_follow_the_knobs_and_a_note_names_what_differs():
    scene = scenes.load_scene("05")
    state, _ = parse_state(scene, [("beat", "standard-setup"), ("min.insync.replicas", "1")], SETTINGS)
    timeline, state = build_timeline(SIM, scene, state)
    beat = presenters.beats_panel(scene, state, timeline, embed=False)
    body = " ".join(seg["text"] for p in beat["lead"] + beat["more"] for seg in p)
    assert "min.insync.replicas=1" in body and "{" + "min.insync.replicas}" not in body
    assert beat["knob_note"] == ("The narration and the prediction describe the preset "
                                 "(min.insync.replicas=2); your knobs: min.insync.replicas=1.")
    preset, _ = parse_state(scene, [("beat", "standard-setup")], SETTINGS)
    timeline, preset = build_timeline(SIM, scene, preset)
    assert presenters.beats_panel(scene, preset, timeline, embed=False)["knob_note"] is None
    assert presenters.knob_text("replica.lag.time.max.ms", "30000") == "30 s"
    assert presenters.knob_text("replica.lag.time.max.ms", "300") == "300 ms"


def test_zz_report_how_much_was_checked():
    # runs last in this module (pytest keeps definition order); the counts go in the report
    print(f"\nlive-at-every-step: {CHECKED['steps']} steps, {CHECKED['texts']} texts checked")
    assert CHECKED["steps"] == 0 or CHECKED["texts"] >= CHECKED["steps"]
