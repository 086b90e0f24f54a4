"""The API keys and webhooks console, /account/api-keys/: creating (the raw key in exactly one
answer), revoking, rolling with an overlap, the key limit, roles, the webhook (SSRF refusals
beside the field, the secret revealed and rotated, a test event, the deliveries log,
redelivery), and the access rules as tables: no CSRF token, not signed in, another
account's ids, a stale login."""

import re
from datetime import timedelta

import pytest
from flask import g

from extensions import db
from jobs import webhooks as jobs
from models import ApiKey, WebhookDelivery
from services import accounts, clock, keys, webhooks
from tests.fakes.webhook_receiver import Reply
from tests.helpers import auth

RAW_KEY = re.compile(r'id="shown-secret-value">(svc_[A-Za-z0-9]{40})<')
SECRET = re.compile(r'id="shown-secret-value">(whsec_[A-Za-z0-9+/=]+)<')
BROWSER = "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 Chrome/124.0 Safari/537.36"


@pytest.fixture
def client(app):
    """A browser-like client: its posts come from the site's own pages (Referer)."""
    client = app.test_client()
    client.environ_base.update(
        {"HTTP_USER_AGENT": BROWSER, "HTTP_REFERER": "https://svc.test/account/api-keys/"}
    )
    return client


@pytest.fixture
def private_ok(app):
    app.config["FETCH_ALLOW_PRIVATE"] = True


@pytest.fixture
def inline_redelivery(monkeypatch):
    """A redelivery's attempt is made at once, in the test, instead of on the queue."""
    monkeypatch.setattr("blueprints.site.account.keys.schedule", jobs.deliver)
    monkeypatch.setattr(jobs, "schedule", lambda delivery_id, delay=0: None)


def fresh_request() -> None:
    """What Flask-WTF and flask-login keep in ``g`` for one request is dropped (the test's
    app context outlives its requests)."""
    for name in ("csrf_token", "_login_user", "membership", "memberships", "account"):
        g.pop(name, None)


class Console:
    """The keys pages through one test client, keeping every answer's text."""

    def __init__(self, client):
        self.client = client
        self.bodies: list[str] = []
        self.sent_form_ids: list[str] = []

    def get(self, path: str):
        fresh_request()
        response = self.client.get(path)
        self.bodies.append(response.get_data(as_text=True))
        return response

    def token(self) -> str:
        page = self.get("/account/api-keys/").get_data(as_text=True)
        return re.search(r'name="csrf_token" value="([^"]+)"', page).group(1)

    def form_id(self, path: str) -> str:
        page = self.get(path).get_data(as_text=True)
        return re.search(r'name="form_id" value="([^"]+)"', page).group(1)

    def post(self, path: str, data: dict | None = None, *, csrf: bool = True):
        form = dict(data or {})
        if csrf:
            form["csrf_token"] = self.token()
        fresh_request()
        response = self.client.post(path, data=form)
        self.bodies.append(response.get_data(as_text=True))
        return response

    def create(self, name: str = "production", mode: str = "live", **more):
        form = {"name": name, "mode": mode, "form_id": self.form_id("/account/api-keys/")}
        self.sent_form_ids.append(form["form_id"])
        return self.post("/account/api-keys/", {**form, **more})

    def create_key(self, name: str = "production", mode: str = "live") -> tuple[ApiKey, str]:
        response = self.create(name, mode)
        assert response.status_code == 200, response.get_data(as_text=True)
        raw = RAW_KEY.search(response.get_data(as_text=True)).group(1)
        return db.session.scalar(
            db.select(ApiKey).where(ApiKey.key_hash == keys.hash_key(raw))
        ), raw

    def appearances(self, value: str) -> int:
        return sum(value in body for body in self.bodies)


@pytest.fixture
def console(client):
    return Console(client)


def _text(response) -> str:
    return response.get_data(as_text=True)


def _other_accounts_key() -> ApiKey:
    other = accounts.create_account(f"other{clock.now().timestamp()}@example.com", "pro")
    key, _raw = keys.create_key(other, "theirs")
    db.session.commit()
    return key


