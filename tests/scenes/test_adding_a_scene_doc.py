"""docs/adding-a-scene.md builds a real scene: the example x1 is taken from the page's code blocks,
written into a draft directory (BUILD_KAFKA_SCENES_DIR, scenes/__init__.py), and put through what
every built scene goes through: `python -m scenes`, the golden tool, and the generic scene tests
run with `-k x1`, next to the page's own test of the scene and a render of its page at a step.

The page's blocks: the course map entry is the `toml` block holding `[[scene]]`; the other `toml`
blocks are the scene file's pieces, which together must be exactly the one `toml scene` block;
the scene's test is the `python` block that defines tests. docs/examples/x1/ holds the same three
files for the page's commands, and must stay equal to the blocks.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tomllib
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from scenes.model import Scene
from tests.docs.markdown_blocks import parse_blocks

REPO_ROOT = Path(__file__).resolve().parents[2]
DOC = REPO_ROOT / "docs" / "adding-a-scene.md"
EXAMPLES = REPO_ROOT / "docs" / "examples" / "x1"
SCENE_ID = "x1"
# the generic modules the page's pytest command names: each runs over every built scene
GENERIC = [
    "tests/scenes/test_every_built_scene.py",
    "tests/scenes/test_pacing.py",
    "tests/scenes/test_live_at_every_step.py",
    "tests/scenes/test_predict_and_sources.py",
    "tests/scenes/test_golden_traces.py",
    "tests/web/test_step_fragment.py",
]
# generic tests that must have run, and passed, on x1 (per scene or per beat)
MUST_RUN = {
    "test_header_matches_the_course_map",
    "test_base_scenario_agrees_with_knob_defaults",
    "test_narration_and_predict_shape",
    "test_qa_shape",
    "test_challenge_has_a_goal_the_app_judges_a_title_and_a_text",
    "test_pseudocode_kinds_exist_once_and_link_the_engine_file",
    "test_every_knob_value_reaches_the_engine_and_validates_on_every_beat",
    "test_beat_replays_without_invariant_violations",
    "test_beat_and_its_comparison_are_deterministic",
    "test_labels_say_which_runs_are_history_or_a_proposal",
    "test_every_live_answer_speaks_on_every_beat_and_every_comparison",
    "test_page_renders_every_beat",
    "test_default_path_is_short_and_every_stop_shows_a_change",
    "test_key_moments_are_named_and_land_on_stops",
    "test_live_texts_never_speak_of_the_future",
    "test_every_narration_placeholder_names_a_knob_of_the_scene",
    "test_every_wrong_option_says_why_it_is_wrong",
    "test_no_learner_visible_string_names_an_internal_reference",
    "test_the_rendered_beat_names_no_internal_reference",
    "test_golden_trace",
    "test_a_repeated_step_sends_only_the_panels_it_must",
    "test_the_next_step_resends_what_changed_and_keeps_the_rest",
}
# a page of the scene at a beat and a step, rendered by the app as a browser would get it
PAGE_TEST = '''
import warnings

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    from fastapi.testclient import TestClient

from app.main import app


def test_x1_page_at_a_step():
    client = TestClient(app)
    page = client.get("/scenes/x1?beat=keys-pick-partitions&step=6")
    assert page.status_code == 200
    assert "Three keys, three partitions?" in page.text and "Example: one broker, one log" in page.text
    assert "appends b at offset 1" in page.text
    assert 'href="/scenes/x1"' in client.get("/").text  # the course map lists the draft
'''


def blocks() -> list[dict]:
    """Every fenced block of the page: its language, tags, text and whether it is marked not run
    (read by tests/docs/markdown_blocks.py, the parser the docs tests run the page's blocks with)."""
    return [{"lang": b.language, "tags": b.tags, "text": b.content, "not_run": b.has_marker}
            for b in parse_blocks(DOC) if not b.indented]


def course_entry() -> str:
    (entry,) = [b["text"] for b in blocks() if b["lang"] == "toml" and "[[scene]]" in b["text"]]
    return entry


def pieces() -> list[str]:
    return [b["text"] for b in blocks()
            if b["lang"] == "toml" and not b["tags"] and "[[scene]]" not in b["text"]]


def scene_file() -> str:
    (whole,) = [b["text"] for b in blocks() if b["lang"] == "toml" and b["tags"] == ["scene"]]
    return whole


def scene_test() -> str:
    (test,) = [b["text"] for b in blocks() if b["lang"] == "python" and "def test_" in b["text"]]
    return test


def validate(text: str) -> Scene:
    data = tomllib.loads(text)
    data["qa"] = [{**qa, "scene": SCENE_ID} for qa in data.get("qa", [])]
    return Scene.model_validate(data)


def env_with(draft: Path) -> dict[str, str]:
    env = {**os.environ, "BUILD_KAFKA_SCENES_DIR": str(draft)}
    env["PYTHONPATH"] = os.pathsep.join([str(REPO_ROOT), str(REPO_ROOT / "tests" / "scenes")])
    env.pop("DATABASE_URL", None)
    return env


def make_draft(directory: Path, scene_text: str | None = None) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "course.toml").write_text(course_entry(), encoding="utf-8")
    (directory / f"{SCENE_ID}.toml").write_text(scene_file() if scene_text is None else scene_text,
                                                encoding="utf-8")
    (directory / f"test_scene_{SCENE_ID}.py").write_text(scene_test(), encoding="utf-8")
    return directory


