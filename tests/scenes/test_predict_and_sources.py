"""Predictions and sources across the whole course.

- Every wrong predict option says why it is wrong (`why_not`), and the right answer's position is
  balanced: no letter is the answer for more than 40 % of the beats of the built scenes.
- Learners see public sources only. The reference files behind the course
  (../shared/reference: kafka-semantics.md, kips-and-numbers.md, kafka-claims-verified.md, ...,
  and the seed documents) stay in tests (tests/scenes/reference_trail.toml); no scene data file or
  template, not even in a comment, and no rendered beat may name them.
"""

from __future__ import annotations

import re
import tomllib
import warnings
from collections import Counter
from pathlib import Path

import pytest

import scenes
from app.sources import link_citations
from scenes import load_scene

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    from fastapi.testclient import TestClient

BUILT = [s.id for s in scenes.list_scenes() if s.built]
DATA = Path(scenes.__file__).parent / "data"
INTERNAL = re.compile(
    r"kafka-semantics|kips-and-numbers|kafka-claims|kafka-clients-logs|kafka-eos-kraft|seed 00|\.md\b|§"
)
MAX_SHARE = 0.40


def _strings(value, path=""):
    if isinstance(value, str):
        yield path, value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from _strings(item, f"{path}.{key}")
    elif isinstance(value, list | tuple):
        for i, item in enumerate(value):
            yield from _strings(item, f"{path}[{i}]")


def test_the_right_answer_is_no_letter_more_than_40_percent_of_the_time():
    letters = Counter(
        chr(ord("A") + beat.predict.answer) for scene_id in BUILT for beat in load_scene(scene_id).beats
    )
    total = sum(letters.values())
    assert total >= 30
    worst, count = letters.most_common(1)[0]
    assert count <= MAX_SHARE * total, f"{worst} is the answer for {count} of {total} beats: {dict(letters)}"


@pytest.mark.parametrize("scene_id", BUILT)
def test_every_wrong_option_says_why_it_is_wrong(scene_id):
    for beat in load_scene(scene_id).beats:
        p = beat.predict
        assert len(p.why_not) == len(p.options), beat.id
        for i, text in enumerate(p.why_not):
            if i == p.answer:
                assert text == "", beat.id
            else:
                assert len(text) > 40 and text.rstrip().endswith((".", ")")), (beat.id, i)
                assert text != p.explanation, (beat.id, i)


def test_why_not_is_validated():
    data = tomllib.loads((DATA / "04.toml").read_text())
    predict = data["beats"][0]["predict"]
    for bad in (predict["why_not"][:-1], ["x"] * len(predict["options"]), [""] * len(predict["options"])):
        broken = dict(data, beats=[dict(data["beats"][0], predict={**predict, "why_not": bad})])
        with pytest.raises(ValueError):
            scenes.Scene.model_validate(broken)


@pytest.mark.parametrize("scene_id", BUILT)
def test_no_learner_visible_string_names_an_internal_reference(scene_id):
    # every string the scene model holds is shown somewhere (narration, predict, Q&A, pseudocode,
    # knob help, challenge, labels, compare texts); ids and config keys cannot match anyway
    found = [(path, text[:80]) for path, text in _strings(load_scene(scene_id).model_dump())
             if INTERNAL.search(text)]
    assert not found, found


def test_no_course_wide_qa_or_course_map_string_names_an_internal_reference():
    for name in ("course_qa.toml", "course.toml"):
        data = tomllib.loads((DATA / name).read_text())
        found = [(path, text[:80]) for path, text in _strings(data) if INTERNAL.search(text)]
        assert not found, (name, found)


def test_source_lines_link_kips_jira_and_kafka_files():
    line = "Source: Partition.scala 1149-1222 and 1463-1472; KIP-101; KAFKA-6361."
    segs = link_citations(line)
    urls = [s["url"] for s in segs if s["url"]]
    assert urls[0].endswith("core/src/main/scala/kafka/cluster/Partition.scala#L1149-L1222")
    assert urls[1].endswith("Partition.scala#L1463-L1472")
    assert urls[2].startswith("https://cwiki.apache.org/confluence/display/KAFKA/KIP-101")
    assert urls[3] == "https://issues.apache.org/jira/browse/KAFKA-6361"
    assert "".join(s["text"] for s in segs) == line


@pytest.fixture(scope="module")
def client():
    from app.main import create_app
    from app.settings import Settings

    with TestClient(create_app(Settings()), raise_server_exceptions=False) as test_client:
        yield test_client


@pytest.mark.parametrize(
    "scene_id,beat_id", [(s, b.id) for s in BUILT for b in load_scene(s).beats]
)
def test_the_rendered_beat_names_no_internal_reference(client, scene_id, beat_id):
    scene = load_scene(scene_id)
    beat = scene.beat(beat_id)
    wrong = next(i for i in range(len(beat.predict.options)) if i != beat.predict.answer)
    for query in (f"beat={beat_id}", f"beat={beat_id}&guess={chr(ord('A') + wrong)}"):
        page = client.get(f"/scenes/{scene_id}?{query}")
        assert page.status_code == 200
        hits = sorted({m.group(0) for m in INTERNAL.finditer(page.text)})
        assert not hits, (query, hits)
    # each beat's Source line links at least one public source
    assert re.search(r'class="source">Source: <a href="https://', page.text), beat_id


REFERENCE_FILE = re.compile(
    r"kafka-semantics|kips-and-numbers|kafka-claims|kafka-clients-logs|kafka-eos-kraft|shared/reference"
    r"|\bseeds? 0\d\d\b|\.md\b"
)
TRAIL = Path(__file__).parent / "reference_trail.toml"


@pytest.mark.parametrize(
    "path",
    sorted(DATA.glob("*.toml")) + sorted((DATA.parents[1] / "templates").glob("*.html")),
    ids=lambda p: p.name,
)
def test_learner_facing_files_name_no_reference_file_even_in_comments(path):
    """Scene data and templates cite public sources only, comments included; the trail back to
    the reference notes lives in tests/scenes/reference_trail.toml."""
    lines = enumerate(path.read_text().splitlines(), 1)
    found = [(n, line[:90]) for n, line in lines if REFERENCE_FILE.search(line)]
    assert not found, found


def test_the_reference_trail_names_entries_that_exist():
    trail = tomllib.loads(TRAIL.read_text())
    for name, entries in trail.items():
        text = (DATA / f"{name}.toml").read_text()
        ids = set(re.findall(r'^\s*id\s*=\s*"([^"]+)"', text, re.M))
        unknown = [key for key in entries if key != "_file" and key not in ids]
        assert not unknown, (name, unknown)
        assert all(entries[key] for key in entries), name
