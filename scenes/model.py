"""Pydantic models for the curriculum data.

A scene is data, not code: `scenes/data/<id>.toml` is read with tomllib and validated against
these models at load time (every model forbids unknown fields). The web app, the Q&A module and
the tests code against the field names below, so renaming one is a breaking change.

The only behaviour here is what every consumer would otherwise re-implement in its own way:
turning a knob value from a URL into a typed value (`Knob.parse`) and building the contract
scenario of a beat (`Scene.scenario_for`).
"""

from __future__ import annotations

import copy
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

KnobValue = str | int | bool | float

# The dotted paths a knob may set. The first segment names the scenario section; the rest is the
# real Kafka config key, which itself contains dots (`topic.min.insync.replicas` sets
# scenario["topic"]["min.insync.replicas"]). `kafka_version` is a top-level field. `consumers` and
# `producers` are list sections: `consumers.auto.offset.reset` writes the key into every consumer,
# `producers.enable.idempotence` into every producer process (scene 08 names its producers).
KNOB_TARGET_SECTIONS = ("producer", "topic", "controller", "timing", "consumers", "producers")
LIST_SECTIONS = ("consumers", "producers")
TOP_LEVEL_TARGETS = ("kafka_version", "seed")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


def format_knob_value(value: KnobValue) -> str:
    """The URL spelling of a knob value: booleans lower case, everything else as str()."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def split_target(target: str) -> tuple[str | None, str]:
    """`topic.min.insync.replicas` -> ("topic", "min.insync.replicas"); `kafka_version` -> (None, ...)."""
    if target in TOP_LEVEL_TARGETS:
        return None, target
    section, _, key = target.partition(".")
    if section not in KNOB_TARGET_SECTIONS or not key:
        raise ValueError(f"knob target {target!r} is not a scenario path")
    return section, key


def apply_knobs(scenario: dict[str, Any], values: dict[str, tuple[str, KnobValue]]) -> dict[str, Any]:
    """Return a deep copy of `scenario` with each (target, value) written into it.

    `values` maps a knob key to (target, value). The input is never modified.
    """
    out = copy.deepcopy(scenario)
    for _key, (target, value) in values.items():
        section, key = split_target(target)
        if section is None:
            out[key] = value
        elif section in LIST_SECTIONS:
            for item in out.get(section, []):
                item[key] = item_value(value, item)
        else:
            out.setdefault(section, {})[key] = value
    return out


ITEM_ID = "{id}"


def item_value(value: Any, item: dict[str, Any]) -> Any:
    """A value written into every item of a list section, made the item's own: a string holding
    `{id}` becomes that item's spelling (a static member's `group.instance.id` must differ per
    consumer, so `{id}-app` gives c0-app, c1-app, ...)."""
    if isinstance(value, str) and ITEM_ID in value:
        return value.replace(ITEM_ID, str(item.get("id", "")))
    return copy.deepcopy(value)


class Knob(_Strict):
    key: str  # the real Kafka config key; also the URL query parameter
    label: str
    # "float": a number picked from `choices` (min.cleanable.dirty.ratio), shown as a list
    kind: Literal["choice", "int", "bool", "float"]
    choices: list[str] | list[float] | None = None
    min: int | None = None
    max: int | None = None
    default: KnobValue
    help: str
    target: str  # dotted path into the scenario
    step: int | None = None  # granularity of an int knob's control (e.g. 1000 for a value in ms)
    # Written into the scenario only while the other knobs named here have one of the listed values
    # (e.g. the ELR feature level exists only in Kafka 4.x); otherwise the version's own default applies.
    only_if: dict[str, list[str]] | None = None
    # A choice Kafka takes as a list (partition.assignment.strategy): the chosen value, commas
    # between its entries, is written into the scenario as a list.
    list_value: bool = False
    # A bool knob of a list section whose true means "each item gets its own value": true writes
    # this template (see item_value, e.g. "{id}-app" for group.instance.id), false writes null.
    per_item: str | None = None

    @field_validator("target")
    @classmethod
    def _target_is_a_path(cls, v: str) -> str:
        split_target(v)
        return v

    @model_validator(mode="after")
    def _consistent(self) -> Knob:
        if self.kind in ("choice", "float"):
            if not self.choices:
                raise ValueError(f"{self.kind} knob {self.key} needs choices")
            if self.min is not None or self.max is not None:
                raise ValueError(f"{self.kind} knob {self.key} takes no min/max")
            if any(isinstance(c, str) for c in self.choices) != (self.kind == "choice"):
                raise ValueError(f"{self.kind} knob {self.key}: its choices must be "
                                 + ("words" if self.kind == "choice" else "numbers"))
        elif self.choices is not None:
            raise ValueError(f"{self.kind} knob {self.key} takes no choices")
        if self.kind == "int":
            if self.min is None or self.max is None or self.min > self.max:
                raise ValueError(f"int knob {self.key} needs min <= max")
        elif self.kind == "bool" and (self.min is not None or self.max is not None):
            raise ValueError(f"bool knob {self.key} takes no min/max")
        if self.list_value and self.kind != "choice":
            raise ValueError(f"knob {self.key}: only a choice can be written as a list")
        in_list = split_target(self.target)[0] in LIST_SECTIONS
        if self.per_item is not None and (self.kind != "bool" or not in_list or ITEM_ID not in self.per_item):
            raise ValueError(f"knob {self.key}: per_item needs a bool knob of a list section and {ITEM_ID}")
        self.check(self.default)
        return self

    def scenario_value(self, value: KnobValue) -> Any:
        """What the scenario holds for this (checked) knob value."""
        if self.list_value:
            return [part.strip() for part in str(value).split(",") if part.strip()]
        if self.per_item is not None:
            return self.per_item if value else None
        return value

    def check(self, value: KnobValue) -> KnobValue:
        """Validate an already-typed value; raise ValueError with a message a learner can read."""
        if self.kind == "choice":
            if not isinstance(value, str) or value not in (self.choices or []):
                raise ValueError(f"{self.key} must be one of {', '.join(self.choices or [])} (got {value!r})")
        elif self.kind == "float":
            number = value if isinstance(value, int | float) and not isinstance(value, bool) else None
            if number is None or float(number) not in (self.choices or []):
                raise ValueError(f"{self.key} must be one of {', '.join(map(str, self.choices or []))} "
                                 f"(got {value!r})")
            return float(number)
        elif self.kind == "int":
            if isinstance(value, bool) or not isinstance(value, int):
                raise ValueError(f"{self.key} must be a whole number (got {value!r})")
            if not (self.min <= value <= self.max):  # type: ignore[operator]
                raise ValueError(f"{self.key} must be between {self.min} and {self.max} (got {value})")
        elif not isinstance(value, bool):
            raise ValueError(f"{self.key} must be true or false (got {value!r})")
        return value

    def parse(self, raw: str | KnobValue) -> KnobValue:
        """Turn a URL query value (or an already typed value) into this knob's type, or raise ValueError."""
        if not isinstance(raw, str):
            return self.check(raw)
        text = raw.strip()[:40]
        if self.kind == "float":
            try:
                value: KnobValue = float(text)
            except ValueError:
                raise ValueError(f"{self.key} must be a number (got {text!r})") from None
        elif self.kind == "int":
            try:
                value = int(text)
            except ValueError:
                raise ValueError(f"{self.key} must be a whole number (got {text!r})") from None
        elif self.kind == "bool":
            low = text.lower()
            if low in ("true", "1", "on", "yes"):
                value = True
            elif low in ("false", "0", "off", "no"):
                value = False
            else:
                raise ValueError(f"{self.key} must be true or false (got {text!r})")
        else:
            value = text
        return self.check(value)