def python(args: list[str], draft: Path, timeout: int = 240) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, *args], cwd=REPO_ROOT, env=env_with(draft), capture_output=True,
                          text=True, timeout=timeout, check=False)


def pytest_run(draft: Path, paths: list[str], junit: Path) -> subprocess.CompletedProcess:
    return python(["-m", "pytest", "-c", "pyproject.toml", "-p", "no:cacheprovider", "-q", "-k", SCENE_ID,
                   f"--junitxml={junit}", *paths], draft)


def outcomes(junit: Path) -> dict[str, str]:
    """test id -> passed / failed / skipped, from pytest's JUnit XML."""
    out = {}
    for case in ET.parse(junit).getroot().iter("testcase"):
        state = "passed"
        for child in case:
            if child.tag in ("failure", "error"):
                state = "failed"
            elif child.tag == "skipped":
                state = "skipped"
        out[f"{case.get('classname')}::{case.get('name')}"] = state
    return out


# --------------------------------------------------------------------------------------------
# the page's blocks


def test_the_page_has_the_blocks_the_test_builds_from():
    kinds = [(b["lang"], tuple(b["tags"])) for b in blocks()]
    assert kinds.count(("toml", ("scene",))) == 1
    assert len(pieces()) >= 8 and course_entry() and scene_test()
    # the scene's test is shown, not run by the docs runner: this file runs it
    assert next(b for b in blocks() if b["text"] == scene_test())["not_run"]


def test_the_pieces_make_the_whole_file_and_each_parses():
    for piece in pieces():
        tomllib.loads(piece)
    assert "\n".join(pieces()) == scene_file()


def test_the_whole_file_validates_and_agrees_with_its_course_entry():
    scene = validate(scene_file())
    (entry,) = tomllib.loads(course_entry())["scene"]
    for field in ("id", "slug", "title", "promise", "minutes"):
        assert getattr(scene, field) == entry[field], field
    assert scene.id == SCENE_ID and [b.id for b in scene.beats] == ["first-record", "keys-pick-partitions"]


@pytest.mark.parametrize(("name", "block"), [("course.toml", course_entry), (f"{SCENE_ID}.toml", scene_file),
                                             (f"test_scene_{SCENE_ID}.py", scene_test)])
def test_the_committed_example_files_are_the_page_blocks(name, block):
    assert (EXAMPLES / name).read_text(encoding="utf-8") == block(), (
        f"docs/examples/x1/{name} differs from its block in docs/adding-a-scene.md; copy the block over")


def test_the_page_names_every_field_of_the_scene_models():
    from scenes import model

    text = DOC.read_text(encoding="utf-8")
    models = [model.Scene, model.SceneSummary, model.Knob, model.Beat, model.Predict, model.KeyMoment,
              model.KnobLimit, model.Compare, model.CodeBlock, model.CodeLine, model.QA, model.Challenge]
    filled_in = ((model.QA, "scene"), (model.SceneSummary, "built"))  # set by the loader, not written
    missing = sorted({f"{m.__name__}.{f}" for m in models for f in m.model_fields
                      if f"`{f}`" not in text and (m, f) not in filled_in})
    assert not missing, f"docs/adding-a-scene.md does not explain {missing}"


