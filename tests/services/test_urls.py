"""Absolute URLs come from PUBLIC_BASE_URL, never from the request (services/urls.py): forged
``Host`` and ``X-Forwarded-Host`` headers sent to every flow that hands out a link, and the
deployment's refusal of requests for other hosts."""

import contextlib

import pytest

from app import create_app
from extensions import db
from services import storage, urls
from tests.blueprints.site.conftest import (
    PASSWORD,
    sign_in,  # noqa: F401 (a fixture for this module)
)
from tests.blueprints.site.test_account_auth import browser, csrf, forget_request_state, sign_up
from tests.helpers import app_config, auth

CONFIGURED = "https://svc.example.com"
FORGED = "evil.example"
# The same request under every forged header a client can send.
# (An attacker who forges the Host sends a Referer that matches it, as the site's CSRF check
# of HTTPS forms asks.)
FORGERIES = [
    {"Host": FORGED, "Referer": f"https://{FORGED}/account/"},
    {"X-Forwarded-Host": FORGED},
    {
        "Host": FORGED,
        "Referer": f"https://{FORGED}/account/",
        "X-Forwarded-Host": FORGED,
        "Forwarded": f"host={FORGED}",
    },
]


@pytest.fixture
def configured(app):
    app.config["PUBLIC_BASE_URL"] = CONFIGURED
    return app


def _with(forgery: dict, **kwargs) -> dict:
    return {**kwargs, "headers": {**kwargs.pop("headers", {}), **forgery}}


def _form(client, path: str, data: dict, forgery: dict, page: str | None = None):
    """A site form posted with its CSRF token under ``forgery``: the session cookie goes
    to the forged host too, as a browser of the attacker's making would send it."""
    token = csrf(client, page or path)
    session = client.get_cookie("svc_session", domain="svc.test")
    client.set_cookie("svc_session", session.value, domain=FORGED)
    forget_request_state()
    referer = {"Referer": "https://svc.test/account/"}
    return client.post(path, data={"csrf_token": token, **data}, **_with(forgery, headers=referer))


def _links(mail) -> list[str]:
    return [link for link in mail.links if "/account/" in link]


@pytest.mark.parametrize("forgery", FORGERIES)
def test_a_mailed_reset_link_is_on_the_configured_host(configured, mailbox, forgery):
    client = browser(configured)
    sign_up(client, mailbox, "victim@example.com")
    answer = _form(client, "/account/reset", {"email": "victim@example.com"}, forgery)
    assert answer.status_code == 200
    mail = mailbox.wait_for("victim@example.com", "Reset your SVC password")
    (link,) = [link for link in mail.links if "/account/reset/" in link]
    assert link.startswith(f"{CONFIGURED}/account/reset/")
    assert FORGED not in mail.text


@pytest.mark.parametrize("forgery", FORGERIES)
def test_sign_up_mails_link_to_the_configured_host(configured, mailbox, forgery):
    client = browser(configured)
    answer = _form(
        client, "/account/signup", {"email": "new@example.com", "password": PASSWORD}, forgery
    )
    assert answer.status_code == 200
    confirm = mailbox.wait_for("new@example.com", "Confirm your email")
    assert [link for link in _links(confirm) if "/verify/" in link][0].startswith(
        f"{CONFIGURED}/account/verify/"
    )
    # The mail to an address that has an account (sign-in and reset links) too.
    _form(client, "/account/signup", {"email": "new@example.com", "password": PASSWORD}, forgery)
    taken = mailbox.wait_for("new@example.com", "You already have an SVC account")
    assert _links(taken) and all(link.startswith(CONFIGURED) for link in _links(taken))
    assert FORGED not in confirm.text + taken.text


@pytest.mark.parametrize("forgery", FORGERIES)
def test_an_invitation_link_is_on_the_configured_host(
    configured,
    mailbox,
    sign_in,  # noqa: F811 (the fixture imported above)
    client,
    forgery,
):
    sign_in(plan="business")
    answer = _form(
        client,
        "/account/members/invite",
        {"email": "invitee@example.com", "role": "member"},
        forgery,
        page="/account/members/",
    )
    assert answer.status_code == 303
    mail = mailbox.wait_for("invitee@example.com", "invited you to")
    (link,) = [link for link in mail.links if "/account/invitations/" in link]
    assert link.startswith(f"{CONFIGURED}/account/invitations/")


