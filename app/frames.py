"""A beat's stops: the default path that Step and Back walk.

Theory of operation
-------------------
The engine emits one step per observable event, and a beat can have hundreds of them (a producer
retrying every second while the ISR is below its minimum). The learner's Step button walks
*stops* instead. A stop is a run of consecutive engine steps shown as one: the page shows the
state after its last step (`Stop.step`) and its caption tells what happened in all of them.

Stops are built in two passes over the timeline's steps:

1. Repetition. The step kinds (with the actor and partition that took them) are searched for a
   block of steps that repeats at least `MIN_REPEATS` times in a row (a retry loop: send, refuse,
   receive, retry). The first round stays as it is, so the learner sees one round step by step;
   the other rounds become one *repeat* stop whose caption says what repeated, how often and
   over how long. Key moments never fall inside a folded round: a run stops before one.
2. Visibility. A step whose diagram looks the same as the previous stop's (same
   `visible_signature`; only the clock differs) is folded into the next stop that changes
   something. Steps after the last visible change are folded into the last stop. Steps one actor
   takes at one simulated moment are one stop too (the leader advances its HW and completes the
   parked request): the diagram, which draws every message in flight, would otherwise make
   nearly every engine step a stop of its own. A fault the operator injects is never joined
   with another step: a crash, a restart and a second crash at one moment are three stops.

A final pass makes sure no two consecutive stops look the same (a repeat stop often ends where
its first round ended); the plain stop before a repeat is then absorbed into it, otherwise the
look-alike stop is folded into the one after it.

A beat's key moments (`key_moments` in its TOML: an engine step kind and which occurrence) are
resolved to the stop that holds that step; a key moment the learner's knobs make disappear
resolves to nothing and the page says so.

Stops are a pure function of the scenario (and the beat's key moments), so they are cached per
scenario like the engine results.
"""

from __future__ import annotations

import collections
import hashlib
import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from app.formats import sim_time
from engine.state import record_label

MIN_REPEATS = 3  # a block must occur this many times in a row to be folded
MAX_PERIOD = 16  # the longest repeating block searched for, in engine steps
MIN_FOLDED_STEPS = 3  # fewer folded steps than this is not worth a stop of its own
TIME_JUMP_MS = 1000  # a gap in simulated time above this is named in the caption
TITLE_TEXTS = 3  # step texts quoted in a stop's title before the rest are counted
STOPS_CACHE_ENTRIES = 64

_ERROR_RE = re.compile(r"\b[A-Z][A-Z_]{4,}[A-Z]\b")

# A consumer joining its group: the wire protocol between subscribe() and the member owning its
# partitions (JoinGroup, MEMBER_ID_REQUIRED, JoinGroup again, the initial delay, SyncGroup). In a
# scene that is not about groups it is one stop, ending at consumer_join (the assignment); a beat
# with a key moment on one of these kinds wants them step by step and keeps them.
JOIN_PROTOCOL_KINDS = frozenset({
    "consumer_subscribe", "consumer_join_group", "group_member_id_required", "group_prepare_rebalance",
    "group_initial_delay", "group_join_complete", "consumer_leader_assign", "consumer_sync_group",
    "group_sync_complete",
})
JOIN_PROTOCOL_END = "consumer_join"


def _join_title(texts: Sequence[str]) -> str:
    """One stop for a whole join: what started it, how many protocol steps, and what it gave."""
    texts = [t.rstrip(".") for t in texts if t]
    middle = len(texts) - 2
    return (f"{texts[0]}; the group protocol takes {middle} more steps (JoinGroup, the member id the "
            f"coordinator hands out, SyncGroup); {texts[-1]}.")


@dataclass(frozen=True)
class KeyMoment:
    title: str
    kind: str
    nth: int = 1


@dataclass(frozen=True)
class Stop:
    step: int  # the engine step the page shows (the last step folded into the stop)
    first_step: int  # the first engine step folded into it (== step for a single step)
    kind: str  # the engine step kind of the step shown ("start" before the first step)
    title: str  # what happened, from the texts of the steps folded into it
    folded_count: int  # how many engine steps it holds
    folded_ms: int  # simulated time from the previous stop to this one
    key_moment: str | None = None
    repeat: bool = False  # a folded repetitive stretch (can be expanded with fine=1)
    repeat_first_step: int | None = None  # where the folded rounds begin
    texts: tuple[str, ...] = field(default=(), repr=False)

    @property
    def time_jump(self) -> str | None:
        """ "9 s later" when simulated time jumps by more than a second before this stop."""
        if self.folded_ms > TIME_JUMP_MS:
            return f"{sim_time(self.folded_ms)} later"
        return None


