"""One budget per run: what a caller allows a whole `simulate` call, across all its partitions.

The scenario caps (`Limits`) bound a run by counts and simulated time, which are deterministic.
A serving process needs two more bounds that are not: a wall-clock deadline, and a way to stop
when the client that asked has gone. Both come from the caller through a context variable, so
code that calls `engine.simulate` deep inside cached helpers needs no new parameters:

    with engine.budget(deadline_s=2.0, cancelled=client_left):
        page = render(...)          # every simulate() in here obeys the deadline

A run that goes over raises `BudgetExceeded` (a `ScenarioError`), whose `kind` says which
bound: "events", "steps", "sim_time" and "result_bytes" are properties of the scenario (the same
input is refused every time), "deadline" and "cancelled" are properties of this moment.
"""

from __future__ import annotations

import contextlib
import contextvars
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from typing import Any

from .scenario import Limits, ScenarioError

# How often (in engine events) the run loop looks at the clock and the cancel flag: about a
# millisecond of simulation, so a run stops within a few ms of its deadline at no visible cost.
CHECK_EVERY_EVENTS = 1024

# The estimated size of a result a caller may ask for (steps and views included), so one request
# cannot make the process build hundreds of megabytes. Estimated from what the run recorded.
MAX_RESULT_BYTES = 64 * 1024 * 1024


# The estimate's unit costs, in bytes of Python objects (dicts, lists, strs, ints) as CPython 3.11
# holds them, fitted with tracemalloc on record-heavy, step-heavy, per-step-state and
# several-partition runs (bench/cache_memory.py prints the estimate beside resident memory).
# A step's dict and text; each record it lists (a pointer in `records`, an offset int in
# `offsets`); per snapshot its fixed parts, each broker's dict, each log entry's dict, each leader
# epoch cache pair and each name in the ledger's lists.
STEP_BYTES = 600
RECORD_BYTES = 48
SNAPSHOT_BYTES = 6_000
SNAPSHOT_BYTES_PER_BROKER = 1_500
LOG_ENTRY_BYTES = 220
EPOCH_ENTRY_BYTES = 80
LEDGER_ENTRY_BYTES = 8


def snapshot_bytes(snapshot: dict[str, Any], seen: set[int] | None = None) -> int:
    """About how many bytes one snapshot (`final`, a view) holds in memory. A several-partition
    view holds every partition's snapshot, and consecutive views share the ones that did not
    change: with `seen` (ids already counted) each is counted once. A partition not created yet
    at that step (None) holds nothing."""
    parts = snapshot.get("partitions") or [snapshot]
    total = 0 if parts[0] is snapshot else 400  # a merged view's own (shallow) dict
    for part in parts:
        if part is None:
            continue
        if seen is not None:
            if id(part) in seen:
                continue
            seen.add(id(part))
        brokers = part.get("brokers", {}).values()
        total += SNAPSHOT_BYTES + SNAPSHOT_BYTES_PER_BROKER * len(brokers)
        for b in brokers:
            total += LOG_ENTRY_BYTES * len(b["log"]) + EPOCH_ENTRY_BYTES * len(b["epoch_cache"])
        ledger = part.get("ledger")
        if ledger:
            total += LEDGER_ENTRY_BYTES * sum(len(names) for names in ledger.values())
    return total


def step_bytes(text: str, records: Any) -> int:
    """About how many bytes one recorded step holds in memory."""
    return STEP_BYTES + len(text) + (RECORD_BYTES * len(records) if records else 0)


def estimate_bytes(result: dict[str, Any]) -> int:
    """About how many bytes a result holds in memory: what caches weigh their entries by, and
    what `max_result_bytes` bounds while the run builds it."""
    total = 1024 + sum(step_bytes(st["text"], st.get("records")) for st in result.get("steps") or ())
    if "final" in result:
        total += snapshot_bytes(result["final"])
    if "view" in result:
        total += snapshot_bytes(result["view"])
    seen: set[int] = set()
    return total + sum(snapshot_bytes(v, seen) for v in result.get("views") or ())


