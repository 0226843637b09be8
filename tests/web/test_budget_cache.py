"""The Simulator's caches are bounded by estimated bytes, not only by entries (issue 9: ten
crafted URLs held 0.9 GB for good when each cache kept a number of results of any size)."""

import gc
import json
import tracemalloc

from app.simulation import ByteBoundedCache, Simulator, _weigh_tags


def sized(key: str) -> str:
    return "x" * int(key)


def test_the_oldest_entries_go_when_the_bytes_run_over():
    cache = ByteBoundedCache(sized, max_entries=100, max_bytes=1000, weigh=len)
    for key in ("400", "300", "200"):
        cache(key)
    assert cache.cache_info()["bytes"] == 900
    cache("400")  # a hit: now the newest
    cache("350")  # 1,250 bytes: the least recently used (300) goes
    assert list(cache.entries) == [("200",), ("400",), ("350",)]
    assert cache.cache_info() == {"hits": 1, "misses": 4, "entries": 3, "bytes": 950}


def test_a_value_heavier_than_the_whole_cache_is_returned_and_not_kept():
    cache = ByteBoundedCache(sized, max_entries=100, max_bytes=1000, weigh=len)
    cache("600")
    assert cache("1001") == "x" * 1001
    assert list(cache.entries) == [("600",)] and cache.bytes == 600  # nothing else was evicted for it


def test_a_simulator_holds_no_more_than_its_byte_budget():
    budget = 2 * 1024 * 1024

    def fill(sim: Simulator) -> dict:
        for seed in range(12):  # distinct scenarios, each replay with every step's state ~0.5 MB
            scenario = {"seed": seed, "actions": [{"do": "produce", "count": 2}, {"do": "settle"}] * 3}
            sim.full(scenario)
            sim.view(scenario, 5)
            sim.tags(scenario)
        return sim.cache_info()

    unbounded = fill(Simulator(cache_entries=512, cache_bytes=10**12))
    assert sum(info["bytes"] for info in unbounded.values()) > 2 * budget  # the bound has work to do
    bounded = fill(Simulator(cache_entries=512, cache_bytes=budget))
    assert 0 < bounded["replay"]["entries"] < 12 and 0 < bounded["full"]["entries"] < 12
    assert sum(info["bytes"] for info in bounded.values()) <= budget


def test_the_tags_estimate_is_within_a_small_factor_of_their_memory():
    scenario = {"actions": [{"do": "produce", "count": 3}, {"do": "advance", "ms": 400}] * 200}
    key = json.dumps(scenario, sort_keys=True, separators=(",", ":"))
    sim = Simulator(16)  # nothing cached: the tags come from a run of their own
    gc.collect()
    tracemalloc.start()
    try:
        tags = sim._tags_uncached(key)
        gc.collect()
        held, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert held / 2 < _weigh_tags(tags) < held * 2


def test_the_tags_of_a_replayed_scenario_come_from_its_replay(monkeypatch):
    """An injected timeline's last scenario is replayed in full; its tags (what the next fault on
    top of it needs) are read from that replay instead of a run of their own."""
    import app.simulation as simulation

    runs = []
    real = simulation.engine.simulate
    monkeypatch.setattr(simulation.engine, "simulate", lambda *a, **k: runs.append(k) or real(*a, **k))
    sim = Simulator(16)
    scenario = {"actions": [{"do": "produce", "count": 3}, {"do": "advance", "ms": 400}]}
    full = sim.full(scenario)
    tags = sim.tags(scenario)
    assert len(runs) == 1 and runs[0].get("all_views")  # the replay alone
    assert len(tags.actions) == len(full["steps"])


def test_derived_values_are_bounded_by_bytes_too():
    """Simulator.memo (a timeline's stops) shares the caches' byte rule: values with long texts
    evict older ones instead of piling up by count."""
    from types import SimpleNamespace

    sim = Simulator(cache_entries=10_000, cache_bytes=8 * 1024 * 1024)  # memo: 8 MB / 4 / 8 = 256 KB
    heavy = [SimpleNamespace(title="t", texts=("x" * 10_000,)) for _ in range(5)]  # ~50 KB each
    built = []
    for i in range(40):
        sim.memo(("stops", i), lambda: built.append(1) or heavy)
    assert sim._memo.bytes <= 256 * 1024 and len(sim._memo.entries) < 10
    sim.memo(("stops", 39), lambda: built.append(1) or heavy)  # the newest is still there
    assert len(built) == 40
