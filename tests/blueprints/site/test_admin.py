"""The operators' pages (/admin/): hidden from everyone else, finding accounts, an account's
page, plan changes (in the API and on the account's pages within a second) and suspension
(its keys answer 401 within a second, its members lose access)."""

import logging
import re
import time

import pytest
from sqlalchemy import select

from extensions import db
from models import Account, UsageDaily
from services import accounts, clock, keys
from tests.blueprints.site.conftest import PASSWORD
from tests.blueprints.site.test_account_auth import browser, forget_request_state, log_in, post
from tests.helpers import auth

REFERER = "https://svc.test/admin/"


def operator(sign_in, **options):
    signed = sign_in(**options)
    signed.user.is_admin = True
    db.session.commit()
    return signed


def act(client, path: str, data: dict, page: str):
    client.environ_base["HTTP_REFERER"] = REFERER
    return post(client, path, data, page=page)


def html_of(client, path: str) -> str:
    forget_request_state()
    answer = client.get(path)
    assert answer.status_code == 200, (path, answer.status_code)
    return answer.get_data(as_text=True)


def whoami(client, raw: str):
    return client.get("/v1/public/whoami", headers=auth(raw))


def within_a_second(check) -> float:
    """Seconds until ``check()`` holds (failing past a second)."""
    started = time.monotonic()
    while not check():
        assert time.monotonic() - started < 1.0, "not within a second"
        time.sleep(0.02)
    return time.monotonic() - started


# --------------------------------------------------------------------------- hidden


ROUTES = [
    ("GET", "/admin/"),
    ("GET", "/admin"),
    ("GET", "/admin/?q=x"),
    ("GET", "/admin/accounts/{id}"),
    ("POST", "/admin/accounts/{id}/plan"),
    ("POST", "/admin/accounts/{id}/suspension"),
]


@pytest.mark.parametrize(("method", "path"), ROUTES)
@pytest.mark.parametrize("who", ["anonymous", "owner", "admin-role"])
def test_the_admin_pages_are_not_found_for_anyone_but_operators(
    app, sign_in, client, method, path, who
):
    target = accounts.create_account("target@example.com", "pro")
    db.session.commit()
    if who == "owner":
        sign_in(plan="agency")
    elif who == "admin-role":
        sign_in(plan="agency", role="admin")
    else:
        client = browser(app)
    path = path.format(id=target.id)
    forget_request_state()
    if method == "GET":
        answer = client.get(path)
    else:  # with or without a CSRF token: the same 404
        client.environ_base["HTTP_REFERER"] = REFERER
        bare = client.post(path, data={"plan": "agency", "action": "suspend", "reason": "x"})
        assert bare.status_code == 404
        answer = post(
            client,
            path,
            {"plan": "agency", "action": "suspend", "reason": "x"},
            page="/account/login" if who == "anonymous" else "/account/settings",
        )
    assert answer.status_code == 404
    assert "This page does not exist" in answer.get_data(as_text=True)
    db.session.expire_all()
    changed = db.session.get(Account, target.id)
    assert (changed.plan_name, changed.suspended_at) == ("pro", None)


def test_the_admin_link_shows_for_operators_only(app, sign_in, client):
    signed = sign_in()
    assert 'href="/admin/"' not in html_of(client, "/account/settings")
    signed.user.is_admin = True
    db.session.commit()
    assert 'href="/admin/"' in html_of(client, "/account/settings")


def test_an_operator_posting_without_a_csrf_token_gets_400(app, sign_in, client):
    operator(sign_in)
    target = accounts.create_account("nocsrf@example.com", "pro")
    db.session.commit()
    forget_request_state()
    client.environ_base["HTTP_REFERER"] = REFERER
    answer = client.post(f"/admin/accounts/{target.id}/plan", data={"plan": "agency"})
    assert answer.status_code == 400 and "Reload the page" in answer.get_data(as_text=True)
    db.session.expire_all()
    assert db.session.get(Account, target.id).plan_name == "pro"


# --------------------------------------------------------------------------- finding


