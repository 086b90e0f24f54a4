"""Tools run in the browser as a visitor runs them: the form, the output, field errors, an
uploaded picture, a queued tool's run page, the keyboard alone."""

import re

from playwright.sync_api import expect

from tests.browser.conftest import FREE_RUNS

TEXT = "The cat sat on the mat. The dog sat on the log.\n\nA second paragraph, short."


def _runs_left(page) -> int:
    return int(page.locator("#allowance strong").inner_text())


def _figures(page) -> dict[str, str]:
    """The result's table of figures, label → value."""
    rows = page.locator("#run-result table.figures tr")
    return {
        rows.nth(i).locator("th").inner_text(): rows.nth(i).locator("td").inner_text()
        for i in range(rows.count())
    }


def test_text_tool_runs_and_its_output_renders(visitor):
    page = visitor.page
    visitor.goto("/tools/word-counter/")
    assert _runs_left(page) == FREE_RUNS
    expect(page.locator("#allowance")).to_contain_text(f"of {FREE_RUNS} free runs left today")
    page.fill("#field-text", TEXT)
    page.get_by_role("button", name="Run Word Counter").click()

    result = page.locator("#run-result")
    expect(result.locator("h2")).to_have_text("Result")
    figures = _figures(page)
    assert figures["Words"] == "16"
    assert figures["Sentences"] == "3"
    assert figures["Paragraphs"] == "2"
    expect(result).to_contain_text(re.compile(r"Run [0-9a-f-]{36} · (\d+|under 1) ms"))
    result.locator("details.raw summary").click()
    expect(result.locator("#raw-json")).to_contain_text('"words": 16')
    # The same page, the form still there with what was typed, one run fewer.
    assert page.url.endswith("/tools/word-counter/")
    expect(page.locator("#field-text")).to_have_value(TEXT)
    assert _runs_left(page) == FREE_RUNS - 1
    expect(page.locator("#api-panel")).to_contain_text("word-counter")


def test_field_error_shows_beside_its_field_and_nothing_runs(visitor, site):
    page = visitor.page
    visitor.expect_failure(422, "/tools/word-frequency-counter/")
    before = site.settled_web_runs()
    visitor.goto("/tools/word-frequency-counter/")
    page.fill("#field-text", TEXT)
    page.locator("details.advanced summary").click()
    # 31 is over the field's maximum (30); the form has novalidate, so the browser sends it.
    page.fill("#field-min_length", "31")
    page.get_by_role("button", name="Run Word Frequency Counter").click()

    error = page.locator("#field-min_length-error")
    expect(error).to_be_visible()
    expect(error).to_have_class("field-error")
    assert error.inner_text().strip()
    # Beside its field: in the field's own block, named by the input, which is marked invalid;
    # the advanced options it is in are open.
    assert page.locator("#field-min_length-wrap #field-min_length-error").count() == 1
    field = page.locator("#field-min_length")
    assert "field-min_length-error" in field.get_attribute("aria-describedby").split()
    assert field.get_attribute("aria-invalid") == "true"
    expect(field).to_have_value("31")
    assert page.locator("details.advanced").get_attribute("open") is not None
    expect(page.locator("#run-refused")).to_contain_text("Some fields need another look.")
    # The other fields kept what was typed; no other field has an error.
    expect(page.locator("#field-text")).to_have_value(TEXT)
    assert page.locator(".field-error").count() == 1
    # The API panel shows the same inputs typed as the API takes them (numbers, not text).
    curl = page.locator("#snippet-curl").inner_text()
    assert '"min_length": 31' in curl and '"top": 50' in curl, curl
    # Nothing ran: no result, the allowance untouched, no run recorded.
    expect(page.locator("#run-result")).not_to_contain_text("Result")
    assert _runs_left(page) == FREE_RUNS
    assert site.settled_web_runs() == before


def test_image_tool_runs_on_an_uploaded_picture(visitor, png):
    page = visitor.page
    visitor.goto("/tools/image-resizer/")
    page.set_input_files("#field-image", str(png))
    page.locator("details.advanced summary").click()
    page.fill("#field-width", "64")
    page.get_by_role("button", name="Run Image Resizer").click()

    image = page.locator("#run-result figure img")
    expect(image).to_have_count(1)
    image.scroll_into_view_if_needed()  # it loads lazily
    page.wait_for_function(
        "img => img.complete && img.naturalWidth > 0", arg=image.element_handle()
    )
    width, height = image.evaluate("img => [img.naturalWidth, img.naturalHeight]")
    assert (width, height) == (64, 38)  # 200 x 120 to 64 wide, the aspect kept
    source = image.get_attribute("src")
    assert re.fullmatch(r"/runs/[0-9a-f-]{36}/files/[^/]+", source)
    answer = page.request.get(image.evaluate("img => img.src"))
    assert answer.ok and answer.headers["content-type"].startswith("image/")
    expect(page.locator("#run-result figcaption a[download]")).to_have_count(1)


