"""Workshops in real browsers: one presenter and two participants (a laptop and a phone), each in
its own browser context (own cookies, own event stream), against the live server.

The room follows the presenter over SSE; a participant can explore on its own and come back with
F; a poll goes from the presenter's notes to every participant and back. Nothing here waits on a
clock: every check is one of Playwright's auto-waiting expects, whose timeout only guards a hang.
"""

import re
from collections.abc import Iterator
from dataclasses import dataclass

import pytest
from playwright.sync_api import Browser, Page, expect

SCENE = "05"
TIMEOUT_MS = 10_000
LAPTOP = {"width": 1280, "height": 800}
PHONE = {"width": 360, "height": 740}


@dataclass
class Room:
    presenter: Page
    laptop: Page
    phone: Page
    join_url: str
    errors: dict[str, list[str]]

    @property
    def participants(self) -> tuple[Page, Page]:
        return self.laptop, self.phone


def watch_errors(page: Page, errors: list[str]) -> None:
    """tests/browser/conftest.py's console_errors, for a page of a context made here."""
    page.on("console", lambda msg: errors.append(f"console: {msg.text}") if msg.type == "error" else None)
    page.on("pageerror", lambda exc: errors.append(f"pageerror: {exc}"))


def wait_for_scripts(page: Page) -> None:
    page.wait_for_function("window.htmx !== undefined && document.documentElement.classList.contains('js')")


def step_count(page: Page):
    return page.locator("#stepbar .step-count")


def beat_title(page: Page):
    return page.locator("#beat-title")


def create_workshop(page: Page, live_server: str) -> str:
    """The presenter's form, as a person fills it; returns the participants' join URL."""
    page.goto(live_server + "/workshops/new")
    page.select_option("#ws-scene", SCENE)
    page.fill("#ws-title", "Browser test room")
    page.get_by_role("button", name="Create the workshop").click()
    page.wait_for_url(re.compile(r"/w/[A-Z0-9]{6}/present/"))
    wait_for_scripts(page)
    code = page.locator("#ws-bar").get_attribute("data-workshop")
    assert code and re.fullmatch(r"[A-Z0-9]{6}", code)
    return f"{live_server}/w/{code}"


@pytest.fixture
def room(browser: Browser, live_server) -> Iterator[Room]:
    errors: dict[str, list[str]] = {"presenter": [], "laptop": [], "phone": []}
    contexts = {
        "presenter": browser.new_context(viewport=LAPTOP),
        "laptop": browser.new_context(viewport=LAPTOP),
        "phone": browser.new_context(viewport=PHONE, is_mobile=True, has_touch=True),
    }
    pages = {}
    for name, context in contexts.items():
        context.set_default_timeout(TIMEOUT_MS)
        pages[name] = context.new_page()
        watch_errors(pages[name], errors[name])
    try:
        join_url = create_workshop(pages["presenter"], live_server)
        for name in ("laptop", "phone"):
            pages[name].goto(join_url)
            wait_for_scripts(pages[name])
            expect(pages[name].locator("#ws-mode")).to_contain_text("Following the presenter")
        yield Room(pages["presenter"], pages["laptop"], pages["phone"], join_url, errors)
        assert errors == {"presenter": [], "laptop": [], "phone": []}
    finally:
        for context in contexts.values():
            context.close()


def step_presenter(presenter: Page, key: str = "PageDown") -> str:
    """Press a clicker key on the presenter's page; returns the step count it shows after."""
    before = step_count(presenter).inner_text()
    presenter.keyboard.press(key)
    expect(step_count(presenter)).not_to_have_text(before)
    expect(presenter.locator("#ws-sync")).to_have_text("The room sees this step.")
    return step_count(presenter).inner_text()


def expect_same_state(page: Page, presenter: Page) -> None:
    expect(step_count(page)).to_have_text(step_count(presenter).inner_text())
    expect(beat_title(page)).to_have_text(beat_title(presenter).inner_text())


def test_room_follows_the_presenters_keys_and_beat_links(room: Room):
    presenter = room.presenter
    expect(presenter.locator("#ws-connected")).to_have_text("2")
    expect(presenter.locator("#ws-detached")).to_have_text("0")
    start = step_count(presenter).inner_text()
    for _ in range(3):
        step_presenter(presenter)
    assert step_count(presenter).inner_text() != start
    for page in room.participants:
        expect_same_state(page, presenter)
    # a beat link, clicked: the room goes to that beat's start
    title = beat_title(presenter).inner_text()
    presenter.locator(".beat-nav li").nth(2).locator("a").click()
    expect(beat_title(presenter)).not_to_have_text(title)
    expect(beat_title(presenter)).to_contain_text("Beat 3 of")
    expect(presenter.locator("#ws-sync")).to_have_text("The room sees this step.")
    for page in room.participants:
        expect_same_state(page, presenter)
        expect(page.locator("#ws-mode")).to_contain_text("Following the presenter")
    expect(presenter.locator("#ws-connected")).to_have_text("2")


