"""What keeps the Step bar still while a learner steps through a beat, on the server's side (the
browser side is tests/browser/test_layout.py): every stop of a beat draws its diagram at one height
per geometry, the height of the beat's tallest stop, padded at the bottom (the new-learner check
saw the Step button move at 1280x800 as the drawing grew and shrank)."""

import re

import pytest

import scenes

CHECKED = [
    (scene_id, beat.id)
    for scene_id in ("01", "01a", "02", "02a", "03", "04")
    for beat in scenes.load_scene(scene_id).beats
]


def svg_heights(html: str) -> dict[str, str]:
    """The height of each geometry's drawing in the main diagram (not the comparison's)."""
    found = dict(re.findall(r'<svg viewBox="0 0 \d+ (\d+)"[^>]*aria-labelledby="dg-(wide|narrow)-t', html))
    return {geometry: height for height, geometry in found.items()}


@pytest.mark.parametrize(("scene_id", "beat_id"), CHECKED)
def test_every_stop_of_a_beat_draws_the_diagram_at_one_height(client, scene_id, beat_id):
    url = f"/scenes/{scene_id}?beat={beat_id}"
    page = client.get(url)
    seen: dict[str, set[str]] = {"wide": set(), "narrow": set()}
    while True:
        heights = svg_heights(page.text)
        assert set(heights) == {"wide", "narrow"}
        for geometry, height in heights.items():
            seen[geometry].add(height)
        forward = page.context["timeline"]["forward_url"]
        if forward is None:
            break
        page = client.get(forward)
    assert all(len(h) == 1 for h in seen.values()), f"the drawing's height changes between stops: {seen}"
