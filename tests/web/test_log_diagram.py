"""The diagram of a scene with consumers (app/logdiagram.py): one row per partition with the
leader's log and each record's key, the log start, HW and LEO, and a lane per group with each
running member's position and the group's committed offset, all read from the view at the current
step (never the end of the run); the text alternative says the same; scenes without consumers keep
the replica diagram."""

from __future__ import annotations

import pytest

import scenes
from app import presenters
from app.settings import Settings
from app.simulation import Simulator, build_timeline
from app.state import parse_state

SIM = Simulator(32)


def drawn(scene_id: str, beat: str, step: int | None = None, **knobs: str):
    scene = scenes.load_scene(scene_id)
    pairs = [("beat", beat)] + list(knobs.items()) + ([("step", str(step))] if step is not None else [])
    state, _ = parse_state(scene, pairs, Settings())
    timeline, state = build_timeline(SIM, scene, state)
    return presenters.diagram(timeline, timeline.scenario), timeline


def step_of(timeline, kind: str, nth: int = 1) -> int:
    seen = 0
    for s in timeline.steps:
        if s["kind"] == kind:
            seen += 1
            if seen == nth:
                return int(s["i"])
    raise AssertionError(kind)


def marks(d) -> list[str]:
    return [label["text"] for row in d["rows"] for lane in row["lanes"] for label in lane["labels"]]


def test_scenes_with_consumers_draw_partitions_and_the_others_keep_brokers():
    d, _ = drawn("02", "replay", 0)
    assert d["mode"] == "log" and [r["label"] for r in d["rows"]] == ["P0"]
    d, _ = drawn("04", "followers-pull", 0)
    assert d.get("mode") is None and [r["label"] for r in d["rows"]] == ["B1", "B2", "B3", "B4", "B5"]


def test_positions_follow_the_current_step():
    _, timeline = drawn("02", "replay")
    seek = step_of(timeline, "consumer_seek")
    before, _ = drawn("02", "replay", seek - 1)
    after, _ = drawn("02", "replay", seek)
    assert marks(before) == ["c0 position 3"] and marks(after) == ["c0 position 0"]
    assert marks(drawn("02", "replay", 0)[0]) == []  # c0 has not started: no lane at all
    # the wide and the phone drawing say the same
    phone = [lb["text"] for r in after["narrow"]["rows"] for lane in r["lanes"] for lb in lane["labels"]]
    assert phone == marks(after)
    assert any("received a, b, c, a, b, c" in line["text"] for line in after["boxes"][1]["lines"]) is False
    end, _ = drawn("02", "replay", timeline.step_count)
    assert any("received a, b, c, a, b, c" in line["text"] for line in end["boxes"][1]["lines"])


def test_the_committed_offset_appears_when_the_coordinator_stores_it():
    _, timeline = drawn("01", "reader-away")
    commit = step_of(timeline, "consumer_commit")
    before, _ = drawn("01", "reader-away", commit - 1)
    at, _ = drawn("01", "reader-away", commit)
    assert "payments committed 1" not in " ".join(marks(before))
    assert marks(at) == ["c0 position 1 · payments committed 1"]
    closed, _ = drawn("01", "reader-away", step_of(timeline, "consumer_close"))
    assert marks(closed) == ["payments committed 1"]  # the process is gone, the bookmark stays
    assert any("■ c0 (payments) closed" in line["text"] for line in closed["boxes"][1]["lines"])
    assert presenters.visible_signature(before) != presenters.visible_signature(at)


def test_keys_partitions_and_the_broker_strip():
    d, timeline = drawn("01a", "same-key-same-partition", 20)
    assert [r["label"] for r in d["rows"]] == ["P0", "P1", "P2"]
    p0 = d["rows"][0]
    assert [(c["text"], c["key"]) for c in p0["cells"]] == [("a1", "alice"), ("b1", "bob"), ("a2", "alice")]
    assert p0["markers"]["hw"] == 3 and p0["markers"]["leo"] == 3 and p0["markers"]["start"] == 0
    assert [b["text"] for b in d["strip"]] == ["B1 ● leads P0", "B2 ● leads P1", "B3 ● leads P2"]
    described = " ".join(d["description"])
    assert ("Partition 0 (leader B1, log start 0, HW 3, LEO 3): a1 (key alice) at 0, b1 (key bob) at 1"
            in described)


def test_the_text_alternative_names_consumers_groups_and_markers():
    _, timeline = drawn("02", "two-groups")
    d, _ = drawn("02", "two-groups", timeline.step_count)
    described = "\n".join(d["description"])
    assert "Consumer c0 (group payments): running, generation 1, owns P0; positions P0 3" in described
    assert "Consumer c1 (group analytics): running" in described and "poll() has returned d" in described
    assert "Consumer c2 (group balances): not started" in described
    assert "Markers: c0 position 3; c1 position 4." in described


@pytest.mark.parametrize("scene_id", ["01", "01a", "02"])
def test_every_beat_renders_with_the_log_legend(scene_id):
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from fastapi.testclient import TestClient
    from app.main import app

    client = TestClient(app)
    for beat in scenes.load_scene(scene_id).beats:
        page = client.get(f"/scenes/{scene_id}?beat={beat.id}&step=999")
        assert page.status_code == 200
        assert 'class="cluster logmap wide"' in page.text and "lanes under a" in page.text
