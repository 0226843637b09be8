"""Build Kafka's engine: a deterministic simulator of a Kafka topic (up to 12 partitions) on a KRaft
cluster, with its producers, consumers, groups and transactions.

    >>> from engine import simulate
    >>> result = simulate({"actions": [{"do": "produce", "records": ["a"]}, {"do": "settle"}]})
    >>> result["acked_records"]
    ['a']

`simulate` is a pure function of the scenario: the same scenario gives a byte-identical result.
Bad input raises `ScenarioError` and nothing else. docs/scenario-format.md describes every field
of the scenario and of the result; docs/simulator.md what the simulation models.
"""

from __future__ import annotations

import contextlib
import gc
import threading
from collections.abc import Iterator
from typing import Any

from . import cluster as _cluster
from .budget import BudgetExceeded, RunBudget, budget, estimate_bytes
from .budget import current as _current_budget
from .headroom import headroom
from .partitioner import generation_for
from .profiles import PROFILES
from .scenario import DEFAULT_LIMITS, LIMITS, Limits, Scenario, ScenarioError, parse, problem, resolve
from .steps import STEP_KINDS

__all__ = [
    "simulate", "validate", "describe", "headroom", "Scenario", "ScenarioError",
    "Limits", "LIMITS", "PROFILES", "STEP_KINDS", "BudgetExceeded", "RunBudget", "budget", "estimate_bytes",
]


_gc_lock = threading.Lock()
_gc_pausers = 0
_gc_was_enabled = True


