"""app/charts.py: the curve charts render for every axis with a cursor, a text alternative and a
table of the same numbers; knobs off the grid snap to the nearest simulated value with a note; and
missing or corrupt curve files give a readable "unavailable" panel, never an exception."""

from __future__ import annotations

import json
import re
import shutil
import xml.etree.ElementTree as ET
from types import SimpleNamespace

import jinja2
import pytest

from app import charts, curves

SVG_NS = "{http://www.w3.org/2000/svg}"


def scene(*panels: str):
    return SimpleNamespace(id="x", panels=list(panels))


def state(**knobs):
    return SimpleNamespace(knobs=tuple((k, str(v)) for k, v in knobs.items()))


def render(panel: dict) -> str:
    env = jinja2.Environment(loader=jinja2.FileSystemLoader("templates"), autoescape=True,
                             undefined=jinja2.StrictUndefined)
    return env.get_template("_charts.html").render(charts=panel)


def parse_svg(markup) -> ET.Element:
    root = ET.fromstring(str(markup))
    assert root.tag == SVG_NS + "svg"
    return root


def texts(root: ET.Element) -> list[str]:
    return ["".join(t.itertext()) for t in root.iter(SVG_NS + "text")]


@pytest.mark.parametrize("axis", list(charts.AXES))
def test_latency_chart_renders_for_every_axis_with_cursor_table_and_text_alternative(axis):
    c = charts.latency_chart({"replication.factor": "3", "min.insync.replicas": "2",
                              "replica.lag.time.max.ms": "30000", "straggler_q": "0.001"}, axis)
    root = parse_svg(c["svg"])
    assert root.get("role") == "img" and root.get("viewBox").startswith("0 0 400 ")
    title, desc = root.find(SVG_NS + "title"), root.find(SVG_NS + "desc")
    assert title.text == c["title"] and "acks=all" in desc.text and "not Kafka" in desc.text
    # the cursor: one dashed vertical line per percentile panel, and ringed points
    assert len(root.findall(f".//{SVG_NS}line[@class='cursor']")) == 3
    assert len(root.findall(f".//{SVG_NS}circle[@class='cursor-pt']")) >= 3 * 3
    words = " ".join(texts(root))
    needed_words = ("P999", "P99", "P50", "acks=1", "acks=all", "proposal, not Kafka", "KIP-250", "KIP-926")
    for needed in needed_words:
        assert needed in words, needed
    assert "log scale" in words
    # the table has the same grid: every x value times every mode, with n and intervals
    xs = [v for v in curves.axis("latency", axis) if v is not None]
    assert len(c["table"]["rows"]) == len(xs) * len(charts.LAT_MODES)
    assert all("95 % CI" in r[4] or "timed out" in r[4] for r in c["table"]["rows"])
    assert all(re.match(r"^[\d,]+ \([\d,]+\)$", r[5]) for r in c["table"]["rows"])
    assert c["notes"] == []
    # no tiny text: every font size is at least 13 viewBox units (about 11 px at 360 px wide)
    sizes = [float(t.get("font-size")) for t in root.iter(SVG_NS + "text") if t.get("font-size")]
    assert sizes and min(sizes) >= 13


def test_latency_numbers_are_the_stored_ones():
    c = charts.latency_chart({"straggler_q": "0.001", "straggler_ms": "2000"}, "straggler_q")
    pt = curves.latency(**{"replication.factor": 3, "min.insync.replicas": 2,
                           "replica.lag.time.max.ms": 30000, "straggler_q": 0.001, "straggler_ms": 2000,
                           "load_rps": 1000})
    v = pt["series"]["acks_all"]["p999"]
    row = next(r for r in c["table"]["rows"] if r[0] == "0.1 %" and r[1].startswith("acks=all"))
    assert row[4].startswith(charts._fmt_ms(v[0])) and charts._fmt_ms(v[1]) in row[4]
    assert c["cursor"]["label"] == "0.1 %" and c["cursor"]["index"] == 2
    assert "1.27 s" in c["summary"] and "262,144" in c["summary"]


def test_loss_chart_renders_closed_form_monte_carlo_bounds_and_table():
    c = charts.loss_chart({"replication.factor": "3", "afr": "0.04", "repair_h": "24"})
    root = parse_svg(c["svg"])
    words = " ".join(texts(root))
    assert "P(acked write lost) per year" in words and "replication.factor" in words
    assert "closed form" in words and "random placement" in words and "one copy per rack" in words
    assert root.find(f".//{SVG_NS}polyline[@class='series closed-form']") is not None
    # points the Monte Carlo cannot resolve are drawn as hollow "less than" markers and written "< bound"
    assert root.findall(f".//{SVG_NS}polygon[@class='pt bound']")
    rows = c["table"]["rows"]
    rf3 = next(r for r in rows if r[0] == "3" and r[1].startswith("independent"))
    assert rf3[2].startswith("< 1.2×10⁻⁴") and rf3[4] == "0 / 30,000" and rf3[5] == "1.4×10⁻⁹"
    rf1 = next(r for r in rows if r[0] == "1" and r[1].startswith("independent"))
    assert rf1[4] == "1,160 / 30,000"
    assert len(root.findall(f".//{SVG_NS}line[@class='cursor']")) == 1
    assert c["cursor"]["value"] == 3
    assert abs(c["p"] - 0.04 * 24 / 8760) < 1e-12
    assert "p = 1.1×10⁻⁴" in c["summary"]