def test_finding_accounts_by_email_name_or_id(app, sign_in, client):
    operator(sign_in, email="ops@example.com")
    alpha = accounts.create_account("alice@alpha.example", "pro", name="Alpha Studio")
    beta = accounts.create_account("bob@beta.example", "business", name="Beta 100%")
    db.session.commit()
    by_email = html_of(client, "/admin/?q=ALICE@alpha")
    assert "Alpha Studio" in by_email and "Beta 100%" not in by_email
    assert "1 account match" in by_email
    by_name = html_of(client, "/admin/?q=beta")
    assert "Beta 100%" in by_name and "Alpha Studio" not in by_name
    by_id = html_of(client, f"/admin/?q={alpha.id}")
    assert f'href="/admin/accounts/{alpha.id}"' in by_id
    # A LIKE wildcard is a character like any other.
    percent = html_of(client, "/admin/?q=100%25")
    assert "Beta 100%" in percent and "Alpha Studio" not in percent
    nothing = html_of(client, "/admin/?q=zzz-nobody")
    assert "No account matches" in nothing
    everyone = html_of(client, "/admin/")
    assert "Alpha Studio" in everyone and "Beta 100%" in everyone
    assert beta.id > alpha.id and everyone.index("Beta 100%") < everyone.index("Alpha Studio")


def test_results_come_a_page_at_a_time(app, sign_in, client):
    operator(sign_in)
    for n in range(45):
        accounts.create_account(f"many{n:02d}@paged.example", "free", name=f"paged {n:02d}")
    db.session.commit()
    first = html_of(client, "/admin/?q=paged")
    assert "45 accounts match" in first and "page 1 of 3" in first
    assert len(re.findall(r'href="/admin/accounts/\d+"', first)) == 20
    assert 'href="/admin/?q=paged&amp;page=2" rel="next"' in first and 'rel="prev"' not in first
    last = html_of(client, "/admin/?q=paged&page=3")
    assert len(re.findall(r'href="/admin/accounts/\d+"', last)) == 5
    assert "paged 00" in last and 'rel="next"' not in last
    beyond = html_of(client, "/admin/?q=paged&page=99")
    assert "page 3 of 3" in beyond and "paged 00" in beyond
    for odd in ("page=0", "page=-3", "page=abc"):
        assert "page 1 of 3" in html_of(client, f"/admin/?q=paged&{odd}"), odd


# --------------------------------------------------------------------------- an account


def test_an_accounts_page(app, sign_in, client, make_key):
    operator(sign_in)
    team = accounts.create_account("lead@team.example", "business", name="Team")
    db.session.commit()
    keys.create_key(team, "one")
    keys.create_key(team, "two")
    db.session.add_all(
        [
            UsageDaily(account_id=team.id, day=clock.now().date(), api_key_id="k", source="api",
                       calls=7, credits=12, free_calls=0),
            UsageDaily(account_id=team.id, day=clock.now().date(), api_key_id="", source="web",
                       calls=3, credits=0, free_calls=0),
        ]
    )  # fmt: skip
    db.session.commit()
    html = html_of(client, f"/admin/accounts/{team.id}")
    for text in (
        "<td>business</td>",
        "lead@team.example",
        '<th scope="row">Working keys</th><td>2</td>',
        "7 calls, 12 credits",
        "3 runs, 0 credits",
        "<td>Active</td>",
        "1 of 10",
    ):
        assert text in html, text
    assert client.get("/admin/accounts/999999").status_code == 404


# --------------------------------------------------------------------------- plans


def test_a_plan_change_reaches_the_api_and_the_accounts_pages_within_a_second(app, sign_in, client):
    operator(sign_in, email="ops@example.com")
    team = accounts.create_account("member@moving.example", "free", password=PASSWORD,
                                   verified=True, name="Moving")  # fmt: skip
    db.session.commit()
    _key, raw = keys.create_key(team, "whoami")
    db.session.commit()
    assert whoami(client, raw).get_json()["plan"]["name"] == "free"  # cached now
    member = browser(app, "198.51.100.60")
    assert log_in(member, "member@moving.example").status_code == 302
    assert "Free plan" in html_of(member, "/account/settings")
    page = f"/admin/accounts/{team.id}"
    answer = act(client, f"{page}/plan", {"plan": "agency"}, page)
    assert answer.status_code == 303 and answer.location == page
    assert "moved from the free to the agency plan" in html_of(client, page)
    within_a_second(lambda: whoami(client, raw).get_json()["plan"]["name"] == "agency")
    within_a_second(lambda: "Agency plan" in html_of(member, "/account/settings"))