def _deliveries(key: ApiKey) -> list[WebhookDelivery]:
    db.session.expire_all()
    return list(
        db.session.scalars(db.select(WebhookDelivery).where(WebhookDelivery.api_key_id == key.id))
    )


# --- creating -----------------------------------------------------------------------------


def test_a_new_key_is_shown_once_and_never_again(app, client, console, sign_in):
    signed = sign_in()
    response = console.create("production")
    assert response.status_code == 200
    assert response.headers["Cache-Control"] == "no-store"
    page = _text(response)
    raw = RAW_KEY.search(page).group(1)
    assert "cannot be shown again" in page and 'data-copy="shown-secret-value"' in page
    key = db.session.scalar(db.select(ApiKey).where(ApiKey.key_hash == keys.hash_key(raw)))
    assert key.name == "production" and not key.sandbox
    assert key.created_by_user_id == signed.user.id
    # The list, the key's page, a reload of the form (sent again) and the session: no key.
    listed = console.get("/account/api-keys/")
    assert key.hint in _text(listed) and signed.user.email in _text(listed)
    console.get(f"/account/api-keys/{key.id}/")
    form_id = console.sent_form_ids[-1]
    resent = console.post(
        "/account/api-keys/", {"name": "production", "mode": "live", "form_id": form_id}
    )
    assert resent.status_code == 303 and resent.location.endswith("/account/api-keys/")
    after = console.get("/account/api-keys/")
    assert "already sent" in _text(after)
    with client.session_transaction() as session:
        assert raw not in repr(dict(session))
    assert console.appearances(raw) == 1
    assert client.get("/v1/public/whoami", headers=auth(raw)).status_code == 200


def test_a_sandbox_key_is_listed_as_sandbox(console, sign_in):
    sign_in()
    key, _raw = console.create_key("tests", "sandbox")
    assert key.sandbox
    page = _text(console.get("/account/api-keys/"))
    assert re.search(r'class="badge mode-sandbox">Sandbox<', page)


@pytest.mark.parametrize(
    ("name", "mode", "field", "message"),
    [
        ("", "live", "name", "Give the key a name"),
        ("x" * 101, "live", "name", "at most 100 characters"),
        ("ok", "production", "mode", "Choose live or sandbox."),
    ],
)
def test_a_bad_form_is_refused_beside_its_field_and_saves_nothing(
    console, sign_in, name, mode, field, message
):
    signed = sign_in()
    response = console.create(name, mode)
    assert response.status_code == 422
    page = _text(response)
    assert re.search(rf'id="f-{field}-error">[^<]*{re.escape(message)}', page)
    assert keys.count_working(signed.account.id) == 0
    assert not RAW_KEY.search(page)


# --- the key limit ------------------------------------------------------------------------


def test_at_the_limit_the_page_explains_it_and_creating_is_refused(console, sign_in):
    signed = sign_in("pro")
    for n in range(5):
        keys.create_key(signed.account, f"key {n}")
    db.session.commit()
    page = _text(console.get("/account/api-keys/"))
    assert "5 working keys, the most its plan allows" in page
    assert 'action="/account/api-keys/"' not in page  # no create form
    refused = console.post("/account/api-keys/", {"name": "sixth", "mode": "live"})
    assert refused.status_code == 409
    assert "Revoke one first" in _text(refused) and not RAW_KEY.search(_text(refused))
    assert keys.count_working(signed.account.id) == 5


@pytest.mark.parametrize("plan", ["free", "starter"])
def test_free_and_starter_get_one_whoami_only_key(client, console, sign_in, plan):
    sign_in(plan)
    page = _text(console.get("/account/api-keys/"))
    assert "one key, for <code>whoami</code> only" in page and "/pricing?plan=pro" in page
    key, raw = console.create_key("check")
    assert client.get("/v1/public/whoami", headers=auth(raw)).status_code == 200
    page = _text(console.get("/account/api-keys/"))
    assert "allows one key, for whoami only" in page and 'href="/pricing?plan=pro"' in page
    refused = console.post("/account/api-keys/", {"name": "second", "mode": "live"})
    assert refused.status_code == 409
    # Webhooks need API runs: the key page says so and refuses to save one.
    key_page = _text(console.get(f"/account/api-keys/{key.id}/"))
    assert "does not include" in key_page and 'name="url"' not in key_page
    saved = console.post(f"/account/api-keys/{key.id}/webhook", {"url": "https://example.com"})
    assert saved.status_code == 403
    db.session.refresh(key)
    assert key.webhook_url is None


