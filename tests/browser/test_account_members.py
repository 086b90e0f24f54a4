"""Members, invitations and the operators' pages in a real browser, end to end: an owner on
Pro (one seat) is refused an invitation past the seats; moved to Business by the operator's
command, invites; the invitee follows the mail's link in a browser of their own, signs up
from it and joins; as a member they see no controls and the server refuses their posts with
403. An operator finds the account on /admin/, changes its plan and suspends it. axe-core on
every page; ``SITE_SCREENSHOTS=<folder>`` adds screenshots at 375 and 1280 px, light and
dark."""

from __future__ import annotations

import os
import re
import uuid
from pathlib import Path
from urllib.parse import urlsplit

import pytest
import requests
from axe_playwright_python.sync_playwright import Axe
from playwright.sync_api import expect

from tests.browser.conftest import PASSWORD, sign_in

BLOCKING = {"serious", "critical"}
PAGE = "/account/members/"


def _axe(page, found: dict, label: str) -> None:
    violations = Axe().run(page).response["violations"]
    blocking = [v for v in violations if v["impact"] in BLOCKING]
    if blocking:
        found[label] = [
            f"{v['id']}: {v['help']} {[n['target'] for n in v['nodes'][:3]]}" for v in blocking
        ]


def _email(label: str) -> str:
    return f"{label}-{uuid.uuid4().hex[:8]}@example.com"


def _invite(page, email: str, role: str = "member") -> None:
    page.get_by_label("Email").fill(email)
    page.get_by_label("Role", exact=True).select_option(role)
    page.get_by_role("button", name="Send invitation").click()


def _invitation_link(site, email: str) -> str:
    mail = site.mailbox.wait_for(email, "invited you to")
    (link,) = [link for link in mail.links if "/account/invitations/" in link]
    assert link.startswith(site.url + "/account/invitations/")
    return link


def _operator(site, visitor) -> str:
    """A new operator (the operator's command), signed in on ``visitor``."""
    email = _email("ops")
    site.flask("accounts", "create", email, "--plan", "free", "--admin", "--password", PASSWORD)
    sign_in(visitor, email)
    return email


def test_inviting_within_the_seats_accepting_from_the_mail_and_a_member_cannot_manage(
    visitor, open_new_visitor, signed_up_user, site
):
    page, found = visitor.page, {}
    owner = signed_up_user(visitor, plan="pro")
    page.get_by_role("navigation", name="Account").get_by_role("link", name="Members").click()
    page.wait_for_url(f"**{PAGE}")
    expect(page.locator("#seats")).to_contain_text("1 of 1 seat used")
    _axe(page, found, "members, alone")

    # Pro has one seat, the owner's: refused, saying how to get more.
    invitee = _email("invitee")
    visitor.expect_failure(409, "/account/members/invite")
    _invite(page, invitee)
    expect(page.locator("#f-email-error")).to_contain_text("All 1 seat of the Pro plan are taken")
    expect(page.get_by_role("link", name="Plans with more seats")).to_have_attribute(
        "href", "/pricing"
    )
    _axe(page, found, "members, refused past the seats")
    assert site.query("select count(*) from invitations where email = ?", invitee) == [(0,)]

    # On Business (the operator's command): ten seats, the invitation goes.
    site.flask("accounts", "set-plan", owner.email, "business")
    visitor.goto(PAGE)
    expect(page.locator("#seats")).to_contain_text("1 of 10 seats used")
    _invite(page, invitee)
    expect(page.get_by_text(f"Invitation sent to {invitee}")).to_be_visible()
    expect(page.locator("#seats")).to_contain_text("2 of 10 seats used")
    expect(page.locator(".members-table", has_text=invitee)).to_contain_text("pending")
    _axe(page, found, "members, an invitation pending")

    # The invitee, in a browser of their own, follows the mail's link and signs up from it.
    link = _invitation_link(site, invitee)
    other = open_new_visitor("invitee")
    other_page = other.page
    other_page.goto(link)
    expect(other_page.get_by_role("heading", name=re.compile("^Join "))).to_be_visible()
    expect(other_page.locator("main")).to_contain_text(owner.email)
    _axe(other_page, found, "invitation, signed out")
    other_page.get_by_label("Password").fill(PASSWORD)
    other_page.get_by_role("button", name="Create login and join").click()
    other_page.wait_for_url(f"**{PAGE}")
    expect(other_page.get_by_text("You have joined")).to_be_visible()
    expect(other_page.locator(".account-name")).to_contain_text("Business plan · member")

    # A member sees the team but no controls, and the server refuses their posts.
    expect(other_page.locator(".members-table").first).to_contain_text(owner.email)
    for name in ("Send invitation", "Change role", "Resend", "Make them the owner"):
        expect(other_page.get_by_role("button", name=re.compile(name))).to_have_count(0)
    token = other_page.locator('input[name="csrf_token"]').first.get_attribute("value")
    refused = other_page.request.post(
        site.url + "/account/members/invite",
        form={"csrf_token": token, "email": _email("sneaky"), "role": "admin"},
        headers={"Referer": site.url + PAGE},
    )
    assert refused.status == 403
    _axe(other_page, found, "members, as a member")

    # The owner sees the new member; the link is used now.
    visitor.goto(PAGE)
    expect(page.locator(".members-table").first).to_contain_text(invitee)
    expect(page.locator("#seats")).to_contain_text("2 of 10 seats used")
    other.expect_failure(410, urlsplit(link).path)
    other_page.goto(link)
    expect(other_page.locator("main")).to_contain_text("accepted already")
    assert not found, found