def test_an_unknown_plan_is_refused_beside_the_field(app, sign_in, client):
    operator(sign_in)
    team = accounts.create_account("x@plan.example", "pro")
    db.session.commit()
    page = f"/admin/accounts/{team.id}"
    answer = act(client, f"{page}/plan", {"plan": "platinum"}, page)
    assert answer.status_code == 422
    assert 'id="f-plan-error">Choose one of the plans' in answer.get_data(as_text=True)
    db.session.expire_all()
    assert db.session.get(Account, team.id).plan_name == "pro"


# --------------------------------------------------------------------------- suspension


def test_suspension_stops_keys_within_a_second_and_members_lose_access(
    app, sign_in, client, caplog
):
    operator(sign_in, email="ops@example.com")
    team = accounts.create_account("owner@suspend.example", "pro", password=PASSWORD,
                                   verified=True, name="Suspended Co")  # fmt: skip
    db.session.commit()
    _key, raw = keys.create_key(team, "live")
    db.session.commit()
    assert whoami(client, raw).status_code == 200
    member = browser(app, "198.51.100.61")
    assert log_in(member, "owner@suspend.example").status_code == 302
    assert html_of(member, "/account/members/")
    page = f"/admin/accounts/{team.id}"
    caplog.set_level(logging.WARNING, logger="services.accounts")
    answer = act(client, f"{page}/suspension", {"action": "suspend", "reason": "Chargeback"}, page)
    assert answer.status_code == 303
    within_a_second(lambda: whoami(client, raw).status_code == 401)
    # The member's session loses the account at its next request; they cannot sign in.
    forget_request_state()
    assert member.get("/account/members/").status_code == 403
    refused = log_in(browser(app, "198.51.100.62"), "owner@suspend.example")
    assert refused.status_code == 401 and "suspended" in refused.get_data(as_text=True)
    html = html_of(client, page)
    assert "Suspended since" in html and "(Chargeback)" in html and "Lift the suspension" in html
    assert any(
        "ops@example.com suspended account" in r.getMessage() and "Chargeback" in r.getMessage()
        for r in caplog.records
    )
    # Lifting it: the key works again, the member signs in.
    answer = act(client, f"{page}/suspension", {"action": "lift", "reason": "Paid"}, page)
    assert answer.status_code == 303
    within_a_second(lambda: whoami(client, raw).status_code == 200)
    assert log_in(browser(app, "198.51.100.63"), "owner@suspend.example").status_code == 302
    assert "Chargeback" not in html_of(client, page)


@pytest.mark.parametrize(
    ("reason", "message"), [("", "Give the reason"), ("x" * 501, "under 500 characters")]
)
def test_suspending_needs_a_reason(app, sign_in, client, reason, message):
    operator(sign_in)
    team = accounts.create_account("why@suspend.example", "pro")
    db.session.commit()
    page = f"/admin/accounts/{team.id}"
    answer = act(client, f"{page}/suspension", {"action": "suspend", "reason": reason}, page)
    assert answer.status_code == 422
    assert re.search(rf'id="f-reason-error">[^<]*{message}', answer.get_data(as_text=True))
    db.session.expire_all()
    assert db.session.get(Account, team.id).suspended_at is None


def test_an_operator_cannot_suspend_their_own_account(app, sign_in, client):
    ops = operator(sign_in)
    page = f"/admin/accounts/{ops.account.id}"
    assert "you cannot suspend it" in html_of(client, page)
    answer = act(client, f"{page}/suspension", {"action": "suspend", "reason": "test"}, page)
    assert answer.status_code == 422
    db.session.expire_all()
    assert db.session.get(Account, ops.account.id).suspended_at is None


def test_a_suspension_without_an_action_is_refused(app, sign_in, client):
    operator(sign_in)
    team = accounts.create_account("act@suspend.example", "pro")
    db.session.commit()
    page = f"/admin/accounts/{team.id}"
    answer = act(client, f"{page}/suspension", {"action": "delete", "reason": "x"}, page)
    assert answer.status_code == 400
    assert db.session.scalar(select(Account.suspended_at).where(Account.id == team.id)) is None


def test_the_pricing_page_says_how_to_upgrade(app):
    html = browser(app).get("/pricing").get_data(as_text=True)
    assert "To upgrade, write to us from the address you sign in with" in html
