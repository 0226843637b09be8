"""Live answers on real engine results for the scene 05 beats."""

from __future__ import annotations

import pytest

from app.qa import find, live_answer
from scenes import load_scene

engine = pytest.importorskip("engine")
if not hasattr(engine, "simulate"):
    pytest.skip("the engine has no simulate() yet", allow_module_level=True)


@pytest.fixture(scope="module")
def s05():
    return load_scene("05")


def run(scene, beat_id, overrides=None, upto=None, at_step=None):
    beat = scene.beat(beat_id)
    actions = beat.actions if upto is None else beat.actions[:upto]
    return engine.simulate(scene.scenario_for(beat, overrides, actions=actions), at_step=at_step)


def ask(qa_id, result):
    qa = find(qa_id)
    assert qa is not None and qa.live
    return live_answer(qa, result)


def test_last_write_refused_by_min_isr(s05):
    beat = s05.beat("min-isr-refuses")
    upto = next(i for i, a in enumerate(beat.actions) if a.get("records") == ["z"])
    text = ask("not-enough-replicas", run(s05, "min-isr-refuses", upto=upto))
    assert "NOT_ENOUGH_REPLICAS" in text
    assert "committed ISR is {1} (1 member)" in text
    assert "effective min.insync.replicas is 2" in text
    assert "none of its records is in any replica's log" in text


def test_last_write_acked_then_lost(s05):
    text = ask("not-enough-replicas", run(s05, "unclean-election"))
    assert "(c)" in text and "acknowledged at offset 2" in text and "since been lost" in text


def test_lost_records_and_offline(s05):
    assert "b, c" in ask("unclean-election-loses", run(s05, "unclean-election"))
    assert "unavailable rather than gone" in ask("unclean-election-loses", run(s05, "acks-all-means-one"))
    assert "No acknowledged record has been lost" in ask("unclean-election-loses", run(s05, "standard-setup"))


def test_visibility_while_frozen(s05):
    beat = s05.beat("min-isr-refuses")
    upto = next(i for i, a in enumerate(beat.actions) if a.get("do") == "restart")
    text = ask("acks1-invisible", run(s05, "min-isr-refuses", upto=upto))
    assert "cannot read z" in text and "frozen" in text
    text = ask("acks1-invisible", run(s05, "min-isr-refuses"))
    assert "can read all of them" in text


def test_isr_wait_and_headroom(s05):
    text = ask("acks-all-waits-for-whole-isr", run(s05, "standard-setup"))
    assert "ISR is {2, 3}" in text and "all 2 of those brokers" in text
    text = ask("why-rf3-min2", run(s05, "standard-setup"))
    assert "RF 3" in text and "through 1 broker loss" in text
    text = ask("why-rf3-min2", run(s05, "acks-all-means-one", upto=8))
    assert "effective min.insync.replicas of 1" in text and "single failure" in text


def test_effective_min_by_version(s05):
    assert "effective minimum of 1" in ask("min-isr-above-rf", run(s05, "rf1-cap"))
    assert "raw value" in ask("min-isr-above-rf", run(s05, "rf1-cap", {"kafka_version": "3.6"}))


def test_elr_at_the_offline_moment(s05):
    beat = s05.beat("elr-recovers")
    full = engine.simulate(s05.scenario_for(beat), steps=True)
    offline_i = next(s["i"] for s in full["steps"] if s["kind"] == "controller_partition_offline")
    view = engine.simulate(s05.scenario_for(beat), at_step=offline_i)
    text = ask("what-is-elr", view)
    assert "ELR is {1, 2}" in text and "ISR is empty" in text
    assert "no eligible leader replicas" in ask("what-is-elr", run(s05, "rf1-cap", {"kafka_version": "3.6"}))


def test_flushed(s05):
    text = ask("fsync-on-ack", run(s05, "standard-setup"))
    assert "broker 2 holds 3 records with 0 on disk" in text and "page cache" in text
