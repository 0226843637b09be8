"""Scene x1 (the example of the adding-a-scene guide): what its narration states is what the engine
does with the beats' actions, and the challenge can be met with the knob alone."""

from __future__ import annotations

import pytest
from scene_helpers import run, steps

from scenes import Scene, load_scene


@pytest.fixture(scope="module")
def x1() -> Scene:
    return load_scene("x1")


def test_first_record_lands_at_offset_0_and_is_acknowledged(x1):
    r = run(x1, "first-record")
    (append,) = steps(r, "leader_append")
    assert append["text"] == "B1 appends a at offset 0 (epoch 0); LEO 1"
    assert [(p["records"], p["outcome"]) for p in r["produce"]] == [(["a"], "acked")]


def test_three_partitions_put_alice_and_bob_together(x1):
    r = run(x1, "keys-pick-partitions")
    placed = [(s["partition"], s["text"].split(" appends ")[1][:13]) for s in steps(r, "leader_append")]
    assert placed == [(0, "a at offset 0"), (0, "b at offset 1"), (2, "c at offset 0")]


@pytest.mark.parametrize("partitions", [5, 6])
def test_the_challenge_can_be_met_with_the_knob_alone(x1, partitions):
    r = run(x1, "keys-pick-partitions", {"partitions": partitions})
    assert len({s["partition"] for s in steps(r, "leader_append")}) == 3