class Predict(_Strict):
    """A beat's "predict, then reveal" question.

    `why_not` has one entry per option, in option order: for each wrong option, why a learner who
    chose it is mistaken (shown after that guess); the right answer's entry is "".
    """

    question: str
    options: list[str] = Field(min_length=2, max_length=26)  # lettered A-Z in the URL (guess=)
    answer: int
    explanation: str
    why_not: list[str]

    @model_validator(mode="after")
    def _answer_in_range(self) -> Predict:
        if not 0 <= self.answer < len(self.options):
            raise ValueError(f"predict answer {self.answer} is not an index into {len(self.options)} options")
        if len(self.why_not) != len(self.options):
            raise ValueError(
                f"predict why_not has {len(self.why_not)} entries for {len(self.options)} options"
            )
        for i, text in enumerate(self.why_not):
            if i == self.answer and text.strip():
                raise ValueError(f"predict why_not[{i}] belongs to the right answer and must be empty")
            if i != self.answer and not text.strip():
                raise ValueError(f"predict why_not[{i}] must say why option {chr(ord('A') + i)} is wrong")
        return self


Panel = Literal[
    "metadata_log", "epoch_cache", "partitions", "page_cache", "latency_chart", "loss_chart", "scale_costs"
]


class Compare(_Strict):
    """A second run of the same beat shown beside Kafka's, e.g. a majority quorum (scene 04).

    `patch` is deep-merged into the beat's scenario (same seed, same actions), so the only
    difference is the rule being contrasted. `label` must say plainly when the rule is not Kafka's.
    """

    title: str
    label: str  # e.g. "Not Kafka: commit on a majority (the KIP-250 proposal)"
    patch: dict[str, Any] = Field(default_factory=dict)
    # "section.key" entries removed from the scenario before the patch (TOML has no null), e.g.
    # "topic.quorum.required.acks" to run a proposal beat's comparison under Kafka's own rule
    unset: list[str] = Field(default_factory=list)
    narration: str = ""


