"""scripts/screenshot.py, the screenshot command of docs/adding-a-scene.md: it serves the checkout
itself (or uses --base-url), saves each page at each width, and with --stops walks a beat with the
Step key, one file per stop the app computes, failing on a page that does not answer."""

from __future__ import annotations

import struct
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import CHROMIUM_PATH, REPO_ROOT, running_in_ci

SCRIPT = REPO_ROOT / "scripts" / "screenshot.py"
TIMEOUT_S = 120


@pytest.fixture(scope="module")
def chromium() -> None:
    if not CHROMIUM_PATH.exists():
        if running_in_ci():
            pytest.fail(f"CI is set but {CHROMIUM_PATH} is missing; scripts/test.sh installs it")
        pytest.skip(f"{CHROMIUM_PATH} is missing; run `apt-get install chromium` or scripts/test.sh")


def shoot(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(SCRIPT), *args], cwd=REPO_ROOT, capture_output=True, text=True,
                          timeout=TIMEOUT_S, check=False)


def png_size(path: Path) -> tuple[int, int]:
    head = path.read_bytes()[:24]
    assert head[:8] == b"\x89PNG\r\n\x1a\n" and head[12:16] == b"IHDR", path
    return struct.unpack(">II", head[16:24])


def beat_stop_count(scene_id: str, beat_id: str) -> int:
    """How many stops the app gives the beat's default path (as tests/scenes/test_pacing.py counts)."""
    import scenes
    from app import frames
    from app.settings import Settings
    from app.simulation import Simulator, build_timeline
    from app.state import parse_state

    scene = scenes.load_scene(scene_id)
    sim = Simulator(8)
    state, _ = parse_state(scene, [("beat", beat_id)], Settings())
    timeline, state = build_timeline(sim, scene, state)
    return len(frames.timeline_stops(sim, timeline, frames.beat_key_moments(scene.beat(beat_id))))


def test_help_needs_no_browser():
    out = shoot("--help")
    assert out.returncode == 0 and "--stops" in out.stdout and "--base-url" in out.stdout


def test_a_path_must_start_with_a_slash():
    out = shoot("scenes/01", "--out", "/tmp/unused-shots")
    assert out.returncode == 2 and "starts with /" in out.stderr


def test_it_serves_the_checkout_and_walks_a_beat_with_the_step_key(chromium, tmp_path):
    out = shoot("/scenes/01?beat=first-record", "--out", str(tmp_path), "--width", "1280", "--stops")
    assert out.returncode == 0, out.stdout + out.stderr
    written = [Path(line) for line in out.stdout.split()]
    assert written and all(p.parent == tmp_path and p.exists() for p in written)
    whole = tmp_path / "scenes-01-beat-first-record-1280.png"
    assert written[0] == whole
    width, height = png_size(whole)
    assert width == 1280 and height > 900  # the whole page, not only the first screen
    stops = sorted(tmp_path.glob("scenes-01-beat-first-record-1280-stop*.png"))
    assert len(stops) == beat_stop_count("01", "first-record") == len(written) - 1
    assert all(png_size(p)[0] <= 1280 for p in stops)


def test_a_page_that_does_not_answer_fails_with_its_status(chromium, live_server, tmp_path):
    out = shoot("/scenes/99", "--out", str(tmp_path), "--width", "360", "--base-url", live_server)
    assert out.returncode == 1 and "/scenes/99 answered 404" in out.stderr
    ok = shoot("/", "--out", str(tmp_path), "--width", "360", "--base-url", live_server)
    assert ok.returncode == 0 and png_size(tmp_path / "home-360.png")[0] == 360
