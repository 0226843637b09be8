"""`{"do": "settle", "through_failover": true}`: a fault at the end of a timeline plays out
(issue 8). Without the option, settle keeps its old meaning (the golden traces pin that)."""

from __future__ import annotations

from scenario_builders import crash, isolate, part, produce, records, run, scenario, settle, steps_of


def _failover(**extra) -> dict:
    return {"do": "settle", "through_failover": True, **extra}


def _crash_leader_then(last: dict, **kw) -> dict:
    return scenario(produce("a", "b"), settle(), crash(1), last, min_isr=2, acks="all", **kw)


def test_without_the_option_settle_stops_at_once_with_the_dead_leader_in_place():
    r = run(_crash_leader_then(settle()), steps=True)
    assert part(r)["leader"] == 1, "today's settle: a dead leader cannot make progress, so it is settled"
    assert steps_of(r, "controller_fence_broker") == [] and steps_of(r, "controller_elect_leader") == []


def test_through_failover_runs_until_the_controller_elects_a_new_leader_with_the_data():
    r = run(_crash_leader_then(_failover()), steps=True)
    p = part(r)
    assert p["leader"] in (2, 3) and p["leader_epoch"] == 1 and 1 not in p["isr"]
    fenced = steps_of(r, "controller_fence_broker", broker=1)
    assert fenced and 7_000 <= fenced[0]["t_ms"] - 504 <= 9_001, "fenced a session timeout after the crash"
    assert steps_of(r, "controller_elect_leader")
    # min ISR 2 kept a and b on both followers: nothing acknowledged is lost
    assert r["acked_records"] == ["a", "b"] and r["lost_acked_records"] == []
    assert records(r, p["leader"]) == ["a", "b"]
    # and then it settles as usual: the other follower follows the new leader and has the HW
    other = ({2, 3} - {p["leader"]}).pop()
    assert r["final"]["brokers"][str(other)]["hw"] == 2


def test_through_failover_stops_when_the_partition_goes_offline():
    sc = scenario(produce("a"), settle(), crash(1), _failover(), replicas=[1], brokers=(1, 2, 3))
    r = run(sc, steps=True)
    assert part(r)["leader"] == -1 and steps_of(r, "controller_partition_offline")
    assert r["final"]["t_ms"] < 60_000


def test_through_failover_waits_for_a_leader_cut_off_from_the_controller():
    r = run(scenario(produce("a"), settle(), isolate(1, ["controller"]), _failover(), min_isr=1), steps=True)
    assert part(r)["leader"] in (2, 3) and steps_of(r, "controller_fence_broker", broker=1)


def test_through_failover_is_bounded_by_max_ms():
    r = run(_crash_leader_then(_failover(max_ms=1_000)), steps=True)
    assert part(r)["leader"] == 1 and r["final"]["t_ms"] <= 504 + 1_000


def test_through_failover_changes_nothing_when_the_leader_is_healthy():
    plain = run(scenario(produce("a"), settle(), min_isr=2), steps=True)
    through = run(scenario(produce("a"), _failover(), min_isr=2), steps=True)
    assert through["steps"] == plain["steps"] and through["final"] == plain["final"]
