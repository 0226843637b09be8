"""Routes: Step and Back links follow the beat's stops, the caption sits in the page and in htmx
updates, "run until quiet" is offered at the end, and a repeat stop can be expanded."""

from __future__ import annotations

import re
from html import unescape

from tests.web.conftest import HTMX


def link(html: str, element_id: str) -> str | None:
    match = re.search(rf'<a [^>]*id="{element_id}" href="([^"]+)"', html) or re.search(
        rf'<a [^>]*href="([^"]+)"[^>]*id="{element_id}"', html
    )
    return unescape(match.group(1)) if match else None


def test_step_and_back_go_to_stops(client):
    page = client.get("/scenes/05?beat=min-isr-refuses&step=18")
    assert page.status_code == 200
    forward, back = link(page.text, "step-forward"), link(page.text, "step-back")
    assert forward and back
    assert "step=19" in forward  # the refusal, a key moment
    assert "step=17" in back  # the controller's fencing, one stop with its ELR update
    after = client.get(forward)
    step = int(re.search(r"step=(\d+)", link(after.text, "step-forward")).group(1))
    assert step > 400  # the retry loop is one stop
    # one step counter, counting presses of Step (app/formats.py): no engine step numbers
    assert re.search(r"Step \d+ of \d+<span class=\"step-t\"> · t = ", page.text)
    assert "engine step" not in page.text.split('id="timeline-h"')[1].split("</h2>")[0]


def test_fine_steps_one_engine_step_and_folds_again(client):
    page = client.get("/scenes/05?beat=min-isr-refuses&step=18&fine=1")
    assert "step=19" in link(page.text, "step-forward") and "fine=1" in link(page.text, "step-forward")
    assert "fine" not in link(page.text, "fold")


def test_the_caption_is_on_the_page_and_in_step_updates(client):
    page = client.get("/scenes/04?beat=followers-pull&step=10")
    assert 'id="caption"' in page.text and "Key moment" in page.text
    update = client.get("/scenes/04?beat=followers-pull&step=11", headers={
        **HTMX, "HX-Current-URL": "http://testserver/scenes/04?beat=followers-pull&step=9"})
    assert 'id="caption"' in update.text and 'hx-swap-oob="true"' in update.text


def test_a_repeat_stop_offers_to_expand(client):
    page = client.get("/scenes/05?beat=min-isr-refuses&step=18")
    for _ in range(3):  # the refusal (a key moment), then the folded retry loop
        page = client.get(link(page.text, "step-forward"))
        # look in the caption only: glossary definitions elsewhere on the page say "retried" too
        caption = re.search(r'<section id="caption".*?</section>', page.text, re.S).group(0)
        if "retried" in caption:
            break
    assert "retried" in caption and "one by one" in caption and "fine=1" in caption


def test_run_until_quiet_at_the_end_and_key_moment_links(client):
    page = client.get("/scenes/04?beat=followers-pull&step=13")
    quiet = link(page.text, "run-quiet")
    assert quiet and "a=quiet@13" in quiet
    assert client.get(quiet).status_code == 200
    start = client.get("/scenes/04?beat=followers-pull")
    assert link(start.text, "run-quiet") is None
    assert "Jump to the key moment" in start.text and "The last ISR report moves the HW to 2" in start.text


def test_a_fault_at_the_end_redirects_to_fault_and_quiet(client):
    response = client.get("/scenes/04?beat=followers-pull&step=13&inject=crash:1", follow_redirects=False)
    assert response.status_code == 303
    assert "a=crash:1@13" in response.headers["location"] and "a=quiet@14" in response.headers["location"]


def test_run_until_quiet_that_changes_nothing_says_so(client):
    quiet_at_end = client.get("/scenes/04?beat=followers-pull&a=quiet@13&step=13")
    assert quiet_at_end.status_code == 200
    assert "changed nothing" in quiet_at_end.text
    after_a_crash = client.get("/scenes/04?beat=followers-pull&a=crash:1@13&a=quiet@14&step=14")
    assert "changed nothing" not in after_a_crash.text


def test_a_stop_folding_other_partitions_says_what_happened_and_names_each_other_partition_once():
    """From the new-learner check: the caption was only "The same happens in P1, P2 … at the
    same moment", and listed the partition it had just described again."""
    from app.frames import repeat_title

    shown = [{"text": "P1: B7 learns the leader's HW: 0 -> 1.", "partition": 1, "kind": "x"}]
    folded = [{"text": t, "partition": p, "kind": "x"} for p, t in [(1, "again"), (2, "b"), (3, "c")]]
    title = repeat_title(shown, folded, 0)
    assert title == "P1: B7 learns the leader's HW: 0 -> 1; the same happens in P2, P3 at the same moment."
