"""The API keys and webhooks console in a real browser, end to end: sign up (the mail's link)
→ create a key → its raw value shown once and never again → the API answers it → revoke →
401 within a second; roll with an hour of overlap → both keys work → the old one's expiry
moved into the past in the server's database → 401 within a second; a webhook to a receiver
on 127.0.0.1, its secret revealed after signing in again, a test event seen in the
deliveries log; axe-core on every page of the console.

These tests run a server of their own, started as the session's (``make run``'s embedded
default) plus ``FETCH_ALLOW_PRIVATE=1`` (the SSRF guard refuses loopback otherwise, and the
receiver is on 127.0.0.1) and a known ``SECRET_KEY``, with which a test ages its session's
sign-in by an hour (the server's clock cannot be moved) to see the password asked again.
``SITE_SCREENSHOTS=<folder>`` adds screenshots of the pages at 375 and 1280 px, light and
dark.
"""

from __future__ import annotations

import hashlib
import os
import re
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
import requests
from axe_playwright_python.sync_playwright import Axe
from playwright.sync_api import expect
from standardwebhooks import Webhook

from tests.browser.conftest import Site, open_visitor, served_site, sign_up
from tests.fakes.webhook_receiver import Receiver

BLOCKING = {"serious", "critical"}
SECRET_KEY = "browser-tests-keys-console-secret"
RAW_KEY = re.compile(r"svc_[A-Za-z0-9]{40}")
_emails = iter(range(1, 10_000))


@pytest.fixture(scope="module")
def keys_site(tmp_path_factory) -> Site:
    """The session server's setup, plus private webhook targets and a known secret key."""
    folder = tmp_path_factory.mktemp("keys-site")
    with served_site(folder, FETCH_ALLOW_PRIVATE="1", SECRET_KEY=SECRET_KEY) as served:
        yield served


@pytest.fixture
def visitor(browser, keys_site, request):
    opened = open_visitor(browser, keys_site, request.node.name.removeprefix("test_")[:40])
    yield opened
    opened.close()


@pytest.fixture
def receiver():
    receiver = Receiver()
    yield receiver
    receiver.stop()


def _pro_user(visitor, site: Site):
    user = sign_up(visitor, f"keys{next(_emails)}-{time.monotonic_ns()}@example.com")
    site.flask("accounts", "set-plan", user.email, "pro")
    return user


def _whoami(site: Site, raw: str) -> int:
    answer = requests.get(
        site.url + "/v1/public/whoami", headers={"X-SVC-API-Key": raw}, timeout=10
    )
    return answer.status_code


def _refused_within_a_second(site: Site, raw: str) -> float:
    """Seconds until the API answers the key with 401 (the test fails past 1 s)."""
    started = time.monotonic()
    while _whoami(site, raw) != 401:
        assert time.monotonic() - started < 1.0, "the key still works after a second"
        time.sleep(0.05)
    return time.monotonic() - started


def _create(page, name: str, mode: str = "Live") -> str:
    page.get_by_label("Name").fill(name)
    page.get_by_role("radio", name=re.compile(rf"{mode}:")).check()
    page.get_by_role("button", name="Create key").click()
    shown = page.locator("#shown-secret-value")
    expect(shown).to_be_visible()
    raw = shown.inner_text().strip()
    assert RAW_KEY.fullmatch(raw)
    return raw


def _sqlite_moment(moment: datetime) -> str:
    """A moment as SQLAlchemy writes it in SQLite (UTC, no zone)."""
    return moment.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S.%f")


def _age_sign_in(page, seconds: int) -> None:
    """Move the session's moment of sign-in ``seconds`` back, as if signed in that long ago:
    the session cookie decoded, changed and signed again with the server's key."""
    from flask.sessions import SecureCookieSessionInterface

    signer = SecureCookieSessionInterface().get_signing_serializer(_secret_app())
    context = page.context
    (cookie,) = [c for c in context.cookies() if c["name"] == "svc_session"]
    data = signer.loads(cookie["value"])
    data["login_at"] = int(data["login_at"]) - seconds
    context.add_cookies([{**cookie, "value": signer.dumps(data)}])


def _secret_app():
    from flask import Flask

    app = Flask("forger")
    app.secret_key = SECRET_KEY
    return app