def test_an_operator_finds_an_account_changes_its_plan_and_suspends_it(
    visitor, open_new_visitor, signed_up_user, site
):
    found = {}
    customer = open_new_visitor("customer")
    owner = signed_up_user(customer, plan="pro")
    visitor.expect_failure(404, "/admin/")
    page = visitor.page
    visitor.goto("/admin/", 404)  # not an operator yet: no such page
    _operator(site, visitor)
    page.get_by_role("navigation", name="Account").get_by_role("link", name="Admin").click()
    page.wait_for_url("**/admin/")
    page.get_by_label(re.compile("Find an account")).fill(owner.email)
    page.get_by_role("button", name="Search").click()
    expect(page.locator("[role=status]")).to_contain_text("1 account match")
    _axe(page, found, "admin, search")
    page.locator(".admin-table").get_by_role("link").click()
    expect(page.get_by_role("heading", level=1)).to_have_text(owner.email.split("@")[0])
    expect(page.locator(".admin-table")).to_contain_text(owner.email)
    _axe(page, found, "admin, an account")

    page.get_by_role("combobox", name="Plan").select_option("agency")
    page.get_by_role("button", name="Change plan").click()
    expect(page.get_by_text("moved from the pro to the agency plan")).to_be_visible()
    customer.page.reload()
    expect(customer.page.locator(".account-name")).to_contain_text("Agency plan")

    page.get_by_label("Reason").fill("Browser test")
    page.get_by_role("button", name=re.compile("^Suspend")).click()
    expect(page.get_by_text("is suspended")).to_be_visible()
    expect(page.get_by_role("button", name="Lift the suspension")).to_be_visible()
    _axe(page, found, "admin, suspended")
    customer.expect_failure(403, PAGE)
    customer.page.goto(site.url + PAGE)
    expect(customer.page.locator("main")).to_contain_text("suspended")
    answer = requests.get(site.url + "/admin/", timeout=10)
    assert answer.status_code == 404
    assert not found, found


# --------------------------------------------------------------------------- screenshots


@pytest.mark.skipif(not os.environ.get("SITE_SCREENSHOTS"), reason="SITE_SCREENSHOTS is not set")
@pytest.mark.parametrize("width", [375, 1280])
@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_screenshots(open_new_visitor, signed_up_user, site, width, scheme):
    """The members page, an invitation and the operators' pages at ``width`` px in
    ``scheme``, into $SITE_SCREENSHOTS."""
    folder = Path(os.environ["SITE_SCREENSHOTS"])
    folder.mkdir(parents=True, exist_ok=True)
    options = {"viewport": {"width": width, "height": 900}, "color_scheme": scheme}
    owner_visitor = open_new_visitor(f"members-{width}-{scheme}", **options)
    page = owner_visitor.page
    owner = signed_up_user(owner_visitor, plan="business")
    for role in ("admin", "member"):
        owner_visitor.goto(PAGE)
        _invite(page, _email(f"shot-{role}"), role)
    joiner = _email("joiner")
    owner_visitor.goto(PAGE)
    _invite(page, joiner)
    invited = open_new_visitor(f"invited-{width}-{scheme}", **options)
    invited.page.goto(_invitation_link(site, joiner))
    invited.page.screenshot(path=str(folder / f"invitation-{width}-{scheme}.png"), full_page=True)
    invited.page.get_by_label("Password").fill(PASSWORD)
    invited.page.get_by_role("button", name="Create login and join").click()
    invited.page.wait_for_url(f"**{PAGE}")
    invited.page.screenshot(
        path=str(folder / f"members-as-member-{width}-{scheme}.png"), full_page=True
    )
    owner_visitor.goto(PAGE)
    page.locator("details.confirm summary").first.click()
    page.screenshot(path=str(folder / f"members-{width}-{scheme}.png"), full_page=True)

    ops = open_new_visitor(f"ops-{width}-{scheme}", **options)
    _operator(site, ops)
    ops.goto(f"/admin/?q={owner.email}")
    ops.page.screenshot(path=str(folder / f"admin-{width}-{scheme}.png"), full_page=True)
    ops.page.locator(".admin-table").get_by_role("link").click()
    ops.page.screenshot(path=str(folder / f"admin-account-{width}-{scheme}.png"), full_page=True)
