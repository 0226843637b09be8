"""The committed golden traces match the engine. If one differs, read the diff: if the new trace
is right (checked against kafka-semantics.md), regenerate with `python -m scenes.golden`."""

from __future__ import annotations

import difflib

import pytest

from scenes import list_scenes, load_scene
from scenes.golden import golden_path, main, trace

engine = pytest.importorskip("engine")
if not hasattr(engine, "simulate"):
    pytest.skip("the engine has no simulate() yet", allow_module_level=True)

BEATS = [(s.id, b.id) for s in list_scenes() if s.built for b in load_scene(s.id).beats]


@pytest.mark.parametrize(("scene_id", "beat_id"), BEATS)
def test_golden_trace(scene_id, beat_id):
    path = golden_path(scene_id, beat_id)
    assert path.exists(), f"missing {path}; run python -m scenes.golden"
    want = path.read_text(encoding="utf-8")
    got = trace(scene_id, beat_id)
    if got != want:
        diff = "".join(difflib.unified_diff(want.splitlines(True), got.splitlines(True), str(path), "engine",
                                            n=2))
        pytest.fail(f"{path.name} differs from the engine (regenerate deliberately with "
                    f"`python -m scenes.golden`):\n{diff[:4000]}")


def test_golden_lines_have_the_agreed_shape():
    from engine.steps import STEP_KINDS

    for scene_id, beat_id in BEATS:
        for line in golden_path(scene_id, beat_id).read_text(encoding="utf-8").splitlines():
            t_ms, kind, text = line.split(" ", 2)
            assert t_ms.isdigit() and kind in STEP_KINDS and text.strip()


def test_no_stray_golden_files():
    expected = {golden_path(s, b).name for s, b in BEATS}
    present = {p.name for p in golden_path("05", "x").parent.glob("*.txt")}
    assert present == expected


def test_cli_rejects_bad_arguments(capsys):
    assert main(["--nope"]) == 2
    assert main(["99"]) == 2