@pytest.mark.parametrize("forgery", FORGERIES)
def test_api_answers_links_on_the_configured_host(configured, make_key, forgery):
    client = configured.test_client()
    # A plan's refusal: upgrade_url, and the problem's type.
    refused = client.post(
        "/v1/public/tools/word-counter/run",
        **_with(forgery, headers=auth(make_key("free")), json={"input": "a b"}),
    )
    problem = refused.get_json()
    assert refused.status_code == 402
    assert problem["upgrade_url"] == f"{CONFIGURED}/pricing?plan=pro"
    assert problem["type"].startswith(f"{CONFIGURED}/")
    # A queued run's status_url.
    accepted = client.post(
        "/v1/tools/run",
        **_with(
            forgery,
            headers={**auth(make_key()), "Prefer": "respond-async"},
            json={"slug": "word-counter", "input": "a b"},
        ),
    )
    assert accepted.status_code == 202, accepted.get_json()
    assert accepted.get_json()["status_url"].startswith(f"{CONFIGURED}/v1/tools/run/")
    # The Postman collection's base URL.
    collection = client.get("/v1/openapi/postman", **_with(forgery)).get_data(as_text=True)
    assert f"{CONFIGURED}/v1" in collection and FORGED not in collection


def test_file_links_are_on_the_configured_host(configured):
    with configured.test_request_context(
        "/", base_url=f"http://{FORGED}", headers={"X-Forwarded-Host": FORGED}
    ):
        assert storage.url_for("abc") == f"{CONFIGURED}/v1/files/abc"
    with configured.app_context():  # a worker's job: no request at all
        assert storage.url_for("abc") == f"{CONFIGURED}/v1/files/abc"
        assert urls.absolute_url_for("site.pricing", plan="pro") == f"{CONFIGURED}/pricing?plan=pro"


def test_the_webhook_test_event_names_no_forged_host(configured, make_key, receiver):
    configured.config["FETCH_ALLOW_PRIVATE"] = True
    client = configured.test_client()
    raw = make_key()
    saved = client.put(
        "/v1/webhook", headers={**auth(raw), "Host": FORGED}, json={"url": receiver.url}
    )
    assert saved.status_code == 200, saved.get_json()
    sent = client.post("/v1/webhook/test", **_with(FORGERIES[2], headers=auth(raw)))
    assert sent.get_json()["status"] == "succeeded"
    (received,) = receiver.requests
    assert FORGED.encode() not in received.body


def test_site_pages_show_the_configured_address(configured):
    page = configured.test_client().get("/tools/word-counter/", headers=FORGERIES[2])
    html = page.get_data(as_text=True)
    assert page.status_code == 200 and FORGED not in html
    assert f'href="{CONFIGURED}/tools/word-counter/"' in html  # the canonical link
    assert f"{CONFIGURED}/v1/public/tools/word-counter/run" in html  # the code snippets


# --------------------------------------------------------------------------- the deployment


@contextlib.contextmanager
def _app(**settings):
    """An app of its own with ``settings``; its database connections closed after."""
    app = create_app(app_config(**settings))
    try:
        yield app
    finally:
        with app.app_context():
            db.engine.dispose()


def test_outside_development_public_base_url_is_required():
    with pytest.raises(RuntimeError, match="PUBLIC_BASE_URL is not set"):
        create_app(app_config(ENV_NAME="production", PUBLIC_BASE_URL=None))


@pytest.mark.parametrize(
    "value", ["svc.example.com", "ftp://svc.example.com", "https://", "https://a.example/?x=1"]
)
def test_public_base_url_must_be_an_http_address(value):
    with pytest.raises(RuntimeError, match="PUBLIC_BASE_URL must be an http"):
        create_app(app_config(ENV_NAME="production", PUBLIC_BASE_URL=value))


def test_a_deployment_refuses_requests_for_other_hosts(_schema):
    settings = {"ENV_NAME": "production", "SERVER_NAME": None, "TRUSTED_HOSTS": "api.example.net"}
    with _app(PUBLIC_BASE_URL=f"{CONFIGURED}/", **settings) as app:
        assert app.config["PUBLIC_BASE_URL"] == CONFIGURED
        client = app.test_client()
        forged = client.get("/v1/health", base_url=f"https://{FORGED}")
        assert forged.status_code == 400
        assert forged.mimetype == "application/problem+json"
        assert forged.get_json()["type"].startswith(f"{CONFIGURED}/")
        page = client.get("/pricing", base_url=f"https://{FORGED}")
        assert page.status_code == 400 and FORGED not in page.get_data(as_text=True)
        for host in ("svc.example.com", "api.example.net", "localhost:5000", "127.0.0.1:5000"):
            assert client.get("/v1/health", base_url=f"https://{host}").status_code == 200, host
        # X-Forwarded-Host is not read: the Host the request came with is the one checked.
        spoofed = client.get(
            "/v1/health", base_url=CONFIGURED, headers={"X-Forwarded-Host": FORGED}
        )
        assert spoofed.status_code == 200


def test_development_serves_any_host_but_links_stay_local():
    with _app(ENV_NAME="development", SERVER_NAME=None, PUBLIC_BASE_URL=None) as app:
        assert app.config["PUBLIC_BASE_URL"] == "http://localhost:5000"
        assert app.config["TRUSTED_HOSTS"] is None
        html = app.test_client().get("/", base_url=f"http://{FORGED}").get_data(as_text=True)
    assert "http://localhost:5000/v1/public/whoami" in html and FORGED not in html
    assert "http://localhost:5000/v1</code>" in html