def test_a_participant_explores_and_comes_back_with_f(room: Room):
    presenter, laptop, phone = room.presenter, room.laptop, room.phone
    step_presenter(presenter)
    expect_same_state(laptop, presenter)
    laptop.click("#ws-detach")
    expect(laptop.locator("#ws-mode")).to_contain_text("Exploring on your own")
    expect(laptop.locator("#ws-follow")).to_be_visible()
    expect(laptop.locator("#ws-detach")).to_be_hidden()
    expect(presenter.locator("#ws-detached")).to_have_text("1")
    # its own step: the laptop moves, the presenter does not
    own_before = step_count(laptop).inner_text()
    laptop.click("#step-forward")
    expect(step_count(laptop)).not_to_have_text(own_before)
    own = step_count(laptop).inner_text()
    expect(laptop.locator("#ws-mode")).to_contain_text("Exploring on your own")
    # the presenter goes on (twice, to land on a state that differs from the laptop's own):
    # the phone follows, the laptop stays and is told where the presenter is
    step_presenter(presenter)
    step_presenter(presenter)
    expect_same_state(phone, presenter)
    expect(laptop.locator("#ws-where")).to_contain_text("The presenter is at scene 05")
    expect(step_count(laptop)).to_have_text(own)
    assert step_count(presenter).inner_text() != own
    # F: back to the presenter's state, following again
    laptop.locator("body").click(position={"x": 5, "y": 5})  # focus in the page, on no control
    laptop.keyboard.press("f")
    expect(laptop.locator("#ws-mode")).to_contain_text("Following the presenter")
    expect_same_state(laptop, presenter)
    expect(laptop.locator("#ws-detach")).to_be_visible()
    expect(laptop.locator("#ws-follow")).to_be_hidden()
    expect(laptop.locator("#ws-where")).to_have_text("")
    expect(presenter.locator("#ws-detached")).to_have_text("0")
    # and it follows the next step again
    step_presenter(presenter)
    expect_same_state(laptop, presenter)


def test_poll_from_the_notes_to_the_room_and_the_reveal(room: Room):
    presenter = room.presenter
    notes = presenter.locator("#ws-notes")
    # the projected page shows the notes only when asked, and their answer folded
    expect(notes).to_be_hidden()
    presenter.click("#ws-notes-toggle")
    expect(notes).to_be_visible()
    notes.locator("details.ws-answer-note summary").click()
    answer = notes.locator("p strong", has_text="Answer:").inner_text()
    presenter.click("#ws-poll-open")
    expect(presenter.locator("#ws-poll")).to_be_visible()
    expect(presenter.locator("#ws-poll-total")).to_have_text("0 answers")
    for page in room.participants:
        expect(page.locator("#ws-poll")).to_be_visible()
        expect(page.locator("#ws-choice-A")).to_be_visible()
        expect(page.locator("#ws-choice-B")).to_be_visible()
    room.laptop.click("#ws-choice-A")
    expect(room.laptop.locator(".ws-answered")).to_contain_text("You answered A.")
    room.phone.click("#ws-choice-B")
    expect(room.phone.locator(".ws-answered")).to_contain_text("You answered B.")
    expect(presenter.locator("#ws-poll-total")).to_have_text("2 answers")
    expect(presenter.locator("svg.poll-chart title")).to_contain_text("2 answers")
    presenter.click("#ws-poll-reveal")
    expect(presenter.locator("#ws-poll h2")).to_have_text("Poll: the answer")
    # the notes' predict block: the answer's paragraph, then the explanation's
    explanation_text = notes.locator(
        "xpath=.//p[strong[starts-with(normalize-space(.), 'Answer:')]]/following-sibling::p[1]"
    ).inner_text()
    for page, mine in ((room.laptop, "A"), (room.phone, "B")):
        poll = page.locator("#ws-poll")
        expect(poll.locator("h2")).to_have_text("Poll: the answer")
        expect(poll.locator(".feedback")).to_contain_text(answer)
        expect(poll.locator(".feedback")).to_contain_text(explanation_text)
        expect(poll.locator(".feedback")).to_contain_text(f"you chose {mine}")
        expect(poll.locator("svg.poll-chart")).to_be_visible()
        expect(page.locator("#ws-choice-A")).to_have_count(0)


def test_screenshots(room: Room, screenshot_dir):
    """Presenter and both participants, mid-workshop with a poll open, for a person to look at."""
    presenter = room.presenter
    step_presenter(presenter)
    presenter.click("#ws-ask")
    for page in room.participants:
        expect_same_state(page, presenter)
        expect(page.locator("#ws-choice-A")).to_be_visible()
    room.phone.click("#ws-choice-A")
    expect(presenter.locator("#ws-poll-total")).to_have_text("1 answer")
    presenter.screenshot(path=screenshot_dir / "workshop-presenter-1280.png")
    presenter.screenshot(path=screenshot_dir / "workshop-presenter-1280-full.png", full_page=True)
    room.laptop.screenshot(path=screenshot_dir / "workshop-participant-1280.png")
    room.laptop.screenshot(path=screenshot_dir / "workshop-participant-1280-full.png", full_page=True)
    room.phone.screenshot(path=screenshot_dir / "workshop-participant-360.png")
    room.phone.screenshot(path=screenshot_dir / "workshop-participant-360-full.png", full_page=True)
    presenter.set_viewport_size(PHONE)
    presenter.screenshot(path=screenshot_dir / "workshop-presenter-360.png")
    room.laptop.set_viewport_size(PHONE)
    room.laptop.click("#ws-detach")
    expect(room.laptop.locator("#ws-mode")).to_contain_text("Exploring on your own")
    room.laptop.screenshot(path=screenshot_dir / "workshop-participant-360-exploring.png")
