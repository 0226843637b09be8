"""The checks every built scene must pass, whatever it teaches: its data agrees with the course map
and with itself, every knob value reaches the engine and validates, the narration, predict
questions and Q&A have the agreed shape, the pseudocode names real step kinds, every beat (and its
comparison run) replays on the real engine without invariant violations and deterministically,
labels say which runs are history or a proposal, and the page renders.

What one scene claims beat by beat lives in its own file (test_scene_<id>.py). Where a scene was
held to a stricter bound than the rest, the tables below say so.

If one of these fails because the engine disagrees with kafka-semantics.md, the engine is wrong:
do not bend the data or the assertion to make it pass.
"""

from __future__ import annotations

import re

import pytest
from scene_helpers import FEW_VALUES_TRIED, _all_values, chart_only, engine, kinds, run

import scenes
from scenes import load_scene
from scenes.model import format_knob_value, split_target

BUILT = [s.id for s in scenes.list_scenes() if s.built]
BEATS = [(scene_id, beat.id) for scene_id in BUILT for beat in load_scene(scene_id).beats]
KNOBS = [(scene_id, knob.key) for scene_id in BUILT for knob in load_scene(scene_id).knobs]

SOURCE_RE = re.compile(r"^[a-z][\w/.-]+\.(scala|java)(#L\d+(-L\d+)?)?$")
SOURCES_LINE_RE = re.compile(r"(\.scala|\.java|KIP-|KAFKA-|Kafka documentation|FAST 20)")
SENTENCE_END_RE = re.compile(r"(?<=[.!?])\s+")
# (fewest, most) Q&As and the fewest live ones; scene 05, the core scene, carries more
QA_COUNT = {"05": (10, None)}
QA_COUNT_DEFAULT = (5, 10)
MIN_LIVE = {"05": 3}
MIN_LIVE_DEFAULT = 2
# the knobs that only move a chart's cursor, by scene (none elsewhere)
CHART_ONLY = {"d1": ("straggler_q", "straggler_ms"), "d4": ("afr", "repair_h")}
# Kafka versions a beat may only run under a "History:" label
HISTORIC_VERSIONS = ("0.8", "0.10", "1.1")
PROPOSAL_LABEL_RE = re.compile(r"^(Proposal, not Kafka|Not Kafka)\b")
# pseudocode lines that execute a step kind and cite no source (the rest must cite the engine's file)
LINES_MAY_OMIT_THE_SOURCE = {"05", "06"}
# challenge goals about what consumers read, which need a scene with consumers
READER_GOALS = ("read_before_subscribe", "fan_out", "skip_records", "miss_delete")
# scenes whose beats focus on step kinds their pseudocode does not show (04a's show the produce path
# around the controller; 05's include an operator step); elsewhere a focus kind needs a line
FOCUS_MAY_LACK_A_LINE = {"04a", "05"}


def scene_for(scene_id: str) -> scenes.Scene:
    return load_scene(scene_id)


# --------------------------------------------------------------------------------------------
# the data


@pytest.mark.parametrize("scene_id", BUILT)
def test_header_matches_the_course_map(scene_id):
    scene = scene_for(scene_id)
    summary = scenes.SCENE_IDS[scene_id]
    assert (scene.slug, scene.title, scene.minutes, scene.promise) == (
        summary.slug, summary.title, summary.minutes, summary.promise)
    assert summary.built and scene.previously and scene.beats


@pytest.mark.parametrize("scene_id", BUILT)
def test_base_scenario_agrees_with_knob_defaults(scene_id):
    scene = scene_for(scene_id)
    for knob in scene.knobs:
        assert knob.help.endswith(".") and knob.label, knob.key
        section, key = split_target(knob.target)
        holder = scene.base_scenario if section is None else scene.base_scenario.get(section, {})
        # a list section (consumers): the knob is written into every item of it
        for item in holder if isinstance(holder, list) else [holder]:
            if key in item:
                assert item[key] == knob.default, knob.key
    assert scene.base_scenario["actions"] == []


