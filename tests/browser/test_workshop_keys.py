"""Workshops after the new-user check, in real browsers: the presenter's clicker keys (PageDown
with a knob focused steps instead of moving the knob; PageUp back over a beat; Q, J and .), a poll
leaving with its beat, the scene picker, the phone's sticky bar, and a reload that follows again.

The room (one presenter, a laptop and a phone, each its own context) and the helpers are
tests/browser/test_workshop.py's. Nothing waits on a clock: every check is an auto-waiting expect.
"""

from urllib.parse import parse_qs, urlsplit

from playwright.sync_api import Page, expect

from tests.browser import test_workshop
from tests.browser.test_workshop import Room, beat_title, expect_same_state, step_count, step_presenter

room = test_workshop.room  # the fixture: presenter, laptop and phone in a new workshop


def heading(page: Page):
    return page.locator("h1").first


def synced(presenter: Page) -> None:
    expect(presenter.locator("#ws-sync")).to_have_text("The room sees this step.")


def test_pagedown_with_a_knob_focused_steps_and_leaves_the_knob(room: Room):
    presenter = room.presenter
    knob = presenter.locator("#knobs input[type=range]").first
    expect(knob).to_be_visible()
    knob_id = knob.get_attribute("id")
    knob.focus()
    assert presenter.evaluate("document.activeElement.type") == "range"
    value = knob.input_value()
    url = presenter.evaluate("window.bkSceneUrl()")
    shown = step_presenter(presenter)  # PageDown, on the focused slider
    synced(presenter)
    expect(presenter.locator(f"#{knob_id}")).to_have_value(value)
    after = presenter.evaluate("window.bkSceneUrl()")
    assert after != url
    published = parse_qs(urlsplit(after).query).get(knob.get_attribute("name") or "", [value])
    assert published == [value], after  # the room was sent the step, not a new knob value
    for page in room.participants:
        expect(step_count(page)).to_have_text(shown)
        expect(page.locator(f"#{knob_id}")).to_have_value(value)
        expect(page.locator("#ws-mode")).to_contain_text("Following the presenter")
    # a second press still steps (the slider gave up its focus, not the keys)
    step_presenter(presenter)
    expect(presenter.locator(f"#{knob_id}")).to_have_value(value)


def test_pageup_at_a_beats_first_stop_goes_back_a_beat(room: Room):
    presenter = room.presenter
    first = beat_title(presenter).inner_text()
    presenter.locator(".beat-nav li").nth(1).locator("a").click()
    expect(beat_title(presenter)).to_contain_text("Beat 2 of")
    synced(presenter)
    for page in room.participants:
        expect(beat_title(page)).to_contain_text("Beat 2 of")
    presenter.keyboard.press("PageUp")
    expect(beat_title(presenter)).to_have_text(first)
    synced(presenter)
    for page in room.participants:
        expect_same_state(page, presenter)


def test_q_asks_the_room_and_j_and_dot_toggle_the_big_screens(room: Room):
    presenter = room.presenter
    presenter.keyboard.press("q")
    expect(presenter.locator("#ws-poll")).to_be_visible()
    for page in room.participants:
        expect(page.locator("#ws-poll")).to_be_visible()
        expect(page.locator("#ws-choice-A")).to_be_visible()
        expect(page.locator("#ws-choice-B")).to_be_visible()
    big = presenter.locator("#ws-join-big")
    expect(big).to_be_hidden()
    presenter.keyboard.press("j")
    expect(big).to_be_visible()
    expect(big).to_contain_text(room.join_url.rsplit("/", 1)[1])  # the code
    presenter.keyboard.press("J")
    expect(big).to_be_hidden()
    blank = presenter.locator("#ws-blank")
    expect(blank).to_be_hidden()
    presenter.keyboard.press(".")
    expect(blank).to_be_visible()
    presenter.keyboard.press(".")
    expect(blank).to_be_hidden()
    # a clicker's PageDown behind the big join screen only closes it: the room does not step
    before = presenter.locator("#stepbar .step-count").inner_text()
    presenter.keyboard.press("j")
    expect(big).to_be_visible()
    presenter.keyboard.press("PageDown")
    expect(big).to_be_hidden()
    expect(presenter.locator("#stepbar .step-count")).to_have_text(before)


