"""Scene 07's presentation of a consumer group (app/groupview.py) and its challenge judge, on
hand-made engine states shaped like the groups engine's (kafka-clients-logs §F.E E2: a third
member joins an eager group; E3: a member crashes). The runs themselves are held to the engine by
tests/scenes/test_scene_07.py once the groups engine is merged."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from app import groupview
from app.challenges import rolling_restart_no_rebalance

SCENARIO = {"topic": {"partitions": 6},
            "consumers": [{"id": "c0", "group.id": "billing"}, {"id": "c1", "group.id": "billing"},
                          {"id": "c2", "group.id": "billing"}]}


def _view(t_ms: int, assigned: dict[str, list[int]], stored: dict[str, list[int]], *,
          state: str = "PreparingRebalance", dead: tuple[str, ...] = ()) -> dict[str, Any]:
    consumers = {cid: {"alive": cid not in dead, "status": "crashed" if cid in dead else "running",
                       "group": "billing", "member_id": f"{cid}-1", "generation": 1, "assigned": parts}
                 for cid, parts in assigned.items()}
    return {"t_ms": t_ms, "consumers": consumers,
            "groups": {"billing": {"state": state, "generation": 1, "protocol": "eager", "assignor": "range",
                                   "leader": "c0", "coordinator": 1, "members": stored, "rebalances": 1,
                                   "history": [{"generation": 1, "t_ms": 6005, "assignment": stored}]}}}


@dataclass
class _Timeline:
    scenario: dict[str, Any]
    view: dict[str, Any]
    result: dict[str, Any] = field(default_factory=dict)
    steps: list[dict[str, Any]] = field(default_factory=list)
    step: int = 0


def test_downtime_is_cut_at_the_current_step_and_counts_overlaps_once():
    intervals = [{"from_ms": 0, "to_ms": 6006, "why": "unassigned"},
                 {"from_ms": 14000, "to_ms": 16004, "why": "revoked"},
                 {"from_ms": 15000, "to_ms": 15500, "why": "stalled"}]
    assert groupview.downtime_at(intervals, 14500) == (6506, intervals[1])  # open at 14.5 s, 0.5 s of it
    assert groupview.downtime_at(intervals, 20000)[0] == 6006 + 2004
    assert groupview.downtime_at(intervals, 20000, since_ms=6005)[0] == 2004  # the wait to start left out
    assert groupview.downtime_at(intervals, 20000)[1] is None


def test_e2_an_eager_revoke_pauses_every_partition_and_says_who_revoked_it():
    # c0 has revoked P0-P2 and rejoined; c1 has not heard of the rebalance yet
    view = _view(15000, {"c0": [], "c1": [3, 4, 5], "c2": []}, {"c0": [0, 1, 2], "c1": [3, 4, 5]})
    result = {"consumers": {"c0": {"downtime": [{"from_ms": 14000, "to_ms": 16004, "why": "revoked"}]}}}
    tl = _Timeline(SCENARIO, view, result)
    content = groupview.group_content(tl, SCENARIO)
    chips = {c["p"]: c for c in content["chips"]}
    assert chips[0]["cls"] == "paused" and chips[0]["label"] == "revoked by c0"
    assert chips[3]["label"] == "c1" and chips[5]["cls"] == "m1"
    assert content["down"]["c0"] == "down 1 s"  # since the group started at 6.005 s, cut at 15 s
    c0 = next(m for m in content["members"] if m["cid"] == "c0")
    assert c0["paused"] and c0["state"].startswith("revoked, waiting since 14 s")
    assert "1 rebalance" in content["sub"] and content["gen"] == "gen 1 · eager (range)"
    drawn = groupview.diagram(tl, SCENARIO)
    assert drawn["mode"] == "group" and drawn["narrow"]["width"] == 310
    assert "3 of 6 partitions have nobody processing them" in drawn["summary"]


def test_e3_a_crashed_owner_leaves_its_partitions_idle():
    view = _view(20000, {"c0": [0, 1], "c1": [], "c2": [4, 5]}, {"c0": [0, 1], "c1": [2, 3], "c2": [4, 5]},
                 state="Stable", dead=("c1",))
    chips = {c["p"]: c for c in groupview.group_content(_Timeline(SCENARIO, view), SCENARIO)["chips"]}
    assert (chips[2]["cls"], chips[2]["label"]) == ("paused", "c1 crashed")
    assert (chips[4]["cls"], chips[4]["label"]) == ("m2", "c2")


def test_shared_groups_are_groups_of_several_consumers():
    assert groupview.shared_groups(SCENARIO) == ["billing"]
    apart = {"consumers": [{"id": "c0", "group.id": "a"}, {"id": "c1", "group.id": "b"}]}
    assert groupview.shared_groups(apart) == []


def _steps(*kinds: tuple[str, str | None, int]) -> list[dict[str, Any]]:
    return [{"i": k + 1, "kind": kind, "consumer": cid, "t_ms": t} for k, (kind, cid, t) in enumerate(kinds)]


def test_a_rolling_restart_counts_only_with_no_rebalance_after_the_group_first_became_stable():
    running = {"c0": {"alive": True, "assigned": [0, 1, 2]}, "c1": {"alive": True, "assigned": [3, 4, 5]}}
    start = [("consumer_subscribe", "c0", 0), ("consumer_subscribe", "c1", 0),
             ("group_join_complete", None, 6003), ("group_sync_complete", None, 6005)]
    static = _steps(*start, ("consumer_close", "c0", 8000), ("consumer_restart", "c0", 13000),
                    ("consumer_close", "c1", 23000), ("consumer_restart", "c1", 28000))
    scenario = {"consumers": SCENARIO["consumers"]}
    tl = _Timeline(scenario, {"consumers": running}, steps=static, step=len(static))
    met, said = rolling_restart_no_rebalance(tl)
    assert met and "c0 and c1 each went away and came back" in said
    tl.step = 6  # c1 not restarted yet
    met, said = rolling_restart_no_rebalance(tl)
    assert not met and "still to go: c1" in said
    dynamic = _steps(*start, ("consumer_close", "c0", 8000), ("group_join_complete", None, 10001),
                     ("consumer_restart", "c0", 13000), ("consumer_close", "c1", 23000),
                     ("consumer_restart", "c1", 28000))
    tl = _Timeline(scenario, {"consumers": running}, steps=dynamic, step=len(dynamic))
    met, said = rolling_restart_no_rebalance(tl)
    assert not met and "1 rebalance completed" in said