class KeyMoment(_Strict):
    """A moment the beat's lesson hinges on: the `nth` engine step of `kind` in the run. Named by
    kind, not step number, so it still resolves when the learner's knobs move it (or says it does
    not happen). The scenes package does not import the engine, so that `kind` is one of its step
    kinds is checked by tests/scenes/test_pacing.py, like `focus_step_kinds`."""

    title: str = Field(min_length=3, max_length=80)
    kind: str = Field(pattern=r"^[a-z]+(_[a-z]+)*$")
    nth: int = Field(default=1, ge=1)


class KnobLimit(_Strict):
    """The values of a whole-number knob that one beat can run with, when its story rules out some
    of those its control offers: the beat that grows a topic to 4 partitions must start it with
    fewer. The page then runs the nearest allowed value and says `why` (app/state.py), instead of
    answering with an error page."""

    min: int | None = None
    max: int | None = None
    why: str = Field(min_length=20)  # a sentence the learner reads: why this beat needs the limit

    @model_validator(mode="after")
    def _a_range(self) -> KnobLimit:
        if self.min is None and self.max is None:
            raise ValueError("a knob limit needs min or max")
        if self.min is not None and self.max is not None and self.min > self.max:
            raise ValueError(f"knob limit min {self.min} is above max {self.max}")
        return self

    def clamp(self, value: int) -> int:
        if self.min is not None and value < self.min:
            return self.min
        if self.max is not None and value > self.max:
            return self.max
        return value


class Beat(_Strict):
    id: str = Field(pattern=r"^[a-z0-9]+(-[a-z0-9]+)*$")
    title: str
    narration: str
    knobs: dict[str, KnobValue] = Field(default_factory=dict)
    actions: list[dict[str, Any]]
    focus_step_kinds: list[str]
    predict: Predict
    compare: Compare | None = None
    # label shown over the diagram when the beat replays history or a proposal, not today's Kafka
    label: str | None = None
    # the moments "Jump to the key moment" lists and lands on (always stops of the default path)
    key_moments: list[KeyMoment] = Field(default_factory=list, max_length=3)
    # knob values this beat cannot run with, by knob key (see KnobLimit)
    knob_limits: dict[str, KnobLimit] = Field(default_factory=dict)

    @property
    def paragraphs(self) -> list[str]:
        return [p.strip() for p in self.narration.strip().split("\n\n") if p.strip()]

    @model_validator(mode="after")
    def _narration_shape(self) -> Beat:
        paras = self.paragraphs
        if not 2 <= len(paras) <= 6:
            raise ValueError(f"beat {self.id}: narration needs 2-5 paragraphs plus a Source line, "
                             f"got {len(paras)}")
        if not paras[-1].startswith("Source"):
            raise ValueError(f"beat {self.id}: the narration's last line must cite its sources "
                             "('Source: ...')")
        return self


class CodeLine(_Strict):
    text: str
    kinds: list[str] = Field(default_factory=list)
    source: str | None = None


class CodeBlock(_Strict):
    id: str
    title: str
    lines: list[CodeLine] = Field(min_length=1)


class QA(_Strict):
    id: str
    question: str
    answer: str
    sources: list[str] = Field(min_length=1)
    live: str | None = None  # name of a function in app/qa.py that adds a sentence from the simulation
    tags: list[str] = Field(default_factory=list)
    scene: str | None = None  # the scene this answer belongs to (filled in at load time)