@pytest.mark.parametrize("scene_id", BUILT)
def test_narration_and_predict_shape(scene_id):
    scene = scene_for(scene_id)
    for beat in scene.beats:
        paras = beat.paragraphs
        assert 2 <= len(paras) - 1 <= 5 and paras[-1].startswith("Source: "), beat.id
        assert SOURCES_LINE_RE.search(paras[-1]), beat.id
        p = beat.predict
        assert len(p.options) >= 3 and len(set(p.options)) == len(p.options) and p.question.endswith("?")
        assert 0 <= p.answer < len(p.options) and p.explanation, beat.id
        assert beat.focus_step_kinds, beat.id
        if beat.compare is not None:
            assert beat.compare.title and beat.compare.label and beat.compare.narration, beat.id


@pytest.mark.parametrize("scene_id", BUILT)
def test_qa_shape(scene_id):
    from app.qa import LIVE

    scene = scene_for(scene_id)
    fewest, most = QA_COUNT.get(scene_id, QA_COUNT_DEFAULT)
    assert fewest <= len(scene.qa) and (most is None or len(scene.qa) <= most)
    assert sum(1 for q in scene.qa if q.live) >= MIN_LIVE.get(scene_id, MIN_LIVE_DEFAULT)
    for q in scene.qa:
        assert q.question.endswith("?") and q.sources and q.tags and q.scene == scene_id, q.id
        sentences = [s for s in SENTENCE_END_RE.split(q.answer.strip()) if s]
        assert 2 <= len(sentences) <= 6, (q.id, len(sentences))
        if q.live:
            assert q.live in LIVE, q.live


@pytest.mark.parametrize("scene_id", BUILT)
def test_challenge_has_a_goal_the_app_judges_a_title_and_a_text(scene_id):
    from typing import get_args

    from app.challenges import JUDGES
    from scenes.model import ChallengeGoal

    challenge = scene_for(scene_id).challenge
    assert challenge.goal in get_args(ChallengeGoal) and challenge.title and challenge.text
    # every goal but the loss ledger's is judged by app/challenges.py from the run
    assert challenge.goal == "lose_acked_write" or challenge.goal in JUDGES
    # a goal about readers needs a scene with consumers to read; the loss ledger's scenes have none
    readers = bool(scene_for(scene_id).base_scenario.get("consumers"))
    if challenge.goal in READER_GOALS:
        assert readers
    if challenge.goal == "lose_acked_write":
        assert not readers


@pytest.mark.parametrize("scene_id", BUILT)
def test_pseudocode_kinds_exist_once_and_link_the_engine_file(scene_id):
    from engine.steps import STEP_KINDS

    scene = scene_for(scene_id)
    seen: dict[str, str] = {}
    for block in scene.pseudocode:
        for i, line in enumerate(block.lines):
            if line.source is not None:
                assert SOURCE_RE.match(line.source), line.source
            for k in line.kinds:
                assert k in STEP_KINDS, (block.id, line.text, k)
                assert k not in seen, f"{k} is on {seen[k]} and {block.id}:{i}"
                seen[k] = f"{block.id}:{i}"
                # a line that executes a step kind links to the Kafka file the engine cites for it
                if STEP_KINDS[k].path and (line.source or scene_id not in LINES_MAY_OMIT_THE_SOURCE):
                    assert line.source and line.source.split("#")[0] == STEP_KINDS[k].path, (block.id, k)
    # every focus kind that runs Kafka code has a line to highlight (faults have none)
    for beat in scene.beats:
        for k in beat.focus_step_kinds:
            assert k in STEP_KINDS, (beat.id, k)
            if scene_id in FOCUS_MAY_LACK_A_LINE:
                continue
            assert k in seen or not STEP_KINDS[k].path, (beat.id, k, "focus kind without a pseudocode line")
            if STEP_KINDS[k].actor != "operator":
                assert k in seen, (beat.id, k, "focus kind without a pseudocode line")


# --------------------------------------------------------------------------------------------
# knobs


def _check_reaches_the_engine(knob_key: str, value, sc: dict, cfg) -> None:
    """The engine's resolved configuration holds the knob's value."""
    if knob_key == "kafka_version":
        assert cfg.profile.version == value
    elif knob_key == "replication.factor":
        if any("rack" in b for b in sc["brokers"]):  # rack-aware placement picks the replicas
            assert len(set(cfg.replicas)) == len(cfg.replicas) == value
        else:
            assert cfg.replicas == list(range(1, value + 1))
    elif knob_key == "min.insync.replicas":
        assert cfg.min_isr == value
    elif knob_key == "unclean.leader.election.enable":
        assert cfg.unclean is value
    elif knob_key == "eligible.leader.replicas.version":
        assert cfg.elr is (value == 1)
    elif knob_key == "acks" and value in ("all", "0", "1"):
        assert cfg.acks == {"all": -1, "0": 0, "1": 1}[value]


