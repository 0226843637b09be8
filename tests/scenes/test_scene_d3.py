"""Deep dive D3 (fsync and racks): every beat replays on the real engine showing what its narration
claims: page cache vs disk, process crash vs power loss, correlated power loss, and rack-striped
placement over several partitions. The checks every scene passes (among them: every value of the
partitions knob validates except fewer partitions than a beat writes to, which the engine refuses
with its own message) are in test_every_built_scene.py.

If one of these fails because the engine disagrees with kafka-semantics.md, the engine is wrong:
do not bend the narration or the assertion to make it pass.
"""

from __future__ import annotations

from typing import Any

import pytest
from scene_helpers import action_index, kinds, records, run, steps, truncated

from scenes import Scene, load_scene

SCENE = "d3"
BEATS = ["crash-keeps-page-cache", "power-loss-one-copy", "correlated-power-loss", "rack-loss-survives",
         "unbalanced-racks"]


@pytest.fixture(scope="module")
def scene() -> Scene:
    return load_scene(SCENE)


def test_header_panels_and_layout(scene):
    assert (scene.id, scene.slug) == ("d3", "replication-not-fsync")
    assert [b.id for b in scene.beats] == BEATS
    assert scene.panels == ["page_cache", "partitions"]
    racks = {b["id"]: b["rack"] for b in scene.base_scenario["brokers"]}
    assert racks == {1: "a", 2: "a", 3: "a", 4: "b", 5: "b", 6: "b", 7: "c"}
    assert scene.knob("flush.messages").target == "topic.flush.messages"
    assert "flush.messages" not in scene.base_scenario["topic"], "Kafka's default: never fsync"
    for beat in scene.beats:
        assert beat.label is None, "every d3 beat is today's Kafka"


def flushed(result: dict[str, Any], b: int) -> int:
    return result["final"]["brokers"][str(b)]["flushed"]


def test_process_crash_keeps_the_page_cache(scene):
    r = run(scene, "crash-keeps-page-cache")
    assert r["acked_records"] == ["a", "b", "c"] and r["lost_acked_records"] == []
    for b in (1, 4, 7):
        assert records(r, b) == ["a", "b", "c"] and truncated(r, b) == []
        assert flushed(r, b) == 0, "nothing was ever fsynced"
        assert r["final"]["brokers"][str(b)]["status"] == "running"
    assert len(steps(r, "broker_crash")) == 3 and "broker_power_loss" not in kinds(r)


def test_power_loss_of_one_copy_is_covered_and_writeback_decides_what_it_keeps(scene):
    beat = "power-loss-one-copy"
    cut = action_index(scene, beat, do="power_loss")
    before = run(scene, beat, upto=cut)
    assert flushed(before, 7) == 2 and flushed(before, 1) == flushed(before, 4) == 0
    r = run(scene, beat)
    assert truncated(r, 7, "power_loss") == ["c"], "only c was still in broker 7's page cache"
    assert r["lost_acked_records"] == []
    assert all(records(r, b) == ["a", "b", "c"] for b in (1, 4, 7))
    assert r["final"]["partition"]["isr"] == [1, 4, 7]
    # flush.messages=1: broker 7 fsyncs every append and keeps c through the cut
    f = run(scene, beat, {"flush.messages": 1})
    assert truncated(f, 7) == [] and flushed(f, 7) == 3


def test_correlated_power_loss_loses_every_acked_record_unless_flushed(scene):
    beat = "correlated-power-loss"
    r = run(scene, beat)
    assert r["acked_records"] == ["a", "b", "c"]
    assert r["lost_acked_records"] == ["a", "b", "c"], "S13.5: lost although acks=all and min 2"
    for b in (1, 4, 7):
        assert records(r, b) == [] and sorted(truncated(r, b, "power_loss")) == ["a", "b", "c"]
    assert r["final"]["partition"]["leader"] == 7 and r["final"]["partition"]["online"]
    assert "controller_elect_last_known_leader" in kinds(r)

    flushed_run = run(scene, beat, compare=True)
    assert scene.beat(beat).compare.patch == {"topic": {"flush.messages": 1}}
    assert flushed_run["lost_acked_records"] == []
    assert all(records(flushed_run, b) == ["a", "b", "c"] for b in (1, 4, 7))
    assert run(scene, beat, {"flush.messages": 1})["lost_acked_records"] == []


def _partition_table(result: dict[str, Any]) -> list[dict[str, Any]]:
    return result["partitions"]


def test_rack_loss_survives_on_every_partition(scene):
    r = run(scene, "rack-loss-survives")
    parts = _partition_table(r)
    assert len(parts) == 6
    racks = {b["id"]: b["rack"] for b in scene.base_scenario["brokers"]}
    for i, p in enumerate(parts):
        assert sorted(racks[b] for b in p["replicas"]) == ["a", "b", "c"], "one replica per rack"
        assert 7 in p["replicas"]
        assert p["lost_acked_records"] == []
        assert p["acked_records"] == [f"a{i}", f"b{i}"], "both rounds acknowledged"
        final = p["final"]["partition"]
        assert len(final["isr"]) == 2 and not set(final["isr"]) & {1, 2, 3}
        assert final["leader"] not in (1, 2, 3)
    assert r["lost_acked_records"] == []
    assert all(pr["outcome"] == "acked" for pr in r["produce"])
    assert {s["broker"] for s in steps(r, "broker_power_loss") if "broker" in s} == {1, 2, 3}


def test_unbalanced_racks_cost_a_third_of_the_partitions_their_write_quorum(scene):
    beat = "unbalanced-racks"
    r = run(scene, beat)
    parts = _partition_table(r)
    assert all(7 in p["replicas"] for p in parts), "the lone broker of rack c is in every partition"
    refused = [i for i, p in enumerate(parts) if 5 in p["replicas"]]
    assert refused == [1, 4]
    for i, p in enumerate(parts):
        assert p["lost_acked_records"] == []
        second = next(x for x in r["produce"] if x["records"] == [f"b{i}"])
        if i in refused:
            assert (second["outcome"], second["error"]) == ("failed", "NOT_ENOUGH_REPLICAS")
            assert len(p["final"]["partition"]["isr"]) == 1
        else:
            assert second["outcome"] == "acked"
    assert r["lost_acked_records"] == []

    balanced = run(scene, beat, compare=True)
    bparts = _partition_table(balanced)
    assert sum(1 for p in bparts if 7 in p["replicas"]) == 2
    assert not any({5, 7} <= set(p["replicas"]) for p in bparts)
    assert all(x["outcome"] == "acked" for x in balanced["produce"])
    assert balanced["lost_acked_records"] == []


def test_live_answers_read_the_simulation(scene):
    from app.qa import live_answer

    by_id = {q.id: q for q in scene.qa}
    text = live_answer(by_id["uneven-racks"], run(scene, "unbalanced-racks"))
    assert "2 of 6 cannot take acks=all writes" in text and "racks a/b/c" in text
    gone = live_answer(by_id["crash-vs-power-loss"], run(scene, "correlated-power-loss"))
    assert "a power cut erased" in gone and "are gone" in gone
    assert "with 0 on disk" in live_answer(by_id["acked-means-on-disk"], run(scene, "crash-keeps-page-cache"))
