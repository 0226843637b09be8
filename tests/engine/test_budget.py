"""One budget per run (issue 9, "bounded work for every request").

The review's three shapes, scaled down: a several-partition run whose event cap applied per
partition (12 x the CPU), a result hundreds of MB large, and a run that ignored the wall clock.
"""

import pytest

import engine
from engine.scenario import Limits


def scenario(partitions: int = 1, **extra) -> dict:
    return {
        "topic": {"replication.factor": 3, "partitions": partitions},
        "actions": [{"do": "produce", "records": [f"r{p}"], "partition": p} for p in range(partitions)]
        + [{"do": "advance", "ms": 20_000}],
        **extra,
    }


def events_of(sc: dict) -> int:
    """Engine events a scenario needs: the smallest max_events it runs under (bisection)."""
    low, high = 1, 2_000_000
    while low < high:
        mid = (low + high) // 2
        try:
            engine.simulate(sc, limits=Limits(max_events=mid))
            high = mid
        except engine.BudgetExceeded as exc:
            assert exc.kind == "events"
            low = mid + 1
    return low


def test_the_event_cap_counts_every_partition_of_a_run_together():
    one = events_of(scenario(1))
    three = events_of(scenario(3))
    # each partition alone fits under a cap a little above one partition's need; all three do not
    assert three > 2 * one
    with pytest.raises(engine.BudgetExceeded) as caught:
        engine.simulate(scenario(3), limits=Limits(max_events=one + one // 2))
    assert caught.value.kind == "events" and caught.value.deterministic
    assert "all partitions together" in caught.value.problems[0]["message"]


def test_the_step_cap_counts_every_partition_of_a_run_together():
    steps_one = engine.simulate(scenario(1))["step_count"]
    with pytest.raises(engine.BudgetExceeded) as caught:
        engine.simulate(scenario(3), limits=Limits(max_steps=steps_one + 5))
    assert caught.value.kind == "steps"


def test_a_result_larger_than_its_budget_is_refused_while_it_is_built():
    big = {
        "topic": {"replication.factor": 5},
        "brokers": [{"id": i} for i in range(1, 6)],
        "actions": [{"do": "produce", "count": 1000} for _ in range(20)] + [{"do": "settle"}],
    }
    assert engine.simulate(big)["step_count"] > 0  # without steps the result is small
    with engine.budget(max_result_bytes=2 * 1024 * 1024):
        with pytest.raises(engine.BudgetExceeded) as caught:
            engine.simulate(big, steps=True, all_views=True)
        assert caught.value.kind == "result_bytes" and caught.value.deterministic
        assert "2 MB" in caught.value.problems[0]["message"]
        engine.simulate(big)  # the same scenario without steps fits


@pytest.mark.parametrize(
    "sc, kwargs",
    [
        (
            {"topic": {"replication.factor": 1}, "actions": [{"do": "produce", "count": 1000}] * 20},
            {"steps": True},
        ),
        (scenario(1), {"steps": True, "all_views": True}),
        (scenario(3), {"steps": True, "all_views": True}),
    ],
    ids=["records-in-steps", "per-step-states", "several-partitions"],
)
def test_the_estimate_is_within_a_small_factor_of_the_memory_the_result_holds(sc, kwargs):
    """The caches and the result cap bound memory by this estimate, so it must track the Python
    objects the result really holds (tracemalloc), not its JSON (several-partition views share
    the partitions' snapshots, so their JSON is far larger than their memory)."""
    import gc
    import tracemalloc

    gc.collect()
    tracemalloc.start()
    try:
        result = engine.simulate(sc, **kwargs)
        held, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert held / 2 < engine.estimate_bytes(result) < held * 2


def test_a_passed_deadline_stops_the_run_and_says_try_again():
    long_run = scenario(3, actions=[{"do": "produce", "records": ["a"]}, {"do": "advance", "ms": 600_000}])
    with engine.budget(deadline_s=0):
        with pytest.raises(engine.BudgetExceeded) as caught:
            engine.simulate(long_run)
    assert caught.value.kind == "deadline" and not caught.value.deterministic
    engine.simulate(long_run)  # outside the block no deadline applies


def test_a_cancelled_caller_stops_the_run():
    with engine.budget(cancelled=lambda: True):
        with pytest.raises(engine.BudgetExceeded) as caught:
            engine.simulate(scenario(1))
    assert caught.value.kind == "cancelled"


def test_an_inner_budget_cannot_extend_the_outer_deadline():
    with engine.budget(deadline_s=0):
        with engine.budget(deadline_s=60):
            with pytest.raises(engine.BudgetExceeded):
                engine.simulate(scenario(1))


def test_every_step_names_the_action_it_happened_in():
    sc = {
        "actions": [
            {"do": "produce", "records": ["a"]},
            {"do": "settle"},
            {"do": "crash", "broker": 1},
            {"do": "advance", "ms": 10_000},
        ]
    }
    result = engine.simulate(sc, steps=True)
    tags = [st["action"] for st in result["steps"]]
    assert tags == sorted(tags, key=lambda t: -1 if t is None else t)
    assert {t for t in tags if t is not None} <= {0, 1, 2, 3}
    crash = next(st for st in result["steps"] if st["kind"] == "broker_crash")
    assert crash["action"] == 2
    assert len(result["action_t_ms"]) == 4 and result["action_t_ms"][0] == 0


def test_with_several_partitions_steps_name_the_scenario_action_not_the_partition_one():
    sc = {
        "topic": {"replication.factor": 3, "partitions": 2},
        "actions": [
            {"do": "produce", "records": ["a"], "partition": 0},
            {"do": "produce", "records": ["b"], "partition": 1},
            {"do": "settle"},
        ],
    }
    result = engine.simulate(sc, steps=True)
    appends = {st["partition"]: st["action"] for st in result["steps"] if st["kind"] == "producer_send"}
    assert appends == {0: 0, 1: 1}


def test_a_budget_lowers_the_run_caps_and_never_raises_them():
    sc = scenario(2)
    steps = engine.simulate(sc)["step_count"]
    with engine.budget(max_steps=steps - 1) as inside:
        assert inside.max_steps == steps - 1
        with pytest.raises(engine.BudgetExceeded) as caught:
            engine.simulate(sc)
        assert caught.value.kind == "steps"
        with engine.budget(max_steps=10 * steps):  # an inner block cannot loosen the outer cap
            with pytest.raises(engine.BudgetExceeded):
                engine.simulate(sc)
    with engine.budget(max_events=50):
        with pytest.raises(engine.BudgetExceeded) as caught:
            engine.simulate(sc)
        assert caught.value.kind == "events"
    with engine.budget(max_sim_ms=1_000):
        with pytest.raises(engine.ScenarioError, match="1000 ms"):
            engine.simulate(sc)
    assert engine.RunBudget(max_steps=10**9).limits(Limits()) == Limits()  # above the cap: it stays
    with engine.budget(max_steps=10**9):
        assert engine.simulate(sc)["step_count"] == steps


def test_nested_budgets_obey_either_cancel_check():
    with engine.budget(cancelled=lambda: True):
        with engine.budget(cancelled=lambda: False):
            with pytest.raises(engine.BudgetExceeded) as caught:
                engine.simulate(scenario(1))
    assert caught.value.kind == "cancelled"
