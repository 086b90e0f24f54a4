"""Signing up, confirming the address, signing in and out, resetting and changing the
password, signing in again, and the account switcher: through the pages, with the mails
received by a real SMTP server and their links followed."""

import re
import time
from datetime import timedelta
from urllib.parse import urlsplit

import pytest
import sqlalchemy as sa
from flask import g
from itsdangerous import TimestampSigner
from sqlalchemy import select

from extensions import db
from models import Membership, Run, User, UserSession
from services import accounts, clock, users
from tests.blueprints.site.conftest import PASSWORD

BROWSER = "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 Chrome/124.0 Safari/537.36"
NEW_PASSWORD = "a longer new passphrase"


def browser(app, address: str = "198.51.100.20"):
    client = app.test_client()
    client.environ_base.update(
        {
            "HTTP_USER_AGENT": BROWSER,
            "REMOTE_ADDR": address,
            "HTTP_REFERER": "https://svc.test/account/",
        }
    )
    return client


def forget_request_state() -> None:
    """The test's app context outlives its requests, and so does ``g``: what Flask-WTF and
    flask-login keep there for one request (the CSRF token, the user) is dropped, as a new
    request of a real server would start without it."""
    for name in ("csrf_token", "_login_user", "membership", "memberships", "account"):
        g.pop(name, None)


def csrf(client, path: str = "/account/login") -> str:
    forget_request_state()
    page = client.get(path).get_data(as_text=True)
    return re.search(r'name="csrf_token" value="([^"]+)"', page).group(1)


def post(client, path: str, data: dict, *, page: str | None = None, **kwargs):
    token = csrf(client, page or path)
    forget_request_state()
    return client.post(path, data={"csrf_token": token, **data}, **kwargs)


def path_of(link: str) -> str:
    parts = urlsplit(link)
    return parts.path + (f"?{parts.query}" if parts.query else "")


def run_tool(client, text: str):
    return post(client, "/tools/word-counter/", {"text": text}, page="/tools/word-counter/")


def sign_up(client, mailbox, email: str, password: str = PASSWORD):
    answer = post(client, "/account/signup", {"email": email, "password": password})
    assert answer.status_code == 200, answer.get_data(as_text=True)
    return mailbox.wait_for(email, "Confirm your email")


def log_in(client, email: str, password: str = PASSWORD, **more):
    return post(client, "/account/login", {"email": email, "password": password, **more})


def signed_in_as(client) -> str | None:
    """The email the client's session is signed in as (the settings page), or None."""
    forget_request_state()
    answer = client.get("/account/settings")
    if answer.status_code != 200:
        return None
    return re.search(
        r"<th scope=\"row\">Email</th><td>([^<]+)</td>", answer.get_data(as_text=True)
    )[1]


# --------------------------------------------------------------------------- sign-up


def test_sign_up_confirm_and_sign_in(app, mailbox):
    client = browser(app)
    mail = sign_up(client, mailbox, "Ada@Example.com")
    user = db.session.scalar(select(User).where(User.email == "ada@example.com"))
    assert user is not None and user.email_verified_at is None
    assert user.password_hash.startswith("scrypt:") and PASSWORD not in user.password_hash
    membership = user.memberships[0]
    assert membership.role == "owner" and membership.account.plan_name == "free"
    # Not confirmed yet: refused, with a new link sent.
    refused = log_in(client, "ada@example.com")
    assert refused.status_code == 401
    assert "Confirm your email address first" in refused.get_data(as_text=True)
    # The mail's link confirms the address.
    (link,) = [link for link in mail.links if "/account/verify/" in link]
    assert link.startswith("https://svc.test/account/verify/")
    confirmed = client.get(path_of(link))
    assert confirmed.status_code == 302 and confirmed.location.endswith("/account/login")
    db.session.refresh(user)
    assert user.email_verified_at is not None
    answer = log_in(client, "ADA@example.com")
    assert answer.status_code == 302 and answer.location == "/account/"
    assert signed_in_as(client) == "ada@example.com"
    cookie = client.get_cookie("svc_session", domain="svc.test")
    assert cookie.http_only and cookie.same_site == "Lax"


