"""Deep dive D4 (the arithmetic of losing data): the data loads, every knob value reaches the
engine (the chart-only failure-rate knobs never do), and every beat replays on the real engine
showing what its narration claims: two copies lost to two overlapping failures and a third copy
saving them, a rack power cut taking all three copies without broker.rack and none with it, a
site-wide cut beating RF 5 unless every message is fsynced, and the two CAP choices
(min.insync.replicas refuses writes during a network split; unclean election trades an
acknowledged write for availability).

If one of these fails because the engine disagrees with kafka-semantics.md, the engine is wrong:
do not bend the narration or the assertion to make it pass.
"""

from __future__ import annotations

import re
from typing import Any

import pytest

from scenes import Scene, load_scene
from scenes.model import Knob, format_knob_value, split_target

engine = pytest.importorskip("engine")
if not hasattr(engine, "simulate"):
    pytest.skip("the engine has no simulate() yet", allow_module_level=True)

SCENE = "d4"
BEATS = ["two-copies-two-failures", "rack-power-cut", "site-power-cut", "min-isr-chooses-consistency",
         "unclean-chooses-availability"]
# the rack beat writes to partitions 0-2, so fewer partitions is the engine's own clear refusal
KNOWN_REFUSALS = {"partitions": "partition"}
# knobs that only move the chart's cursor (only_if with an empty list: never written)
CHART_ONLY = ("afr", "repair_h")


@pytest.fixture(scope="module")
def scene() -> Scene:
    return load_scene(SCENE)


_cache: dict[tuple, dict[str, Any]] = {}


def run(scene: Scene, beat_id: str, overrides: dict | None = None, upto: int | None = None,
        compare: bool = False) -> dict[str, Any]:
    key = (beat_id, tuple(sorted((overrides or {}).items())), upto, compare)
    if key not in _cache:
        beat = scene.beat(beat_id)
        actions = None if upto is None else beat.actions[:upto]
        sc = (scene.compare_scenario_for(beat, overrides, actions) if compare
              else scene.scenario_for(beat, overrides, actions))
        _cache[key] = engine.simulate(sc, steps=True, check_invariants=True)
    return _cache[key]


def action_index(scene: Scene, beat_id: str, **match: Any) -> int:
    for i, a in enumerate(scene.beat(beat_id).actions):
        if all(a.get(k) == v for k, v in match.items()):
            return i
    raise AssertionError(f"{beat_id} has no action {match}")


def records(state: dict[str, Any], b: int) -> list[str]:
    return [e["record"] for e in state["brokers"][str(b)]["log"]]


def steps(result: dict[str, Any], kind: str) -> list[dict[str, Any]]:
    return [s for s in result["steps"] if s["kind"] == kind]


def kinds(result: dict[str, Any]) -> set[str]:
    return {s["kind"] for s in result["steps"]}


def produce(result: dict[str, Any], record: str) -> dict[str, Any]:
    return next(p for p in result["produce"] if record in (p.get("records") or []))


def latency_ms(result: dict[str, Any], record: str) -> int:
    p = produce(result, record)
    assert p["outcome"] == "acked", p
    return int(p["done_ms"]) - int(p["sent_ms"])


def _all_values(knob: Knob) -> list:
    if knob.kind == "choice":
        return list(knob.choices or [])
    if knob.kind == "bool":
        return [False, True]
    step = knob.step or 1
    return list(range(knob.min, knob.max + 1, step))


# --------------------------------------------------------------------------------------------
# the data and every beat on the engine


def test_base_scenario_agrees_with_knob_defaults(scene):
    for knob in scene.knobs:
        section, key = split_target(knob.target)
        holder = scene.base_scenario if section is None else scene.base_scenario.get(section, {})
        if key in holder:
            assert holder[key] == knob.default, knob.key
    assert scene.base_scenario["actions"] == []


def test_header_matches_the_course_map(scene):
    from scenes import SCENE_IDS

    summary = SCENE_IDS[SCENE]
    assert (scene.slug, scene.title, scene.minutes, scene.promise) == (
        summary.slug, summary.title, summary.minutes, summary.promise)
    assert summary.built and scene.previously
    assert [b.id for b in scene.beats] == BEATS


def test_narration_predict_and_qa_shape(scene):
    from app.qa import LIVE

    for beat in scene.beats:
        paras = beat.paragraphs
        assert 2 <= len(paras) - 1 <= 5 and paras[-1].startswith("Source: "), beat.id
        assert re.search(r"(\.scala|\.java|KIP-|§)", paras[-1]), beat.id
        p = beat.predict
        assert len(p.options) >= 3 and len(set(p.options)) == len(p.options) and p.question.endswith("?")
        if beat.compare is not None:
            assert beat.compare.title and beat.compare.label and beat.compare.narration
    assert 5 <= len(scene.qa) <= 10
    assert sum(1 for q in scene.qa if q.live) >= 2
    for q in scene.qa:
        assert q.question.endswith("?") and q.sources and q.tags and q.scene == SCENE
        sentences = [s for s in re.split(r"(?<=[.!?])\s+", q.answer.strip()) if s]
        assert 2 <= len(sentences) <= 6, q.id
        if q.live:
            assert q.live in LIVE, q.live
    assert scene.challenge.goal == "lose_acked_write" and scene.challenge.text