INVISIBLE_KEYS = ("clock", "description", "summary", "id_prefix", "defs")


def _stand_in_signature(drawn: dict[str, Any]) -> str:
    """A hash of the diagram without what merely ticks with time or names the page's ids (the
    diagram helper's `visible_signature` replaces this once it exists)."""
    visible = {k: v for k, v in drawn.items() if k not in INVISIBLE_KEYS}
    text = json.dumps(visible, sort_keys=True, default=lambda o: getattr(o, "__dict__", str(o)))
    return hashlib.blake2b(text.encode(), digest_size=16).hexdigest()


def visible_signature(drawn: dict[str, Any]) -> str:
    from app import presenters

    return getattr(presenters, "visible_signature", _stand_in_signature)(drawn)


# ----------------------------------------------------------------------------------------------
# pass 1: repetitive stretches


@dataclass(frozen=True)
class Run:
    start: int  # 0-based index of the first step of the first round
    period: int
    repeats: int

    @property
    def folded_start(self) -> int:  # 0-based index of the first folded step (round 2)
        return self.start + self.period

    @property
    def end(self) -> int:  # 0-based index one past the last folded step
        return self.start + self.period * self.repeats


def _step_key(step: dict[str, Any], records_by_partition: bool = False) -> tuple[Any, ...]:
    """What must match for two steps to count as the same: the kind and who took it; with
    several partitions the kind alone, so the same event in each partition is one repetition.
    With `records_by_partition` (a scene about partitions and their logs) a step that carries
    records also keeps its partition: where records go is what a round of produces shows there
    (a key's partition, a sticky run), so a round in another partition is not a repeat."""
    if "partition" in step:
        if records_by_partition and step.get("records"):
            return (step.get("kind"), step.get("partition"))
        return (step.get("kind"),)
    return (step.get("kind"), step.get("actor"))


def find_runs(steps: Sequence[dict[str, Any]], barriers: set[int] = frozenset(),
              records_by_partition: bool = False) -> list[Run]:
    """Maximal repeating blocks, left to right. `barriers` are 0-based step indexes that must not
    be folded (key moments): a run ends before the round that holds one."""
    keys = [_step_key(s, records_by_partition) for s in steps]
    n = len(keys)
    runs: list[Run] = []
    i = 0
    while i < n:
        best: Run | None = None
        for period in range(1, MAX_PERIOD + 1):
            if i + period * MIN_REPEATS > n:
                break
            block = keys[i : i + period]
            repeats = 1
            while keys[i + repeats * period : i + (repeats + 1) * period] == block:
                first = i + repeats * period
                if any(b in barriers for b in range(first, first + period)):
                    break
                repeats += 1
            if repeats < MIN_REPEATS or period * (repeats - 1) < MIN_FOLDED_STEPS:
                continue
            if best is None or period * repeats > best.period * best.repeats:
                best = Run(i, period, repeats)
        if best is not None:
            runs.append(best)
            i = best.end
        else:
            i += 1
    return runs


def _count(steps: Sequence[dict[str, Any]], kind: str) -> int:
    return sum(1 for s in steps if s.get("kind") == kind)