def test_signing_up_with_a_taken_address_says_the_same_and_mails_its_owner(app, mailbox, sign_in):
    taken = sign_in(email="taken@example.com").user
    client = browser(app)
    first = post(client, "/account/signup", {"email": "taken@example.com", "password": PASSWORD})
    fresh = post(client, "/account/signup", {"email": "new@example.com", "password": PASSWORD})
    assert first.status_code == fresh.status_code == 200

    def normalise(page) -> str:
        # The CSRF token is signed with the time: two pages a second apart differ there.
        html = re.sub(r'name="csrf_token" value="[^"]+"', "", page.get_data(as_text=True))
        return html.replace("taken@", "X@").replace("new@", "X@")

    assert normalise(first) == normalise(fresh)
    assert "already has an account" in mailbox.wait_for(taken.email, "already have").text
    assert db.session.scalar(select(User.id).where(User.email == "taken@example.com")) == taken.id


@pytest.mark.parametrize(
    ("email", "password", "field", "message"),
    [
        ("not-an-email", PASSWORD, "email", "Enter an email address"),
        ("a@example.com", "short", "password", "at least 10 characters"),
        ("a@example.com", "x" * 300, "password", "at most 256"),
    ],
)
def test_a_bad_sign_up_is_refused_beside_its_field(app, email, password, field, message):
    client = browser(app)
    answer = post(client, "/account/signup", {"email": email, "password": password})
    html = answer.get_data(as_text=True)
    assert answer.status_code == 422
    assert re.search(rf'id="f-{field}-error">[^<]*{message}', html), html
    assert f'id="f-{field}"' in html and 'aria-invalid="true"' in html
    assert db.session.scalar(select(User.id).where(User.email == email)) is None


def test_the_honeypot_refuses_bots(app):
    client = browser(app)
    answer = post(
        client,
        "/account/signup",
        {"email": "bot@example.com", "password": PASSWORD, "website": "http://spam"},
    )
    assert answer.status_code == 403
    assert db.session.scalar(select(User.id).where(User.email == "bot@example.com")) is None


def test_a_tampered_or_expired_verification_link_is_refused(app, mailbox, monkeypatch):
    client = browser(app)
    mail = sign_up(client, mailbox, "late@example.com")
    (link,) = [link for link in mail.links if "/account/verify/" in link]
    tampered = client.get(path_of(link)[:-2] + "xx")
    assert tampered.status_code == 400 and "not valid" in tampered.get_data(as_text=True)
    later = int(time.time()) + 4 * 86400
    monkeypatch.setattr(TimestampSigner, "get_timestamp", lambda self: later)
    expired = client.get(path_of(link))
    assert expired.status_code == 400 and "has expired" in expired.get_data(as_text=True)
    user = db.session.scalar(select(User).where(User.email == "late@example.com"))
    assert user.email_verified_at is None


# --------------------------------------------------------------------------- sign-in


def test_a_wrong_password_and_an_unknown_email_get_the_same_answer(app, sign_in):
    person = sign_in().user
    client = browser(app)
    wrong = log_in(client, person.email, "not the password")
    unknown = log_in(client, "nobody@example.com", "not the password")
    assert wrong.status_code == unknown.status_code == 401
    assert _without_tokens(wrong, person.email) == _without_tokens(unknown, "nobody@example.com")


def _without_tokens(response, email: str) -> str:
    """The page with the email written as E and its CSRF tokens as T: a token is signed with
    the second it was made in, so two answers a second apart differ there alone."""
    page = response.get_data(as_text=True).replace(email, "E")
    return re.sub(r'(name="csrf_token" value=")[^"]+', r"\1T", page)


def test_sign_in_attempts_are_limited_per_email_whether_or_not_it_exists(app, sign_in):
    person = sign_in().user
    for email in (person.email, "nobody-limited@example.com"):
        answers = [
            log_in(browser(app, f"198.51.100.{n}"), email, "wrong password").status_code
            for n in range(30, 41)
        ]
        assert answers == [401] * 10 + [429], email
    # Even the right password waits now.
    blocked = log_in(browser(app, "198.51.100.50"), person.email)
    assert blocked.status_code == 429 and int(blocked.headers["Retry-After"]) > 0
    assert "Too many attempts" in blocked.get_data(as_text=True)


def test_sign_in_attempts_are_limited_per_address(app):
    client = browser(app, "203.0.113.9")
    answers = [
        log_in(client, f"someone{n}@example.com", "wrong password").status_code for n in range(31)
    ]
    assert answers == [401] * 30 + [429]


def test_next_only_leads_to_this_site(app, sign_in):
    person = sign_in().user
    for target, expected in [
        ("/account/api-keys/", "/account/api-keys/"),
        ("https://evil.example/", "/account/"),
        ("//evil.example/x", "/account/"),
        ("/\\evil.example", "/account/"),
    ]:
        client = browser(app)
        answer = log_in(client, person.email, next=target)
        assert answer.status_code == 302 and answer.location == expected, target


