"""Knobs and comparisons that write into the scenario's list of consumers (scene 07): a choice
Kafka takes as a list, a per-consumer value (a static member's group.instance.id), and a compare
patch or unset that reaches every consumer."""

from __future__ import annotations

import pytest

from scenes.model import Knob, Scene

BASE = {
    "version": 1,
    "brokers": [{"id": 1}],
    "consumers": [{"id": "c0", "group.id": "g"}, {"id": "c1", "group.id": "g"}],
    "actions": [],
}


def _scene(**beat: object) -> Scene:
    return Scene(
        id="zz", slug="zz", title="t", promise="p", previously="p", minutes=1,
        knobs=[
            Knob(key="partition.assignment.strategy", label="s", kind="choice",
                 choices=["range,cooperative-sticky", "cooperative-sticky"],
                 default="range,cooperative-sticky",
                 help="h", target="consumers.partition.assignment.strategy", list_value=True),
            Knob(key="group.instance.id", label="static", kind="bool", default=False, help="h",
                 target="consumers.group.instance.id", per_item="{id}-app"),
        ],
        beats=[{
            "id": "b", "title": "b", "narration": "one\n\nSource: KIP-429.", "actions": [],
            "focus_step_kinds": [], "predict": {"question": "q", "options": ["a", "b"], "answer": 0,
                                                "explanation": "e", "why_not": ["", "no"]},
            **beat,
        }],
        pseudocode=[], qa=[], challenge={"title": "c", "text": "c", "goal": "lose_acked_write"},
        base_scenario=BASE,
    )


def test_a_list_choice_is_written_as_a_list_into_every_consumer():
    s = _scene()
    scenario = s.scenario_for("b", {"partition.assignment.strategy": "range,cooperative-sticky"})
    assert [c["partition.assignment.strategy"] for c in scenario["consumers"]] == [
        ["range", "cooperative-sticky"], ["range", "cooperative-sticky"]]


def test_static_membership_gives_each_consumer_its_own_instance_id_and_off_writes_null():
    s = _scene()
    on = s.scenario_for("b", {"group.instance.id": "true"})
    assert [c["group.instance.id"] for c in on["consumers"]] == ["c0-app", "c1-app"]
    off = s.scenario_for("b", {"group.instance.id": "false"})
    assert [c["group.instance.id"] for c in off["consumers"]] == [None, None]
    assert "group.instance.id" not in s.scenario_for("b")["consumers"][0]  # default: base untouched


def test_a_compare_patch_reaches_every_consumer_and_unset_removes_from_every_one():
    s = _scene(knobs={"group.instance.id": True},
               compare={"title": "t", "label": "l",
                        "patch": {"consumers": {"partition.assignment.strategy": ["cooperative-sticky"]}},
                        "unset": ["consumers.group.instance.id"]})
    cmp = s.compare_scenario_for("b")
    assert [c["partition.assignment.strategy"] for c in cmp["consumers"]] == [["cooperative-sticky"]] * 2
    assert all("group.instance.id" not in c for c in cmp["consumers"])
    main = s.scenario_for("b")
    assert [c["group.instance.id"] for c in main["consumers"]] == ["c0-app", "c1-app"]


def test_per_item_and_list_value_are_refused_where_they_make_no_sense():
    with pytest.raises(ValueError):
        Knob(key="acks", label="a", kind="choice", choices=["1"], default="1", help="h",
             target="producer.acks", list_value=False, per_item="{id}")
    with pytest.raises(ValueError):
        Knob(key="x", label="x", kind="int", min=1, max=2, default=1, help="h",
             target="consumers.max.poll.records", list_value=True)