def repeat_title(
    round_steps: Sequence[dict[str, Any]], folded: Sequence[dict[str, Any]], span_ms: int
) -> str:
    """What a folded stretch repeated, how often and over how long."""
    rounds = len(folded) // max(1, len(round_steps))
    over = f"over {sim_time(span_ms)}" if span_ms > 0 else "at the same moment"
    retries = _count(folded, "producer_retry")
    if retries:
        errors = collections.Counter(
            m for s in folded if s.get("kind") in ("producer_receive", "producer_retry")
            for m in _ERROR_RE.findall(str(s.get("text", "")))
        )
        error = f"; {errors.most_common(1)[0][0]} each time" if errors else ""
        return f"The producer retried {retries} more time{'s' if retries != 1 else ''} {over}{error}."
    shown = {int(s["partition"]) for s in round_steps if s.get("partition") is not None}
    partitions = sorted({int(s["partition"]) for s in folded if s.get("partition") is not None} - shown)
    first = str(round_steps[0].get("text", "")).rstrip(".")
    if span_ms == 0 and partitions:
        # the stop's caption is this title alone: say what happened, then where else it happened
        names = ", ".join(f"P{p}" for p in partitions)
        return f"{first}; the same happens in {names} at the same moment."
    fetches = _count(folded, "follower_fetch")
    if fetches and fetches * 2 >= len(folded):
        return f"Followers fetched {fetches} more time{'s' if fetches != 1 else ''} {over}."
    # rounds that each carried other records (one record after another, produced and stored):
    # name the records, and quote the first folded step rather than the round already shown
    shown_records = {record_label(r) for s in round_steps for r in (s.get("records") or [])}
    folded_records = list(dict.fromkeys(record_label(r) for s in folded for r in (s.get("records") or [])))
    if folded_records and not set(folded_records) <= shown_records:
        example = str(folded[0].get("text", "")).rstrip(".")
        return (f"The same happened {rounds} more time{'s' if rounds != 1 else ''} {over}, for "
                f"{', '.join(folded_records)}: e.g. {example}.")
    others = len(round_steps) - 1
    more = f" (and {others} more step{'s' if others > 1 else ''})" if others else ""
    return f"The same happened {rounds} more time{'s' if rounds != 1 else ''} {over}, e.g. {first}{more}."


# ----------------------------------------------------------------------------------------------
# pass 2: visibility, then no two look-alike stops in a row


@dataclass
class _Draft:
    first: int  # 1-based engine steps
    last: int
    repeat_title: str | None = None
    repeat_first: int | None = None
    key: bool = False

    def merged(self, later: _Draft) -> _Draft:
        return _Draft(
            self.first,
            later.last,
            repeat_title=later.repeat_title or self.repeat_title,
            repeat_first=later.repeat_first if later.repeat_title else self.repeat_first,
            key=self.key or later.key,
        )


def _title(texts: Sequence[str], repeat: str | None) -> str:
    texts = [t.rstrip(".") for t in texts if t]
    if repeat:
        return repeat
    if not texts:
        return ""
    if len(texts) <= TITLE_TEXTS:
        return "; ".join(texts) + "."
    return f"{texts[0]}; … {len(texts) - 2} more steps …; {texts[-1]}."