CHECKED_IN_CONFIG = ("kafka_version", "replication.factor", "min.insync.replicas",
                     "unclean.leader.election.enable", "eligible.leader.replicas.version", "acks")


@pytest.mark.parametrize(("scene_id", "knob_key"), KNOBS)
def test_every_knob_value_reaches_the_engine_and_validates_on_every_beat(scene_id, knob_key):
    """Each value, on each beat, two ways: as the web app sends it (every knob's value in the URL),
    and set alone as typed (a sample of a wide range). It is written where its target says and the
    engine accepts the scenario and reads the value, except that a beat writing to partition p
    cannot have p or fewer partitions, and a beat that grows the topic to n partitions cannot start
    with n or more: the engine refuses both (Kafka's message, for the second), and the beat's
    knob_limits keep the web app from running them (tests/web/test_knob_values.py)."""
    from engine.scenario import resolve

    scene = scene_for(scene_id)
    knob = scene.knob(knob_key)
    if chart_only(knob):
        return  # test_chart_only_knobs_never_reach_the_engine
    all_defaults = {k.key: format_knob_value(k.default) for k in scene.knobs}
    section, key = split_target(knob.target)
    alone = set(_all_values(knob, most=FEW_VALUES_TRIED))
    for value in _all_values(knob):
        assert knob.parse(format_knob_value(value)) == value
        for beat in scene.beats:
            presets = {k: format_knob_value(v) for k, v in beat.knobs.items()}
            highest = max((a.get("partition", 0) for a in beat.actions if a["do"] == "produce"), default=0)
            grown = min((a["count"] for a in beat.actions if a["do"] == "add_partitions"), default=None)
            ways = [{**all_defaults, **presets, knob.key: format_knob_value(value)}]
            if value in alone:
                ways.append({knob.key: value})
            for values in ways:
                where = (knob.key, value, beat.id, sorted(values))
                sc = scene.scenario_for(beat, values)
                applies = scene.knob_applies(knob.key, scene.knob_values(beat, values))
                if applies and isinstance(sc.get(section), list):  # every consumer gets the value
                    assert sc[section] and all(item[key] == value for item in sc[section]), where
                elif applies:
                    assert (sc[key] if section is None else sc[section][key]) == value, where
                else:
                    assert knob.only_if, where  # only a knob with a condition is ever left out
                # the web app never runs these: the beat's knob_limits say why and run another value
                limit = beat.knob_limits.get(knob.key)
                if knob.key == "partitions" and value <= highest:
                    assert limit is not None and limit.clamp(value) != value, where
                    with pytest.raises(engine.ScenarioError, match=r"partition\(s\)"):
                        engine.validate(sc)
                    continue
                if knob.key == "partitions" and grown is not None and value >= grown:
                    assert limit is not None and limit.clamp(value) != value, where
                    with pytest.raises(engine.ScenarioError, match=r"which is higher than the requested"
                                       r"|already has \d+ partitions"):
                        engine.validate(sc)
                    continue
                assert limit is None or limit.clamp(value) == value, (where, "a limit on a value that runs")
                parsed = engine.validate(sc)
                if applies and knob.key in CHECKED_IN_CONFIG:
                    _check_reaches_the_engine(knob.key, value, sc, resolve(parsed))


@pytest.mark.parametrize("scene_id", BUILT)
def test_chart_only_knobs_never_reach_the_engine(scene_id):
    scene = scene_for(scene_id)
    assert tuple(k.key for k in scene.knobs if chart_only(k)) == CHART_ONLY.get(scene_id, ())
    for knob in scene.knobs:
        if not chart_only(knob):
            continue
        assert "not a Kafka config" in knob.label
        section, name = split_target(knob.target)
        for value in _all_values(knob):
            sc = scene.scenario_for(scene.beats[0], {knob.key: format_knob_value(value)})
            assert name not in sc.get(section, {})
            engine.validate(sc)