# --- revoking -----------------------------------------------------------------------------


def test_revoke_asks_to_confirm_then_the_key_stops(app, client, console, sign_in):
    sign_in()
    key, raw = console.create_key()
    confirm = console.get(f"/account/api-keys/{key.id}/revoke")
    assert confirm.status_code == 200
    assert f'action="/account/api-keys/{key.id}/revoke"' in _text(confirm)
    db.session.refresh(key)
    assert key.revoked_at is None  # asking revokes nothing
    done = console.post(f"/account/api-keys/{key.id}/revoke")
    assert done.status_code == 303 and done.location.endswith("/account/api-keys/")
    db.session.refresh(key)
    assert key.revoked_at is not None
    page = _text(console.get("/account/api-keys/"))
    assert "Revoked production" in page and f"{key.id}/roll" not in page
    assert client.get("/v1/public/whoami", headers=auth(raw)).status_code == 401
    # Revoked: its pages and actions are gone.
    assert console.get(f"/account/api-keys/{key.id}/").status_code == 404
    assert console.post(f"/account/api-keys/{key.id}/revoke").status_code == 404


# --- rolling ------------------------------------------------------------------------------


def test_roll_with_an_hour_of_overlap_shows_the_new_key_once(client, console, sign_in):
    sign_in()
    key, raw = console.create_key()
    form = console.get(f"/account/api-keys/{key.id}/roll")
    assert form.status_code == 200
    assert [value for value in re.findall(r'<option value="(\w+)"', _text(form))] == [
        "now",
        "1h",
        "24h",
        "7d",
    ]
    form_id = re.search(r'name="form_id" value="([^"]+)"', _text(form)).group(1)
    rolled = console.post(
        f"/account/api-keys/{key.id}/roll", {"keep_old_for": "1h", "form_id": form_id}
    )
    assert rolled.status_code == 200 and rolled.headers["Cache-Control"] == "no-store"
    page = _text(rolled)
    new_raw = RAW_KEY.search(page).group(1)
    assert new_raw != raw and "keeps working until" in page
    db.session.refresh(key)
    assert key.revoked_at is None
    expires_at = clock.as_utc(key.expires_at)
    assert abs(expires_at - clock.now() - timedelta(hours=1)) < timedelta(seconds=10)
    # The old key is listed with its expiry; both keys work.
    listed = _text(console.get("/account/api-keys/"))
    assert f"Stops {expires_at.strftime('%Y-%m-%d %H:%M:%S UTC')}" in listed
    assert client.get("/v1/public/whoami", headers=auth(raw)).status_code == 200
    assert client.get("/v1/public/whoami", headers=auth(new_raw)).status_code == 200
    # The same form sent again rolls nothing and shows nothing.
    resent = console.post(
        f"/account/api-keys/{key.id}/roll", {"keep_old_for": "1h", "form_id": form_id}
    )
    assert resent.status_code == 303 and resent.location.endswith("/account/api-keys/")
    assert console.appearances(new_raw) == 1
    # A rolled key is not rolled again (its replacement is): as if there were no such page.
    assert console.get(f"/account/api-keys/{key.id}/roll").status_code == 404
    assert keys.count_working(key.account_id) == 2


def test_roll_now_revokes_the_old_key(client, console, sign_in):
    sign_in()
    key, raw = console.create_key()
    rolled = console.post(f"/account/api-keys/{key.id}/roll", {"keep_old_for": "now"})
    assert rolled.status_code == 200 and "was revoked" in _text(rolled)
    new_raw = RAW_KEY.search(_text(rolled)).group(1)
    assert client.get("/v1/public/whoami", headers=auth(raw)).status_code == 401
    assert client.get("/v1/public/whoami", headers=auth(new_raw)).status_code == 200