def test_r_reveals_and_h_hides_the_poll_everywhere(room: Room):
    presenter = room.presenter
    presenter.keyboard.press("q")
    for page in room.participants:
        expect(page.locator("#ws-choice-A")).to_be_visible()
    room.phone.click("#ws-choice-B")
    expect(room.phone.locator(".ws-answered")).to_contain_text("You answered B.")
    presenter.keyboard.press("r")
    for page in (presenter, *room.participants):
        expect(page.locator("#ws-poll h2")).to_have_text("Poll: the answer")
    presenter.keyboard.press("h")
    for page in (presenter, *room.participants):
        expect(page.locator("#ws-poll")).to_be_hidden()


def test_s_opens_the_notes_window_which_follows_and_keeps_its_view(room: Room):
    """S opens the notes in a window for the presenter's own screen (the projected page keeps
    them hidden unless "Notes on this page" is pressed); that window follows the presenter's
    page, and stays a notes window when the scene changes."""
    presenter = room.presenter
    notes = presenter.locator("#ws-notes")
    expect(notes).to_be_hidden()
    presenter.click("#ws-notes-toggle")
    expect(notes).to_be_visible()
    presenter.click("#ws-notes-toggle")
    expect(notes).to_be_hidden()
    with presenter.context.expect_page() as opened:
        presenter.keyboard.press("s")
    window = opened.value
    expect(window.locator("#ws-notes")).to_be_visible()
    expect(notes).to_be_hidden()  # still not on the projected page
    title = beat_title(presenter).inner_text()
    presenter.keyboard.press("b")  # the notes window follows the presenter's page
    expect(beat_title(presenter)).not_to_have_text(title)
    now = beat_title(presenter).inner_text().split(" ", 4)[-1]  # "Beat 2 of 5 <title>": the title
    expect(window.locator("#ws-notes-h")).to_contain_text(now)
    presenter.select_option("#ws-scene", "05")
    presenter.click("#ws-scene-pick button")
    expect(window.locator("h1")).to_contain_text("05")
    assert "view=notes" in window.url
    expect(window.locator("#ws-notes")).to_be_visible()
    window.close()


def test_the_next_beat_takes_the_poll_off_the_screens(room: Room):
    presenter = room.presenter
    presenter.keyboard.press("q")
    for page in room.participants:
        expect(page.locator("#ws-choice-A")).to_be_visible()
    room.laptop.click("#ws-choice-A")
    expect(room.laptop.locator(".ws-answered")).to_contain_text("You answered A.")
    title = beat_title(presenter).inner_text()
    presenter.keyboard.press("b")
    expect(beat_title(presenter)).not_to_have_text(title)
    synced(presenter)
    expect(presenter.locator("#ws-poll")).to_be_hidden()
    for page in room.participants:
        expect_same_state(page, presenter)
        expect(page.locator("#ws-poll")).to_be_hidden()
        expect(page.locator("#ws-choice-A")).to_have_count(0)


def test_the_scene_picker_moves_the_room_to_another_scene(room: Room):
    presenter = room.presenter
    before = heading(presenter).inner_text()
    for page in room.participants:
        expect(heading(page)).to_have_text(before)
    presenter.select_option("#ws-scene", "04")
    presenter.locator("#ws-scene-pick").get_by_role("button", name="Go").click()
    expect(heading(presenter)).to_contain_text("04")
    expect(heading(presenter)).not_to_have_text(before)
    after = heading(presenter).inner_text()
    expect(presenter.locator("#ws-scene")).to_have_value("04")
    for page in room.participants:
        expect(heading(page)).to_have_text(after)  # its page reloaded itself
        expect(page.locator("#ws-mode")).to_contain_text("Following the presenter")
        assert page.url == room.join_url
    # and the room still follows there
    step_presenter(presenter)
    for page in room.participants:
        expect_same_state(page, presenter)