def _axe(page, found: dict, label: str) -> None:
    blocking = [v for v in Axe().run(page).response["violations"] if v["impact"] in BLOCKING]
    if blocking:
        found[label] = [f"{v['id']}: {v['help']} ({len(v['nodes'])})" for v in blocking]


def test_a_key_shown_once_used_revoked_and_rolled(visitor, keys_site):
    site, page = keys_site, visitor.page
    _pro_user(visitor, site)
    page.get_by_role("navigation", name="Account").get_by_role("link", name="API keys").click()
    page.wait_for_url("**/account/api-keys/")
    found: dict = {}
    _axe(page, found, "list, empty")

    # Created: shown once, with its copy button and the warning.
    raw = _create(page, "production")
    expect(page.get_by_role("button", name="Copy")).to_be_visible()
    expect(page.locator(".shown-secret")).to_contain_text("cannot be shown again")
    _axe(page, found, "list, a new key shown")
    hint = f"{raw[:8]}…{raw[-4:]}"
    expect(page.locator(".keys-table")).to_contain_text(hint)
    # Never again: a reload (which may send the form again), the list, the key's page.
    page.reload()
    assert raw not in page.content()
    visitor.goto("/account/api-keys/")
    assert raw not in page.content()
    page.get_by_role("link", name="production", exact=True).click()
    page.wait_for_url("**/account/api-keys/*/")
    assert raw not in page.content()
    _axe(page, found, "key page")

    # The API answers it; revoked after a confirmation, it is refused within a second.
    assert _whoami(site, raw) == 200
    visitor.goto("/account/api-keys/")
    page.get_by_role("link", name=f"Revoke production ({hint})").click()
    expect(page.get_by_role("heading", name="Revoke production?")).to_be_visible()
    _axe(page, found, "revoke confirmation")
    page.get_by_role("button", name="Revoke production").click()
    page.wait_for_url("**/account/api-keys/")
    expect(page.get_by_text("Revoked production")).to_be_visible()
    _refused_within_a_second(site, raw)

    # Rolled with an hour of overlap: both work, the old one is listed with its expiry.
    old_raw = _create(page, "staging")
    old_hint = f"{old_raw[:8]}…{old_raw[-4:]}"
    page.get_by_role("link", name=f"Roll staging ({old_hint})").click()
    expect(page.get_by_role("heading", name="Roll staging")).to_be_visible()
    _axe(page, found, "roll form")
    page.get_by_label("Keep the old key working").select_option("1h")
    page.get_by_role("button", name="Roll key").click()
    new_raw = page.locator("#shown-secret-value").inner_text().strip()
    assert RAW_KEY.fullmatch(new_raw) and new_raw != old_raw
    expect(page.locator(".shown-secret")).to_contain_text("keeps working until")
    old_row = page.locator(".keys-table tr", has_text=old_hint)
    expect(old_row).to_contain_text("Stops")
    expect(old_row).to_contain_text("in 60 minutes")
    assert _whoami(site, old_raw) == 200 and _whoami(site, new_raw) == 200
    (row,) = site.query(
        "select expires_at, revoked_at from api_keys where key_hash = ?",
        hashlib.sha256(old_raw.encode()).hexdigest(),
    )
    assert row[0] is not None and row[1] is None
    # Its hour moved into the past in the server's database: refused within a second.
    site.execute(
        "update api_keys set expires_at = ? where key_hash = ?",
        _sqlite_moment(datetime.now(UTC) - timedelta(seconds=1)),
        hashlib.sha256(old_raw.encode()).hexdigest(),
    )
    _refused_within_a_second(site, old_raw)
    assert _whoami(site, new_raw) == 200
    page.reload()
    expect(page.locator(".keys-table")).not_to_contain_text(old_hint)
    assert not found, found