@pytest.mark.parametrize(("choice", "status"), [("2h", 422), ("", 422)])
def test_roll_with_an_unknown_overlap_is_refused(console, sign_in, choice, status):
    sign_in()
    key, _raw = console.create_key()
    refused = console.post(f"/account/api-keys/{key.id}/roll", {"keep_old_for": choice})
    assert refused.status_code == status
    assert "Choose how long the old key keeps working." in _text(refused)
    db.session.refresh(key)
    assert key.expires_at is None and key.revoked_at is None


def test_at_the_limit_a_roll_cannot_keep_the_old_key(console, sign_in):
    signed = sign_in()
    key, _raw = console.create_key()
    for n in range(4):
        keys.create_key(signed.account, f"key {n}")
    db.session.commit()
    refused = console.post(f"/account/api-keys/{key.id}/roll", {"keep_old_for": "24h"})
    assert refused.status_code == 409
    assert "Stop it now" in _text(refused) and not RAW_KEY.search(_text(refused))
    db.session.refresh(key)
    assert key.expires_at is None and keys.count_working(signed.account.id) == 5


# --- roles --------------------------------------------------------------------------------


def test_a_member_manages_their_own_keys_and_only_sees_the_others(app, console, sign_in):
    owner = sign_in()
    theirs, _ = keys.create_key(owner.account, "owner's key", created_by=owner.user)
    db.session.commit()
    sign_in(role="member", account=owner.account)
    mine, _raw = console.create_key("member's key")
    page = _text(console.get("/account/api-keys/"))
    assert "owner&#39;s key" in page and theirs.hint in page
    assert f"{mine.id}/revoke" in page and f"{theirs.id}/revoke" not in page
    their_page = console.get(f"/account/api-keys/{theirs.id}/")
    assert their_page.status_code == 200
    assert "Reveal secret" not in _text(their_page) and "Roll key" not in _text(their_page)
    for path in ("revoke", "roll", "webhook", "webhook/reveal", "webhook/rotate", "webhook/test"):
        assert console.post(f"/account/api-keys/{theirs.id}/{path}").status_code == 403, path
    assert console.get(f"/account/api-keys/{theirs.id}/revoke").status_code == 403
    db.session.refresh(theirs)
    assert theirs.revoked_at is None
    assert console.post(f"/account/api-keys/{mine.id}/revoke").status_code == 303


@pytest.mark.parametrize("role", ["admin", "owner"])
def test_admins_and_owners_manage_every_key(console, sign_in, role):
    owner = sign_in()
    member = sign_in(role="member", account=owner.account)
    members_key, _ = keys.create_key(owner.account, "member's", created_by=member.user)
    db.session.commit()
    if role == "admin":
        sign_in(role="admin", account=owner.account)
    else:
        sign_in(role="owner", email=None, account=owner.account)
    assert f"{members_key.id}/revoke" in _text(console.get("/account/api-keys/"))
    assert console.post(f"/account/api-keys/{members_key.id}/revoke").status_code == 303
    db.session.refresh(members_key)
    assert members_key.revoked_at is not None


# --- the webhook --------------------------------------------------------------------------


def test_a_url_the_ssrf_guard_refuses_is_explained_beside_the_field(console, sign_in):
    sign_in()
    key, _raw = console.create_key()
    refused = console.post(
        f"/account/api-keys/{key.id}/webhook", {"url": "http://127.0.0.1:8080/hooks"}
    )
    assert refused.status_code == 422
    page = _text(refused)
    error = re.search(r'id="f-url-error">([^<]+)<', page).group(1)
    assert "can receive webhooks" in error or "public" in error
    assert 'aria-invalid="true"' in page and 'value="http://127.0.0.1:8080/hooks"' in page
    db.session.refresh(key)
    assert key.webhook_url is None
    empty = console.post(f"/account/api-keys/{key.id}/webhook", {"url": "  "})
    assert empty.status_code == 422 and "Enter the URL" in _text(empty)
    port = console.post(f"/account/api-keys/{key.id}/webhook", {"url": "https://93.184.215.14:22/"})
    assert port.status_code == 422 and "Port 22 is not accepted" in _text(port)


