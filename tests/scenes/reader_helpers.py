"""Helpers for the scenes about logs and their readers (01, 01a, 02): run a beat with every step's
state, read what each consumer received and where it stands, and judge the scene's challenge the
way the page does (app/challenges.py) at any step."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from scene_helpers import engine

from app import challenges
from scenes import Scene

_cache: dict[tuple, dict[str, Any]] = {}


def replay(scene: Scene, beat_id: str, overrides: dict | None = None) -> dict[str, Any]:
    """The beat's run with its steps and every step's state (views[k] after k steps), cached."""
    key = (scene.id, beat_id, tuple(sorted((overrides or {}).items())))
    if key not in _cache:
        sc = scene.scenario_for(beat_id, overrides)
        result = engine.simulate(sc, steps=True, all_views=True, check_invariants=True)
        assert result["violations"] == []
        result["scenario"] = sc
        _cache[key] = result
    return _cache[key]


def judge(
    scene: Scene, beat_id: str, overrides: dict | None = None, step: int | None = None
) -> tuple[bool, str]:
    """The scene's challenge verdict on a beat's run at `step` (default: the end)."""
    r = replay(scene, beat_id, overrides)
    step = len(r["steps"]) if step is None else step
    timeline = SimpleNamespace(steps=r["steps"], step=step, view=r["views"][step], scenario=r["scenario"],
                               result=r)
    return challenges.judge(scene.challenge.goal, timeline)


def received(result: dict[str, Any], consumer: str) -> list[str]:
    return [r["record"] for r in result["consumers"][consumer]["received"]]


def polled(result: dict[str, Any], consumer: str) -> list[list[str]]:
    """What each poll() of `consumer` returned, in order."""
    return [[rec["record"] for rec in p["records"]] for p in result["polls"] if p["consumer"] == consumer]


def log(result: dict[str, Any], partition: int = 0) -> list[tuple[int, str | None, str]]:
    """The partition's log at the end as (offset, key, record)."""
    return [(e["offset"], e["key"], e["record"]) for e in result["partitions"][partition]["log"]]


def segments_at(result: dict[str, Any], step: int) -> list[tuple[int, int, int]]:
    """The partition's segments after `step` steps as (base offset, next offset, bytes)."""
    part = result["views"][step]["partition"]
    return [(s["base_offset"], s["next_offset"], s["bytes"]) for s in part["segments"]]


def position_at(result: dict[str, Any], step: int, consumer: str) -> dict[str, int]:
    return result["views"][step]["consumers"][consumer]["position"]


def step_index(result: dict[str, Any], kind: str, nth: int = 1, **match: Any) -> int:
    """The 1-based index of the nth step of `kind` whose fields include `match`."""
    seen = 0
    for s in result["steps"]:
        if s["kind"] == kind and all(s.get(k) == v for k, v in match.items()):
            seen += 1
            if seen == nth:
                return int(s["i"])
    raise AssertionError(f"no {nth}th {kind} step matching {match}")
