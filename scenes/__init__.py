"""The curriculum as validated data.

    load_scene("05")   -> Scene           (full data; KeyError for an unknown or unbuilt id)
    list_scenes()      -> list[SceneSummary] in course-map order (built or not)
    SCENE_IDS          -> {id: SceneSummary} for all 17 scenes, in course-map order
    COURSE_QA          -> extra Q&A for scenes that are not built yet (each has .scene set)
    all_qa()           -> every QA of every built scene plus COURSE_QA

Scene files live in scenes/data/<id>.toml and are validated against scenes.model when loaded.

A draft directory: when the environment variable BUILD_KAFKA_SCENES_DIR names a directory at
import time, its `<id>.toml` files are scenes of the course too, listed after the course map's own
by that directory's `course.toml` (the same `[[scene]]` tables as scenes/data/course.toml). So a
new scene can be written, replayed, served and tested before it is moved into scenes/data/
(docs/adding-a-scene.md). Its golden traces then live in that directory's `golden/`.
"""

from __future__ import annotations

import functools
import os
import tomllib
from pathlib import Path
from typing import Any

from scenes.model import (
    QA,
    Beat,
    Challenge,
    CodeBlock,
    CodeLine,
    Knob,
    Predict,
    Scene,
    SceneSummary,
    apply_knobs,
    format_knob_value,
    split_target,
)

__all__ = [
    "QA", "Beat", "Challenge", "CodeBlock", "CodeLine", "Knob", "Predict", "Scene", "SceneSummary",
    "COURSE_QA", "SCENE_IDS", "DATA_DIR", "DRAFT_DIR", "SCENES_DIR_ENV", "all_qa", "apply_knobs",
    "list_scenes", "load_scene", "format_knob_value", "normalize_scene_id", "scene_file", "split_target",
]

DATA_DIR = Path(__file__).resolve().parent / "data"
SCENES_DIR_ENV = "BUILD_KAFKA_SCENES_DIR"
_NOT_SCENES = {"course", "course_qa", "glossary"}


def _draft_dir() -> Path | None:
    raw = os.environ.get(SCENES_DIR_ENV, "").strip()
    if not raw:
        return None
    path = Path(raw).resolve()
    if not path.is_dir():
        raise ValueError(f"{SCENES_DIR_ENV}={raw!r} is not a directory")
    if path == DATA_DIR:
        raise ValueError(f"{SCENES_DIR_ENV} names scenes/data itself; it is for a draft directory")
    return path


# read once, at import: SCENE_IDS below and every cache are built from it
DRAFT_DIR: Path | None = _draft_dir()


def _read_toml(name: str, directory: Path = DATA_DIR) -> dict[str, Any]:
    with (directory / name).open("rb") as fh:
        return tomllib.load(fh)


def _scene_files(directory: Path) -> set[str]:
    return {p.stem for p in directory.glob("*.toml")} - _NOT_SCENES


@functools.cache
def _draft_ids() -> frozenset[str]:
    return frozenset(_scene_files(DRAFT_DIR)) if DRAFT_DIR is not None else frozenset()


def scene_file(scene_id: str) -> Path:
    """The file a built scene is read from: scenes/data/<id>.toml, or the draft directory's."""
    directory = DRAFT_DIR if scene_id in _draft_ids() and DRAFT_DIR is not None else DATA_DIR
    return directory / f"{scene_id}.toml"


@functools.cache
def _course() -> tuple[SceneSummary, ...]:
    rows = _read_toml("course.toml")["scene"]
    built = _scene_files(DATA_DIR)
    if DRAFT_DIR is not None:
        clash = built & _draft_ids()
        if clash:
            raise ValueError(f"{SCENES_DIR_ENV} holds scenes that scenes/data has too: {sorted(clash)}")
        built |= _draft_ids()
        if (DRAFT_DIR / "course.toml").exists():
            rows = rows + _read_toml("course.toml", DRAFT_DIR).get("scene", [])
    summaries = tuple(SceneSummary(**row, built=row["id"] in built) for row in rows)
    ids = [s.id for s in summaries]
    if len(set(ids)) != len(ids):
        raise ValueError("duplicate scene ids in course.toml")
    unknown = built - set(ids)
    if unknown:
        raise ValueError(f"scene files without a course entry: {sorted(unknown)}")
    return summaries


SCENE_IDS: dict[str, SceneSummary] = {s.id: s for s in _course()}


def normalize_scene_id(raw: str) -> str | None:
    """`05`, `05-durability`, `D1` -> the canonical id, or None when there is no such scene."""
    text = (raw or "").strip().lower()[:64]
    if text in SCENE_IDS:
        return text
    head = text.split("-", 1)[0]
    return head if head in SCENE_IDS else None


def list_scenes() -> list[SceneSummary]:
    return list(_course())


@functools.cache
def load_scene(scene_id: str) -> Scene:
    """Load and validate one built scene. KeyError if the id is unknown or the scene is not built."""
    summary = SCENE_IDS.get(scene_id)
    if summary is None:
        raise KeyError(f"no scene {scene_id!r}")
    if not summary.built:
        raise KeyError(f"scene {scene_id!r} is on the course map but not built yet")
    path = scene_file(scene_id)
    data = _read_toml(path.name, path.parent)
    data["qa"] = [{**qa, "scene": scene_id} for qa in data.get("qa", [])]
    scene = Scene.model_validate(data)
    for field in ("id", "slug", "title", "promise", "minutes"):
        if getattr(scene, field) != getattr(summary, field):
            raise ValueError(f"scene {scene_id}: {field} differs from course.toml")
    return scene


@functools.cache
def _course_qa() -> tuple[QA, ...]:
    rows = _read_toml("course_qa.toml")["qa"]
    out = tuple(QA.model_validate(row) for row in rows)
    for qa in out:
        if qa.scene not in SCENE_IDS:
            raise ValueError(f"course QA {qa.id} names unknown scene {qa.scene!r}")
    return out


COURSE_QA: list[QA] = list(_course_qa())


def all_qa() -> list[QA]:
    """Every Q&A in the course: the built scenes' own, then COURSE_QA. Ids are unique."""
    out: list[QA] = []
    for summary in _course():
        if summary.built:
            out.extend(load_scene(summary.id).qa)
    out.extend(COURSE_QA)
    ids = [qa.id for qa in out]
    if len(set(ids)) != len(ids):
        raise ValueError("duplicate QA ids across the course")
    return out