def expect_bar_at_top(page: Page) -> None:
    bar = page.locator("#ws-bar")
    expect(bar).to_be_in_viewport()
    box = bar.bounding_box()
    assert box is not None and abs(box["y"]) <= 2, box


def test_the_phone_bar_sticks_to_the_top_while_scrolling(room: Room):
    phone = room.phone
    phone.evaluate("window.scrollBy(0, 1500)")
    phone.wait_for_function("window.scrollY > 1000")
    expect_bar_at_top(phone)
    expect(phone.locator("#ws-mode")).to_contain_text("Following the presenter")
    expect(phone.locator("#ws-mode")).to_be_in_viewport()
    before = step_count(phone).inner_text()
    phone.locator("#step-forward").tap()
    expect(step_count(phone)).not_to_have_text(before)
    expect(phone.locator("#ws-mode")).to_contain_text("Exploring on your own")
    expect(phone.locator("#ws-follow")).to_be_in_viewport()
    phone.evaluate("window.scrollBy(0, 1500)")
    phone.wait_for_function("window.scrollY > 1000")
    expect_bar_at_top(phone)
    expect(phone.locator("#ws-follow")).to_be_in_viewport()
    expect(room.presenter.locator("#ws-detached")).to_have_text("1")


def test_a_reload_while_exploring_keeps_exploring_and_f_follows_again(room: Room):
    """An explorer's page address names where they are (/w/CODE?at=...), so a reload keeps what
    they explored, and the presenter keeps counting them as exploring; F brings them back."""
    presenter, laptop, phone = room.presenter, room.laptop, room.phone
    expect(presenter.locator("#ws-connected")).to_have_text("2")
    laptop.click("#ws-detach")
    expect(laptop.locator("#ws-mode")).to_contain_text("Exploring on your own")
    before = step_count(phone).inner_text()
    phone.locator("#step-forward").tap()  # the phone explores by stepping on its own
    expect(step_count(phone)).not_to_have_text(before)
    explored = step_count(phone).inner_text()
    expect(phone.locator("#ws-mode")).to_contain_text("Exploring on your own")
    expect(presenter.locator("#ws-detached")).to_have_text("2")
    for page in room.participants:
        assert page.url.startswith(room.join_url + "?at="), page.url
        page.reload()
        expect(page.locator("#ws-mode")).to_contain_text("Exploring on your own")
        expect(page.locator("#ws-follow")).to_be_visible()
    expect(step_count(phone)).to_contain_text(explored)
    expect(presenter.locator("#ws-detached")).to_have_text("2")
    expect(presenter.locator("#ws-connected")).to_have_text("2")
    laptop.keyboard.press("f")
    phone.locator("#ws-follow").tap()
    for page in room.participants:
        expect(page.locator("#ws-mode")).to_contain_text("Following the presenter")
        expect_same_state(page, presenter)
        assert page.url == room.join_url, page.url  # following again: the plain workshop address
    expect(presenter.locator("#ws-detached")).to_have_text("0")
    # a reload while following follows
    laptop.reload()
    expect(laptop.locator("#ws-mode")).to_contain_text("Following the presenter")
    step_presenter(presenter)
    for page in room.participants:
        expect_same_state(page, presenter)


def test_ending_the_workshop_tells_every_page_and_leaves_the_scene(room: Room):
    presenter = room.presenter
    presenter.once("dialog", lambda dialog: dialog.accept())
    presenter.click("#ws-end")
    expect(presenter.locator("#ws-sync")).to_have_text("The workshop has ended.")
    for page in room.participants:
        expect(page.locator("#ws-mode")).to_contain_text("The workshop has ended.")
        expect(page.locator("#ws-follow")).to_be_hidden()
        expect(page.locator("#ws-detach")).to_be_hidden()
        expect(page.locator("#diagram")).to_be_visible()  # the scene stays, to explore alone
