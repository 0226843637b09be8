"""Routes for every built scene and beat: labels, comparison runs, state panels, isolate/heal.

Assertions read the template context (what the presenters decided) and the HTML (what the
learner gets), and are driven by the scene data, so a new beat is covered when it is written.
"""

import re

import pytest

import scenes
from app import formats, presenters
from tests.web.conftest import HTMX

BUILT = [s.id for s in scenes.list_scenes() if s.built]
BEATS = [(scene_id, beat.id) for scene_id in BUILT for beat in scenes.load_scene(scene_id).beats]
STATE_PANELS = ("metadata_log", "epoch_cache", "partitions", "page_cache")
PANEL_CLASS = {
    "metadata_log": "metadata-log",
    "epoch_cache": "epoch-cache",
    "partitions": "partitions",
    "page_cache": "page-cache",
}


@pytest.mark.parametrize(("scene_id", "beat_id"), BEATS)
@pytest.mark.parametrize("step", [0, 7, 100_000])
def test_every_beat_renders_its_label_compare_and_panels(client, scene_id, beat_id, step):
    scene = scenes.load_scene(scene_id)
    beat = scene.beat(beat_id)
    response = client.get(f"/scenes/{scene_id}?beat={beat_id}&step={step}")
    assert response.status_code == 200
    context, html = response.context, response.text
    if beat.label:
        assert context["beat_label"]["full"] == beat.label
        assert 'class="run-label' in html
    if beat.compare:
        compare = context["compare"]
        assert compare["title"] == beat.compare.title
        assert compare["unavailable"] is None
        assert compare["label"]["full"] == beat.compare.label
        assert 'class="diagram run run-compare"' in html
        # what the producer heard, or for a group of several members its rebalances (scene 07)
        heard = ("Acknowledged:", "Generation ", "The group has not formed")
        assert compare["outcomes"]["text"].startswith(heard)
        ids = re.findall(r'\bid="([^"]+)"', html)
        assert len(ids) == len(set(ids)), "two diagrams on one page must not share element ids"
    else:
        assert context["compare"] is None
    shown = [p["name"] for p in context["state_panels"]]
    assert shown == [p for p in scene.panels if p in STATE_PANELS]
    for name in shown:
        assert f"state-panel {PANEL_CLASS[name]}" in html


def test_compare_is_aligned_by_simulated_time(client):
    response = client.get("/scenes/06?beat=hw-truncation-loses&step=10")
    main_t = response.context["diagram"]["summary"]
    compare = response.context["compare"]
    t_main = response.context["timeline"]["t_ms"]
    # the comparison's position reads its clock the way the page reads every clock (app/formats.py)
    shown = re.search(r"· (t = [^(]+?) \(", compare["position"]).group(1)
    t_other = next(t for t in range(t_main + 1) if formats.clock(t) == shown)
    assert t_other <= t_main and f"t = {formats.sim_time(t_main)}" in main_t


def test_a_comparison_the_knobs_make_impossible_is_a_note_not_an_error(client):
    response = client.get("/scenes/04?beat=not-a-quorum&replication.factor=1&step=5")
    assert response.status_code == 200
    compare = response.context["compare"]
    assert compare["diagram"] is None
    assert "quorum.required.acks" in compare["unavailable"]
    assert "Comparison unavailable" in response.text
    htmx = client.get("/scenes/04?beat=not-a-quorum&replication.factor=1&step=6", headers=HTMX)
    assert htmx.status_code == 200 and "Comparison unavailable" in htmx.text


def test_a_label_follows_the_rules_the_run_really_uses(client):
    preset = client.get("/scenes/06?beat=hw-truncation-loses").context["beat_label"]
    assert preset["kind"] == "history" and "0.10" in preset["full"]
    today = client.get("/scenes/06?beat=hw-truncation-loses&kafka_version=4.1").context["beat_label"]
    assert today is None  # the learner switched to today's rules: no history banner
    proposal = client.get("/scenes/d2?beat=kip-926-proposal").context
    assert proposal["beat_label"]["kind"] == "proposal"
    assert "not Kafka" in proposal["compare"]["main_title"]


def test_step_updates_carry_the_panels_that_change_with_the_step(client):
    url = "/scenes/04a?beat=leader-fenced&step=12"
    response = client.get(
        url, headers={**HTMX, "HX-Current-URL": "http://testserver" + url.replace("12", "11")}
    )
    assert response.status_code == 200
    assert 'id="state-panels" class="state-panels" hx-swap-oob="true"' in response.text
    assert 'id="diagram"' in response.text
    assert 'id="beat"' not in response.text  # only the step changed