def test_the_webhook_from_url_to_test_event_and_redelivery(
    console, sign_in, private_ok, receiver, inline_redelivery
):
    sign_in()
    key, _raw = console.create_key()
    saved = console.post(f"/account/api-keys/{key.id}/webhook", {"url": receiver.url})
    assert saved.status_code == 200 and saved.headers["Cache-Control"] == "no-store"
    secret = SECRET.search(_text(saved)).group(1)
    db.session.refresh(key)
    assert key.webhook_url == receiver.url and key.webhook_secret == secret
    page = _text(console.get(f"/account/api-keys/{key.id}/"))
    assert secret not in page and secret[:10] in page
    # Revealed (the login is fresh) in that answer only.
    revealed = console.post(f"/account/api-keys/{key.id}/webhook/reveal")
    assert revealed.status_code == 200 and SECRET.search(_text(revealed)).group(1) == secret
    assert revealed.headers["Cache-Control"] == "no-store"
    # A test event: its result flashed, its attempt in the log.
    receiver.answer(Reply(503))
    tested = console.post(f"/account/api-keys/{key.id}/webhook/test")
    assert tested.status_code == 303 and tested.location.endswith("#deliveries")
    page = _text(console.get(f"/account/api-keys/{key.id}/"))
    assert "The test event was not delivered: it answered 503" in page
    (delivery,) = _deliveries(key)
    assert delivery.event == "webhook.test" and delivery.status == "failed"
    assert re.search(r'class="state-failed">503<', page)
    assert re.search(r"\d+ ms<", page) and delivery.event_id in page
    # Redelivered: one more attempt, same event id, now succeeding.
    again = console.post(f"/account/api-keys/{key.id}/deliveries/{delivery.id}/redeliver")
    assert again.status_code == 303
    (delivery,) = _deliveries(key)
    assert delivery.status == "succeeded" and delivery.attempt_count == 2
    first, second = receiver.requests
    assert first.headers["webhook-id"] == second.headers["webhook-id"] == delivery.event_id
    page = _text(console.get(f"/account/api-keys/{key.id}/"))
    assert re.search(r'class="state-succeeded">204<', page)
    tested = console.post(f"/account/api-keys/{key.id}/webhook/test")
    page = _text(console.get(f"/account/api-keys/{key.id}/"))
    assert re.search(r"Test event delivered: your receiver answered 204 in \d+ ms", page)
    assert page.count('class="delivery"') == 2
    # The list's webhook column: active, with the last delivery's result.
    assert "Active, last delivery succeeded (204)" in _text(console.get("/account/api-keys/"))
    assert console.appearances(secret) == 2  # created, revealed


def test_rotating_shows_the_new_secret_and_keeps_the_old_signing(
    console, sign_in, private_ok, receiver
):
    sign_in()
    key, _raw = console.create_key()
    old = SECRET.search(
        _text(console.post(f"/account/api-keys/{key.id}/webhook", {"url": receiver.url}))
    ).group(1)
    form_id = console.form_id(f"/account/api-keys/{key.id}/")
    rotated = console.post(f"/account/api-keys/{key.id}/webhook/rotate", {"form_id": form_id})
    assert rotated.status_code == 200
    new = SECRET.search(_text(rotated)).group(1)
    assert new != old and "every delivery carries two signatures" in _text(rotated)
    db.session.refresh(key)
    assert key.webhook_secret == new and webhooks.previous_secret(key) == old
    page = _text(console.get(f"/account/api-keys/{key.id}/"))
    assert "The previous secret also signs every delivery until" in page
    resent = console.post(f"/account/api-keys/{key.id}/webhook/rotate", {"form_id": form_id})
    assert resent.status_code == 303
    db.session.refresh(key)
    assert key.webhook_secret == new
    assert console.appearances(new) == 1