def test_a_webhook_its_secret_after_signing_in_again_and_a_test_event(visitor, keys_site, receiver):
    site, page = keys_site, visitor.page
    user = _pro_user(visitor, site)
    visitor.goto("/account/api-keys/")
    _create(page, "hooks")
    page.get_by_role("link", name="hooks", exact=True).click()
    page.wait_for_url("**/account/api-keys/*/")
    key_page = urlpath(page.url)
    found: dict = {}

    # A loopback URL is fine here (FETCH_ALLOW_PRIVATE); port 22 never is: said beside it.
    visitor.expect_failure(422, key_page + "webhook")
    page.get_by_label("Webhook URL").fill("http://127.0.0.1:22/hooks")
    page.get_by_role("button", name="Save URL").click()
    expect(page.locator("#f-url-error")).to_contain_text("Port 22 is not accepted")
    _axe(page, found, "key page, a refused URL")
    page.get_by_label("Webhook URL").fill(receiver.url)
    page.get_by_role("button", name="Save URL").click()
    first_shown = page.locator("#shown-secret-value").inner_text().strip()
    assert first_shown.startswith("whsec_")

    # Signed in an hour ago: revealing asks for the password, then shows the secret.
    visitor.goto(key_page)
    _age_sign_in(page, 3600)
    page.get_by_role("button", name="Reveal secret").click()
    page.wait_for_url("**/account/reauth**")
    _axe(page, found, "reauth")
    page.get_by_label("Password").fill(user.password)
    page.get_by_role("button", name="Continue").click()
    page.wait_for_url("**/account/api-keys/*/")
    page.get_by_role("button", name="Reveal secret").click()
    secret = page.locator("#shown-secret-value").inner_text().strip()
    assert secret == first_shown
    _axe(page, found, "key page, the secret revealed")

    # A test event: its result, and the delivery with its attempt in the log.
    visitor.goto(key_page)
    page.get_by_role("button", name="Send test event").click()
    expect(page.get_by_text(re.compile(r"Test event delivered: .* 204 in \d+ ms"))).to_be_visible()
    delivery = page.locator("#deliveries .delivery").first
    expect(delivery).to_contain_text("webhook.test")
    expect(delivery).to_contain_text("succeeded")
    expect(delivery.locator("table.attempts")).to_contain_text("204")
    expect(delivery.locator("table.attempts")).to_contain_text(re.compile(r"\d+ ms"))
    (received,) = receiver.requests
    assert Webhook(secret).verify(received.body, received.headers)["event"] == "webhook.test"
    _axe(page, found, "key page, with a delivery")
    visitor.goto("/account/api-keys/")
    expect(page.locator(".keys-table")).to_contain_text("Active, last delivery succeeded (204)")
    assert not found, found


def urlpath(url: str) -> str:
    return "/" + url.split("/", 3)[3].split("?")[0].split("#")[0]


# --------------------------------------------------------------------------- screenshots


@pytest.mark.skipif(not os.environ.get("SITE_SCREENSHOTS"), reason="SITE_SCREENSHOTS is not set")
@pytest.mark.parametrize("width", [375, 1280])
@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_screenshots(browser, keys_site, receiver, width, scheme):
    """The console's pages at ``width`` px in ``scheme``, into $SITE_SCREENSHOTS."""
    folder = Path(os.environ["SITE_SCREENSHOTS"])
    folder.mkdir(parents=True, exist_ok=True)
    visitor = open_visitor(
        browser,
        keys_site,
        f"shots-{width}-{scheme}",
        viewport={"width": width, "height": 900},
        color_scheme=scheme,
    )
    page = visitor.page
    try:
        _pro_user(visitor, keys_site)
        visitor.goto("/account/api-keys/")
        _create(page, "production")
        shot = folder / f"keys-created-{width}-{scheme}.png"
        page.screenshot(path=str(shot), full_page=True)
        _create(page, "staging", "Sandbox")
        page.get_by_role("link", name=re.compile(r"^Roll staging")).click()
        page.screenshot(path=str(folder / f"keys-roll-{width}-{scheme}.png"), full_page=True)
        page.get_by_label("Keep the old key working").select_option("24h")
        page.get_by_role("button", name="Roll key").click()
        page.screenshot(path=str(folder / f"keys-rolled-{width}-{scheme}.png"), full_page=True)
        page.get_by_role("link", name="production", exact=True).click()
        page.get_by_label("Webhook URL").fill(receiver.url)
        page.get_by_role("button", name="Save URL").click()
        page.goto(keys_site.url + urlpath(page.url))
        page.get_by_role("button", name="Send test event").click()
        page.get_by_role("button", name="Send test event").wait_for()
        page.screenshot(path=str(folder / f"keys-key-{width}-{scheme}.png"), full_page=True)
    finally:
        visitor.close()
