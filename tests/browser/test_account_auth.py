"""Accounts in a real browser: sign up, the confirmation mail's link, sign in, the account
pages, signing out, a password reset from its mail, and axe-core on the account forms."""

from axe_playwright_python.sync_playwright import Axe
from playwright.sync_api import expect

from tests.browser.conftest import PASSWORD, sign_in, sign_up

BLOCKING = {"serious", "critical"}
NEW_PASSWORD = "another browser passphrase"


def test_sign_up_confirm_sign_in_and_out(visitor, site):
    page = visitor.page
    visitor.goto("/")
    page.get_by_role("link", name="Sign in").click()
    page.get_by_role("link", name="Create an account").click()
    page.wait_for_url("**/account/signup")
    # A refused sign-up keeps what was typed and says why beside the field.
    visitor.expect_failure(422, "/account/signup")
    page.get_by_label("Email").fill("browser-person@example.com")
    page.get_by_label("Password").fill("short")
    page.get_by_role("button", name="Create account").click()
    expect(page.locator("#f-password-error")).to_contain_text("at least 10 characters")
    expect(page.get_by_label("Email")).to_have_value("browser-person@example.com")

    user = sign_up(visitor, "browser-person@example.com")
    expect(page.get_by_role("link", name="Account", exact=True)).to_be_visible()
    visitor.goto("/account/settings")
    expect(page.locator("main")).to_contain_text(user.email)
    page.get_by_role("button", name="Sign out", exact=True).click()
    page.wait_for_url("**/account/login")
    expect(page.get_by_text("You are signed out.")).to_be_visible()
    visitor.expect_failure(401, "/account/login")
    page.get_by_label("Email").fill(user.email)
    page.get_by_label("Password").fill("not the password")
    page.get_by_role("button", name="Sign in").click()
    expect(page.get_by_role("alert")).to_contain_text("do not match an account")


def test_password_reset_from_the_mail(visitor, site):
    user = sign_up(visitor, "forgetful@example.com")
    page = visitor.page
    page.context.clear_cookies()
    visitor.goto("/account/login")
    page.get_by_role("link", name="Forgot your password?").click()
    page.get_by_label("Email").fill(user.email)
    page.get_by_role("button", name="Send the link").click()
    expect(page.get_by_role("heading", name="Check your mail")).to_be_visible()
    mail = site.mailbox.wait_for(user.email, "Reset your SVC password")
    (link,) = [link for link in mail.links if "/account/reset/" in link]
    page.goto(link)
    page.get_by_label("New password").fill(NEW_PASSWORD)
    page.get_by_role("button", name="Save the new password").click()
    page.wait_for_url("**/account/login")
    sign_in(visitor, user.email, NEW_PASSWORD)
    visitor.goto("/account/settings")
    expect(page.locator("main")).to_contain_text(user.email)
    assert PASSWORD != NEW_PASSWORD


def test_axe_finds_nothing_serious_on_the_account_forms(visitor, site):
    page = visitor.page
    axe = Axe()
    found = {}
    for path in ("/account/signup", "/account/login", "/account/reset", "/account/verify"):
        visitor.goto(path)
        blocking = [v for v in axe.run(page).response["violations"] if v["impact"] in BLOCKING]
        if blocking:
            found[path] = [f"{v['id']}: {v['help']}" for v in blocking]
    sign_up(visitor, "axe-person@example.com")
    for path in ("/account/settings", "/account/reauth"):
        visitor.goto(path)
        blocking = [v for v in axe.run(page).response["violations"] if v["impact"] in BLOCKING]
        if blocking:
            found[path] = [f"{v['id']}: {v['help']}" for v in blocking]
    assert not found, found
