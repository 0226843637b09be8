"""From a `SceneState` to engine results: build the scenario, fork it, replay it (cached).

Theory of operation
-------------------
A scene URL names a beat (a contract scenario from `scenes/`), knob overrides, a seed and a list
of injected faults ``VERB:BROKER@STEP``. `build_timeline` turns that into one contract scenario
and replays it with the engine twice: once with the whole step list (the event log, the
timeline length) and once with ``at_step`` for the state at the scrubber position. Both calls go
through caches keyed on the canonical scenario JSON and bounded by entries and estimated bytes
(`ByteBoundedCache`): the URL is the whole state, so a result is a pure function of its key and
caching is always correct.

Forking. Every engine step carries the index of the action it happened in, so one run of the
scenario tells which action was running at step s. If that action is an ``advance`` or
``settle`` that was still running, we split it at step s's simulated time (``advance`` d ms, the
fault, then the rest), so the fault lands at the moment the learner was looking at; otherwise
the fault goes right after that action. One run of the forked scenario gives the step at which
the fault landed, which becomes the URL's new step.
"""

from __future__ import annotations

import collections
import copy
import functools
import json
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import engine
from app.state import QUIET, BadStateURL, InjectedAction, SceneState

SETTLE_DEFAULT_MAX_MS = 60_000  # the contract's default for settle.max_ms
QUIET_MAX_MS = 60_000  # how long "run until quiet" may run at most


def canonical_json(scenario: dict[str, Any]) -> str:
    return json.dumps(scenario, sort_keys=True, separators=(",", ":"))


_MISSING = object()  # a cache miss (None may be a cached value)


class ByteBoundedCache:
    """A least-recently-used cache of a function's results, bounded by entries and by bytes.

    Each entry is weighed once, when stored, by `weigh(value)` (an estimate); when the total goes
    over `max_bytes` the oldest entries go, and a value heavier than the whole cache alone is
    returned but never kept. Bounding entries alone let a few crafted URLs (each result hundreds
    of MB) hold the process's memory for good."""

    def __init__(self, fn: Any, max_entries: int, max_bytes: int, weigh: Any):
        self.fn, self.max_entries, self.max_bytes, self.weigh = fn, max_entries, max_bytes, weigh
        self.entries: collections.OrderedDict[Any, tuple[Any, int]] = collections.OrderedDict()
        self.bytes = 0
        self.hits = self.misses = 0
        self.lock = threading.Lock()

    def __call__(self, *key: Any) -> Any:
        return self.get_or_build(key, lambda: self.fn(*key))

    def get_or_build(self, key: Any, build: Callable[[], Any]) -> Any:
        value = self.get(key, _MISSING)
        if value is _MISSING:
            value = build()  # outside the lock: a slow run must not stall other threads' hits
            self.put(key, value)
        return value

    def get(self, key: Any, default: Any = None) -> Any:
        with self.lock:
            found = self.entries.get(key)
            if found is None:
                self.misses += 1
                return default
            self.entries.move_to_end(key)
            self.hits += 1
            return found[0]

    def peek(self, key: Any) -> Any:
        """The cached value or None, without counting a hit or a miss or refreshing its age."""
        with self.lock:
            found = self.entries.get(key)
        return None if found is None else found[0]

    def put(self, key: Any, value: Any) -> None:
        size = self.weigh(value)
        with self.lock:
            if size > self.max_bytes or key in self.entries:
                return
            self.entries[key] = (value, size)
            self.bytes += size
            while len(self.entries) > self.max_entries or self.bytes > self.max_bytes:
                _, (_, dropped) = self.entries.popitem(last=False)
                self.bytes -= dropped

    def cache_info(self) -> dict[str, int]:
        return {"hits": self.hits, "misses": self.misses, "entries": len(self.entries), "bytes": self.bytes}


@dataclass(frozen=True)
class Tags:
    actions: list[int]  # the action index of every step (-1 before the first action)
    starts_ms: list[int]  # when each action began
    times_ms: list[int]  # each step's simulated time


def _weigh_tags(value: Tags) -> int:
    # a list slot is 8 bytes; action indexes are mostly CPython's shared small ints, times are
    # int objects of their own (steps at one moment share one): ~0.9x of tracemalloc's count
    return 64 + 8 * len(value.actions) + 24 * (len(value.starts_ms) + len(value.times_ms))