# What a challenge asks for; app/challenges.py judges each one from the engine's result and steps
# as of the current step (never from the beat's data):
#   lose_acked_write       an acknowledged record is missing from its partition's leader
#   read_before_subscribe  a consumer's poll() returned a record appended before that consumer
#                          first subscribed (or assigned itself partitions)
#   spread_keys            three records with three different keys, none naming a partition, sit
#                          in three different partitions
#   fan_out                every record appended is received by consumers of two or more groups,
#                          one of which first subscribed after the last record was appended
#   duplicate_then_dedupe  the log holds a record twice (the engine's duplicates ledger); second
#                          part: a batch was sent again after it was written, and the log holds
#                          one copy of everything
ChallengeGoal = Literal["lose_acked_write", "read_before_subscribe", "spread_keys", "fan_out", "skip_records",
                        "hot_partition",
                        # scene 05a: a reader read past a tombstone that compaction removed first
                        "miss_delete",
                        # scene 08: a duplicate, then made impossible
                        "duplicate_then_dedupe",
                        # scene 07: a rolling restart with zero rebalances
                        "rolling_restart_no_rebalance"]


class Challenge(_Strict):
    title: str
    text: str
    goal: ChallengeGoal


class SceneSummary(_Strict):
    id: str
    slug: str
    title: str
    promise: str
    minutes: int
    track: Literal["core", "deep-dive"]
    built: bool


class Scene(_Strict):
    id: str
    slug: str
    title: str
    promise: str
    previously: str
    # what the scene showed, said after its last beat when no later scene is built yet
    ending: str | None = None
    minutes: int
    knobs: list[Knob]
    beats: list[Beat] = Field(min_length=1)
    pseudocode: list[CodeBlock]
    qa: list[QA]
    challenge: Challenge
    base_scenario: dict[str, Any]
    # extra state panels the page shows for this scene, drawn from the engine result:
    # "metadata_log" (final.controller.metadata_log), "epoch_cache" (each replica's leader-epoch
    # cache and the first offset where replicas disagree), "partitions" (result.partitions: one row
    # per partition with its replicas by rack), "page_cache" (flushed vs page-cache-only records)
    panels: list[Panel] = Field(default_factory=list)

    @model_validator(mode="after")
    def _cross_checks(self) -> Scene:
        keys = [k.key for k in self.knobs]
        if len(set(keys)) != len(keys):
            raise ValueError("duplicate knob keys")
        for ids, what in (([b.id for b in self.beats], "beat"),
                          ([c.id for c in self.pseudocode], "code block"),
                          ([q.id for q in self.qa], "qa")):
            if len(set(ids)) != len(ids):
                raise ValueError(f"duplicate {what} ids")
        for beat in self.beats:
            for key, value in beat.knobs.items():
                self.knob(key).check(value)
            for key, limit in beat.knob_limits.items():
                knob = self.knob(key)
                if knob.kind != "int":
                    raise ValueError(f"beat {beat.id}: knob limit on {key}, which is not a whole number")
                allowed = [v for v in range(knob.min, knob.max + 1) if limit.clamp(v) == v]  # type: ignore[arg-type]
                if not allowed:
                    raise ValueError(f"beat {beat.id}: the limit on {key} leaves no value of its control")
                preset = beat.knobs.get(key, knob.default)
                if limit.clamp(preset) != preset:  # type: ignore[arg-type]
                    raise ValueError(f"beat {beat.id}: its own {key}={preset} is outside its knob limit")
        for k in self.knobs:
            for other, allowed in (k.only_if or {}).items():
                for value in allowed:
                    self.knob(other).parse(value)
        return self

    def knob_applies(self, key: str, values: dict[str, KnobValue]) -> bool:
        """Whether knob `key` is written into the scenario, given every knob's value."""
        cond = self.knob(key).only_if or {}
        return all(format_knob_value(values[other]) in allowed for other, allowed in cond.items())

    def knob(self, key: str) -> Knob:
        for k in self.knobs:
            if k.key == key:
                return k
        raise KeyError(f"scene {self.id} has no knob {key!r}")

    def beat(self, beat_id: str) -> Beat:
        for b in self.beats:
            if b.id == beat_id:
                return b
        raise KeyError(f"scene {self.id} has no beat {beat_id!r}")

    def knob_values(self, beat: Beat | str | None = None,
                    overrides: dict[str, KnobValue] | None = None) -> dict[str, KnobValue]:
        """Every knob's value: its default, then the beat's setting, then the overrides (all checked)."""
        if isinstance(beat, str):
            beat = self.beat(beat)
        values: dict[str, KnobValue] = {k.key: k.default for k in self.knobs}
        if beat is not None:
            values.update(beat.knobs)
        for key, value in (overrides or {}).items():
            values[key] = self.knob(key).parse(value)
        return values

    def compare_scenario_for(self, beat: Beat | str, overrides: dict[str, KnobValue] | None = None,
                             actions: list[dict[str, Any]] | None = None) -> dict[str, Any] | None:
        """The beat's comparison scenario (its patch deep-merged into the beat's scenario), or None."""
        if isinstance(beat, str):
            beat = self.beat(beat)
        if beat.compare is None:
            return None
        scenario = self.scenario_for(beat, overrides, actions)
        for path in beat.compare.unset:
            # a scenario section, then a key that may itself contain dots ("topic", "quorum.required.acks")
            section, _, key = path.partition(".")
            if key and section in LIST_SECTIONS:  # from every item ("consumers.group.instance.id")
                for item in scenario.get(section, []):
                    item.pop(key, None)
            elif key:
                scenario.get(section, {}).pop(key, None)
            else:
                scenario.pop(section, None)
        return _deep_merge(scenario, beat.compare.patch)

    def scenario_for(self, beat: Beat | str | None = None,
                     overrides: dict[str, KnobValue] | None = None,
                     actions: list[dict[str, Any]] | None = None) -> dict[str, Any]:
        """The contract scenario of a beat: base_scenario, knobs applied, the beat's actions.

        `overrides` are knob values the learner changed (raw URL strings are parsed); `actions`
        replaces the beat's actions (the sandbox, or a forked timeline). Without a beat the
        scenario has the defaults and no actions.
        """
        if isinstance(beat, str):
            beat = self.beat(beat)
        # Only knobs that the beat or the learner set are written. The others keep base_scenario's
        # value, or the Kafka version's own default when base_scenario leaves them out (the ELR
        # feature level, which does not exist before 4.x).
        explicit: dict[str, KnobValue] = dict(beat.knobs) if beat is not None else {}
        for key, value in (overrides or {}).items():
            explicit[key] = self.knob(key).parse(value)
        values = self.knob_values(beat, overrides)
        written = {k: (self.knob(k).target, self.knob(k).scenario_value(v))
                   for k, v in explicit.items() if self.knob_applies(k, values)}
        scenario = apply_knobs(self.base_scenario, written)
        if actions is not None:
            scenario["actions"] = contract_actions(actions)
        else:
            scenario["actions"] = contract_actions(beat.actions) if beat is not None else []
        return transactions_as_configured(scenario)