def test_pseudocode_kinds_exist_once_and_link_the_engine_file(scene):
    from engine.steps import STEP_KINDS

    source_re = re.compile(r"^[a-z][\w/.-]+\.(scala|java)(#L\d+(-L\d+)?)?$")
    seen: dict[str, str] = {}
    for block in scene.pseudocode:
        for i, line in enumerate(block.lines):
            if line.source is not None:
                assert source_re.match(line.source), line.source
            for k in line.kinds:
                assert k in STEP_KINDS, (block.id, k)
                assert k not in seen, f"{k} is on {seen[k]} and {block.id}:{i}"
                seen[k] = f"{block.id}:{i}"
                if STEP_KINDS[k].path and line.source:
                    assert line.source.split("#")[0] == STEP_KINDS[k].path, (block.id, k)
    for beat in scene.beats:
        for k in beat.focus_step_kinds:
            assert k in STEP_KINDS, (beat.id, k)
            assert k in seen or not STEP_KINDS[k].path, (beat.id, k, "focus kind without a pseudocode line")


@pytest.mark.parametrize("beat_id", BEATS)
def test_beat_replays_without_invariant_violations(scene, beat_id):
    r = run(scene, beat_id)
    assert r["steps"]
    assert r.get("violations", []) == [], r.get("violations")[:3]
    missing = set(scene.beat(beat_id).focus_step_kinds) - kinds(r)
    assert not missing, missing
    if scene.beat(beat_id).compare is not None:
        c = run(scene, beat_id, compare=True)
        assert c["violations"] == []


@pytest.mark.parametrize("beat_id", BEATS)
def test_beat_is_deterministic(scene, beat_id):
    sc = scene.scenario_for(beat_id)
    assert engine.simulate(sc, steps=True) == engine.simulate(sc, steps=True)


def test_chart_only_knobs_never_reach_the_engine(scene):
    for key in CHART_ONLY:
        knob = scene.knob(key)
        assert "not a Kafka config" in knob.label and knob.only_if == {key: []}
        section, name = split_target(knob.target)
        for value in _all_values(knob):
            sc = scene.scenario_for(scene.beats[0], {key: format_knob_value(value)})
            assert name not in sc.get(section, {})
            engine.validate(sc)


def test_every_knob_value_validates_on_every_beat(scene):
    all_defaults = {k.key: format_knob_value(k.default) for k in scene.knobs}
    for knob in scene.knobs:
        if knob.key in CHART_ONLY:
            continue
        section, key = split_target(knob.target)
        for value in _all_values(knob):
            for beat in scene.beats:
                presets = {k: format_knob_value(v) for k, v in beat.knobs.items()}
                values = {**all_defaults, **presets, knob.key: format_knob_value(value)}
                sc = scene.scenario_for(beat, values)
                if scene.knob_applies(knob.key, scene.knob_values(beat, values)):
                    got = sc[key] if section is None else sc[section][key]
                    assert got == value
                try:
                    engine.validate(sc)
                except engine.ScenarioError as exc:
                    # the engine's own clear refusal for a layout the beat cannot use
                    assert knob.key in KNOWN_REFUSALS, (knob.key, value, beat.id, exc.problems)
                    assert any(KNOWN_REFUSALS[knob.key] in p["message"] for p in exc.problems), exc.problems


def test_page_renders_with_the_chart(scene):
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # starlette 1.x warns that its TestClient wants httpx2
        from fastapi.testclient import TestClient

    from app.main import app

    client = TestClient(app)
    for beat in scene.beats:
        resp = client.get(f"/scenes/{SCENE}?beat={beat.id}")
        assert resp.status_code == 200, beat.id
        assert scene.title.replace("=", "") in resp.text.replace("=", "")


# --------------------------------------------------------------------------------------------
# what each beat claims


def partition_rows(result):
    return [(p["replicas"], p["lost_acked_records"]) for p in result.get("partitions") or []]