def _weigh_derived(value: Any) -> int:
    """About how many bytes a derived list (a timeline's stops) holds: each item's texts and
    fixed fields; anything else counts as one small object."""
    if hasattr(value, "stops"):  # app.frames.Path: the stops and a small box
        value = value.stops
    if not isinstance(value, (list, tuple)):
        return 256
    total = 64
    for item in value:
        texts = getattr(item, "texts", ()) or ()
        total += 200 + len(getattr(item, "title", "") or "") + sum(50 + len(t) for t in texts)
    return total


class Simulator:
    """The engine behind bounded caches (per app instance, so tests stay independent).

    Scrubbing is the common request: the same scenario at another step. The first request for a
    scenario replays it once with every step's state (`all_views`, about 10 MB for a 500-step
    timeline), so each further step is a lookup. That cache is kept small. With several
    partitions each view also holds every partition's snapshot, so no step needs a replay.
    """

    def __init__(
        self, cache_entries: int, views_cache_entries: int = 24, cache_bytes: int = 96 * 1024 * 1024
    ):
        # the heavy all-views results get three quarters of the bytes, the rest share a quarter
        heavy, light = cache_bytes * 3 // 4, cache_bytes // 4
        weigh = engine.estimate_bytes
        self._full = ByteBoundedCache(self._full_uncached, cache_entries, light // 2, weigh)
        self._replay = ByteBoundedCache(self._replay_uncached, views_cache_entries, heavy, weigh)
        self._view = ByteBoundedCache(self._view_uncached, cache_entries, light // 4, weigh)
        self._tags = ByteBoundedCache(self._tags_uncached, cache_entries, light // 4, _weigh_tags)
        self._profile = functools.lru_cache(maxsize=cache_entries)(self._profile_uncached)
        # the key holds the scenario's JSON; a stop holds its title and the texts folded into it
        self._memo = ByteBoundedCache(None, cache_entries, light // 8, _weigh_derived)

    @staticmethod
    def _replay_uncached(key: str) -> dict[str, Any]:
        """One run gives both the step list and every step's state (single partition)."""
        return engine.simulate(json.loads(key), steps=True, all_views=True)

    def _full_uncached(self, key: str) -> dict[str, Any]:
        # the light copy (no per-step states) stays in the large cache; the heavy one in the small
        return {k: v for k, v in self._replay(key).items() if k != "views"}

    @staticmethod
    def _view_uncached(key: str, at_step: int) -> dict[str, Any]:
        return engine.simulate(json.loads(key), at_step=at_step)

    def _tags_uncached(self, key: str) -> Tags:
        # the all-views run holds the same steps: read them there when it is already cached
        result = self._replay.peek((key,))
        if result is None:
            result = engine.simulate(json.loads(key), steps=True)
        tags = [-1 if st["action"] is None else st["action"] for st in result["steps"]]
        return Tags(tags, result["action_t_ms"], [st["t_ms"] for st in result["steps"]])

    @staticmethod
    def _profile_uncached(key: str) -> tuple[str, tuple[str, ...]]:
        described = engine.describe(json.loads(key))  # validation only, no run
        return described["kafka_version"], tuple(described["proposals"])

    # The cached dicts are shared between requests: callers must treat them as read-only.
    def full(self, scenario: dict[str, Any]) -> dict[str, Any]:
        return self._full(canonical_json(scenario))

    def view(self, scenario: dict[str, Any], at_step: int) -> dict[str, Any]:
        """The state after `at_step` steps (read-only, shared between requests)."""
        key = canonical_json(scenario)
        views = self._replay(key).get("views")
        if views is not None:
            return views[min(at_step, len(views) - 1)]
        return self._view(key, at_step)["view"]

    def views(self, scenario: dict[str, Any]) -> list[dict[str, Any]] | None:
        """Every step's state (`views[k]` after k steps; read-only), or None when the engine gave
        none for this scenario. Callers that look back over the steps so far read this."""
        return self._replay(canonical_json(scenario)).get("views")

    def view_result(self, scenario: dict[str, Any], at_step: int) -> dict[str, Any]:
        """`view` and, with several partitions, `partitions` (each entry with its `view`) as the
        `at_step` result has them, read from the all-views run (read-only)."""
        key = canonical_json(scenario)
        replay = self._replay(key)
        views = replay.get("views")
        if views is None:  # pragma: no cover - every replay asks for all views
            return self._view(key, at_step)
        view = views[min(at_step, len(views) - 1)]
        out: dict[str, Any] = {"view": view}
        # several partitions: each view holds every partition's snapshot (a one-partition run with
        # consumers also has the contract's `partitions` list in its result, but no such views)
        if "partitions" in replay and isinstance(view.get("partitions"), list):
            pairs = zip(replay["partitions"], view["partitions"], strict=True)
            out["partitions"] = [{**p, "view": v} for p, v in pairs]
        return out

    def memo(self, key: tuple[Any, ...], build: Any) -> Any:
        """A value derived from a scenario (its stops), built once per key (read-only, shared)."""
        return self._memo.get_or_build(key, build)

    def step_count(self, scenario: dict[str, Any]) -> int:
        """How many steps the scenario's run has: from a run already cached (the replay or the
        tags), else from its tags run."""
        key = canonical_json(scenario)
        replay = self._replay.peek((key,))
        return len(replay["steps"]) if replay is not None else len(self._tags(key).actions)

    def tags(self, scenario: dict[str, Any]) -> Tags:
        """Where in the action list each step happened, from one run without per-step states
        (read-only, shared)."""
        return self._tags(canonical_json(scenario))

    def profile(self, scenario: dict[str, Any]) -> tuple[str, tuple[str, ...]]:
        """(Kafka version, proposals in use) of a scenario: which rules it runs under."""
        return self._profile(canonical_json(scenario))

    def cache_info(self) -> dict[str, Any]:
        return {
            "full": self._full.cache_info(),
            "replay": self._replay.cache_info(),
            "view": self._view.cache_info(),
            "tags": self._tags.cache_info(),
        }


def quiet_action() -> dict[str, Any]:
    """ "Run until quiet": settle, and keep running while a dead or cut-off leader still holds the
    partition, so a late fault plays out (the leader is fenced and replaced)."""
    return {"do": "settle", "through_failover": True, "max_ms": QUIET_MAX_MS}


def fault_action(verb: str, broker: int | None) -> dict[str, Any]:
    """The contract action for a URL fault verb (or "run until quiet")."""
    if verb == QUIET:
        return quiet_action()
    if verb == "power":
        return {"do": "power_loss", "brokers": [broker]}
    if verb in ("isolate", "heal"):  # no `from`: cut off from (reconnected to) everything
        return {"do": verb, "broker": broker}
    do = {
        "crash": "crash",
        "stop": "stop_fetching",
        "resume": "resume_fetching",
        "restart": "restart",
        "shutdown": "shutdown",
    }[verb]
    return {"do": do, "broker": broker}


def _with_actions(scenario: dict[str, Any], actions: list[dict[str, Any]]) -> dict[str, Any]:
    out = dict(scenario)
    out["actions"] = actions
    return out


def _through(tags: list[int], action: int) -> int:
    """How many steps happened up to the end of action `action` (steps before the first action
    carry -1). Counted rather than bisected: with several partitions the steps are in time order,
    which need not be action order."""
    return sum(1 for tag in tags if tag <= action)


def fork(
    sim: Simulator, scenario: dict[str, Any], injected: InjectedAction, notes: list[str]
) -> tuple[dict[str, Any], int]:
    """Insert one fault after step `injected.after_step`; return the scenario and its landing step.

    Every engine step names the action it happened in, so one run of the scenario says which
    action was running at that step, and one run of the forked scenario where the fault landed.
    """
    actions = list(scenario.get("actions", []))
    found = sim.tags(scenario)
    tags = found.actions
    total_steps = len(tags)
    step = injected.after_step
    if step > total_steps:
        what = "“run until quiet”" if injected.verb == QUIET else "fault"
        notes.append(
            f"The injected {what} a={injected.encode()} is after the end of its timeline "
            f"({total_steps} steps); it runs at the end."
        )
        step = total_steps
    new = fault_action(injected.verb, injected.broker)
    if step == 0:
        position, replacement, consumed = 0, [new], 0
    else:
        # the action during which step `step` happened (the first one for the start-up steps)
        running_index = max(tags[step - 1], 0)
        m = running_index + 1
        consumed = 1
        position = m - 1
        running = actions[m - 1] if actions else {}
        if not actions or _through(tags, m - 1) == step:
            position, replacement, consumed = m, [new], 0  # the step ends its action
        elif running.get("do") in ("advance", "settle"):
            elapsed_ms = found.times_ms[step - 1] - found.starts_ms[m - 1]
            if elapsed_ms <= 0:
                replacement = [new, running]
            elif running["do"] == "advance":
                rest_ms = running["ms"] - elapsed_ms
                replacement = [{"do": "advance", "ms": elapsed_ms}, new]
                if rest_ms > 0:
                    replacement.append({"do": "advance", "ms": rest_ms})
            else:
                rest = dict(running)
                rest["max_ms"] = max(1, running.get("max_ms", SETTLE_DEFAULT_MAX_MS) - elapsed_ms)
                replacement = [{"do": "advance", "ms": elapsed_ms}, new, rest]
        else:
            position, replacement, consumed = m, [new], 0
    forked = actions[:position] + replacement + actions[position + consumed :]
    landed_index = position + replacement.index(new)  # the fault's index in `forked`
    result = _with_actions(scenario, forked)
    landed_step = _through(sim.tags(result).actions, landed_index)
    return result, landed_step


@dataclass
class Timeline:
    scenario: dict[str, Any]
    result: dict[str, Any]  # the whole run, with steps
    view: dict[str, Any]  # the snapshot after `step` steps
    step: int
    step_count: int
    first_step: int  # embeds may keep the timeline inside [first_step, last_step]
    last_step: int
    injected_steps: list[int] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    # with several partitions: each partition's entry of the `at_step` result (its `view` is the
    # state after `step` steps); empty for a single partition
    partitions: list[dict[str, Any]] = field(default_factory=list)
    # False when the learner's knobs changed the rules (Kafka version or a proposal) the beat's
    # preset runs under, so a label written for the preset no longer describes this run
    rules_as_preset: bool = True
    # every step's state (views[k] after k steps; shared, read-only), for what is measured over
    # the steps so far (scene 07's partition idle time); None when the engine gave none
    views: list[dict[str, Any]] | None = field(default=None, repr=False, compare=False)

    @property
    def steps(self) -> list[dict[str, Any]]:
        return self.result.get("steps", [])

    @property
    def current(self) -> dict[str, Any] | None:
        return self.steps[self.step - 1] if self.step > 0 else None


def base_scenario(scene: Any, state: SceneState) -> dict[str, Any]:
    try:
        scenario = scene.scenario_for(state.beat, dict(state.knobs))
    except (KeyError, ValueError) as exc:  # knob values were checked by parse_state already
        raise BadStateURL(str(exc)) from None
    scenario["seed"] = state.seed
    return scenario


def _check_brokers(scenario: dict[str, Any], injected: InjectedAction) -> None:
    if injected.broker is None:
        return
    ids = [b["id"] for b in scenario.get("brokers", [])] or [1, 2, 3]
    if injected.broker not in ids:
        raise BadStateURL(
            f"The injected fault a={injected.encode()} names broker {injected.broker}, "
            f"but this cluster has brokers {', '.join(map(str, ids))}."
        )


def build_timeline(sim: Simulator, scene: Any, state: SceneState) -> tuple[Timeline, SceneState]:
    """Replay the state's scenario; return the timeline and the state with its step clamped.

    A pending one-shot ``inject`` is turned into an injected action at the current step, and the
    returned state points at the step where it landed.
    """
    notes: list[str] = []
    scenario = base_scenario(scene, state)
    actions = list(state.actions)
    injected_steps = []
    try:
        for injected in actions:
            _check_brokers(scenario, injected)
            steps_before = len(sim.tags(scenario).actions)
            scenario, landed = fork(sim, scenario, injected, notes)
            injected_steps.append(landed)
            if injected.verb == QUIET and sim.step_count(scenario) == steps_before:
                notes.append(
                    f"Run until quiet (a={injected.encode()}) changed nothing: at step "
                    f"{injected.after_step} nothing is in flight and no broker is waiting to be "
                    "fenced. Inject a fault first, then run until quiet to watch it play out."
                )
        if state.inject is not None:
            # A fault at the end of the timeline would otherwise be the last thing that happens:
            # no time passes after it. There it comes with "run until quiet", so it plays out.
            verb, broker = state.inject
            at_end = state.step >= len(sim.tags(scenario).actions)
            fault = InjectedAction(verb, broker, state.step)
            _check_brokers(scenario, fault)
            scenario, landed = fork(sim, scenario, fault, notes)
            actions.append(fault)
            injected_steps.append(landed)
            if at_end:
                actions.append(InjectedAction(QUIET, None, landed))
                scenario, quiet_landed = fork(sim, scenario, actions[-1], notes)
                injected_steps.append(quiet_landed)
        result = sim.full(scenario)
    except engine.ScenarioError as exc:
        if isinstance(exc, engine.BudgetExceeded) and not exc.deterministic:
            raise  # a busy moment, not a bad address: app/main.py answers 503
        reasons = "; ".join(f"{p['path']}: {p['message']}" for p in exc.problems)
        raise BadStateURL(f"The simulator cannot run this state: {reasons}") from None

    step_count = result["step_count"]
    first = min(state.from_step or 0, step_count)
    last = step_count if state.to_step is None else min(state.to_step, step_count)
    step = state.step
    if state.inject is not None:
        # land on the fault (not after the run until quiet that may follow it)
        step = injected_steps[len(state.actions)]
        state = state.replace(actions=tuple(actions), inject=None)
    if step > last:
        where = "the end of this timeline" if last == step_count else f"to={last}"
        notes.append(f"The address's step={step} is past {where}; showing its last step.")
        step = last
    elif step < first:
        notes.append(f"The address's step={step} is before from={first}; showing its first step.")
        step = first
    state = state.replace(step=step)
    view = sim.view(scenario, step)
    partitions = sim.view_result(scenario, step).get("partitions", []) if "partitions" in result else []
    beat = scene.beat(state.beat)
    rules_as_preset = True
    if beat.label is not None:
        rules_as_preset = _rules(result) == sim.profile(scene.scenario_for(beat))
    timeline = Timeline(
        scenario=copy.deepcopy(scenario),
        result=result,
        view=view,
        step=step,
        step_count=step_count,
        first_step=first,
        last_step=last,
        injected_steps=injected_steps,
        notes=notes,
        partitions=partitions,
        rules_as_preset=rules_as_preset,
        views=sim.views(scenario),
    )
    return timeline, state


@dataclass
class CompareRun:
    """The beat's comparison run at the moment matching the main timeline, or why there is none."""

    timeline: Timeline | None
    unavailable: str | None = None  # a sentence for the learner when the run cannot be shown
    same_as_main: bool = False  # the knobs already make the main run equal to the comparison


def _rules(result: dict[str, Any]) -> tuple[str, tuple[str, ...]]:
    return result["profile"]["kafka_version"], tuple(result.get("proposals", []))


def _step_at_time(steps: list[dict[str, Any]], t_ms: int) -> int:
    """The number of steps whose simulated time is at most `t_ms` (steps are in time order)."""
    low, high = 0, len(steps)
    while low < high:
        mid = (low + high) // 2
        if steps[mid]["t_ms"] <= t_ms:
            low = mid + 1
        else:
            high = mid
    return low


def build_compare(sim: Simulator, scene: Any, state: SceneState, timeline: Timeline) -> CompareRun | None:
    """Replay the beat's `compare` scenario with the main run's knobs, seed and (forked) actions.

    The two runs are aligned by simulated time, not by step number: the comparison shows its
    state after its last step at or before the main view's `t_ms` (both timelines start at 0 and
    share every action, so the same moment is the fair comparison). At the main run's last step
    the comparison is shown at its own end. An invalid combination (the learner's knobs make the
    patch impossible, e.g. a quorum of 2 with one replica) is reported, never raised.
    """
    beat = scene.beat(state.beat)
    if beat.compare is None:
        return None
    try:
        scenario = scene.compare_scenario_for(beat, dict(state.knobs), timeline.scenario.get("actions", []))
    except (KeyError, ValueError) as exc:
        return CompareRun(None, f"The comparison cannot be built with these knobs: {exc}")
    scenario["seed"] = state.seed
    try:
        result = sim.full(scenario)
    except engine.ScenarioError as exc:
        if isinstance(exc, engine.BudgetExceeded) and not exc.deterministic:
            raise
        reasons = "; ".join(p["message"] for p in exc.problems)
        return CompareRun(None, f"The comparison cannot run with these knobs: {reasons}.")
    steps = result.get("steps", [])
    count = result["step_count"]
    if timeline.step >= timeline.step_count:
        step = count
    elif timeline.step == 0:
        step = 0
    else:
        step = min(count, _step_at_time(steps, int(timeline.view.get("t_ms", 0))))
    view = sim.view(scenario, step)
    partitions = sim.view_result(scenario, step).get("partitions", []) if "partitions" in result else []
    run = Timeline(
        scenario=scenario,
        result=result,
        view=view,
        step=step,
        step_count=count,
        first_step=0,
        last_step=count,
        partitions=partitions,
        rules_as_preset=_rules(result) == sim.profile(scene.compare_scenario_for(beat)),
        views=sim.views(scenario),
    )
    return CompareRun(run, same_as_main=canonical_json(scenario) == canonical_json(timeline.scenario))
