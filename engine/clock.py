"""The one simulated clock of a run, with its budget and idle-time skipping (see Clock)."""

from __future__ import annotations

import dataclasses
import heapq
import itertools
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from . import budget as _budget
from .budget import BudgetExceeded
from .scenario import Limits

if TYPE_CHECKING:
    from .sim import Sim

@dataclasses.dataclass
class RunUse:
    """What a run has used so far across its partitions (estimated result bytes)."""

    result_bytes: int = 0


class Clock:
    """The one simulated clock of a run: every partition's simulation queues its events here.

    With several partitions, each partition has its own `Sim` (its replicas, its controller view,
    its producer batches), but they all wait in one queue ordered by (time, insertion), so a fault
    lands at the same simulated millisecond in every partition and a `settle` ends at one time for
    the whole cluster. `steps` numbers the steps of the whole run in the order they happened.
    """

    __slots__ = (
        "now", "q", "tick", "events", "steps", "limits", "budget", "stale", "sims", "skips", "skipped_ms",
        "shiftable", "cap", "owner",
    )

    def __init__(self, limits: Limits, cap: int | None = None) -> None:
        self.cap = limits.max_sim_ms if cap is None else cap  # the scenario's simulated-time cap
        self.now = 0
        self.q: list[tuple[int, int, Sim, Any, tuple[Any, ...]]] = []
        self.tick = itertools.count(1).__next__
        self.events = 0
        self.steps = 0
        self.limits = limits
        self.budget = _budget.current()
        self.stale: list[Sim] = []  # partitions changed by a step told by another (see Sim.step)
        self.sims: list[Sim] = []  # set when idle time may be skipped (skip_idle)
        # which queued events an idle skip moves with the clock (set by the run: engine/cluster.py)
        self.shiftable: Callable[[Any, Any], bool] = lambda owner, fn: False
        self.skips = 0
        self.skipped_ms = 0
        self.owner: Any = None  # whose event ran last (a Sim, the consumers, the producer)

    def refresh_stale(self) -> None:
        for sim in self.stale:
            sim.refresh_view()
        self.stale.clear()

    def run_until(self, t_end: int, stop: Any = None) -> None:
        cap = self.cap
        clamped = t_end > cap
        if clamped:
            t_end = cap
        q = self.q
        pop = heapq.heappop
        max_events = self.limits.max_events
        check_every = _budget.CHECK_EVERY_EVENTS
        # one comparison per event: `mark` is the next event count at which to look at the
        # budget (the event cap, or the next deadline/cancel check, whichever comes first)
        mark = min(max_events + 1, self.events + check_every)
        next_idle_check = self.now + IDLE_CHECK_MS if self.sims else cap + 1
        while q and q[0][0] <= t_end:
            if q[0][0] >= next_idle_check:
                self.skip_idle(t_end)
                next_idle_check = q[0][0] + IDLE_CHECK_MS
            t, _, owner, fn, args = pop(q)
            self.now = owner.now = t
            self.owner = owner
            fn(*args)
            if self.stale:
                self.refresh_stale()
            self.events += 1
            if self.events >= mark:
                if self.events > max_events:
                    raise BudgetExceeded(
                        "events",
                        f"the scenario needs more than {self.limits.max_events} engine events (all "
                        "partitions together); shorten it (fewer actions, partitions or less simulated time)",
                    )
                self.budget.check()
                mark = min(max_events + 1, self.events + check_every)
            if stop is not None and stop():
                return
        if clamped:
            raise BudgetExceeded(
                "sim_time",
                f"the scenario runs past the cap of {cap} ms of simulated time; "
                "use fewer or shorter advance/settle actions",
            )
        self.now = max(self.now, t_end)

    def skip_idle(self, t_end: int) -> None:
        """Jump over simulated time in which a quiet cluster only repeats its housekeeping.

        Quiet (Sim.quiet_for_skip): nothing to produce, every replica in sync, every broker
        registered and in touch, so each pending event of the replication engine is a heartbeat,
        an empty fetch or a periodic check that changes nothing. Those events, and the times the
        engine compares them with, move forward together by the jump; the cluster's next events
        are the same ones, later. What must happen at its own time (a consumer's timer, the end of
        the action) is not moved: the jump stops IDLE_MARGIN_MS before the first of them, and the
        engine runs normally from there. Days of idle time then cost a few hundred events."""
        sims = self.sims
        wake = t_end
        for t, _tick, owner, fn, _args in self.q:
            if t < wake and not self.shiftable(owner, fn):
                wake = t
        delta = wake - IDLE_MARGIN_MS - self.now
        if delta < IDLE_MARGIN_MS or not all(sim.quiet_for_skip() for sim in sims):
            return
        clients = sims[0].clients
        if clients is not None and not clients.quiet_for_skip():
            return
        moved = []
        for t, tick, owner, fn, args in self.q:
            if self.shiftable(owner, fn):
                args = owner.moved_args(fn, args, delta)
                t += delta
            moved.append((t, tick, owner, fn, args))
        heapq.heapify(moved)
        self.q[:] = moved
        for sim in sims:
            sim.shift_clocks(delta)
        if clients is not None:
            clients.shift_clocks(delta)
        self.now += delta
        for sim in sims:
            sim.now = self.now
        self.skips += 1
        self.skipped_ms += delta


# Idle-time skipping (Clock.skip_idle): how often a run looks for a quiet cluster, and how much
# simulated time it leaves to run normally before the next event that must happen at its own time
IDLE_CHECK_MS = 1_000
IDLE_MARGIN_MS = 30_000
