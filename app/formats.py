"""The one spelling of simulated time, and the one step counter, for everything a page shows.

Issue 10's new-learner check found the drawing's clock saying "t = 0.004 s" next to the Step bar's
"t = 4 ms", a caption saying "9.0 s later" and a summary "t = 5007 ms"; and three step counters on
one page: the Step bar counted stops ("stop 3 of 6"), the summary, the key-moment links and the
scrubber counted engine steps ("after step 4 of 10", "(step 4)", "4"). Each is now spelled here
and nowhere else.

Simulated time, a clock reading or a span of it (`sim_time`, and `clock` for a reading):

    0 ms, 850 ms                      below a second, in milliseconds
    1 s, 1.5 s, 5.007 s, 59.999 s     below a minute, in seconds, to the millisecond
    5 min, 2 min 5.25 s               then minutes, hours and days, each unit named
    1 hour 0 min 30 s, 7 days

Exact to the millisecond at every size, so two steps a millisecond apart never read the same;
trailing zeros are left out, so a round value reads round.

The step counter (`step_counter`, `step_ref`) counts presses of Step from the start of the beat:
what the Step button does is what the counter counts. "step 0 of 5" is the beat's start, "step 5
of 5" its last stop; a position between two stops (the scrubber and "one engine step at a time"
reach every engine step) reads "between steps 2 and 3 of 5". The engine's own step numbers stay in
the URL (`step=`, `a=crash:2@5`) and out of the text.
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence

_UNITS = ((86_400_000, "day", "days"), (3_600_000, "hour", "hours"), (60_000, "min", "min"))


def _seconds(ms: int) -> str:
    whole, milli = divmod(ms, 1000)
    return f"{whole} s" if not milli else f"{whole}.{milli:03d}".rstrip("0") + " s"


def sim_time(ms: float) -> str:
    """An amount of simulated time (see the module docstring)."""
    ms = max(0, round(ms))
    if ms < 1000:
        return f"{ms} ms"
    if ms < 60_000:
        return _seconds(ms)
    parts: list[str] = []
    rest = ms
    for size, one, many in _UNITS:
        count, rest = divmod(rest, size)
        if count or parts:  # a zero between two named units is named too: "1 hour 0 min 30 s"
            parts.append(f"{count} {one if count == 1 else many}")
    if rest:
        parts.append(_seconds(rest))
    while parts and parts[-1].startswith("0 "):  # "7 days", not "7 days 0 hours 0 min"
        parts.pop()
    return " ".join(parts)


def clock(ms: float) -> str:
    """A reading of the simulated clock: "t = 1.5 s"."""
    return f"t = {sim_time(ms)}"


def _place(stops: Sequence[int], step: int) -> tuple[int, bool]:
    """(k, exact): the engine step is the k-th stop after the start, or lies between stops k-1
    and k. `stops` are the engine steps of the stops, the start first, in order."""
    k = min(bisect.bisect_left(stops, step), len(stops) - 1)
    return k, stops[k] == step


def step_ref(stops: Sequence[int] | None, step: int) -> str:
    """Where an engine step is, as the Step button counts: "step 2", "between steps 2 and 3". Without
    stops (a run the diagram cannot fold), the engine step itself."""
    if not stops:
        return f"step {step}"
    k, exact = _place(stops, step)
    return f"step {k}" if exact else f"between steps {k - 1} and {k}"


def step_counter(stops: Sequence[int] | None, step: int, engine_steps: int) -> str:
    """The position on the beat's path: "step 2 of 5", "between steps 2 and 3 of 5". Without stops,
    "step 4 of 10" in engine steps (`engine_steps`)."""
    if not stops:
        return f"step {step} of {engine_steps}"
    return f"{step_ref(stops, step)} of {len(stops) - 1}"
