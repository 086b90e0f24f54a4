"""An agency's widget in a real browser, end to end: an agency member creates a live key and
a widget on the account pages, a page served on ANOTHER local origin (a small http.server on
``localhost``, while the site is on ``127.0.0.1``) shows it with the two-line snippet and
runs the tool in it (the run is then in the agency's runs and the widget's usage); a page on
an origin the widget does not allow cannot frame it (the CSP header says so, and Chromium
leaves the frame without the widget).

``SITE_SCREENSHOTS=<folder>`` adds screenshots of the account page and the framing page at
375 and 1280 px.
"""

from __future__ import annotations

import functools
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import requests
from axe_playwright_python.sync_playwright import Axe
from playwright.sync_api import expect

from tests.browser.conftest import new_user_agent

SHOTS = os.environ.get("SITE_SCREENSHOTS")
BLOCKING = {"serious", "critical"}


def _axe(page) -> list[str]:
    """axe-core's serious and critical violations on ``page``."""
    violations = Axe().run(page).response["violations"]
    return [f"{v['id']}: {v['help']}" for v in violations if v["impact"] in BLOCKING]


class _QuietHandler(SimpleHTTPRequestHandler):
    def log_message(self, *args) -> None:  # the test's output is enough
        pass


@contextmanager
def host_page(folder: Path, html: str) -> Iterator[str]:
    """``html`` served as ``/`` by an http.server on 127.0.0.1; yields its origin as
    ``http://localhost:<port>`` (another origin than the site's ``http://127.0.0.1:<port>``)."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "index.html").write_text(html)
    handler = functools.partial(_QuietHandler, directory=str(folder))
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://localhost:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def _page_with(snippet: str) -> str:
    return (
        "<!doctype html><html lang='en'><head><meta charset='utf-8'>"
        "<meta name='viewport' content='width=device-width, initial-scale=1'>"
        "<link rel='icon' href='data:,'><title>Acme's shop</title></head><body><h1>Acme's shop</h1>"
        f"<p>Count the words of your product text:</p>\n{snippet}\n<p>Thanks for visiting.</p>"
        "</body></html>"
    )


def _shoot(page, name: str) -> None:
    if not SHOTS:
        return
    folder = Path(SHOTS)
    folder.mkdir(parents=True, exist_ok=True)
    for width in (375, 1280):
        # Tall enough for the whole page: Chromium's full-page shot can leave the part of
        # another origin's iframe below the first screen unpainted.
        page.set_viewport_size({"width": width, "height": 1600})
        page.wait_for_timeout(300)
        page.screenshot(path=folder / f"embeds-{name}-{width}.png", full_page=True)


def _create_live_key(visitor) -> None:
    page = visitor.page
    visitor.goto("/account/api-keys/")
    page.get_by_label("Name", exact=True).fill("Widgets")
    page.get_by_role("button", name="Create key").click()
    page.get_by_role("heading", name="Your new key Widgets").wait_for()


def _create_widget(
    visitor, slug: str, name: str, origin: str, per_visitor: str | None = None
) -> str:
    """A widget of ``slug`` for ``origin`` made on the account page; its snippet."""
    page = visitor.page
    visitor.goto("/account/embeds/")
    expect(page.get_by_role("heading", name="Create a widget")).to_be_visible()
    page.get_by_label("Tool", exact=True).select_option(slug)
    page.get_by_label("Allowed origins", exact=True).fill(origin)
    if per_visitor is not None:
        page.get_by_label("Runs per visitor per day", exact=True).fill(per_visitor)
    page.get_by_role("button", name="Create widget").click()
    expect(page.get_by_role("heading", name=name)).to_be_visible()
    return page.locator("#embed-snippet").inner_text()


def test_an_agency_widget_runs_on_an_allowed_origin_and_is_refused_elsewhere(
    site, browser, open_new_visitor, signed_up_user, tmp_path
):
    agency = open_new_visitor("agency")
    signed_up_user(agency, plan="agency")
    _create_live_key(agency)
    page = agency.page

    # Another origin: known before the widget is made (its port), the page written after.
    with host_page(tmp_path / "allowed", "<!doctype html><title>wait</title>") as allowed:
        snippet = _create_widget(agency, "word-counter", "Word Counter", allowed, per_visitor="1")
        assert snippet.count("\n") == 1 and "/embed/v1/loader.js" in snippet
        public_id = snippet.split('data-svc-embed="')[1].split('"')[0]
        _shoot(page, "account")

        # The widget's page is framed only by the allowed origin.
        answer = requests.get(f"{site.url}/embed/{public_id}", timeout=10)
        assert answer.headers["Content-Security-Policy"].endswith(f"frame-ancestors {allowed}")

        (tmp_path / "allowed" / "index.html").write_text(_page_with(snippet))
        shopper = open_new_visitor("shopper")
        shopper.page.goto(allowed + "/")
        frame = shopper.page.frame_locator("iframe[title='Word Counter']")
        frame.get_by_label("Text").fill("one two three four five")
        frame.get_by_role("button", name="Run Word Counter").click()
        expect(frame.get_by_role("heading", name="Result")).to_be_visible()
        expect(frame.locator("table.figures")).to_contain_text("5")
        # The loader sized the iframe to the page it shows (from the widget's postMessage).
        iframe = shopper.page.locator("iframe[title='Word Counter']")
        expect(iframe).not_to_have_attribute("style", "border: 0px; width: 100%; height: 520px;")
        inner = frame.locator("html").evaluate("element => element.scrollHeight")
        shopper.page.wait_for_function(
            "([height]) => Math.abs(document.querySelector(\"iframe[title='Word Counter']\")"
            ".getBoundingClientRect().height - height) <= 2",
            arg=[inner],
        )
        _shoot(shopper.page, "allowed-origin")
        # Past its cap (one run a day per visitor): a friendly 429 inside the widget.
        shopper.expect_failure(429, f"/embed/{public_id}")
        frame.get_by_role("button", name="Run Word Counter").click()
        expect(frame.get_by_role("alert")).to_contain_text(
            "You have reached this tool's limit of 1 run a day per visitor."
        )
        _shoot(shopper.page, "capped")

    # The run is the agency's: in its runs (as the widget's) and in the widget's usage.
    rows = site.query("select source, status, credits from runs where embed_id is not null")
    assert rows == [("embed", "succeeded", 1)] or rows == [("embed", "succeeded", 0)]
    agency.goto("/account/runs/?source=embed")
    expect(page.get_by_role("cell", name="Widget · Widgets")).to_be_visible()
    agency.goto("/account/embeds/")
    expect(page.locator("td[data-label='Runs today']")).to_have_text("1")
    _shoot(page, "list")
    assert _axe(page) == []
    page.get_by_role("link", name="Word Counter").first.click()
    expect(page.get_by_role("heading", name="Snippet")).to_be_visible()
    assert _axe(page) == []
    agency.goto(f"/embed/{public_id}")  # the widget's page on its own
    assert _axe(page) == []

    # A page on an origin the widget does not allow: the browser refuses to frame it.
    with host_page(tmp_path / "other", _page_with(snippet)) as other:
        assert other != allowed
        context = browser.new_context(user_agent=new_user_agent("elsewhere"))
        try:
            elsewhere = context.new_page()
            refusals = []
            elsewhere.on("console", lambda message: refusals.append(message.text))
            elsewhere.goto(other + "/")
            iframe = elsewhere.locator("iframe[title='Word Counter']")
            expect(iframe).to_have_count(1)
            elsewhere.wait_for_timeout(1500)
            frame = iframe.element_handle().content_frame()
            # Chromium shows its own error page instead of ours: no form, no widget.
            assert frame is None or "Run Word Counter" not in frame.content()
            assert any("frame-ancestors" in text for text in refusals), refusals
            _shoot(elsewhere, "refused-origin")
        finally:
            context.close()


def test_a_queued_tool_making_a_file_runs_in_the_widget(
    site, open_new_visitor, signed_up_user, tmp_path
):
    """Text to speech (queued, on the embedded default's in-process queue; it makes an audio
    file): the widget shows the run's progress in its status region, then the audio player,
    whose file plays from this service inside the other origin's page."""
    agency = open_new_visitor("agency-queued")
    signed_up_user(agency, plan="agency")
    _create_live_key(agency)
    with host_page(tmp_path / "queued", "<!doctype html><title>wait</title>") as allowed:
        snippet = _create_widget(agency, "text-to-speech", "Text to Speech", allowed)

        (tmp_path / "queued" / "index.html").write_text(_page_with(snippet))
        shopper = open_new_visitor("shopper-queued")
        shopper.page.goto(allowed + "/")
        frame = shopper.page.frame_locator("iframe[title='Text to Speech']")
        frame.get_by_label("Text").fill("Welcome to the shop.")
        frame.get_by_role("button", name="Run Text to Speech").click()
        status = frame.get_by_role("status")
        expect(status).to_be_visible()
        expect(status.get_by_role("button", name="Cancel")).to_have_count(1, timeout=5000)
        expect(status).to_contain_text("done", timeout=30_000)
        audio = frame.locator("#run-status audio")
        expect(audio).to_have_count(1)
        # The player's file loads from this service (its duration known once it has).
        duration = audio.evaluate(
            "element => new Promise(done => element.readyState > 0 ? done(element.duration)"
            " : element.addEventListener('loadedmetadata', () => done(element.duration)))"
        )
        assert duration > 0.3
        _shoot(shopper.page, "queued")
        assert _axe(shopper.page) == []
    rows = site.query(
        "select source, status from runs"
        " where tool_slug = 'text-to-speech' and embed_id is not null"
    )
    assert rows == [("embed", "succeeded")]