def test_panels_and_layout(scene):
    assert scene.panels[0] == "loss_chart"
    assert [b["id"] for b in scene.base_scenario["brokers"]] == list(range(1, 10))
    assert all("rack" not in b for b in scene.base_scenario["brokers"]), "base: nobody set broker.rack"
    racks = {b["id"]: b["rack"] for b in scene.beat("rack-power-cut").compare.patch["brokers"]}
    assert racks == {i: "abc"[(i - 1) // 3] for i in range(1, 10)}
    assert all(b.label is None for b in scene.beats), "every beat is Kafka"


def test_two_overlapping_failures_lose_two_copies_but_not_three(scene):
    r = run(scene, "two-copies-two-failures")
    assert r["final"]["partition"]["replicas"] == [1, 2]
    assert produce(r, "a")["outcome"] == "acked"
    assert sorted(r["lost_acked_records"]) == ["a", "b"]
    assert all(records(r["final"], x) == [] for x in (1, 2))
    c = run(scene, "two-copies-two-failures", compare=True)
    assert c["final"]["partition"]["replicas"] == [1, 2, 3]
    assert c["lost_acked_records"] == [] and c["final"]["partition"]["leader"] == 3
    assert records(c["final"], 3) == ["a", "b"]


def test_a_rack_power_cut_takes_every_copy_without_broker_rack(scene):
    r = run(scene, "rack-power-cut")
    assert partition_rows(r) == [([1, 2, 3], ["a"]), ([2, 3, 4], []), ([3, 4, 5], [])]
    assert r["lost_acked_records"] == ["a"]
    # partition 1 kept one copy and refused acks=all writes until the rack came back
    p1 = run(scene, "rack-power-cut", upto=action_index(scene, "rack-power-cut", do="restart", broker=1))
    isr1 = p1["partitions"][1]["final"]["partition"]["isr"]
    assert isr1 == [4]
    c = run(scene, "rack-power-cut", compare=True)
    assert partition_rows(c) == [([1, 4, 7], []), ([5, 8, 2], []), ([9, 3, 6], [])]
    assert c["lost_acked_records"] == []


def test_a_site_wide_power_cut_beats_rf5_unless_every_message_is_flushed(scene):
    r = run(scene, "site-power-cut")
    assert r["final"]["partition"]["replicas"] == [1, 2, 3, 4, 5]
    assert sorted(r["lost_acked_records"]) == ["a", "b"]
    assert len({s["broker"] for s in steps(r, "broker_power_loss")}) == 9
    c = run(scene, "site-power-cut", compare=True)
    assert c["lost_acked_records"] == []
    assert "broker_flush" in kinds(c)


def test_min_isr_refuses_writes_during_a_network_split(scene):
    beat = "min-isr-chooses-consistency"
    r = run(scene, beat)
    shrink = steps(r, "leader_shrink_isr")[0]
    assert shrink["t_ms"] == 45_000 and "{1}" in shrink["text"]
    assert steps(r, "leader_expire_produce")[0]["t_ms"] < shrink["t_ms"], "b times out first"
    refused = steps(r, "leader_reject_not_enough_replicas")
    assert refused and all(s["t_ms"] > shrink["t_ms"] for s in refused)
    assert steps(r, "leader_hold_high_watermark")
    heal = steps(r, "network_heal")[0]
    for rec in ("b", "c"):
        p = produce(r, rec)
        assert p["outcome"] == "acked" and p["done_ms"] > heal["t_ms"]
    assert r["lost_acked_records"] == [] and r["final"]["partition"]["isr"] == [1, 2, 3]
    # min.insync.replicas=1: acknowledged during the split, on broker 1 alone
    c = run(scene, beat, compare=True)
    for rec in ("b", "c"):
        p = produce(c, rec)
        assert p["outcome"] == "acked" and p["done_ms"] < heal["t_ms"]
    assert "leader_reject_not_enough_replicas" not in kinds(c)
    during = run(scene, beat, compare=True, upto=action_index(scene, beat, do="heal", broker=1))
    assert records(during["final"], 1) == ["a", "b", "c"]
    assert records(during["final"], 2) == ["a"] and records(during["final"], 3) == ["a"]


def test_unclean_election_trades_an_acked_write_for_availability(scene):
    beat = "unclean-chooses-availability"
    r = run(scene, beat)
    elect = steps(r, "controller_elect_unclean")
    assert elect and "B3" in elect[0]["text"]
    assert r["final"]["partition"]["leader"] == 3 and r["final"]["partition"]["online"]
    assert r["lost_acked_records"] == ["b"]
    c_write = produce(r, "c")
    assert c_write["outcome"] != "acked" and c_write["error"] == "NOT_ENOUGH_REPLICAS"
    off = run(scene, beat, compare=True)
    assert not off["final"]["partition"]["online"] and off["final"]["partition"]["leader"] == -1
    assert off["lost_acked_records"] == []
    assert "b" in records(off["final"], 1) and "b" in records(off["final"], 2)


def test_live_answers_read_the_simulation(scene):
    from app.qa import live_answer

    by_id = {q.id: q for q in scene.qa}
    text = live_answer(by_id["is-rf3-enough"], run(scene, "rack-power-cut"))
    assert "no broker.rack set" in text
    text = live_answer(by_id["is-rf3-enough"], run(scene, "rack-power-cut", compare=True))
    assert "racks a/b/c" in text and "different racks" in text
    assert "availability" in live_answer(by_id["kafka-cap"], run(scene, "unclean-chooses-availability"))
    assert "consistency" in live_answer(
        by_id["kafka-cap"], run(scene, "unclean-chooses-availability", compare=True))
    for q in scene.qa:
        if q.live:
            for beat in scene.beats:
                assert live_answer(q, run(scene, beat.id)), (q.id, beat.id)
