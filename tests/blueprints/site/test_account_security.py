"""The account pages' security as a table, over every route under /account/ and /admin/
the app has (a new route joins the table by existing): each state-changing one refuses a
post without its CSRF token (400), each page of an account sends a visitor who is not
signed in to the sign-in page (the operators' pages answer 404 to anyone but an operator),
another account's ids answer 404 as if they did not exist,
and the actions that reveal or roll keys and secrets ask for the password again after 10
minutes."""

from __future__ import annotations

import re
import secrets
from datetime import timedelta

import pytest
from flask import g

from extensions import db
from models import Embed, Invitation, Membership, Run, User, WebhookDelivery
from services import accounts, clock, keys
from tests.blueprints.site.conftest import PASSWORD
from tests.blueprints.site.test_account_auth import forget_request_state

# Open to everyone: signing up and in, confirming, resetting, and following a mailed link.
PUBLIC = {
    "site.login",
    "site.signup",
    "site.verify_email",
    "site.resend_verification",
    "site.reset_request",
    "site.reset_password",
    "site.accept_invitation",
    "site.invitation",
}


def account_rules(app) -> list:
    return sorted(
        (
            rule
            for rule in app.url_map.iter_rules()
            if rule.endpoint.startswith("site.") and rule.rule.startswith(("/account", "/admin"))
        ),
        key=lambda rule: rule.rule,
    )


def csrf_token(client) -> str:
    forget_request_state()
    page = client.get("/tools/word-counter/").get_data(as_text=True)
    return re.search(r'name="csrf_token" value="([^"]+)"', page).group(1)


def with_referer(client):
    client.environ_base["HTTP_REFERER"] = "https://svc.test/account/"
    return client


@pytest.fixture
def stranger(app):
    """Another account, with one of everything a route may name by id."""
    account = accounts.create_account("stranger@example.com", "business", verified=True)
    owner = account.memberships[0].user
    key, _raw = keys.create_key(account, "the stranger's key")
    other = User(email="stranger-member@example.com", session_token=secrets.token_hex(16))
    db.session.add(other)
    db.session.flush()
    member = Membership(account_id=account.id, user_id=other.id, role="member")
    run = Run(
        account_id=account.id,
        api_key_id=key.id,
        tool_slug="word-counter",
        status="succeeded",
        input={"text": "x"},
        output={"words": 1},
    )
    db.session.add_all([member, run])
    db.session.flush()
    delivery = WebhookDelivery(
        api_key_id=key.id,
        event="tool.completed",
        event_id=f"evt_{secrets.token_hex(8)}",
        payload={},
        status="succeeded",
        max_attempts=3,
    )
    invitation = Invitation(
        account_id=account.id,
        email="invited@example.com",
        role="member",
        token_hash=secrets.token_hex(32),
        invited_by_user_id=owner.id,
        expires_at=clock.now() + timedelta(days=7),
    )
    embed = Embed(
        account_id=account.id,
        api_key_id=key.id,
        name="the stranger's widget",
        tool_slug="word-counter",
        public_id=secrets.token_urlsafe(32),
        allowed_origins=["https://stranger.example.com"],
    )
    db.session.add_all([delivery, invitation, embed])
    db.session.commit()
    return {
        "embed_id": embed.id,
        "key_id": key.id,
        "delivery_id": delivery.id,
        "run_id": run.id,
        "workflow_run_id": run.id,
        "invitation_id": invitation.id,
        "member_id": member.id,
        "membership_id": member.id,
        "user_id": other.id,
        "account_id": account.id,
    }


def fill(rule, values: dict) -> str | None:
    """The rule's path with ``values`` for its arguments; None when one is not known."""
    if not set(rule.arguments) <= set(values):
        return None
    path = rule.rule
    for name in rule.arguments:
        path = re.sub(rf"<(?:[^:<>]+:)?{name}>", str(values[name]), path)
    return path