def stops(
    timeline: Any,
    diagram_fn: Callable[[int], dict[str, Any] | None],
    key_moments: Sequence[KeyMoment] = (),
    signature_fn: Callable[[dict[str, Any]], str] | None = None,
) -> list[Stop]:
    """The stops of a timeline. `diagram_fn(step)` is the diagram after `step` engine steps (None
    when it cannot be drawn cheaply: every step then counts as a visible change)."""
    steps: list[dict[str, Any]] = list(timeline.steps)
    n = len(steps)
    if signature_fn is None:
        signature_fn = visible_signature
    sig_cache: dict[int, str | None] = {}

    def sig(step: int) -> str | None:
        if step not in sig_cache:
            drawn = diagram_fn(step)
            sig_cache[step] = None if drawn is None else signature_fn(drawn)
        return sig_cache[step]

    def same(a: int, b: int) -> bool:
        sa, sb = sig(a), sig(b)
        return sa is not None and sa == sb

    fold_joins = not any(m.kind in JOIN_PROTOCOL_KINDS for m in key_moments)

    def joining(step: int) -> bool:
        """A step of a group join that the next one continues (see JOIN_PROTOCOL_KINDS)."""
        this, after = steps[step - 1], steps[step]
        return (fold_joins and this.get("kind") in JOIN_PROTOCOL_KINDS
                and after.get("kind") in JOIN_PROTOCOL_KINDS | {JOIN_PROTOCOL_END}
                and "operator" not in (this.get("actor"), after.get("actor")))

    def together(step: int) -> bool:
        """Steps one actor takes at one simulated moment are one stop (the leader advances its HW
        and completes the parked request); without a diagram to compare, so are all the steps of
        one moment. A group join is one stop too, unless the beat is about it."""
        if step >= n:
            return False
        if joining(step):
            return True
        this, after = steps[step - 1], steps[step]
        if this.get("t_ms") != after.get("t_ms") or "operator" in (this.get("actor"), after.get("actor")):
            return False  # each fault the operator injects is a stop of its own
        return this.get("actor") == after.get("actor") or sig(step) is None

    key_steps = key_moment_steps(steps, key_moments)  # 1-based step -> titles
    from app.logdiagram import log_mode  # a scene drawn as partitions: where records go matters

    runs = find_runs(steps, {s - 1 for s in key_steps}, log_mode(getattr(timeline, "scenario", None) or {}))
    run_at = {r.folded_start: r for r in runs}

    drafts: list[_Draft] = [_Draft(0, 0)]
    pending: int | None = None
    index = 0
    while index < n:
        run = run_at.get(index)
        if run is not None:
            folded = steps[run.folded_start : run.end]
            span = int(folded[-1]["t_ms"]) - int(steps[run.folded_start - 1]["t_ms"])
            title = repeat_title(steps[run.start : run.folded_start], folded, span)
            first = pending if pending is not None else run.folded_start + 1
            drafts.append(_Draft(first, run.end, repeat_title=title, repeat_first=run.folded_start + 1))
            pending = None
            index = run.end
            continue
        step = index + 1
        if pending is None:
            pending = step
        # a key moment is a stop of its own, also inside one actor's moment (the coordinator fences
        # an epoch and answers CONCURRENT_TRANSACTIONS at one instant), when it shows a change
        own = step in key_steps and not same(step, drafts[-1].last)
        if own or (not together(step) and (step in key_steps or not same(step, drafts[-1].last))):
            drafts.append(_Draft(pending, step, key=step in key_steps))
            pending = None
        index += 1
    if pending is not None:
        if len(drafts) > 1:
            drafts[-1] = drafts[-1].merged(_Draft(pending, n))
        else:
            drafts.append(_Draft(pending, n))

    # no two look-alike stops in a row
    k = 1
    while k < len(drafts):
        if not same(drafts[k].last, drafts[k - 1].last):
            k += 1
            continue
        here, before = drafts[k], drafts[k - 1]
        if here.repeat_title and k - 1 > 0 and not before.repeat_title and not before.key:
            drafts[k - 1 : k + 1] = [before.merged(here)]
            k -= 1
        elif k + 1 < len(drafts):
            drafts[k : k + 2] = [here.merged(drafts[k + 1])]
        elif k - 1 > 0:
            drafts[k - 1 : k + 1] = [before.merged(here)]
            k -= 1
        else:
            k += 1

    out: list[Stop] = []
    previous_t = 0
    for draft in drafts:
        if draft.last == 0:
            out.append(Stop(0, 0, "start", "Before the first step.", 0, 0))
            continue
        held = steps[draft.first - 1 : draft.last]
        shown = steps[draft.last - 1]
        texts = tuple(str(s.get("text", "")) for s in held)
        t_ms = int(shown.get("t_ms", 0))
        moments = [t for s in range(draft.first, draft.last + 1) for t in key_steps.get(s, [])]
        title = _title(texts, draft.repeat_title)
        kinds = [str(s.get("kind")) for s in held]
        if (fold_joins and not draft.repeat_title and len(held) > TITLE_TEXTS
                and kinds[-1] == JOIN_PROTOCOL_END and set(kinds[:-1]) <= JOIN_PROTOCOL_KINDS):
            title = _join_title(texts)
        if draft.repeat_title and draft.repeat_first and draft.repeat_first > draft.first:
            before_run = texts[: draft.repeat_first - draft.first]
            title = _title(before_run, None) + " " + draft.repeat_title
        out.append(
            Stop(
                step=draft.last,
                first_step=draft.first,
                kind=str(shown.get("kind", "")),
                title=title,
                folded_count=len(held),
                folded_ms=t_ms - previous_t,
                key_moment=" · ".join(moments) or None,
                repeat=draft.repeat_title is not None,
                repeat_first_step=draft.repeat_first,
                texts=texts,
            )
        )
        previous_t = t_ms
    return out


def key_moment_steps(
    steps: Sequence[dict[str, Any]], key_moments: Sequence[KeyMoment]
) -> dict[int, list[str]]:
    """1-based engine step of each key moment that happens in this run -> its titles."""
    found: dict[int, list[str]] = {}
    for moment in key_moments:
        step = find_key_moment(steps, moment)
        if step is not None:
            found.setdefault(step, []).append(moment.title)
    return found