@pytest.mark.parametrize("breakage", [
    ("Source: Partition.scala", "See: Partition.scala"),  # the narration's last line
    ('answer = 1\n', 'answer = 3\n'),  # not an index into the options
    ('goal = "spread_keys"', 'goal = "spread_the_keys"'),
    ('target = "topic.partitions"', 'target = "partitions"'),
])
def test_a_broken_example_does_not_validate(breakage):
    old, new = breakage
    assert old in scene_file()
    with pytest.raises(ValueError):
        validate(scene_file().replace(old, new, 1))


# --------------------------------------------------------------------------------------------
# building it


def test_the_example_builds_replays_renders_and_passes_every_scene_check(tmp_path):
    draft = make_draft(tmp_path / "draft")
    (tmp_path / "checks").mkdir()
    (tmp_path / "checks" / f"test_{SCENE_ID}_page.py").write_text(PAGE_TEST, encoding="utf-8")

    loaded = python(["-m", "scenes", SCENE_ID], draft)
    assert loaded.returncode == 0, loaded.stdout + loaded.stderr
    assert loaded.stdout.startswith(f"{SCENE_ID}: 2 beat(s), 1 knob(s), 5 Q&A")

    golden = python(["-m", "scenes.golden", SCENE_ID], draft)
    assert golden.returncode == 0 and str(draft / "golden") in golden.stdout, golden.stdout + golden.stderr
    assert sorted(p.name for p in (draft / "golden").iterdir()) == [
        "x1-first-record.txt", "x1-keys-pick-partitions.txt"]
    check = python(["-m", "scenes.golden", "--check", SCENE_ID], draft)
    assert check.returncode == 0, check.stdout + check.stderr

    junit = tmp_path / "junit.xml"
    run = pytest_run(draft, [*GENERIC, str(draft / f"test_scene_{SCENE_ID}.py"),
                             str(tmp_path / "checks" / f"test_{SCENE_ID}_page.py")], junit)
    assert run.returncode == 0, run.stdout[-6000:] + run.stderr[-2000:]
    results = outcomes(junit)
    assert all(state == "passed" for state in results.values()), results
    ran = {name.split("::")[-1].split("[")[0] for name in results}
    assert MUST_RUN <= ran, sorted(MUST_RUN - ran)
    # the page's own test of the scene and the render at a step ran too
    assert {"test_first_record_lands_at_offset_0_and_is_acknowledged",
            "test_three_partitions_put_alice_and_bob_together",
            "test_the_challenge_can_be_met_with_the_knob_alone", "test_x1_page_at_a_step"} <= ran


def test_the_checks_fail_on_an_example_the_engine_contradicts(tmp_path):
    """The same harness, with a key moment that never happens (there is no fourth append): the
    example still validates, and the pacing test catches it."""
    broken = scene_file().replace('kind = "leader_append", nth = 3', 'kind = "leader_append", nth = 4', 1)
    assert broken != scene_file()
    validate(broken)
    draft = make_draft(tmp_path / "draft", broken)
    run = pytest_run(draft, ["tests/scenes/test_pacing.py"], tmp_path / "junit.xml")
    assert run.returncode == 1 and "does not happen as written" in run.stdout, run.stdout[-3000:]


# --------------------------------------------------------------------------------------------
# the draft directory


def _course_ids(draft: Path) -> subprocess.CompletedProcess:
    return python(["-c", "import scenes; print(' '.join(s.id for s in scenes.list_scenes() if s.built))"],
                  draft, timeout=60)


def test_a_draft_scene_joins_the_course_after_its_scenes(tmp_path):
    out = _course_ids(make_draft(tmp_path / "draft"))
    assert out.returncode == 0, out.stderr
    ids = out.stdout.split()
    assert ids[-1] == SCENE_ID and "05" in ids and len(ids) == len(set(ids))


def test_the_draft_directory_refuses_what_it_cannot_mean(tmp_path):
    missing = _course_ids(tmp_path / "nowhere")
    assert missing.returncode != 0 and "is not a directory" in missing.stderr
    no_entry = tmp_path / "no-entry"
    no_entry.mkdir()
    (no_entry / f"{SCENE_ID}.toml").write_text(scene_file(), encoding="utf-8")
    out = _course_ids(no_entry)
    assert out.returncode != 0 and "without a course entry" in out.stderr
    clash = tmp_path / "clash"
    clash.mkdir()
    (clash / "05.toml").write_text("", encoding="utf-8")
    out = _course_ids(clash)
    assert out.returncode != 0 and "scenes/data has too: ['05']" in out.stderr