def test_changing_and_removing_the_url_keeps_then_drops_the_webhook(
    console, sign_in, private_ok, receiver
):
    sign_in()
    key, _raw = console.create_key()
    secret = SECRET.search(
        _text(console.post(f"/account/api-keys/{key.id}/webhook", {"url": receiver.url}))
    ).group(1)
    moved = console.post(f"/account/api-keys/{key.id}/webhook", {"url": receiver.url + "/v2"})
    assert moved.status_code == 303
    db.session.refresh(key)
    assert key.webhook_url == receiver.url + "/v2" and key.webhook_secret == secret
    removed = console.post(
        f"/account/api-keys/{key.id}/webhook", {"url": receiver.url, "action": "remove"}
    )
    assert removed.status_code == 303
    db.session.refresh(key)
    assert key.webhook_url is None
    assert "Webhook removed." in _text(console.get(f"/account/api-keys/{key.id}/"))
    assert console.post(f"/account/api-keys/{key.id}/webhook/test").status_code == 303
    assert "no webhook URL" in _text(console.get(f"/account/api-keys/{key.id}/"))


@pytest.mark.parametrize("action", ["webhook", "webhook/reveal", "webhook/rotate", "webhook/test"])
def test_a_webhook_forms_address_opened_again_leads_to_the_key_page(console, sign_in, action):
    sign_in()
    key, _raw = console.create_key()
    response = console.get(f"/account/api-keys/{key.id}/{action}")
    assert response.status_code == 303
    assert response.location.endswith(f"/account/api-keys/{key.id}/")
    db.session.refresh(key)
    assert key.webhook_previous_secret is None  # nothing rotated


def test_a_disabled_webhook_shows_its_reason(console, sign_in, private_ok, receiver):
    sign_in()
    key, _raw = console.create_key()
    console.post(f"/account/api-keys/{key.id}/webhook", {"url": receiver.url})
    receiver.answer(Reply(410))
    console.post(f"/account/api-keys/{key.id}/webhook/test")
    page = _text(console.get("/account/api-keys/"))
    assert "Disabled: The receiver answered 410 Gone" in page


@pytest.mark.parametrize(
    ("query", "message"),
    [("?status=lost", "one of pending, succeeded"), ("?cursor=nonsense", "not valid")],
)
def test_a_bad_deliveries_filter_is_a_clear_400(console, sign_in, query, message):
    sign_in()
    key, _raw = console.create_key()
    response = console.get(f"/account/api-keys/{key.id}/{query}")
    assert response.status_code == 400 and message in _text(response)


# --- access rules, as tables --------------------------------------------------------------

# Every state-changing route (``{key}`` and ``{delivery}`` filled in per test).
POSTS = [
    "/account/api-keys/",
    "/account/api-keys/{key}/revoke",
    "/account/api-keys/{key}/roll",
    "/account/api-keys/{key}/webhook",
    "/account/api-keys/{key}/webhook/reveal",
    "/account/api-keys/{key}/webhook/rotate",
    "/account/api-keys/{key}/webhook/test",
    "/account/api-keys/{key}/deliveries/{delivery}/redeliver",
]
GETS = [
    "/account/api-keys/",
    "/account/api-keys/{key}/",
    "/account/api-keys/{key}/revoke",
    "/account/api-keys/{key}/roll",
]
FRESH_ONLY = [
    ("GET", "/account/api-keys/{key}/roll"),
    ("POST", "/account/api-keys/{key}/roll"),
    ("POST", "/account/api-keys/{key}/webhook/reveal"),
    ("POST", "/account/api-keys/{key}/webhook/rotate"),
]


def _key_with_delivery(account) -> tuple[ApiKey, WebhookDelivery]:
    key, _raw = keys.create_key(account, "with a delivery")
    key.webhook_url = "https://hooks.example.com/x"
    delivery = WebhookDelivery(
        api_key_id=key.id,
        event="webhook.test",
        event_id="evt_table",
        payload={"event": "webhook.test"},
        status="failed",
        attempts=[],
        attempt_count=1,
        max_attempts=1,
    )
    db.session.add(delivery)
    db.session.commit()
    return key, delivery


@pytest.mark.parametrize("path", POSTS)
def test_a_post_without_its_csrf_token_is_400_and_changes_nothing(console, sign_in, path):
    signed = sign_in()
    key, delivery = _key_with_delivery(signed.account)
    response = console.post(
        path.format(key=key.id, delivery=delivery.id),
        {"name": "x", "mode": "live", "keep_old_for": "now", "url": "https://example.com/"},
        csrf=False,
    )
    assert response.status_code == 400
    assert "Reload the page" in _text(response)
    db.session.expire_all()
    assert keys.count_working(signed.account.id) == 1
    assert db.session.get(ApiKey, key.id).webhook_url == "https://hooks.example.com/x"


