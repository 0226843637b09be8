"""The curriculum data: it loads, it is internally consistent, and it only names real things
(engine step kinds, scenario paths the engine accepts)."""

from __future__ import annotations

import subprocess
import sys
import tomllib

import pytest

import scenes
from scenes import COURSE_QA, SCENE_IDS, all_qa, list_scenes, load_scene
from scenes.model import Scene, format_knob_value

CURRICULUM_ORDER = ["01", "01a", "02", "02a", "03", "04", "04a", "05", "05a", "06", "07", "08", "09",
                    "d1", "d2", "d3", "d4"]
BUILT = [s.id for s in list_scenes() if s.built]


# --------------------------------------------------------------------------------------------
# the course map


def test_course_map_has_all_17_scenes_in_order():
    assert [s.id for s in list_scenes()] == CURRICULUM_ORDER
    assert list(SCENE_IDS) == CURRICULUM_ORDER
    for s in list_scenes():
        assert s.title and s.promise and s.minutes > 0 and s.slug
        assert s.track == ("deep-dive" if s.id.startswith("d") else "core")


def test_only_built_scenes_have_data_and_05_is_built():
    assert "05" in BUILT
    for s in list_scenes():
        if s.built:
            assert isinstance(load_scene(s.id), Scene)
        else:
            with pytest.raises(KeyError):
                load_scene(s.id)
    with pytest.raises(KeyError):
        load_scene("99")


def test_scene_ids_normalise():
    assert scenes.normalize_scene_id("05-durability") == "05"
    assert scenes.normalize_scene_id("D1") == "d1"
    assert scenes.normalize_scene_id("../etc/passwd") is None
    assert scenes.normalize_scene_id("") is None


def test_loading_is_cached():
    assert load_scene("05") is load_scene("05")


