"""White-label in a real browser: an agency's owner sets the brand on its settings page (name,
logo upload, colours, support link), runs a tool, shares the run from its page, and a
stranger opens the link: the brand's colour is the header's computed background, its logo
has loaded, its name is shown as text. axe-core on each page, no CSP violation (the
``visitor`` fixtures watch the console); ``SITE_SCREENSHOTS=<folder>`` adds screenshots at
375 and 1280 px, light and dark."""

from __future__ import annotations

import os
import re
import time
from pathlib import Path
from urllib.parse import urlsplit

import requests
from playwright.sync_api import expect

from tests.browser.test_account_dashboard import _create_key
from tests.browser.test_account_members import _axe

BRAND = "Northwind <Studio>"
PRIMARY = "#1d4ed8"  # rgb(29, 78, 216)
ACCENT = "#b45309"


def _shoot(page, name: str) -> None:
    folder = os.environ.get("SITE_SCREENSHOTS")
    if not folder:
        return
    Path(folder).mkdir(parents=True, exist_ok=True)
    for scheme in ("light", "dark"):
        page.emulate_media(color_scheme=scheme)
        for width in (375, 1280):
            page.set_viewport_size({"width": width, "height": 900})
            shot = Path(folder) / f"{name}-{width}-{scheme}.png"
            page.screenshot(path=str(shot), full_page=True)
    page.emulate_media(color_scheme="light")
    page.set_viewport_size({"width": 1280, "height": 900})


def _latest_run(site, email: str, seconds: float = 10) -> str:
    """The id of the newest run of the account of ``email`` (inline runs are written a
    moment after their answer)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        rows = site.query(
            "select r.id from runs r join memberships m on m.account_id = r.account_id "
            "join users u on u.id = m.user_id where u.email = ? and r.status = 'succeeded' "
            "order by r.created_at desc limit 1",
            email,
        )
        if rows:
            return rows[0][0]
        time.sleep(0.2)
    raise AssertionError(f"no run of {email} was recorded")


def test_a_brand_set_on_its_page_shows_on_a_shared_run(
    visitor, open_new_visitor, signed_up_user, site, png
):
    page, found = visitor.page, {}
    owner = signed_up_user(visitor, plan="agency")
    page.get_by_role("navigation", name="Account").get_by_role("link", name="White-label").click()
    page.wait_for_url("**/account/white-label")
    expect(page.get_by_role("heading", name="White-label", level=1)).to_be_visible()
    _axe(page, found, "settings, empty")

    page.get_by_label("Brand name").fill(BRAND)
    page.get_by_label("Logo", exact=True).set_input_files(str(png))
    page.locator("#f-primary_color").fill(PRIMARY)
    page.locator("#f-primary_color-default").uncheck()
    page.locator("#f-accent_color").fill(ACCENT)
    page.locator("#f-accent_color-default").uncheck()
    page.get_by_label("Support page").fill("https://northwind.example/help")
    page.get_by_role("button", name="Save brand").click()
    expect(page.get_by_text("Your brand is saved")).to_be_visible()
    preview = page.locator(".brand-preview")
    expect(preview.locator(".brand-name")).to_have_text(BRAND)
    expect(preview.locator(".brand-header")).to_have_css("background-color", "rgb(29, 78, 216)")
    expect(preview.get_by_role("button", name="A button")).to_have_css(
        "background-color", "rgb(180, 83, 9)"
    )
    assert page.locator("img.current-logo").evaluate("img => img.naturalWidth") == 200
    _axe(page, found, "settings, saved")
    _shoot(page, "white-label-settings")

    # A colour whose text cannot reach 4.5:1 is refused beside its field, with the ratio.
    visitor.expect_failure(422, "/account/white-label")
    page.locator("#f-accent_color").fill("#777777")
    page.get_by_role("button", name="Save brand").click()
    expect(page.locator("#f-accent_color-error")).to_contain_text("4.47:1")
    _axe(page, found, "settings, refused")

    # A run, shared from its page.
    visitor.goto("/tools/word-counter/")
    page.fill("#field-text", "One two three. Four five.")
    page.get_by_role("button", name="Run Word Counter").click()
    expect(page.locator("#run-result h2")).to_have_text("Result")
    run_id = _latest_run(site, owner.email)
    visitor.goto(f"/account/runs/{run_id}/")
    page.get_by_role("button", name="Share this run").click()
    expect(page.get_by_text("The run is shared")).to_be_visible()
    link = page.locator("#share-link").inner_text()
    assert re.fullmatch(re.escape(site.url) + r"/r/[A-Za-z0-9_-]{22}", link), link
    _axe(page, found, "run, shared")
    _shoot(page, "white-label-run-shared")

    # A stranger opens the link: the brand, not the account.
    stranger = open_new_visitor("stranger")
    other = stranger.page
    response = other.goto(link)
    assert response.status == 200
    expect(other.get_by_role("heading", name="Word Counter", level=1)).to_be_visible()
    header = other.locator("header.brand-header")
    expect(header).to_have_css("background-color", "rgb(29, 78, 216)")
    expect(header).to_have_css("color", "rgb(255, 255, 255)")
    expect(header.locator(".brand-name")).to_have_text(BRAND)
    logo = header.locator("img.brand-logo")
    expect(logo).to_be_visible()
    assert logo.evaluate("img => img.complete && img.naturalWidth") == 200
    expect(other.get_by_role("link", name=re.compile("^Support"))).to_have_attribute(
        "href", "https://northwind.example/help"
    )
    expect(other.locator("main")).to_contain_text("One two three. Four five.")
    assert owner.email not in other.content()
    _axe(other, found, "shared run")
    _shoot(other, "white-label-shared-run")

    # The agency's widget, opened by itself: the same brand, the accent on its button.
    raw = _create_key(visitor, "widgets")
    created = requests.post(
        f"{site.url}/v1/embeds",
        headers={"X-SVC-API-Key": raw},
        json={"tool": "word-counter", "allowed_origins": ["https://client.example.com"]},
        timeout=30,
    )
    assert created.status_code == 201, created.text
    widget = open_new_visitor("widget")
    assert widget.page.goto(created.json()["embed_url"]).status == 200
    band = widget.page.locator("header.brand-header")
    expect(band).to_have_css("background-color", "rgb(29, 78, 216)")
    expect(band.locator(".brand-name")).to_have_text(BRAND)
    assert band.locator("img.brand-logo").evaluate("img => img.naturalWidth") == 200
    expect(widget.page.get_by_role("button", name="Run Word Counter")).to_have_css(
        "background-color", "rgb(180, 83, 9)"
    )
    _axe(widget.page, found, "widget")
    _shoot(widget.page, "white-label-widget")

    # Unshared: the link shows nothing.
    visitor.goto(f"/account/runs/{run_id}/")
    page.get_by_role("button", name="Stop sharing").click()
    expect(page.get_by_text("no longer shared")).to_be_visible()
    stranger.expect_failure(404, urlsplit(link).path)
    assert other.goto(link).status == 404
    assert not found, found