@contextlib.contextmanager
def _gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector while a simulation runs.

    A run allocates many small objects that live until it ends (log entries, events); with the
    collector on, each full collection walks all of them again, which doubled the engine's run
    time in bench/engine.py. Memory is bounded by the scenario caps, and the last concurrent run
    to finish restores the collector (the web app runs simulations on several threads).
    """
    global _gc_pausers, _gc_was_enabled
    with _gc_lock:
        if _gc_pausers == 0:
            _gc_was_enabled = gc.isenabled()
            gc.disable()
        _gc_pausers += 1
    try:
        yield
    finally:
        with _gc_lock:
            _gc_pausers -= 1
            if _gc_pausers == 0 and _gc_was_enabled:
                gc.enable()


def validate(scenario: Any, limits: Limits = DEFAULT_LIMITS) -> Scenario:
    """Parse and fully check a scenario (defaults, broker ids, caps) without running it."""
    sc = scenario if isinstance(scenario, Scenario) else parse(scenario, limits)
    resolve(sc, limits)
    return sc


def describe(scenario: Any, limits: Limits = DEFAULT_LIMITS) -> dict[str, Any]:
    """What a scenario runs under, without running it: its Kafka version, the proposals it uses, and
    each producer process as its client resolves it (`idempotent`: what `enable.idempotence` ends
    up as after the version's default and the acks and retries it depends on; `transactional`)."""
    cfg = resolve(scenario if isinstance(scenario, Scenario) else parse(scenario, limits), limits)
    producers = {p.id: {"idempotent": p.enable_idempotence, "transactional": p.transactional_id is not None}
                 for p in cfg.producers}
    return {"kafka_version": cfg.profile.version, "proposals": list(cfg.proposals), "producers": producers}


# Actions whose effects a partition created later would have to replay (engine/sim.py
# `_add_partitions` starts a new partition with every broker up and the topic's first settings)
_BROKER_ACTIONS = frozenset(
    {"crash", "shutdown", "restart", "power_loss", "stop_fetching", "resume_fetching", "isolate", "heal",
     "slow", "writeback", "set", "elect"}
)
_TOPIC_WIDE = frozenset({"power_loss", "set", "elect"})  # the broker actions that name no `broker`


def _refuse_unsimulated(cfg: Any) -> None:
    """The contract's part 2 is parsed in full (engine/scenario.py); what the simulator does not
    run yet is refused here with a clear problem, never run half-way. Each line goes when the
    simulator learns it (issues 10 and 12)."""
    later: dict[str, str] = {}
    round_robin = generation_for(cfg.profile.version) == "round-robin"
    ignores_keys = {pc.id: pc.partitioner_ignore_keys for pc in cfg.producers}
    first_producer = cfg.producers[0].id if cfg.producers else None
    partitions = len(cfg.assignments)
    earlier: str | None = None  # an action before add_partitions that a new partition cannot replay
    if cfg.log.compact and any(pc.transactional_id is not None for pc in cfg.producers):
        # the cleaner keeps a transaction's markers and drops aborted records by its own rules
        # (LogCleaner's transaction metadata, kafka-clients-logs §D); none of that is built
        raise problem(
            "producers",
            "a transactional producer on a compacted topic (cleanup.policy with compact) is not simulated "
            "yet",
        )
    if not cfg.profile.kip447:
        # before 2.5 sendOffsetsToTransaction took a group id, no generation (no KIP-447 fence),
        # and the consumer did not wait on UNSTABLE_OFFSET_COMMIT: the engine builds only 2.5's
        later["send_offsets_to_transaction"] = (
            f"Kafka {cfg.profile.version}'s sendOffsetsToTransaction(offsets, groupId) (before KIP-447, 2.5)"
        )
    for i, a in enumerate(cfg.actions):
        if a.do in later:
            raise problem(f"actions[{i}].do", f"{a.do}: {later[a.do]} is not simulated yet")
        if (
            a.do == "produce"
            and round_robin
            and partitions > 1
            and a.partition is None
            and (a.key is None or ignores_keys.get(a.producer or first_producer, False))
            and (len(a.records) if a.records is not None else a.count) > 1
        ):
            raise problem(
                f"actions[{i}]",
                f"Kafka {cfg.profile.version}'s producer sends records without a key round-robin, one "
                "record per partition, and a produce here is one batch on one partition: produce one "
                "record at a time, or give a key or a partition",
            )
        if a.do == "add_partitions":
            if earlier is not None:
                raise problem(f"actions[{i}].do", f"add_partitions after {earlier} is not simulated yet")
            partitions = a.count
        elif a.do in _BROKER_ACTIONS and (getattr(a, "broker", None) is not None or a.do in _TOPIC_WIDE):
            earlier = earlier or (
                f"a broker or config action ({a.do}, actions[{i}]): a partition created later would not "
                "know of it"
            )


def simulate(
    scenario: Any,
    *,
    steps: bool = False,
    at_step: int | None = None,
    check_invariants: bool = False,
    all_views: bool = False,
    limits: Limits = DEFAULT_LIMITS,
) -> dict[str, Any]:
    """Run a scenario (a dict decoded from JSON, or a Scenario) and return the result dict.

    steps: include every engine step. at_step: also return `view`, the state after that many
    steps (0 = the initial state; past the end = the final state). all_views: also return `views`,
    the state after every step (views[k] after k steps), so a caller that scrubs through one
    scenario replays it once; with several partitions views[k] equals the at_step=k `view`
    (partition 0's snapshot plus every partition's under `partitions`).
    limits: caps for untrusted input; trusted callers such as the benchmarks may raise them.
    Inside `with engine.budget(...)` the run also obeys that budget (engine/budget.py): its
    counts lower `limits`, and it adds a result-size cap, a deadline and a cancel check.
    """
    limits = _current_budget().limits(limits)
    if at_step is not None and (not isinstance(at_step, int) or isinstance(at_step, bool) or at_step < 0):
        raise problem("at_step", "at_step is a whole number, 0 or more")
    sc = scenario if isinstance(scenario, Scenario) else parse(scenario, limits)
    cfg = resolve(sc, limits)
    _refuse_unsimulated(cfg)
    try:
        with _gc_paused():
            return _cluster.run(
                cfg,
                limits,
                steps=steps,
                at_step=at_step,
                check_invariants=check_invariants,
                all_views=all_views,
            )
    except RecursionError:  # pragma: no cover - defensive: never leak a traceback for a pathological input
        raise problem("actions", "the scenario is too complex to simulate") from None