@pytest.mark.parametrize(
    ("method", "path"), [("GET", path) for path in GETS] + [("POST", path) for path in POSTS]
)
def test_not_signed_in_goes_to_the_login_page(app, console, method, path):
    account = accounts.create_account("someone@example.com", "pro")
    key, delivery = _key_with_delivery(account)
    url = path.format(key=key.id, delivery=delivery.id)
    if method == "GET":
        response = console.get(url)
    else:
        fresh_request()
        token = re.search(
            r'name="csrf_token" value="([^"]+)"',
            _text(console.client.get("/account/login")),
        ).group(1)
        fresh_request()
        response = console.client.post(url, data={"csrf_token": token})
    assert response.status_code == 302
    assert response.location.startswith("/account/login?next=")
    db.session.expire_all()
    assert keys.count_working(account.id) == 1


@pytest.mark.parametrize(
    ("method", "path"), [("GET", path) for path in GETS[1:]] + [("POST", p) for p in POSTS[1:]]
)
def test_another_accounts_key_or_delivery_is_404(console, sign_in, private_ok, method, path):
    signed = sign_in()
    theirs, their_delivery = _key_with_delivery(_other_accounts_key().account)
    mine, my_delivery = _key_with_delivery(signed.account)
    for key, delivery in ((theirs, their_delivery), (mine, their_delivery)):
        if "{delivery}" not in path and key is mine:
            continue
        url = path.format(key=key.id, delivery=delivery.id)
        response = console.get(url) if method == "GET" else console.post(url, {"url": "x"})
        assert response.status_code == 404, url
        assert response.mimetype == "text/html"
    db.session.expire_all()
    assert db.session.get(ApiKey, theirs.id).revoked_at is None


@pytest.mark.parametrize(("method", "path"), FRESH_ONLY)
def test_a_stale_login_is_asked_for_the_password_again(console, sign_in, method, path):
    signed = sign_in(fresh=False)
    key, _delivery = _key_with_delivery(signed.account)
    url = path.format(key=key.id)
    get = method == "GET"
    response = console.get(url) if get else console.post(url, {"keep_old_for": "now"})
    assert response.status_code == 302
    assert response.location.startswith("/account/reauth?next=")
    db.session.expire_all()
    key = db.session.get(ApiKey, key.id)
    assert key.revoked_at is None and key.expires_at is None
    assert keys.count_working(signed.account.id) == 1


# --- the key's MCP selection ----------------------------------------------------------------


def test_a_keys_mcp_tools_are_set_checked_and_cleared_on_its_page(app, client, console, sign_in):
    sign_in()
    key, raw = console.create_key()
    page = _text(console.get(f"/account/api-keys/{key.id}/"))
    assert 'id="mcp-title"' in page and "/v1/mcp</code>" in page
    assert "the default tools" in page
    path = f"/account/api-keys/{key.id}/mcp"
    saved = console.post(path, {"tools": " word-counter,  url-slug-generator , get_run"})
    assert saved.status_code == 303
    db.session.expire_all()
    assert db.session.get(ApiKey, key.id).mcp_tools == "word-counter,url-slug-generator,get_run"
    shown = _text(console.get(f"/account/api-keys/{key.id}/"))
    assert "<code>url-slug-generator</code>" in shown
    refused = console.post(path, {"tools": "word-counter, no-such-tool"})
    assert refused.status_code == 422 and "no-such-tool" in _text(refused)
    assert 'aria-invalid="true"' in _text(refused)
    db.session.expire_all()
    assert db.session.get(ApiKey, key.id).mcp_tools == "word-counter,url-slug-generator,get_run"
    assert console.post(path, {"tools": ""}).status_code == 303
    db.session.expire_all()
    assert db.session.get(ApiKey, key.id).mcp_tools is None
    assert console.post(path, {"tools": "word-counter"}, csrf=False).status_code == 400
