"""A writing tool's run page shows its text growing as the model writes it (the run's events,
followed by static/js/site.js), says each paragraph once to screen readers, offers Cancel
while it streams, and ends with the result in place of the text; without JavaScript the
page works as before (it refreshes until the run ends).

A site of its own: the embedded default with a model provider (the fake, in this process)
that writes its answer in 20 pieces over 3 s, as a real one streams it.
"""

from __future__ import annotations

import re
import uuid

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import open_visitor, served_site, sign_up

TOOL = "/tools/toast-speech-writer/"
STORIES = "We met at school and he once sailed a bathtub across the lake."
SPEECH = (
    "Good evening, everyone. For those who do not know me, I have known the groom since "
    "our first week at school.\n\n"
    "He once sailed a bathtub across the lake, and he has been steering us all ever since.\n\n"
    "Please raise your glasses to the happy couple."
)

# Records, in the page, every text the growing region showed and every paragraph said.
_RECORD_TEXT = """
window.svcShown = [];
window.svcSaid = [];
new MutationObserver(() => {
  const body = document.querySelector("#run-text .run-text-body");
  const text = body ? body.innerText : "";
  if (text && window.svcShown[window.svcShown.length - 1] !== text) window.svcShown.push(text);
  const said = document.querySelector("#run-text [data-said]");
  const line = said ? said.textContent : "";
  if (line && window.svcSaid[window.svcSaid.length - 1] !== line) window.svcSaid.push(line);
}).observe(document.body, {childList: true, subtree: true, characterData: true});
"""


@pytest.fixture
def fake_provider_settings():
    """``fake_provider`` streams an answer as a model writes it: 20 pieces over 3 s."""
    return {"stream_pieces": 20, "stream_seconds": 3.0}


@pytest.fixture(scope="module")
def writing_site(tmp_path_factory, fake_provider):
    with served_site(
        tmp_path_factory.mktemp("writing"), AI_BASE_URL=fake_provider.base_url
    ) as served:
        yield served


@pytest.fixture
def member(browser, writing_site, request):
    """A signed-in member of a Pro account (the writing tools are Pro's), on the site."""
    visitor = open_visitor(browser, writing_site, request.node.name[:40], **request.param)
    email = f"writer-{uuid.uuid4().hex[:8]}@example.com"
    sign_up(visitor, email)
    writing_site.flask("accounts", "set-plan", email, "pro")
    yield visitor
    visitor.close()


def _start(member, fake_provider, script: str | None = None) -> None:
    """Run the tool from its page (``script`` run in the page first) and land on the run's."""
    fake_provider.reply(SPEECH)
    member.goto(TOOL)
    if script:
        member.page.evaluate(script)  # the document stays: htmx follows the run to its page
    member.page.fill("#field-stories", STORIES)
    member.page.get_by_role("button", name="Run Toast and Speech Writer").click()
    member.page.wait_for_url(re.compile(r"/runs/[0-9a-f-]{36}/$"))


@pytest.mark.parametrize("member", [{}], indirect=True)
def test_the_text_grows_as_it_is_written_then_the_result_takes_its_place(member, fake_provider):
    page = member.page
    _start(member, fake_provider, _RECORD_TEXT)

    growing = page.locator("#run-text")
    expect(growing).to_be_visible(timeout=10_000)
    expect(growing.get_by_role("heading")).to_have_text("Being written")
    expect(page.locator("#run-status").get_by_role("button", name="Cancel")).to_be_visible()
    # Not a live region itself: only the paragraphs said below it are read out.
    assert growing.locator(".run-text-body").get_attribute("aria-live") is None

    status = page.locator("#run-status")
    expect(status.locator(".state")).to_have_text("done", timeout=30_000)
    expect(status).to_contain_text("Please raise your glasses to the happy couple.")
    expect(growing).to_be_hidden()

    shown = page.evaluate("window.svcShown")
    assert len(shown) >= 5, shown  # it grew piece by piece, not all at once
    assert all(
        later.startswith(earlier) for earlier, later in zip(shown, shown[1:], strict=False)
    ), shown
    said = page.evaluate("window.svcSaid")
    paragraphs = SPEECH.split("\n\n")
    assert said[:2] == paragraphs[:2], said  # each paragraph once it was written, whole


@pytest.mark.parametrize("member", [{}], indirect=True)
def test_cancel_while_it_streams_stops_the_run_and_the_text(member, fake_provider):
    page = member.page
    _start(member, fake_provider)
    expect(page.locator("#run-text")).to_be_visible(timeout=10_000)
    page.locator("#run-status").get_by_role("button", name="Cancel").click()

    expect(page.locator("#run-status .state")).to_have_text("canceled", timeout=10_000)
    expect(page.locator("#run-text")).to_be_hidden()
    expect(page.locator("#run-status")).to_contain_text("It did not count against")


@pytest.mark.parametrize("member", [{"java_script_enabled": False}], indirect=True)
def test_without_javascript_the_run_page_refreshes_to_its_result(member, fake_provider):
    page = member.page
    _start(member, fake_provider)  # the form posts, the answer redirects to the run page
    assert page.locator("#run-text").get_attribute("hidden") is not None
    expect(page.locator("#run-status .state")).to_have_text("done", timeout=30_000)
    expect(page.locator("#run-status")).to_contain_text("Please raise your glasses")


@pytest.mark.parametrize("member", [{}], indirect=True)
def test_a_workflow_runs_page_shows_each_steps_text_as_it_is_written(member, fake_provider):
    page = member.page
    member.goto("/workflows/product-launch/")
    page.evaluate(_RECORD_TEXT)
    page.fill("#start-input", "A reusable beeswax food wrap")
    page.get_by_role("button", name="Start Product launch copy").click()
    page.wait_for_url(re.compile(r"/account/runs/[0-9a-f-]{36}/$"))
    page.evaluate(_RECORD_TEXT)  # a new document: the form posted, the answer redirected

    growing = page.locator("#run-text")
    expect(growing).to_be_visible(timeout=10_000)
    expect(growing.locator("h3").first).to_have_text("description")  # the step writing
    expect(page.locator("#run-progress .state")).to_have_text("Succeeded", timeout=60_000)
    expect(growing).to_be_hidden()
    expect(page.get_by_role("heading", name="Result")).to_be_visible()
    shown = page.evaluate("window.svcShown")
    assert len(shown) >= 5, shown