def is_transactional_call(action: dict[str, Any]) -> bool:
    """Whether an action calls Kafka's transactional producer API. The contract names each of those
    calls after the transaction (init_transactions ... send_offsets_to_transaction) and no other
    action, so the name says it without this package importing the engine's list (a test holds the
    two to each other)."""
    return "transaction" in str(action.get("do", ""))


def transactions_as_configured(scenario: dict[str, Any]) -> dict[str, Any]:
    """Scene 08's application code calls the transactional API only when its producer has a
    transactional.id, as an application that reads it from its configuration would: the beats are
    written with init/begin/commit/abort, and a producer process without a transactional.id (the
    knob off) makes the same sends without them. Scenarios that do not name their producer
    processes (`producers`) are returned as they are."""
    producers = scenario.get("producers")
    if not producers:
        return scenario
    transactional = {p.get("id") for p in producers if p.get("transactional.id") is not None}
    scenario["actions"] = [a for a in scenario.get("actions") or []
                           if not is_transactional_call(a) or a.get("producer") in transactional]
    return scenario


def contract_actions(actions: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A deep copy of `actions` in the contract's words. TOML has no null, so scene data writes a
    tombstone (a keyed record with a null value, scene 05a) as `tombstone = true` on a produce
    instead of `records = [null]`; the engine only ever sees the contract's spelling."""
    out = copy.deepcopy(actions)
    for action in out:
        if action.get("do") == "produce" and action.pop("tombstone", False):
            action["records"] = [None]
    return out


def _deep_merge(base: dict[str, Any], patch: dict[str, Any]) -> dict[str, Any]:
    """`patch` written over `base`. A table patching a list section (`consumers`) is written into
    every item of it, as a knob of that section is (see item_value)."""
    out = copy.deepcopy(base)
    for key, value in patch.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = _deep_merge(out[key], value)
        elif isinstance(value, dict) and key in LIST_SECTIONS and isinstance(out.get(key), list):
            out[key] = [_deep_merge(item, {k: item_value(v, item) for k, v in value.items()})
                        for item in out[key]]
        else:
            out[key] = copy.deepcopy(value)
    return out
