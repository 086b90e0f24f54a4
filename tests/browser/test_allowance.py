"""The five free runs a day of a visitor without an account, as the browser meets them."""

from playwright.sync_api import expect

from tests.browser.conftest import FREE_RUNS

TOOL = "/tools/word-counter/"


def _run(page, text: str):
    """Send the form; returns the answer's status (htmx swaps 2xx and 4xx in alike)."""
    page.fill("#field-text", text)
    run_url = page.url.split("?")[0]
    with page.expect_response(lambda r: r.request.method == "POST" and r.url == run_url) as answer:
        page.get_by_role("button", name="Run Word Counter").click()
    status = answer.value.status
    page.wait_for_function("() => !document.querySelector('#run-form button[disabled]')")
    return status


def _use_every_free_run(visitor) -> None:
    page = visitor.page
    visitor.goto(TOOL)
    for used in range(1, FREE_RUNS + 1):
        assert _run(page, f"Run number {used} of the day.") == 200
        expect(page.locator("#run-result h2")).to_have_text("Result")
        expect(page.locator("#allowance strong")).to_have_text(str(FREE_RUNS - used))


def _assert_refused(page) -> None:
    refused = page.locator("#run-refused")
    expect(refused).to_be_visible()
    expect(refused).to_contain_text("You have used today's free runs")
    expect(refused).to_contain_text("Nothing was run.")
    pricing = refused.get_by_role("button", name="See pricing: Pro has unlimited runs")
    expect(pricing).to_have_attribute("href", "/pricing?plan=pro")
    signup = refused.get_by_role("button", name="Sign up free")
    expect(signup).to_have_attribute("href", "/account/signup")
    expect(page.locator("#run-result")).not_to_contain_text("Result")
    expect(page.locator("#allowance strong")).to_have_text("0")


def test_sixth_anonymous_run_is_refused_and_not_recorded(visitor, site):
    visitor.expect_failure(429, TOOL)
    start = site.settled_web_runs()
    _use_every_free_run(visitor)
    assert site.settled_web_runs(expected=start + FREE_RUNS) == start + FREE_RUNS

    page = visitor.page
    assert _run(page, "One run too many.") == 429
    _assert_refused(page)
    assert site.settled_web_runs() == start + FREE_RUNS
    # The pricing link leads to the plans, the Pro one highlighted; the sign-up offer to
    # the sign-up form.
    page.locator("#run-refused").get_by_role("button", name="See pricing").click()
    page.wait_for_url("**/pricing?plan=pro")
    expect(page.locator("#plan-pro")).to_have_attribute("aria-current", "true")
    visitor.goto(TOOL)
    assert _run(page, "Still one too many.") == 429
    page.locator("#run-refused").get_by_role("button", name="Sign up free").click()
    page.wait_for_url("**/account/signup")
    expect(page.get_by_role("heading", name="Create your account")).to_be_visible()


def test_clearing_cookies_gives_no_more_runs(visitor, site):
    visitor.expect_failure(429, TOOL)
    _use_every_free_run(visitor)
    old = {c["name"]: c["value"] for c in visitor.context.cookies()}
    assert "svc_visitor" in old
    start = site.settled_web_runs()

    visitor.context.clear_cookies()
    page = visitor.page
    visitor.goto(TOOL)
    # A new visitor, but the same device (address, user agent, languages): nothing left.
    expect(page.locator("#allowance strong")).to_have_text("0")
    assert _run(page, "A run with a fresh cookie.") == 429
    _assert_refused(page)
    new = {c["name"]: c["value"] for c in visitor.context.cookies()}
    assert new.get("svc_visitor") not in (None, old["svc_visitor"]), "no new visitor cookie"
    assert site.settled_web_runs() == start