class BudgetExceeded(ScenarioError):
    """A run went over its budget. `kind` is one of KINDS."""

    KINDS = ("events", "steps", "sim_time", "result_bytes", "deadline", "cancelled")

    def __init__(self, kind: str, message: str, path: str = "actions"):
        super().__init__([{"path": path, "message": message}])
        self.kind = kind

    @property
    def deterministic(self) -> bool:
        """True when the same scenario would be refused again (a 4xx), False for a busy moment."""
        return self.kind not in ("deadline", "cancelled")


@dataclass(frozen=True)
class RunBudget:
    """What one `simulate` call may use, all partitions together.

    max_events, max_sim_ms, max_steps: None means the `Limits` the call was given (by default
    the scenario caps); a number lowers them for every run in the block, never raises them.
    """

    max_events: int | None = None
    max_sim_ms: int | None = None
    max_steps: int | None = None
    max_result_bytes: int = MAX_RESULT_BYTES
    deadline: float | None = None  # a time.monotonic() value
    cancelled: Callable[[], bool] | None = None
    deadline_s: float | None = None  # as given, for the message

    def limits(self, limits: Limits) -> Limits:
        """`limits` lowered to this budget's counts (the same object when nothing changes)."""
        lowered = {
            name: mine
            for name in ("max_events", "max_sim_ms", "max_steps")
            if (mine := getattr(self, name)) is not None and mine < getattr(limits, name)
        }
        # the budget's max_sim_ms bounds every scenario, part-2 ones (max_sim_ms_long) included
        if self.max_sim_ms is not None and self.max_sim_ms < limits.max_sim_ms_long:
            lowered["max_sim_ms_long"] = self.max_sim_ms
        return replace(limits, **lowered) if lowered else limits

    def check(self) -> None:
        """Raise if the deadline has passed or the caller has gone (cheap; call it now and then)."""
        if self.cancelled is not None and self.cancelled():
            raise BudgetExceeded("cancelled", "the request was cancelled before the run finished")
        if self.deadline is not None and time.monotonic() > self.deadline:
            raise BudgetExceeded(
                "deadline",
                f"the run needed more than the {self.deadline_s:g} s of computing time this server gives "
                "one request; try again, or shorten the scenario",
            )


_UNBOUNDED = RunBudget()
_current: contextvars.ContextVar[RunBudget | None] = contextvars.ContextVar("engine_budget", default=None)


def current() -> RunBudget:
    """The budget in force here (no deadline, the default result cap, outside any `budget`)."""
    return _current.get() or _UNBOUNDED


def _either(first: Callable[[], bool], second: Callable[[], bool]) -> Callable[[], bool]:
    return lambda: first() or second()


def _lower(mine: int | None, outer: int | None) -> int | None:
    return outer if mine is None else mine if outer is None else min(mine, outer)


@contextlib.contextmanager
def budget(
    deadline_s: float | None = None,
    cancelled: Callable[[], bool] | None = None,
    max_result_bytes: int | None = None,
    *,
    max_events: int | None = None,
    max_sim_ms: int | None = None,
    max_steps: int | None = None,
) -> Iterator[RunBudget]:
    """Every `engine.simulate` call inside the block obeys these bounds (see the module doc).

    Nested blocks only tighten: the earlier deadline, the smaller caps, and both cancel checks."""
    outer = current()
    deadline = None if deadline_s is None else time.monotonic() + max(0.0, deadline_s)
    if outer.deadline is not None and (deadline is None or outer.deadline < deadline):
        deadline, deadline_s = outer.deadline, outer.deadline_s
    either = cancelled or outer.cancelled
    if cancelled is not None and outer.cancelled is not None:
        either = _either(cancelled, outer.cancelled)
    # the outermost block may set any size (a trusted caller, like `limits`); inner ones tighten
    size = max_result_bytes or outer.max_result_bytes
    if _current.get() is not None:
        size = min(size, outer.max_result_bytes)
    value = RunBudget(
        max_events=_lower(max_events, outer.max_events),
        max_sim_ms=_lower(max_sim_ms, outer.max_sim_ms),
        max_steps=_lower(max_steps, outer.max_steps),
        max_result_bytes=size,
        deadline=deadline,
        cancelled=either,
        deadline_s=deadline_s,
    )
    token = _current.set(value)
    try:
        yield value
    finally:
        _current.reset(token)