def test_scenes_package_does_not_import_engine_or_app():
    code = ("import sys, scenes; scenes.load_scene('05'); "
            "print(any(m == 'engine' or m.startswith(('engine.', 'app')) for m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_unknown_fields_are_rejected():
    path = scenes.DATA_DIR / "05.toml"
    data = tomllib.loads(path.read_text(encoding="utf-8"))
    data["qa"] = [{**qa, "scene": "05"} for qa in data["qa"]]
    Scene.model_validate(data)  # the file itself is fine
    bad = {**data, "surprise": 1}
    with pytest.raises(ValueError):
        Scene.model_validate(bad)
    bad_beat = dict(data["beats"][0], predict={**data["beats"][0]["predict"], "answer": 9})
    with pytest.raises(ValueError):
        Scene.model_validate({**data, "beats": [bad_beat]})


# --------------------------------------------------------------------------------------------
# scene 05


@pytest.fixture(scope="module")
def s05() -> Scene:
    return load_scene("05")


def test_header(s05):
    assert (s05.id, s05.slug) == ("05", "durability")
    assert s05.promise and s05.previously and 10 <= s05.minutes <= 40


def test_knobs_are_the_real_kafka_keys_with_the_agreed_ranges(s05):
    knobs = {k.key: k for k in s05.knobs}
    assert list(knobs) == ["acks", "min.insync.replicas", "replication.factor",
                           "unclean.leader.election.enable", "eligible.leader.replicas.version",
                           "kafka_version"]
    assert knobs["acks"].choices == ["0", "1", "all"] and knobs["acks"].target == "producer.acks"
    assert (knobs["min.insync.replicas"].min, knobs["min.insync.replicas"].max) == (1, 5)
    assert knobs["min.insync.replicas"].target == "topic.min.insync.replicas"
    assert (knobs["replication.factor"].min, knobs["replication.factor"].max) == (1, 5)
    assert knobs["replication.factor"].target == "topic.replication.factor"
    assert knobs["unclean.leader.election.enable"].kind == "bool"
    assert knobs["unclean.leader.election.enable"].target == "topic.unclean.leader.election.enable"
    elr = knobs["eligible.leader.replicas.version"]
    assert (elr.min, elr.max) == (0, 1)
    assert knobs["eligible.leader.replicas.version"].target == "controller.eligible.leader.replicas.version"
    assert knobs["kafka_version"].choices == ["0.8", "0.10", "3.6", "4.1"]
    assert knobs["kafka_version"].target == "kafka_version"


def test_base_scenario_has_five_brokers(s05):
    assert [b["id"] for b in s05.base_scenario["brokers"]] == [1, 2, 3, 4, 5]


def test_knob_parse_gives_clear_messages(s05):
    mi = s05.knob("min.insync.replicas")
    assert mi.parse("3") == 3
    for bad in ("0", "6", "two", "", "1e9", "-1", "9" * 500):
        with pytest.raises(ValueError, match="min.insync.replicas"):
            mi.parse(bad)
    assert s05.knob("unclean.leader.election.enable").parse("true") is True
    with pytest.raises(ValueError):
        s05.knob("unclean.leader.election.enable").parse("maybe")
    with pytest.raises(ValueError, match="acks"):
        s05.knob("acks").parse("2")
    with pytest.raises(ValueError):
        s05.scenario_for(s05.beats[0], {"kafka_version": "9.9"})
    with pytest.raises(KeyError):
        s05.scenario_for(s05.beats[0], {"no.such.knob": "1"})


def test_scenario_for_does_not_mutate_the_scene(s05):
    before = s05.model_dump()
    sc = s05.scenario_for("unclean-election", {"acks": "1"})
    sc["topic"]["min.insync.replicas"] = 99
    sc["actions"].append({"do": "settle"})
    assert s05.model_dump() == before


def test_six_curriculum_beats_in_order(s05):
    assert [b.id for b in s05.beats] == ["standard-setup", "acks-all-means-one", "min-isr-refuses", "rf1-cap",
                                         "unclean-election", "elr-recovers"]
    assert s05.beat("acks-all-means-one").knobs["min.insync.replicas"] == 1
    assert s05.beat("rf1-cap").knobs == {"replication.factor": 1, "min.insync.replicas": 2}
    assert s05.beat("unclean-election").knobs["unclean.leader.election.enable"] is True
    assert s05.beat("elr-recovers").knobs["eligible.leader.replicas.version"] == 1


# --------------------------------------------------------------------------------------------
# pseudocode


def test_required_pseudocode_blocks(s05):
    blocks = {b.id: b for b in s05.pseudocode}
    assert {"produce-gate", "purgatory", "high-watermark", "controller"} <= set(blocks)

    def index(block_id: str, kind: str) -> int:
        return next(i for i, line in enumerate(blocks[block_id].lines) if kind in line.kinds)

    def text(block_id: str) -> str:
        return "\n".join(line.text for line in blocks[block_id].lines)

    # the min-ISR check comes BEFORE the append (the seed had it after: that is not Kafka)
    gate = blocks["produce-gate"]
    assert index("produce-gate", "leader_reject_invalid_acks") < index("produce-gate",
                                                                       "leader_reject_not_enough_replicas")
    assert index("produce-gate", "leader_reject_not_enough_replicas") < index("produce-gate", "leader_append")
    assert index("produce-gate", "leader_append") < index("produce-gate", "leader_respond_produce")
    assert index("produce-gate", "leader_respond_produce") < index("produce-gate", "leader_park_produce")
    check = next(line.text for line in gate.lines if "committed_isr" in line.text and "if" in line.text)
    assert "acks == -1" in check and "min_isr" in check
    assert "min(config.min_insync_replicas, len(assigned_replicas))" in text("produce-gate")
    assert "epoch=leader_epoch" in text("produce-gate")
    # purgatory outcomes
    for word in ("NOT_LEADER_OR_FOLLOWER", "leader_hw >= request.required_offset",
                 "min_isr <= len(maximal_isr)", "NONE", "NOT_ENOUGH_REPLICAS_AFTER_APPEND",
                 "REQUEST_TIMED_OUT"):
        assert word in text("purgatory"), word
    # high watermark: freeze first, maximal ISR + caught-up eligible followers, monotonic
    hw = text("high-watermark")
    assert hw.index("committed_isr") < hw.index("candidate = log.leo")
    assert "maximal_isr" in hw and "caught_up" in hw and "candidate > hw" in hw
    # election order: ISR / ELR-when-empty in assignment order, last known leader, unclean, offline
    ctl = blocks["controller"]
    order = [index("controller", k) for k in ("controller_elect_leader", "controller_elect_last_known_leader",
                                              "controller_elect_unclean", "controller_partition_offline")]
    assert order == sorted(order)
    assert "not p.isr and r in p.elr" in text("controller")
    assert "leader epoch" in text("controller")
    assert ctl.lines[0].kinds == ["controller_fence_broker"]


# --------------------------------------------------------------------------------------------
# Q&A


def test_course_qa():
    # besides answers for unbuilt scenes, COURSE_QA holds the basic answers the search needs
    # (issue 8: "difference between HW and LEO", "can I lose data with acks=all?"), some for 05
    assert 6 <= len(COURSE_QA) <= 20
    for q in COURSE_QA:
        assert q.scene in SCENE_IDS
        assert q.scene in q.tags
        assert q.sources and q.question.endswith("?")
    assert {q.scene for q in COURSE_QA} >= {"04", "04a", "06", "d1", "d2", "d3", "d4"}
    ids = [q.id for q in all_qa()]
    assert len(ids) == len(set(ids))
    # proposals are labelled as proposals
    for q in COURSE_QA:
        if any(k in q.id for k in ("kip-250", "kip-926")):
            assert "proposal" in q.answer.lower() and "proposal" in q.tags


def test_elr_knob_is_left_to_the_version_default_outside_4x(s05):
    """The web app passes every knob's value; ELR must not break a 3.6 or 0.8 replay."""
    engine = pytest.importorskip("engine")
    all_knobs = {k.key: format_knob_value(k.default) for k in s05.knobs}
    for version in ("0.8", "0.10", "3.6"):
        for beat in s05.beats:
            presets = {k: format_knob_value(v) for k, v in beat.knobs.items()}
            sc = s05.scenario_for(beat, {**all_knobs, **presets, "kafka_version": version})
            assert "eligible.leader.replicas.version" not in sc.get("controller", {})
            engine.validate(sc)
    sc = s05.scenario_for("elr-recovers", all_knobs)
    assert sc["controller"]["eligible.leader.replicas.version"] == 1


def test_the_scene_model_knows_a_transactional_call_as_the_engine_does():
    """scenes/model.py drops transactional calls for a producer without a transactional.id; it tells
    them by name because it may not import the engine, so the name rule must pick exactly the
    engine's TXN_ACTIONS out of every action the contract has."""
    from engine.scenario import _ACTION_TAGS, TXN_ACTIONS
    from scenes.model import is_transactional_call
    assert {do for do in _ACTION_TAGS if is_transactional_call({"do": do})} == set(TXN_ACTIONS)