# --------------------------------------------------------------------------------------------
# every beat on the engine


@pytest.mark.parametrize(("scene_id", "beat_id"), BEATS)
def test_beat_replays_without_invariant_violations(scene_id, beat_id):
    scene = scene_for(scene_id)
    beat = scene.beat(beat_id)
    engine.validate(scene.scenario_for(beat))
    r = run(scene, beat_id)
    assert r["steps"]
    assert r.get("violations", []) == [], r.get("violations")[:3]
    missing = set(beat.focus_step_kinds) - kinds(r)
    assert not missing, missing
    if beat.compare is not None:
        c = run(scene, beat_id, compare=True)
        assert c["steps"]
        assert c["violations"] == [], c["violations"][:3]


@pytest.mark.parametrize(("scene_id", "beat_id"), BEATS)
def test_beat_and_its_comparison_are_deterministic(scene_id, beat_id):
    scene = scene_for(scene_id)
    sc = scene.scenario_for(beat_id)
    assert engine.simulate(sc, steps=True) == engine.simulate(sc, steps=True)
    if scene.beat(beat_id).compare is not None:
        csc = scene.compare_scenario_for(beat_id)
        assert engine.simulate(csc, steps=True) == engine.simulate(csc, steps=True)


def _proposals_named(label: str | None) -> list[str]:
    """The proposals a run may use: the KIPs its label names, if it says it is not Kafka."""
    if label is None or not PROPOSAL_LABEL_RE.match(label):
        return []
    return list(dict.fromkeys(re.findall(r"KIP-\d+", label)))


@pytest.mark.parametrize(("scene_id", "beat_id"), BEATS)
def test_labels_say_which_runs_are_history_or_a_proposal(scene_id, beat_id):
    """A run uses a proposal exactly when its label says "not Kafka" and names the KIP; a beat runs a
    historic Kafka version exactly when its label says "History:", and its comparison is today's."""
    scene = scene_for(scene_id)
    beat = scene.beat(beat_id)
    r = run(scene, beat_id)
    assert r["proposals"] == _proposals_named(beat.label), beat.label
    version = scene.knob_values(beat).get("kafka_version")
    historic = version in HISTORIC_VERSIONS
    assert (beat.label or "").startswith("History:") == historic, (version, beat.label)
    if historic:
        assert beat.compare is not None and beat.compare.patch == {"kafka_version": "4.1"}
        assert "4.1" in beat.compare.label
    if beat.compare is not None:
        c = run(scene, beat_id, compare=True)
        assert c["proposals"] == _proposals_named(beat.compare.label), beat.compare.label
        if "kafka_version" in beat.compare.patch:
            assert c["profile"]["kafka_version"] == beat.compare.patch["kafka_version"]


@pytest.mark.parametrize("scene_id", BUILT)
def test_every_live_answer_speaks_on_every_beat_and_every_comparison(scene_id):
    from app.qa import find, live_answer

    scene = scene_for(scene_id)
    live = [q for q in scene.qa if q.live]
    for q in live:
        found = find(q.id)
        assert found is not None and found.live and found.scene == scene_id, q.id
    for beat in scene.beats:
        scenarios = [scene.scenario_for(beat)]
        if beat.compare is not None:
            scenarios.append(scene.compare_scenario_for(beat))
        for sc in scenarios:
            for with_steps in (True, False):
                r = engine.simulate(sc, steps=with_steps)
                for q in live:
                    text = live_answer(q, r)
                    where = (beat.id, with_steps, q.id, text)
                    assert text and text.endswith(".") and len(text) < 600, where
                    assert "None" not in text and "{}" not in text, where


@pytest.mark.parametrize("scene_id", BUILT)
def test_page_renders_every_beat(scene_id):
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # starlette 1.x warns that its TestClient wants httpx2
        from fastapi.testclient import TestClient

    from app.main import app

    scene = scene_for(scene_id)
    client = TestClient(app)
    title = scene.title.replace("=", "")
    for url in [f"/scenes/{scene_id}"] + [f"/scenes/{scene_id}?beat={b.id}" for b in scene.beats]:
        resp = client.get(url)
        assert resp.status_code == 200, url
        assert title in resp.text.replace("=", ""), url