def test_a_page_of_the_account_asks_to_sign_in_first(app):
    answer = browser(app).get("/account/settings")
    assert answer.status_code == 302
    assert answer.location == "/account/login?next=/account/settings"


def test_sign_out(app, sign_in, client):
    sign_in()
    client.environ_base["HTTP_REFERER"] = "https://svc.test/account/"
    answer = post(client, "/account/logout", {}, page="/account/settings")
    assert answer.status_code == 302
    assert client.get("/account/settings").status_code == 302


def test_a_session_cookie_saved_before_sign_out_is_signed_out_after_it(app, sign_in):
    person = sign_in().user
    client = browser(app)
    assert log_in(client, person.email).status_code == 302
    saved = client.get_cookie("svc_session", domain="svc.test").value
    # The same user signed in on a phone stays signed in throughout.
    phone = browser(app, "203.0.113.9")
    assert log_in(phone, person.email).status_code == 302
    assert post(client, "/account/logout", {}, page="/account/settings").status_code == 302
    assert signed_in_as(client) is None
    # An attacker who copied the cookie before the sign-out replays it.
    replay = browser(app)
    replay.set_cookie("svc_session", saved, domain="svc.test")
    assert signed_in_as(replay) is None
    assert signed_in_as(phone) == person.email


def test_a_remember_cookie_saved_before_sign_out_is_signed_out_after_it(app, sign_in):
    person = sign_in().user
    client = browser(app)
    assert log_in(client, person.email, remember="1").status_code == 302
    remembered = client.get_cookie("svc_remember", domain="svc.test").value
    assert post(client, "/account/logout", {}, page="/account/settings").status_code == 302
    replay = browser(app)
    replay.set_cookie("svc_remember", remembered, domain="svc.test")
    assert signed_in_as(replay) is None


def test_a_session_ends_after_its_maximum_age(app, sign_in, client):
    sign_in()
    assert client.get("/account/settings").status_code == 200
    db.session.execute(
        sa.update(UserSession).values(
            created_at=clock.now() - timedelta(days=users.SESSION_MAX_DAYS, minutes=1)
        )
    )
    db.session.commit()
    forget_request_state()
    assert client.get("/account/settings").status_code == 302


def test_sign_up_does_the_same_work_whether_or_not_the_email_has_an_account(
    app, mailbox, sign_in, monkeypatch
):
    """The password is hashed once on both paths (scrypt, the slow part: without it an
    existing email answered in 6-13 ms and a new one in 113-164 ms), and one mail is sent."""
    taken = sign_in().user.email
    hashed = []
    real = users.generate_password_hash

    def counted(password, *args, **kwargs):
        hashed.append(password)
        return real(password, *args, **kwargs)

    monkeypatch.setattr(users, "generate_password_hash", counted)
    monkeypatch.setattr("models.account.generate_password_hash", counted)
    client = browser(app)
    for email in (taken, "fresh@example.com"):
        hashed.clear()
        answer = post(client, "/account/signup", {"email": email, "password": PASSWORD})
        assert answer.status_code == 200
        assert hashed == [PASSWORD], email
        assert mailbox.wait_for(email)  # one mail either way


def test_a_suspended_account_cannot_sign_in(app, sign_in):
    signed = sign_in()
    signed.account.suspended_at = clock.now()
    db.session.commit()
    answer = log_in(browser(app), signed.user.email)
    assert answer.status_code == 401 and "suspended" in answer.get_data(as_text=True)


def test_the_session_ends_when_the_browser_changes(app, sign_in, client):
    """Strong session protection: a stolen session cookie used from another browser."""
    sign_in()
    assert client.get("/account/settings").status_code == 200
    client.environ_base["HTTP_USER_AGENT"] = "Another browser"
    forget_request_state()
    assert client.get("/account/settings").status_code == 302


# --------------------------------------------------------------------------- passwords


def test_reset_by_mail(app, mailbox, sign_in):
    person = sign_in().user
    elsewhere = browser(app, "198.51.100.77")
    assert log_in(elsewhere, person.email).status_code == 302
    client = browser(app)
    asked = post(client, "/account/reset", {"email": person.email})
    unknown = post(client, "/account/reset", {"email": "nobody@example.com"})
    assert asked.status_code == unknown.status_code == 200
    assert mailbox.to("nobody@example.com") == []
    (link,) = [
        link for link in mailbox.wait_for(person.email, "Reset").links if "/account/reset/" in link
    ]
    form = client.get(path_of(link))
    assert form.status_code == 200 and person.email in form.get_data(as_text=True)
    short = post(client, path_of(link), {"password": "short"})
    assert short.status_code == 422
    done = post(client, path_of(link), {"password": NEW_PASSWORD})
    assert done.status_code == 302
    # The link worked once; the old password is gone; the other session has ended.
    assert client.get(path_of(link)).status_code == 400
    assert log_in(browser(app), person.email).status_code == 401
    assert signed_in_as(elsewhere) is None
    assert log_in(browser(app), person.email, NEW_PASSWORD).status_code == 302