def test_metadata_log_shows_replayed_epochs_apart_from_the_record(client):
    response = client.get("/scenes/04a?beat=leader-fenced&step=100000")
    panel = next(p["p"] for p in response.context["state_panels"] if p["name"] == "metadata_log")
    change = next(r for r in panel["records"] if r["type"] == "PartitionChangeRecord")
    assert {f["name"] for f in change["replayed"]} == {"leaderEpoch", "partitionEpoch"}
    assert "leaderEpoch" not in {f["name"] for f in change["fields"]}


def test_zookeeper_era_has_no_metadata_log():
    from app.panels import metadata_log_panel
    from app.simulation import Timeline

    view = {"controller": {"kraft": False, "metadata_log": [], "metadata_log_end": 0}}
    result = {"profile": {"kafka_version": "0.10"}}
    timeline = Timeline(
        scenario={}, result=result, view=view, step=0, step_count=0, first_step=0, last_step=0
    )
    panel = metadata_log_panel(timeline, None)
    assert panel["kraft"] is False and "ZooKeeper" in panel["text"] and panel["records"] == []


def test_epoch_cache_marks_the_first_divergence_and_old_versions(client):
    response = client.get("/scenes/06?beat=fast-double-failover&step=100000")
    panel = next(p["p"] for p in response.context["state_panels"] if p["name"] == "epoch_cache")
    assert panel["diverge"] == 1 and "first disagree at offset 1" in panel["diverge_text"]
    old = client.get("/scenes/06?beat=hw-truncation-loses&step=100000")
    panel = next(p["p"] for p in old.context["state_panels"] if p["name"] == "epoch_cache")
    assert panel["no_epochs"] is True and "kept no leader epochs" in old.text


def test_partitions_and_page_cache_after_a_rack_loss(client):
    response = client.get("/scenes/d3?beat=rack-loss-survives&step=100000")
    panels = {p["name"]: p["p"] for p in response.context["state_panels"]}
    cards = panels["partitions"]["cards"]
    assert len(cards) == 6 and all(c["writable"] for c in cards) and not any(c["lost"] for c in cards)
    assert all({g["rack"] for g in c["racks"]} == {"a", "b", "c"} for c in cards)
    rows = {r["id"]: r for r in panels["page_cache"]["rows"]}
    assert rows[1]["down"] and "power loss" in rows[1]["note"]
    assert rows[7]["cache"] > 0 and rows[7]["disk"] == 0


@pytest.mark.parametrize("verb", ["isolate", "heal"])
def test_isolate_and_heal_are_injectable(client, verb):
    actions = "a=isolate:2@5" + ("&a=heal:2@9" if verb == "heal" else "")
    response = client.get(f"/scenes/05?{actions}&step=7")
    assert response.status_code == 200
    faults = {r["broker"]: [b["verb"] for b in r["buttons"]] for r in response.context["faults"]}
    if verb == "isolate":
        assert "heal" in faults[2] and "isolate" in faults[1]
    texts = [s["text"] for s in response.context["log"]["lines"]]
    assert any("is cut" in t for t in texts)
    redirect = client.get("/scenes/05?step=5&inject=isolate:3", follow_redirects=False)
    assert redirect.status_code == 303 and "a=isolate:3@" in redirect.headers["location"]


def test_knob_range_controls_honour_the_knob_step(client):
    for scene_id in BUILT:
        scene = scenes.load_scene(scene_id)
        response = client.get(f"/scenes/{scene_id}")
        for knob in scene.knobs:
            if knob.kind == "int" and not knob.choices:
                item = next(k for k in response.context["knobs"] if k["key"] == knob.key)
                assert item["step"] == (knob.step or 1)
                assert f'step="{item["step"]}"' in response.text


def test_scene_05_goes_deeper_and_the_course_continues(client):
    course = client.get("/scenes/05").context["course"]
    # its neighbours on the course map (scenes/data/course.toml), whichever scenes they are
    core = [s.id for s in scenes.list_scenes() if s.track == "core" and s.built]
    at = core.index("05")
    assert course["prev"]["id"] == core[at - 1] and course["next"]["id"] == core[at + 1]
    built = {s.id for s in scenes.list_scenes() if s.built}
    assert [d["id"] for d in course["deeper"] if d["url"]] == [
        d for d in presenters.RELATED_DEEP_DIVES["05"] if d in built
    ]
    assert {"d2", "d3"} <= {d["id"] for d in course["deeper"]}
    assert client.get("/scenes/d2").context["course"]["up"][0]["id"] == "05"
    last = scenes.load_scene("04").beats[-1].id
    after_04 = core[core.index("04") + 1]
    assert client.get(f"/scenes/04?beat={last}").context["beat"]["next_scene"]["id"] == after_04


def test_every_built_scene_embeds(client):
    for scene_id in BUILT:
        assert client.get(f"/embed/{scene_id}?step=5").status_code == 200
