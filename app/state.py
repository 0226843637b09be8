"""The URL *is* the state: parse a scene's query string into a `SceneState`, and back.

Theory of operation
-------------------
Every state a learner can reach (scene, knobs, seed, beat, injected faults, step, the question
they opened) is a query string, so any state can be bookmarked, shared, embedded and cached.
`parse_state` turns the raw query pairs into a frozen `SceneState` plus a list of notes for
values it had to correct; `SceneState.query_pairs()` is the inverse, in one canonical order,
and `app/urls.py` is the only module that turns those pairs into URLs.

Query parameters (canonical order)
----------------------------------
``beat``            id of the guided beat (its action list and its preset knobs)
*Kafka config keys* every knob of the scene under its real config name, e.g.
                    ``acks=all&min.insync.replicas=2&replication.factor=3``; a knob missing
                    from the URL takes the beat's preset, else the scene default
``seed``            the engine seed (default: the scene's)
``a``               injected fault actions, repeatable, applied in order (see below)
``step``            how many engine steps have run (0 = before the first one)
``fine``            ``fine=1``: Step and Back move one engine step instead of one stop (a stop
                    folds steps that change nothing visible and repetitive stretches)
``guess``           the learner's prediction for the current beat's question, a letter (A, B, ...)
                    within its option count; a beat link leaves it out, so it resets per beat
``q``               the id of the staff-engineer question that is open
``ask``             free text for the Q&A search
``lock``, ``from``, ``to``   embeds only: ``lock=beat`` hides beat and knob navigation;
                    ``from``/``to`` keep the timeline inside a step range
``inject``          a one-shot request "inject this fault at the current step"; the server
                    turns it into an ``a`` entry and redirects to the canonical URL

Injected actions: ``a=VERB:BROKER@STEP``
----------------------------------------
``a=crash:2@5`` means "crash broker 2 right after step 5". VERB is one of ``crash``,
``power`` (power loss of that one broker), ``stop`` (stop fetching), ``resume`` (resume
fetching), ``restart``, ``shutdown`` (clean), ``isolate`` (cut the broker off from every
other party: brokers, controller and producer) and ``heal`` (restore its network). STEP
counts steps of the timeline as it is
*before* this action is added (earlier ``a`` entries already applied), so each entry forks the
timeline of the ones before it. The simulation module splits an ``advance``/``settle`` that
was running at that step so the fault lands at that step's simulated time.

Limits: at most `Settings.max_injected_actions` entries (more is a 400 that says so), steps at
most `Settings.max_step`, the whole query at most `Settings.max_query_chars` characters.

Out-of-range knob values are not errors: the nearest valid value is used and a note says so
(status 200). So is a value the control offers but the beat cannot run with (a beat's
``knob_limits``: the beat that grows a topic to 4 partitions cannot start it with 4 or more); the
note then says why. Values that cannot be read at all (``step=abc``, ``a=boom``) are a 400.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from typing import Any

from app.settings import Settings

INJECT_VERBS: dict[str, str] = {
    # URL verb -> label shown on the fault button
    "crash": "Crash",
    "power": "Power loss",
    "stop": "Stop fetching",
    "resume": "Resume fetching",
    "restart": "Restart",
    "shutdown": "Clean shutdown",
    "isolate": "Isolate",
    "heal": "Heal network",
}
_ACTION_RE = re.compile(r"^(?P<verb>[a-z]+)(?::(?P<broker>\d{1,3}))?@(?P<step>\d{1,7})$")
QUIET = "quiet"  # the URL verb of "run until quiet", the one action without a broker
_INJECT_RE = re.compile(r"^(?P<verb>[a-z]+):(?P<broker>\d{1,3})$")
_UINT_RE = re.compile(r"^\d{1,10}$")
_INT_RE = re.compile(r"^-?\d{1,9}$")
_ID_RE = re.compile(r"^[A-Za-z0-9_.-]{1,64}$")
MAX_SEED = 2**31 - 1


class BadStateURL(ValueError):
    """The query string cannot be read (400). `reason` is shown to the learner."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