def test_every_state_changing_route_refuses_a_post_without_its_csrf_token(
    app, sign_in, client, stranger
):
    signed = sign_in(plan="agency")
    signed.user.is_admin = True  # an operator: /admin/ is a 404 to everyone else
    db.session.commit()
    with_referer(client)
    wrong = []
    for rule in account_rules(app):
        if "POST" not in rule.methods:
            continue
        path = fill(rule, {**stranger, "token": "x"})
        assert path is not None, f"{rule.rule}: add its arguments to the stranger fixture"
        forget_request_state()
        answer = client.post(path, data={})
        if answer.status_code != 400 or "Reload the page" not in answer.get_data(as_text=True):
            wrong.append(f"POST {rule.rule}: {answer.status_code}")
    assert wrong == []


def test_every_account_page_sends_a_visitor_who_is_not_signed_in_to_sign_in(app, stranger):
    client = with_referer(app.test_client())
    token = csrf_token(client)
    wrong = []
    for rule in account_rules(app):
        # Signing out when not signed in just leads to the sign-in page (and ends the session
        # this loop posts with).
        if rule.endpoint in PUBLIC or rule.endpoint == "site.logout":
            continue
        path = fill(rule, stranger)
        for method in sorted(rule.methods & {"GET", "POST"}):
            forget_request_state()
            answer = client.open(path, method=method, data={"csrf_token": token})
            if rule.rule.startswith("/admin"):
                # The operators' pages do not tell anyone else that they exist.
                expected = answer.status_code == 404
            else:
                expected = answer.status_code == 302 and answer.location.startswith(
                    "/account/login?next="
                )
            if not expected:
                wrong.append(f"{method} {rule.rule}: {answer.status_code} {answer.location}")
    assert wrong == []


def test_another_accounts_ids_answer_404(app, sign_in, client, stranger):
    signed = sign_in(plan="agency")
    signed.user.is_admin = False
    db.session.commit()
    with_referer(client)
    token = csrf_token(client)
    wrong = []
    for rule in account_rules(app):
        names = set(rule.arguments) - {"token"}
        if not names or rule.endpoint in PUBLIC or rule.rule.startswith("/admin"):
            continue
        path = fill(rule, stranger)
        for method in sorted(rule.methods & {"GET", "POST"}):
            forget_request_state()
            answer = client.open(path, method=method, data={"csrf_token": token})
            if answer.status_code != 404:
                wrong.append(f"{method} {rule.rule}: {answer.status_code}")
    assert wrong == []


def test_revealing_or_rolling_asks_for_the_password_again_after_10_minutes(app, sign_in, client):
    signed = sign_in(plan="agency", fresh=False)
    key, _raw = keys.create_key(signed.account, "mine", created_by=signed.user)
    db.session.commit()
    with_referer(client)
    token = csrf_token(client)
    fresh_only = [
        rule
        for rule in account_rules(app)
        if getattr(app.view_functions[rule.endpoint], "needs_fresh_login", False)
    ]
    # What the issue names at least: revealing and rolling keys and webhook secrets.
    assert {"site.roll_api_key", "site.reveal_webhook_secret", "site.rotate_webhook_secret"} <= {
        rule.endpoint for rule in fresh_only
    }
    wrong = []
    for rule in fresh_only:
        path = fill(rule, {"key_id": key.id})
        for method in sorted(rule.methods & {"GET", "POST"}):
            forget_request_state()
            answer = client.open(path, method=method, data={"csrf_token": token})
            if not (
                answer.status_code == 302 and answer.location.startswith("/account/reauth?next=")
            ):
                wrong.append(f"{method} {rule.rule}: {answer.status_code} {answer.location}")
    assert wrong == []
    # After the password, the same action goes through.
    forget_request_state()
    client.post("/account/reauth", data={"csrf_token": token, "password": PASSWORD})
    forget_request_state()
    g.pop("membership", None)
    answer = client.post(f"/account/api-keys/{key.id}/webhook/reveal", data={"csrf_token": token})
    assert answer.status_code == 200