def test_speech_tool_queues_and_ends_with_playable_audio(visitor):
    page = visitor.page
    visitor.goto("/tools/text-to-speech/")
    page.fill("#field-text", "Welcome to our store. We are open every day from nine to five.")
    page.get_by_role("button", name="Run Text to Speech").click()

    page.wait_for_url(re.compile(r"/runs/[0-9a-f-]{36}/$"))
    audio = page.locator("#run-status audio")
    expect(audio).to_have_count(1, timeout=60_000)
    expect(page.locator("#run-status .state")).to_have_text("done")
    source = audio.evaluate("a => a.src")
    answer = page.request.get(source)
    assert answer.ok
    assert answer.headers["content-type"].startswith("audio/"), answer.headers["content-type"]
    assert len(answer.body()) > 1000
    # The browser can read it: its metadata loads to a duration.
    duration = audio.evaluate(
        """a => new Promise((done) => {
             if (a.readyState >= 1) return done(a.duration);
             a.addEventListener("loadedmetadata", () => done(a.duration), {once: true});
             a.addEventListener("error", () => done(-1), {once: true});
             a.load();
           })"""
    )
    assert duration > 1, f"the audio does not play (duration {duration})"


# Every state the run's status region shows, recorded as it changes (a region htmx swaps).
_RECORD_STATES = """
window.svcStates = [];
window.svcFirstLoad = true;
const note = () => {
  const state = document.querySelector("#run-status .state");
  const text = state && state.textContent.trim();
  if (text && window.svcStates[window.svcStates.length - 1] !== text) window.svcStates.push(text);
};
new MutationObserver(note).observe(document.body, {childList: true, subtree: true});
note();
"""


def test_queued_tool_shows_progress_then_its_result_without_a_reload(visitor):
    page = visitor.page
    loads = []
    page.on("load", lambda _: loads.append(page.url))
    visitor.goto("/tools/text-to-speech/")
    page.evaluate(_RECORD_STATES)
    page.fill("#field-text", "Every sentence here takes the voice a moment to speak. " * 4)
    page.get_by_role("button", name="Run Text to Speech").click()

    page.wait_for_url(re.compile(r"/runs/[0-9a-f-]{36}/$"))
    run_url = page.url
    status = page.locator("#run-status")
    expect(status).to_have_attribute("aria-live", "polite")
    expect(status.get_by_role("button", name="Cancel")).to_be_visible()
    expect(status.locator("progress")).to_have_count(1)
    expect(status.locator(".state")).to_have_text("done", timeout=60_000)
    expect(status.locator("audio")).to_have_count(1)
    expect(status.get_by_role("button", name="Cancel")).to_have_count(0)

    states = page.evaluate("window.svcStates")
    assert states[-1] == "done"
    assert {"waiting in the queue", "running"} & set(states[:-1]), states
    # The same document all along: htmx followed the run to its page and polled its status.
    assert page.evaluate("window.svcFirstLoad") is True
    assert loads == [visitor.site.url + "/tools/text-to-speech/"], loads
    assert page.url == run_url
    # The run page stops polling once the run is done.
    assert status.get_attribute("hx-trigger") is None


def test_tool_runs_with_the_keyboard_alone(visitor):
    page = visitor.page
    visitor.goto("/tools/word-counter/")
    target = page.locator("#field-text")
    for _ in range(30):
        page.keyboard.press("Tab")
        if target.evaluate("e => e === document.activeElement"):
            break
    else:
        raise AssertionError("Tab never reached the text field")
    page.keyboard.type("Typed by keyboard. Two sentences.")
    page.keyboard.press("Tab")
    focused = page.evaluate("document.activeElement.textContent.trim()")
    assert focused == "Run Word Counter", f"Tab after the field went to {focused!r}"
    page.keyboard.press("Enter")

    expect(page.locator("#run-result h2")).to_have_text("Result")
    assert _figures(page)["Words"] == "5"
    # The keyboard user keeps their place, and a screen reader hears that the result is in.
    page.wait_for_function("() => document.activeElement && document.activeElement.id")
    assert page.evaluate("document.activeElement.id") == "run-button"
    expect(page.locator("#run-announce")).to_have_text("The result is ready, below the form.")