@dataclass(frozen=True, slots=True)
class InjectedAction:
    verb: str
    broker: int | None  # None for quiet
    after_step: int

    def encode(self) -> str:
        if self.broker is None:
            return f"{self.verb}@{self.after_step}"
        return f"{self.verb}:{self.broker}@{self.after_step}"


@dataclass(frozen=True, slots=True)
class SceneState:
    scene_id: str
    beat: str
    knobs: tuple[tuple[str, str], ...]  # (config key, canonical string value), in scene order
    seed: int
    actions: tuple[InjectedAction, ...] = ()
    step: int = 0
    fine: bool = False
    guess: str | None = None  # the letter of the predict option the learner chose, for this beat
    q: str | None = None
    ask: str | None = None
    lock: str | None = None
    from_step: int | None = None
    to_step: int | None = None
    inject: tuple[str, int] | None = field(default=None, compare=False)

    def replace(self, **changes: Any) -> SceneState:
        return replace(self, **changes)

    def knob(self, key: str) -> str:
        return dict(self.knobs)[key]

    def with_knob(self, key: str, value: str) -> SceneState:
        return replace(self, knobs=tuple((k, value if k == key else v) for k, v in self.knobs))

    def same_scenario(self, other: SceneState | None) -> bool:
        """True when only the position on the timeline (or the Q&A) differs."""
        return (
            other is not None
            and self.scene_id == other.scene_id
            and self.beat == other.beat
            and self.knobs == other.knobs
            and self.seed == other.seed
            and self.actions == other.actions
        )

    def moves_along(self, other: SceneState | None) -> bool:
        """True when only the position on the timeline differs (the step, or moving by stops or by
        engine steps): Step, Back, the scrubber, Restart and End. Such a move replaces the
        browser's history entry instead of adding one (app/main.py), so the browser's Back leaves
        the beat instead of undoing one step at a time; the URL still names the step."""
        return other is not None and self.replace(step=other.step, fine=other.fine) == other

    def query_pairs(self, *, embed: bool = False) -> list[tuple[str, str]]:
        pairs: list[tuple[str, str]] = [("beat", self.beat)]
        pairs += list(self.knobs)
        pairs.append(("seed", str(self.seed)))
        pairs += [("a", action.encode()) for action in self.actions]
        pairs.append(("step", str(self.step)))
        if self.fine:
            pairs.append(("fine", "1"))
        if self.guess:
            pairs.append(("guess", self.guess))
        if self.q:
            pairs.append(("q", self.q))
        if self.ask:
            pairs.append(("ask", self.ask))
        if embed:
            if self.lock:
                pairs.append(("lock", self.lock))
            if self.from_step is not None:
                pairs.append(("from", str(self.from_step)))
            if self.to_step is not None:
                pairs.append(("to", str(self.to_step)))
        return pairs