def test_changing_the_password_ends_the_other_sessions_only(app, sign_in, client):
    signed = sign_in()
    elsewhere = browser(app, "198.51.100.78")
    assert log_in(elsewhere, signed.user.email).status_code == 302
    client.environ_base["HTTP_REFERER"] = "https://svc.test/account/settings"
    wrong = post(
        client,
        "/account/settings",
        {"current_password": "not it", "new_password": NEW_PASSWORD},
    )
    assert wrong.status_code == 422 and 'id="f-current_password-error"' in wrong.get_data(
        as_text=True
    )
    answer = post(
        client,
        "/account/settings",
        {"current_password": PASSWORD, "new_password": NEW_PASSWORD},
    )
    assert answer.status_code == 302
    assert signed_in_as(client) == signed.user.email
    assert signed_in_as(elsewhere) is None


def test_signing_out_the_other_sessions(app, sign_in, client):
    signed = sign_in()
    elsewhere = browser(app, "198.51.100.79")
    assert log_in(elsewhere, signed.user.email).status_code == 302
    client.environ_base["HTTP_REFERER"] = "https://svc.test/account/settings"
    answer = post(client, "/account/settings", {"action": "sign-out-others"})
    assert answer.status_code == 302
    assert signed_in_as(client) == signed.user.email
    assert signed_in_as(elsewhere) is None


def test_reauth_asks_for_the_password_again(app, sign_in, client):
    sign_in(fresh=False)
    client.environ_base["HTTP_REFERER"] = "https://svc.test/account/reauth"
    wrong = post(client, "/account/reauth", {"password": "not it", "next": "/account/api-keys/"})
    assert wrong.status_code == 401
    right = post(client, "/account/reauth", {"password": PASSWORD, "next": "/account/api-keys/"})
    assert right.status_code == 302 and right.location == "/account/api-keys/"
    with client.session_transaction() as session:
        assert time.time() - session["login_at"] < 5


def test_a_form_without_its_csrf_token_is_refused(app):
    client = browser(app)
    answer = client.post("/account/login", data={"email": "a@example.com", "password": "x"})
    assert answer.status_code == 400
    assert "Reload the page" in answer.get_data(as_text=True)


# --------------------------------------------------------------------------- accounts


def test_switching_accounts(app, sign_in, client):
    signed = sign_in(plan="pro")
    other = accounts.create_account("team-owner@example.com", "business", verified=True)
    db.session.add(Membership(account_id=other.id, user_id=signed.user.id, role="member"))
    db.session.commit()
    page = client.get("/account/settings").get_data(as_text=True)
    assert "account-switcher" in page and other.name in page
    client.environ_base["HTTP_REFERER"] = "https://svc.test/account/settings"
    answer = post(
        client,
        "/account/switch",
        {"account_id": other.id, "next": "/account/settings"},
        page="/account/settings",
    )
    assert answer.status_code == 302
    forget_request_state()
    assert "Your role in team-owner" in client.get("/account/settings").get_data(as_text=True)
    elsewhere = accounts.create_account("stranger@example.com", "pro")
    db.session.commit()
    refused = post(
        client, "/account/switch", {"account_id": elsewhere.id}, page="/account/settings"
    )
    assert refused.status_code == 404


def test_operators_are_made_by_the_command(app, runner):
    made = runner.invoke(
        args=[
            "accounts",
            "create",
            "ops@example.com",
            "--plan",
            "free",
            "--admin",
            "--password",
            PASSWORD,
        ]
    )
    assert made.exit_code == 0, made.output
    user = db.session.scalar(select(User).where(User.email == "ops@example.com"))
    assert user.is_admin and user.email_verified_at is not None
    assert (
        runner.invoke(args=["accounts", "set-admin", "ops@example.com", "--revoke"]).exit_code == 0
    )
    db.session.refresh(user)
    assert not user.is_admin
    missing = runner.invoke(args=["accounts", "set-admin", "nobody@example.com"])
    assert missing.exit_code != 0 and "No user" in missing.output


# --------------------------------------------------------------------------- the header


