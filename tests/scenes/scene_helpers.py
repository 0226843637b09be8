"""Helpers shared by the scene tests: run a beat on the real engine (cached), and read its result.

`run` always asks for the steps and checks the invariants, so a beat test that reads a cached run
also replays it with the engine's invariant checks on. Every reader takes an engine result (the
dict `engine.simulate` returns), never its "final" state alone.
"""

from __future__ import annotations

from typing import Any

import pytest

from scenes import Scene
from scenes.model import Knob

# a test module that imports this one is skipped, not failed, until the engine can simulate
engine = pytest.importorskip("engine")
if not hasattr(engine, "simulate"):
    pytest.skip("the engine has no simulate() yet", allow_module_level=True)

# a knob whose range has more values than this is tried at every SAMPLE_EVERY-th value (and its
# ends and default); smaller ones are tried at every value their control offers
MAX_VALUES_TRIED = 10_001
FEW_VALUES_TRIED = 101
SAMPLE_EVERY = 500

_cache: dict[tuple, dict[str, Any]] = {}


def run(scene: Scene, beat_id: str, overrides: dict | None = None, upto: int | None = None,
        compare: bool = False) -> dict[str, Any]:
    """Run a beat (its comparison run with compare=True), optionally with knob overrides or only its
    first `upto` actions, with steps and the invariant checks. Cached per scene, beat and arguments:
    do not modify the result."""
    key = (scene.id, beat_id, tuple(sorted((overrides or {}).items())), upto, compare)
    if key not in _cache:
        beat = scene.beat(beat_id)
        actions = None if upto is None else beat.actions[:upto]
        sc = (scene.compare_scenario_for(beat, overrides, actions) if compare
              else scene.scenario_for(beat, overrides, actions))
        _cache[key] = engine.simulate(sc, steps=True, check_invariants=True)
    return _cache[key]


def view(scene: Scene, beat_id: str, step_i: int, compare: bool = False) -> dict[str, Any]:
    """The state the scrubber shows at step `step_i` of a beat (or of its comparison run)."""
    beat = scene.beat(beat_id)
    sc = scene.compare_scenario_for(beat) if compare else scene.scenario_for(beat)
    return engine.simulate(sc, at_step=step_i)["view"]


def action_index(scene: Scene, beat_id: str, **match: Any) -> int:
    """Index of the first action of the beat whose fields include `match`."""
    for i, a in enumerate(scene.beat(beat_id).actions):
        if all(a.get(k) == v for k, v in match.items()):
            return i
    raise AssertionError(f"{beat_id} has no action {match}")


# --------------------------------------------------------------------------------------------
# reading a result


def kinds(result: dict[str, Any]) -> set[str]:
    return {s["kind"] for s in result["steps"]}


def steps(result: dict[str, Any], kind: str) -> list[dict[str, Any]]:
    return [s for s in result["steps"] if s["kind"] == kind]


def first(result: dict[str, Any], kind: str, after: int = 0, **match: Any) -> dict[str, Any]:
    """The first step of `kind` after step `after` whose fields include `match`."""
    for s in result["steps"]:
        if s["kind"] == kind and s["i"] > after and all(s.get(k) == v for k, v in match.items()):
            return s
    raise AssertionError(f"no {kind} step after {after} matching {match}")


def produce(result: dict[str, Any], record: str) -> dict[str, Any]:
    """The produce request that carried `record`."""
    return next(p for p in result["produce"] if record in (p.get("records") or []))


def latency_ms(result: dict[str, Any], record: str) -> int:
    p = produce(result, record)
    assert p["outcome"] == "acked", p
    return int(p["done_ms"]) - int(p["sent_ms"])


def _broker(result: dict[str, Any], b: int) -> dict[str, Any]:
    return result["final"]["brokers"][str(b)]


def records(result: dict[str, Any], b: int) -> list[str]:
    return [e["record"] for e in _broker(result, b)["log"]]


def rows(result: dict[str, Any], b: int) -> list[tuple[int, int, str]]:
    """Broker b's log as (offset, epoch, record)."""
    return [(e["offset"], e["epoch"], e["record"]) for e in _broker(result, b)["log"]]


def logs(result: dict[str, Any]) -> dict[int, list[str]]:
    """Every broker's log, by broker id."""
    return {int(b): [e["record"] for e in br["log"]] for b, br in result["final"]["brokers"].items()}


def truncated(result: dict[str, Any], b: int, why: str | None = None) -> list[str]:
    """The records broker b truncated (only those truncated for `why`, if given)."""
    return [t["record"] for t in _broker(result, b)["truncated"] if why in (None, t["why"])]


def cache(result: dict[str, Any], b: int) -> list[list[int]]:
    """Broker b's leader epoch cache."""
    return _broker(result, b)["epoch_cache"]


def ask_live(qa_id: str, result: dict[str, Any], scene_id: str) -> str:
    """The live answer of Q&A `qa_id` (a live one of scene `scene_id`) on a result: one readable
    paragraph with no holes in it."""
    from app.qa import find, live_answer

    qa = find(qa_id)
    assert qa is not None and qa.live and qa.scene == scene_id
    text = live_answer(qa, result)
    assert text and text.endswith(".") and len(text) < 600, text
    assert "None" not in text and "{}" not in text, text
    return text


# --------------------------------------------------------------------------------------------
# knobs


def _all_values(knob: Knob, most: int = MAX_VALUES_TRIED) -> list:
    """The values a test tries for a knob: every choice, both booleans, every value of an int knob's
    control (its step), or for a range of more than `most` values a sample (every SAMPLE_EVERY-th
    value) that keeps the ends and the default."""
    if knob.kind in ("choice", "float"):
        return list(knob.choices or [])
    if knob.kind == "bool":
        return [False, True]
    every = list(range(knob.min, knob.max + 1, knob.step or 1))
    if len(every) <= most:
        return every
    return sorted({knob.min, knob.max, knob.default, *range(knob.min, knob.max + 1, SAMPLE_EVERY)})


def chart_only(knob: Knob) -> bool:
    """A knob that only moves a chart's cursor: its only_if names itself with no value, so it is
    never written into a scenario."""
    return knob.only_if == {knob.key: []}
