"""Scene 06 (leader epochs): the data loads, every knob value reaches the engine, and every beat
replays on the real engine showing what its narration claims, under the historic rules it names
and, through its comparison run, under Kafka 4.1.

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

SCENE = "06"
BEATS = ["hw-truncation-loses", "double-crash-diverges", "diverging-epoch", "fast-double-failover"]


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


def rows(result: dict[str, Any], b: int) -> list[tuple[int, int, str]]:
    return [(e["offset"], e["epoch"], e["record"]) for e in result["final"]["brokers"][str(b)]["log"]]


def records(result: dict[str, Any], b: int) -> list[str]:
    return [e["record"] for e in result["final"]["brokers"][str(b)]["log"]]


def truncated(result: dict[str, Any], b: int, why: str | None = None) -> list[str]:
    return [t["record"] for t in result["final"]["brokers"][str(b)]["truncated"] if why in (None, t["why"])]


def cache(result: dict[str, Any], b: int) -> list[list[int]]:
    return result["final"]["brokers"][str(b)]["epoch_cache"]


def steps(result: dict[str, Any], kind: str) -> list[dict[str, Any]]:
    return [s for s in result["steps"] if s["kind"] == kind]


def kinds(result: dict[str, Any]) -> set[str]:
    return {s["kind"] for s in result["steps"]}


# --------------------------------------------------------------------------------------------
# the data


def test_header_panels_and_beats(scene):
    assert (scene.id, scene.slug) == ("06", "leader-epoch")
    assert scene.promise and scene.previously and 10 <= scene.minutes <= 25
    assert scene.panels == ["epoch_cache"]
    assert [b.id for b in scene.beats] == BEATS
    assert scene.challenge.goal == "lose_acked_write"


def test_historic_beats_are_labelled_and_compared_with_today(scene):
    for beat in scene.beats:
        version = scene.knob_values(beat)["kafka_version"]
        if version in ("0.10", "1.1"):
            assert beat.label and beat.label.startswith("History:"), beat.id
            assert ("KIP-101" in beat.label) == (version == "0.10")
            assert ("KIP-279" in beat.label) == (version == "1.1")
            assert beat.compare is not None and beat.compare.patch == {"kafka_version": "4.1"}
            assert "4.1" in beat.compare.label
        else:
            assert beat.label is None and beat.compare is None


def test_no_vector_clock_claim(scene):
    """A leader epoch is one number per partition; the scene may only say it is NOT a vector clock."""
    texts = [b.narration for b in scene.beats] + [q.answer for q in scene.qa]
    texts += [line.text for block in scene.pseudocode for line in block.lines]
    mentions = [t for t in texts if "vector clock" in t.lower()]
    assert mentions, "the scene should correct the vector-clock misconception"
    for text in mentions:
        assert "not a vector clock" in text or text.startswith("No."), text


def _all_values(knob: Knob) -> list:
    if knob.kind == "choice":
        return list(knob.choices or [])
    if knob.kind == "bool":
        return [False, True]
    return list(range(knob.min, knob.max + 1))


def test_knobs_are_real_keys_and_every_value_validates_on_every_beat(scene):
    from engine.scenario import resolve

    keys = [k.key for k in scene.knobs]
    assert keys == ["kafka_version", "replication.factor", "min.insync.replicas", "acks",
                    "unclean.leader.election.enable"]
    assert set(scene.knob("kafka_version").choices) >= {"0.10", "1.1", "3.6", "4.1"}
    all_defaults = {k.key: format_knob_value(k.default) for k in scene.knobs}
    for knob in scene.knobs:
        section, key = split_target(knob.target)
        for value in _all_values(knob):
            for beat in scene.beats:
                presets = {k: format_knob_value(v) for k, v in beat.knobs.items()}
                sc = scene.scenario_for(beat, {**all_defaults, **presets, knob.key: format_knob_value(value)})
                got = sc[key] if section is None else sc[section][key]
                assert got == value
                cfg = resolve(engine.validate(sc))
                if knob.key == "kafka_version":
                    assert cfg.profile.version == value
                elif knob.key == "replication.factor":
                    assert cfg.replicas == list(range(1, value + 1))
                elif knob.key == "min.insync.replicas":
                    assert cfg.min_isr == value


def test_base_scenario_agrees_with_knob_defaults(scene):
    for knob in scene.knobs:
        section, key = split_target(knob.target)
        holder = scene.base_scenario if section is None else scene.base_scenario.get(section, {})
        if key in holder:
            assert holder[key] == knob.default, knob.key
    assert scene.base_scenario["actions"] == []


def test_narration_predict_and_qa_shape(scene):
    from app.qa import LIVE

    for beat in scene.beats:
        paras = beat.paragraphs
        assert 2 <= len(paras) - 1 <= 5 and paras[-1].startswith("Source: "), beat.id
        assert re.search(r"(\.scala|\.java|KIP-|§)", paras[-1]), beat.id
        p = beat.predict
        assert len(p.options) >= 3 and len(set(p.options)) == len(p.options) and p.question.endswith("?")
    assert 5 <= len(scene.qa) <= 10
    assert sum(1 for q in scene.qa if q.live) >= 2
    for q in scene.qa:
        assert q.question.endswith("?") and q.sources and q.tags and q.scene == SCENE
        sentences = [s for s in re.split(r"(?<=[.!?])\s+", q.answer.strip()) if s]
        assert 2 <= len(sentences) <= 6, q.id
        if q.live:
            assert q.live in LIVE, q.live


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
    for k in ("follower_truncate_to_hw", "leader_diverging_epoch", "follower_truncate", "leader_become"):
        assert k in seen, k


def test_page_renders():
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # starlette 1.x warns that its TestClient wants httpx2
        from fastapi.testclient import TestClient

    from app.main import app

    resp = TestClient(app).get("/scenes/06")
    assert resp.status_code == 200
    assert "Leader epochs fix truncation" in resp.text


# --------------------------------------------------------------------------------------------
# every beat on the engine


@pytest.mark.parametrize("beat_id", BEATS)
def test_beat_replays_without_invariant_violations(scene, beat_id):
    r = run(scene, beat_id)
    assert r["steps"]
    assert r.get("violations", []) == [], r.get("violations")[:3]
    assert r["proposals"] == []
    missing = set(scene.beat(beat_id).focus_step_kinds) - kinds(r)
    assert not missing, missing


@pytest.mark.parametrize("beat_id", BEATS)
def test_beat_is_deterministic_and_its_comparison_is_clean(scene, beat_id):
    sc = scene.scenario_for(beat_id)
    assert engine.simulate(sc, steps=True) == engine.simulate(sc, steps=True)
    if scene.beat(beat_id).compare is not None:
        c = run(scene, beat_id, compare=True)
        assert c["violations"] == [] and c["proposals"] == []
        assert c["profile"]["kafka_version"] == "4.1"


def test_s8_hw_truncation_loses_m1_under_0_10_only(scene):
    beat = "hw-truncation-loses"
    restart = action_index(scene, beat, do="restart", broker=2)
    before = run(scene, beat, upto=restart)  # m1 acked, B2 crashed, HW not yet learned
    assert [(p["records"], p["outcome"]) for p in before["produce"]] == [(["m0"], "acked"), (["m1"], "acked")]
    assert before["final"]["brokers"]["1"]["hw"] == 2
    assert before["final"]["brokers"]["2"]["hw"] == 1, "§3.3: the follower learns the HW one fetch late"
    assert records(before, 2) == ["m0", "m1"]

    r = run(scene, beat)
    assert r["profile"]["kafka_version"] == "0.10"
    assert truncated(r, 2, "high_watermark") == ["m1"], "S8.2 historic: B truncates to its own HW on restart"
    elect = steps(r, "controller_elect_leader")
    assert elect and "B2" in elect[0]["text"]
    assert r["final"]["partition"]["leader"] == 2
    assert r["lost_acked_records"] == ["m1"], "S8.3 historic: committed m1 is lost"
    assert records(r, 1) == records(r, 2) == ["m0"], "S8.3: A, as follower, also ends at B's LEO"
    assert truncated(r, 1) == ["m1"]

    today = run(scene, beat, compare=True)
    assert truncated(today, 2) == [] and truncated(today, 1) == [], "S8.2 current: B keeps m1"
    assert today["lost_acked_records"] == []
    assert records(today, 1) == records(today, 2) == ["m0", "m1"]
    assert "follower_truncate_to_hw" not in kinds(today)
    # the same replay through the knob gives the same run as the comparison
    assert run(scene, beat, {"kafka_version": "4.1"})["final"] == today["final"]


def test_s9_double_crash_diverges_under_0_10_and_agrees_under_4_1(scene):
    beat = "double-crash-diverges"
    r = run(scene, beat)
    # m0 reached B2's disk by writeback; m1 reached only B1's
    assert truncated(r, 2, "power_loss") == ["m1"]
    assert truncated(r, 1) == []
    m2 = next(p for p in r["produce"] if p["records"] == ["m2"])
    assert m2["outcome"] == "acked" and m2["offsets"] == [1], "S9.3: B writes m2 at offset 1"
    assert r["final"]["partition"]["leader"] == 2
    assert r["lost_acked_records"] == ["m1"], "S9.4: m1 was on one broker, which lost the election"
    # historic: permanent divergence at offset 1, and B1 even rejoined the ISR
    assert records(r, 1)[:2] == ["m0", "m1"] and records(r, 2)[:2] == ["m0", "m2"]
    assert sorted(r["final"]["partition"]["isr"]) == [1, 2]
    assert "leader_diverging_epoch" not in kinds(r)

    today = run(scene, beat, compare=True)
    assert truncated(today, 1, "diverging_epoch") == ["m1"], "S9.4 current: DivergingEpoch(0, 1)"
    div = steps(today, "leader_diverging_epoch")
    assert div and "DivergingEpoch(0, 1)" in div[0]["text"]
    assert rows(today, 1) == rows(today, 2)
    assert records(today, 1) == ["m0", "m2"]
    assert cache(today, 1) == cache(today, 2)
    assert today["lost_acked_records"] == ["m1"]


def test_diverging_epoch_walkthrough(scene):
    beat = "diverging-epoch"
    restart = action_index(scene, beat, do="restart", broker=1)
    before = run(scene, beat, upto=restart)
    assert rows(before, 1) == [(0, 0, "a"), (1, 0, "b"), (2, 0, "x"), (3, 0, "y")]
    assert rows(before, 2) == [(0, 0, "a"), (1, 0, "b"), (2, 1, "p")]
    assert cache(before, 1) == [[0, 0]] and cache(before, 2) == [[0, 0], [1, 2]]
    assert before["final"]["partition"]["leader"] == 2 and before["final"]["partition"]["leader_epoch"] == 1

    r = run(scene, beat)
    ks = [s["kind"] for s in r["steps"] if s["t_ms"] >= steps(r, "broker_restart")[0]["t_ms"]]
    assert ks.index("leader_diverging_epoch") < ks.index("follower_truncate") < ks.index("follower_fetch")
    div = steps(r, "leader_diverging_epoch")[0]
    assert "offset 4" in div["text"] and "last epoch 0" in div["text"]
    assert "DivergingEpoch(0, 2)" in div["text"]
    assert "offset 2" in steps(r, "follower_truncate")[0]["text"]
    assert truncated(r, 1, "diverging_epoch") == ["x", "y"]
    for b in (1, 2, 3):
        assert rows(r, b) == [(0, 0, "a"), (1, 0, "b"), (2, 1, "p")]
        assert cache(r, b) == [[0, 0], [1, 2]]
    assert r["final"]["partition"]["isr"] == [1, 2, 3]
    assert sorted(r["lost_acked_records"]) == ["x", "y"], "acks=1 records only the old leader had (S11)"
    assert all(p["acks"] in (1, "1") for p in r["produce"] if p["records"][0] in ("x", "y"))


def test_s10_fast_double_failover_diverges_under_1_1_and_truncates_c_under_4_1(scene):
    beat = "fast-double-failover"
    r = run(scene, beat)
    assert r["profile"]["kafka_version"] == "1.1"
    assert records(r, 2)[1] == "c" and records(r, 3)[1] == "b", "S10.4 pre-KIP-279: divergence"
    assert truncated(r, 2) == []
    assert r["lost_acked_records"] == ["c"]

    today = run(scene, beat, compare=True)
    assert today["final"]["partition"]["leader"] == 3 and today["final"]["partition"]["leader_epoch"] == 2
    div = steps(today, "leader_diverging_epoch")
    assert div and "DivergingEpoch(0, 2)" in div[0]["text"], "S10.4: the largest epoch <= 1 is 0"
    assert truncated(today, 2, "diverging_epoch") == ["c"]
    assert "offset 1" in steps(today, "follower_truncate")[0]["text"], "S10.4: min(2, own end of e0 = 1)"
    for b in (2, 3):
        assert rows(today, b) == [(0, 0, "a"), (1, 0, "b"), (2, 2, "d")]
    assert cache(today, 2) == cache(today, 3) == [[0, 0], [2, 2]]
    assert today["lost_acked_records"] == ["c"], "S10.5: c (acks=1 on 2) is the only acked loss"
    # 3.6 follows today's rule too
    assert truncated(run(scene, beat, {"kafka_version": "3.6"}), 2, "diverging_epoch") == ["c"]


def test_live_answers_read_the_simulation(scene):
    from app.qa import live_answer

    by_id = {q.id: q for q in scene.qa}
    r = run(scene, "double-crash-diverges")
    text = live_answer(by_id["what-is-a-leader-epoch"], r)
    assert "first disagree at offset 1" in text and "0.10" in text
    assert "m1" in live_answer(by_id["why-hw-truncation-lost-acked"], run(scene, "hw-truncation-loses"))
    agree = live_answer(by_id["how-diverging-epoch-works"], run(scene, "diverging-epoch"))
    assert "epoch 1 from offset 2" in agree and "disagree" not in agree