def test_the_header_says_sign_in_or_account(app, sign_in, client):
    anonymous = browser(app)
    for path in ("/", "/tools/word-counter/"):
        assert '<a href="/account/login" >Sign in</a>' in anonymous.get(path).get_data(as_text=True)
    sign_in()
    for path in ("/", "/tools/word-counter/"):
        forget_request_state()
        html = client.get(path).get_data(as_text=True)
        assert '<a href="/account/" >Account</a>' in html and "Sign in</a>" not in html


def test_web_runs_of_a_signed_in_member_count_against_the_account(app, sign_in, client):
    client.environ_base.update(
        {"HTTP_USER_AGENT": BROWSER, "HTTP_REFERER": "https://svc.test/tools/word-counter/"}
    )
    signed = sign_in(plan="free")  # in this browser
    for _ in range(5):
        answer = post(
            client, "/tools/word-counter/", {"text": "one two"}, page="/tools/word-counter/"
        )
        assert answer.status_code == 200
    sixth = run_tool(client, "one two")
    html = sixth.get_data(as_text=True)
    assert sixth.status_code == 429
    assert "/account/signup" not in html and "/pricing?plan=pro" in html
    db.session.expire_all()
    runs = db.session.scalars(select(Run).where(Run.account_id == signed.account.id)).all()
    assert len(runs) == 5
    assert {(run.source, run.user_id) for run in runs} == {("web", signed.user.id)}


def test_pro_members_run_without_a_daily_cap(app, sign_in, client):
    client.environ_base.update(
        {"HTTP_USER_AGENT": BROWSER, "HTTP_REFERER": "https://svc.test/tools/word-counter/"}
    )
    sign_in(plan="pro")  # in this browser
    page = client.get("/tools/word-counter/").get_data(as_text=True)
    assert "Unlimited runs in the browser with your plan" in page
    for _ in range(7):
        answer = post(
            client, "/tools/word-counter/", {"text": "one two"}, page="/tools/word-counter/"
        )
        assert answer.status_code == 200


def test_the_anonymous_sixth_run_offers_sign_up(app):
    client = browser(app, "198.51.100.90")
    client.environ_base["HTTP_REFERER"] = "https://svc.test/tools/word-counter/"
    for _ in range(5):
        run_tool(client, "one")
    sixth = run_tool(client, "one")
    assert sixth.status_code == 429
    assert '<a href="/account/signup" role="button">Sign up free</a>' in sixth.get_data(
        as_text=True
    )


def test_a_returning_visitor_is_sent_no_new_cookies(app):
    """A visitor's session holds the CSRF token only: nothing to protect or rewrite."""
    client = browser(app)
    first = client.get("/tools/word-counter/")
    # The session (its CSRF token); the visitor cookie comes with the first run.
    assert [c.split("=")[0] for c in first.headers.getlist("Set-Cookie")] == ["svc_session"]
    forget_request_state()
    again = client.get("/tools/word-counter/")
    assert again.headers.getlist("Set-Cookie") == []
    ran = run_tool(client, "one two")
    assert [c.split("=")[0] for c in ran.headers.getlist("Set-Cookie")] == ["svc_visitor"]
    forget_request_state()
    assert client.get("/tools/word-counter/").headers.getlist("Set-Cookie") == []


def test_keep_me_signed_in_outlasts_the_browser_session(app, sign_in):
    person = sign_in().user
    client = browser(app)
    assert log_in(client, person.email, remember="1").status_code == 302
    remember = client.get_cookie("svc_remember", domain="svc.test")
    assert remember is not None and remember.http_only
    # The browser closes: its session cookie goes, the remember cookie stays.
    client.delete_cookie("svc_session", domain="svc.test")
    assert signed_in_as(client) == person.email
    # Not for one page only: the restored session is bound to this browser.
    assert signed_in_as(client) == person.email
    assert signed_in_as(client) == person.email
    # From another browser the session is refused, and the remember cookie with it.
    client.environ_base["HTTP_USER_AGENT"] = "Another browser"
    assert signed_in_as(client) is None


def test_sign_ups_per_address_follow_the_setting(app, mailbox):
    app.config["SIGNUP_ADDRESS_LIMIT"] = "2/hour"
    client = browser(app, "198.51.100.77")
    for n in range(2):
        sign_up(client, mailbox, f"event{n}@example.com")
    third = post(client, "/account/signup", {"email": "event2@example.com", "password": PASSWORD})
    assert third.status_code == 429
    assert "Too many attempts" in third.get_data(as_text=True)
    # Another address still signs up.
    sign_up(browser(app, "198.51.100.78"), mailbox, "event3@example.com")