def format_value(value: Any) -> str:
    """The one spelling of a knob value in URLs and forms (Kafka spells booleans lower case)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def knob_choices(knob: Any) -> list[Any] | None:
    """The allowed values of a choice knob, or None for a numeric range knob."""
    choices = getattr(knob, "choices", None)
    if choices:
        return list(choices)
    if str(getattr(knob, "kind", "")).lower() in {"bool", "boolean", "toggle", "switch"}:
        return [False, True]
    return None


def _parse_knob(knob: Any, raw: str, notes: list[str]) -> str:
    key = knob.key
    choices = knob_choices(knob)
    if choices is not None:
        spelled = {format_value(c).lower(): format_value(c) for c in choices}
        if raw.lower() in spelled:
            return spelled[raw.lower()]
        fallback = format_value(knob.default)
        numeric = [c for c in choices if isinstance(c, int) and not isinstance(c, bool)]
        if numeric and _INT_RE.match(raw):
            fallback = format_value(min(numeric, key=lambda c: (abs(c - int(raw)), c)))
        allowed = ", ".join(format_value(c) for c in choices)
        notes.append(
            f"{key}={raw} is not available in this scene (choose one of {allowed}); showing {key}={fallback}."
        )
        return fallback
    if not _INT_RE.match(raw):
        raise BadStateURL(f"{key} must be a whole number, but the URL says {key}={raw[:40]!r}.")
    value = int(raw)
    low, high = getattr(knob, "min", None), getattr(knob, "max", None)
    if low is not None and value < low:
        notes.append(
            f"{key}={value} is below the smallest value this scene allows ({low}); showing {key}={low}."
        )
        value = low
    if high is not None and value > high:
        notes.append(
            f"{key}={value} is above the largest value this scene allows ({high}); showing {key}={high}."
        )
        value = high
    return str(value)


def _within_beat_limit(key: str, value: str, limit: Any, notes: list[str]) -> str:
    """A knob value the control offers but this beat cannot run with (scenes/model.py KnobLimit):
    the nearest value it can, and a note that says why, instead of an error page."""
    allowed = limit.clamp(int(value))
    if allowed == int(value):
        return value
    notes.append(f"{key}={value} does not work in this beat: {limit.why} Showing {key}={allowed}.")
    return str(allowed)


def _one(params: dict[str, list[str]], name: str) -> str | None:
    values = params.get(name)
    if not values:
        return None
    if len(values) > 1:
        raise BadStateURL(f"The parameter {name} appears {len(values)} times; give it once.")
    return values[0]


def _uint(params: dict[str, list[str]], name: str, *, cap: int) -> int | None:
    raw = _one(params, name)
    if raw is None or raw == "":
        return None
    if not _UINT_RE.match(raw) or int(raw) > cap:
        raise BadStateURL(
            f"{name} must be a whole number from 0 to {cap}, but the URL says {name}={raw[:40]!r}."
        )
    return int(raw)


def beat_knob_values(beat: Any) -> dict[str, str]:
    presets = getattr(beat, "knobs", None) or {}
    return {key: format_value(value) for key, value in dict(presets).items()}


def _parse_guess(beat: Any, raw: str | None, notes: list[str]) -> str | None:
    """A predict option letter of this beat (case-insensitive), or None with a note if it is not one."""
    raw = (raw or "").strip()
    if not raw:
        return None
    predict = getattr(beat, "predict", None)
    count = len(getattr(predict, "options", None) or [])
    letters = [chr(ord("A") + i) for i in range(count)]
    letter = raw.upper()
    if letter in letters:
        return letter
    if not letters:
        notes.append(f"guess={raw[:10]} is ignored: this beat has no prediction question.")
    else:
        notes.append(
            f"guess={raw[:10]} is not one of this beat's options ({', '.join(letters)}); "
            f"the guess is ignored, so pick an option again."
        )
    return None


def parse_state(
    scene: Any, pairs: list[tuple[str, str]], settings: Settings, *, embed: bool = False
) -> tuple[SceneState, list[str]]:
    """Read a scene URL's query pairs; return the state and notes about corrected values."""
    params: dict[str, list[str]] = {}
    for key, value in pairs:
        params.setdefault(key, []).append(value)
    notes: list[str] = []

    beats = {str(b.id): b for b in scene.beats}
    beat_id = _one(params, "beat") or str(scene.beats[0].id)
    if beat_id not in beats:
        raise BadStateURL(f"This scene has no beat {beat_id[:40]!r}; its beats are {', '.join(beats)}.")
    presets = beat_knob_values(beats[beat_id])
    limits = getattr(beats[beat_id], "knob_limits", None) or {}

    knobs: list[tuple[str, str]] = []
    for knob in scene.knobs:
        raw = _one(params, knob.key)
        if raw is None or raw == "":
            knobs.append((knob.key, presets.get(knob.key, format_value(knob.default))))
        else:
            value = _parse_knob(knob, raw.strip(), notes)
            if knob.key in limits:
                value = _within_beat_limit(knob.key, value, limits[knob.key], notes)
            knobs.append((knob.key, value))

    seed = _uint(params, "seed", cap=MAX_SEED)
    if seed is None:
        seed = int((getattr(scene, "base_scenario", None) or {}).get("seed", 0))

    raw_actions = params.get("a", [])
    if len(raw_actions) > settings.max_injected_actions:
        raise BadStateURL(
            f"This URL injects {len(raw_actions)} actions; at most "
            f"{settings.max_injected_actions} fit in one timeline. Remove some "
            f"a=… parameters (or restart the beat) and try again."
        )
    actions = []
    for raw in raw_actions:
        match = _ACTION_RE.match(raw)
        quiet = bool(match) and match["verb"] == QUIET and match["broker"] is None
        if not quiet and (not match or match["verb"] not in INJECT_VERBS or match["broker"] is None):
            raise BadStateURL(
                f"The injected action a={raw[:40]!r} is not in the form VERB:BROKER@STEP "
                f"(e.g. a=crash:2@5), with VERB one of {', '.join(INJECT_VERBS)}, or quiet@STEP."
            )
        if int(match["step"]) > settings.max_step:
            raise BadStateURL(f"The injected action a={raw[:40]!r} names a step above {settings.max_step}.")
        broker = None if quiet else int(match["broker"])
        actions.append(InjectedAction(match["verb"], broker, int(match["step"])))

    step = _uint(params, "step", cap=settings.max_step)
    fine_raw = _one(params, "fine")
    if fine_raw not in (None, "", "0", "1"):
        raise BadStateURL(f"fine must be 1 or 0, but the URL says fine={fine_raw[:40]!r}.")

    inject = None
    raw_inject = _one(params, "inject")
    if raw_inject:
        match = _INJECT_RE.match(raw_inject)
        if not match or match["verb"] not in INJECT_VERBS:
            raise BadStateURL(
                f"inject={raw_inject[:40]!r} is not in the form VERB:BROKER (e.g. inject=crash:2)."
            )
        if len(actions) >= settings.max_injected_actions:
            raise BadStateURL(
                f"This timeline already has {len(actions)} injected actions, the most "
                f"one URL may carry. Restart the beat to inject more."
            )
        inject = (match["verb"], int(match["broker"]))

    guess = _parse_guess(beats[beat_id], _one(params, "guess"), notes)

    q = _one(params, "q") or None
    if q is not None and not _ID_RE.match(q):
        raise BadStateURL(f"q={q[:40]!r} is not a question id.")
    ask = (_one(params, "ask") or "").strip() or None
    if ask is not None and len(ask) > settings.max_ask_chars:
        notes.append(f"The question was cut to its first {settings.max_ask_chars} characters.")
        ask = ask[: settings.max_ask_chars]

    lock = from_step = to_step = None
    if embed:
        lock = _one(params, "lock") or None
        if lock not in (None, "beat"):
            raise BadStateURL(f"lock={lock[:40]!r} is not understood; use lock=beat.")
        from_step = _uint(params, "from", cap=settings.max_step)
        to_step = _uint(params, "to", cap=settings.max_step)
        if from_step is not None and to_step is not None and from_step > to_step:
            raise BadStateURL(f"from={from_step} is after to={to_step}.")

    state = SceneState(
        scene_id=str(scene.id),
        beat=beat_id,
        knobs=tuple(knobs),
        seed=seed,
        actions=tuple(actions),
        step=step if step is not None else 0,
        fine=fine_raw == "1",
        guess=guess,
        q=q,
        ask=ask,
        lock=lock,
        from_step=from_step,
        to_step=to_step,
        inject=inject,
    )
    if step is None and from_step is not None:
        state = state.replace(step=from_step)
    return state, notes