def find_key_moment(steps: Sequence[dict[str, Any]], moment: KeyMoment) -> int | None:
    seen = 0
    for index, s in enumerate(steps):
        if s.get("kind") == moment.kind:
            seen += 1
            if seen == moment.nth:
                return index + 1
    return None


def stop_index(all_stops: Sequence[Stop], step: int) -> int:
    """Index of the stop that holds engine step `step` (the first stop for step 0)."""
    low, high = 0, len(all_stops) - 1
    while low < high:  # the first stop whose shown step is >= step
        mid = (low + high) // 2
        if all_stops[mid].step >= step:
            high = mid
        else:
            low = mid + 1
    return low


def next_stop(all_stops: Sequence[Stop], step: int) -> Stop | None:
    for stop in all_stops:
        if stop.step > step:
            return stop
    return None


def previous_stop(all_stops: Sequence[Stop], step: int) -> Stop | None:
    for stop in reversed(all_stops):
        if stop.step < step:
            return stop
    return None


def within(all_stops: Sequence[Stop], first: int, last: int) -> list[Stop]:
    """The stops inside an embed's [first, last] window, with its two ends as stops."""
    inside = [s for s in all_stops if first < s.step < last]
    head = next((s for s in all_stops if s.step >= first), None)
    start = replace(head, step=first) if head is not None and head.step != first else head
    if start is None or start.step != first:
        start = Stop(first, first, "start", "Start of this excerpt.", 0, 0)
    tail = next((s for s in all_stops if s.step >= last), all_stops[-1])
    end = replace(tail, step=last) if tail.step != last else tail
    out = [start] + inside
    if end.step != start.step:
        out.append(end)
    return out


# ----------------------------------------------------------------------------------------------
# the app's entry point: stops of the page's timeline, cached per scenario


def beat_key_moments(beat: Any) -> tuple[KeyMoment, ...]:
    return tuple(
        KeyMoment(str(m.title), str(m.kind), int(m.nth)) for m in (getattr(beat, "key_moments", None) or [])
    )


@dataclass(frozen=True)
class Path:
    """A timeline's stops, and the height each geometry of its diagram needs at the tallest of
    them (`box`: {"wide": units, "narrow": units}, empty when the steps cannot be drawn)."""

    stops: list[Stop]
    box: dict[str, int]


def timeline_path(sim: Any, timeline: Any, key_moments: Sequence[KeyMoment] = ()) -> Path:
    """The stops of a timeline (the page's whole run, not an embed's window) and the diagram's
    box, cached per scenario.

    The box is what keeps the Step bar still: the drawing grows and shrinks from step to step (a
    message in flight adds a line), so the page draws every step of the timeline at the height of
    its tallest stop (presenters.diagram pads the shorter ones at the bottom). Finding the stops
    already draws most steps; the box takes every step drawn that way, and draws the stops that
    were not (at most one drawing per stop more)."""
    from app import presenters
    from app.simulation import Timeline, canonical_json

    scenario = timeline.scenario
    views = sim.views(scenario)
    heights: dict[int, tuple[int, int]] = {}

    def draw(step: int) -> dict[str, Any] | None:
        if views is None:
            return None
        at = Timeline(
            scenario=scenario,
            result=timeline.result,
            view=views[min(step, len(views) - 1)],
            step=step,
            step_count=timeline.step_count,
            first_step=0,
            last_step=timeline.step_count,
            views=views,
        )
        drawn = presenters.diagram(at, scenario)
        heights[step] = (int(drawn["height"]), int(drawn["narrow"]["height"]))
        return drawn

    def build() -> Path:
        found = stops(timeline, draw, key_moments)
        if views is None:
            return Path(found, {})
        for stop in found:
            if stop.step not in heights:
                draw(stop.step)
        return Path(found, {"wide": max(h[0] for h in heights.values()),
                            "narrow": max(h[1] for h in heights.values())})

    key = ("stops", canonical_json(scenario), tuple(key_moments))
    return sim.memo(key, build)


def timeline_stops(sim: Any, timeline: Any, key_moments: Sequence[KeyMoment] = ()) -> list[Stop]:
    """The stops of a timeline (the page's whole run, not an embed's window), cached."""
    return timeline_path(sim, timeline, key_moments).stops