@pytest.mark.parametrize(("knobs", "expect"), [
    ({"replica.lag.time.max.ms": "15000"}, "nearest simulated value, 10 s"),
    ({"replication.factor": "1"}, "nearest simulated value, 2"),
    ({"min.insync.replicas": "3"}, "nearest simulated value, 2"),
    ({"straggler_q": "0.003"}, "nearest simulated value, 0.1 %"),
])
def test_latency_knobs_off_the_grid_snap_and_say_so(knobs, expect):
    panel = charts.charts_panel(scene("latency_chart"), state(**knobs), None)
    assert not panel["unavailable"]
    assert any(expect in n for n in panel["notes"]), panel["notes"]
    assert expect in render(panel)


def test_loss_knobs_off_the_grid_snap_and_say_so():
    panel = charts.charts_panel(scene("loss_chart"), state(afr="0.02", repair_h="100"), None)
    assert any("annual failure rate" in n for n in panel["notes"])
    assert any("repair time" in n for n in panel["notes"])


def test_garbage_knobs_fall_back_to_defaults():
    panel = charts.charts_panel(scene("latency_chart", "loss_chart"),
                                state(**{"replication.factor": "lots", "straggler_q": "nan",
                                         "unclean.leader.election.enable": "maybe"}), None)
    assert not panel["unavailable"] and len(panel["charts"]) == 4


def test_panel_renders_figures_details_and_tables():
    panel = charts.charts_panel(scene("latency_chart", "loss_chart"),
                                state(**{"replication.factor": 3, "straggler_q": "0.001"}), None)
    html = render(panel)
    assert html.count("<svg") == 4 and html.count("<table") == 4
    assert html.count('<details class="chart-data">') == 4  # every chart has its table in a <details>
    assert html.count('<details class="chart-more">') == 2  # the RF and lag axes start folded
    assert "<caption" in html and "<th scope=\"col\">" in html
    assert "/static/charts.css" in html
    assert "shipped grid, seed 20240611" in html


def test_scene_without_chart_panels_gets_none():
    assert charts.charts_panel(scene("partitions"), state(), None) is None
    assert charts.charts_panel(SimpleNamespace(id="x"), state(), None) is None


@pytest.fixture
def curve_dir(tmp_path, monkeypatch):
    monkeypatch.setattr(charts, "CURVES_DIR", str(tmp_path))
    yield tmp_path
    curves.load.cache_clear()


@pytest.mark.parametrize("damage", ["missing", "not json", "wrong schema", "no points", "truncated point"])
def test_missing_or_corrupt_curves_give_an_unavailable_note(curve_dir, damage):
    for kind in ("latency", "loss"):
        src = curves.CURVES_DIR / f"{kind}.json"
        dst = curve_dir / f"{kind}.json"
        if damage == "missing":
            continue
        if damage == "not json":
            dst.write_text("{ this is not json")
        elif damage == "wrong schema":
            doc = json.loads(src.read_text())
            doc["schema_version"] = 99
            dst.write_text(json.dumps(doc))
        elif damage == "no points":
            doc = json.loads(src.read_text())
            doc["points"] = []
            dst.write_text(json.dumps(doc))
        else:
            doc = json.loads(src.read_text())
            for p in doc["points"]:
                p.pop("latency_ms", None)
                p.pop("p_loss_year", None)
            dst.write_text(json.dumps(doc))
    for panels in (("latency_chart",), ("loss_chart",)):
        panel = charts.charts_panel(scene(*panels), state(), None)
        assert panel["unavailable"] is True and panel["charts"] == []
        assert panel["note"].startswith("Curves unavailable")
        assert "Curves unavailable" in render(panel)
    costs = charts.scale_costs({"replication.factor": "3"})
    assert costs["unavailable"] and costs["note"].startswith("Curves unavailable")


def test_good_copy_in_a_temporary_directory_still_works(curve_dir):
    for kind in ("latency", "loss"):
        shutil.copy(curves.CURVES_DIR / f"{kind}.json", curve_dir / f"{kind}.json")
    panel = charts.charts_panel(scene("loss_chart"), state(), None)
    assert not panel["unavailable"] and panel["charts"]


def test_scale_costs_for_scene_05():
    c = charts.scale_costs({"replication.factor": "3", "min.insync.replicas": "2", "acks": "all"})
    assert not c["unavailable"] and len(c["rows"]) == 3
    assert c["rows"][0]["value"] == "1.27 s" and "262,144" in c["rows"][0]["detail"]
    assert c["rows"][1]["value"].startswith("< 1.2×10⁻⁴")
    assert [link["href"] for link in c["links"]] == ["/scenes/d1", "/scenes/d4"]
    env = jinja2.Environment(loader=jinja2.FileSystemLoader("templates"), autoescape=True)
    html = env.from_string('{% from "_charts.html" import scale_costs %}{{ scale_costs(c) }}').render(c=c)
    assert 'href="/scenes/d1"' in html and "What these knobs cost at scale" in html
    # RF 1 is off the latency grid: nearest point, and a note
    one = charts.scale_costs(state(**{"replication.factor": 1, "min.insync.replicas": 1}))
    assert one["notes"] and not one["unavailable"]


@pytest.mark.parametrize("scene_id", ["d1", "d4"])
def test_scene_pages_show_the_chart_panel(scene_id):
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from fastapi.testclient import TestClient
    from app.main import app

    resp = TestClient(app).get(f"/scenes/{scene_id}")
    assert resp.status_code == 200
    if "charts-slot" not in resp.text:
        pytest.skip("the page does not have the chart slot yet")
    assert "<svg" in resp.text and "Show the numbers as a table" in resp.text
