"""``/account/embeds/``: an agency's widgets on the account pages (who may manage them, the
same validation as the API, rotate, delete, the snippet and per-widget usage)."""

from __future__ import annotations

import re

import pytest

from extensions import db
from models import Embed
from services import embeds, keys
from services.recorder import recorder
from tests.blueprints.site.test_account_auth import forget_request_state
from tests.blueprints.site.test_account_security import csrf_token, with_referer


@pytest.fixture
def agency_owner(sign_in, client):
    signed = sign_in(plan="agency")
    key, _raw = keys.create_key(signed.account, "widgets", created_by=signed.user)
    keys.create_key(signed.account, "sandbox", sandbox=True, created_by=signed.user)
    db.session.commit()
    with_referer(client)
    return signed, key


def page(client, path: str):
    forget_request_state()
    return client.get(path)


def post(client, path: str, **data):
    token = csrf_token(client)
    forget_request_state()
    return client.post(path, data={"csrf_token": token, **data})


def create_form(key_id: str, **fields) -> dict:
    return {
        "tool": "word-counter",
        "name": "",
        "allowed_origins": "https://client.example.com\nHTTP://LOCALHOST:8000",
        "per_minute": "5",
        "per_visitor_daily": "",
        "daily": "",
        "api_key_id": key_id,
        **fields,
    }


def test_an_owner_creates_a_widget_and_sees_its_snippet(client, agency_owner):
    signed, key = agency_owner
    listing = page(client, "/account/embeds/")
    assert listing.status_code == 200
    html = listing.get_data(as_text=True)
    assert "Create a widget" in html
    # Sandbox keys are not offered: a widget's runs are real.
    assert f'value="{key.id}"' in html and "sandbox (" not in html
    created = post(client, "/account/embeds/", **create_form(key.id))
    assert created.status_code == 303
    embed = db.session.scalars(db.select(Embed)).one()
    assert created.location == f"/account/embeds/{embed.id}/"
    assert (embed.account_id, embed.api_key_id, embed.name) == (
        signed.account.id,
        key.id,
        "Word Counter",
    )
    assert embed.allowed_origins == ["https://client.example.com", "http://localhost:8000"]
    assert (embed.per_minute, embed.per_visitor_daily, embed.daily) == (5, 20, 500)
    shown = page(client, created.location).get_data(as_text=True)
    # Shown as text to copy (escaped), never as markup of this page.
    assert f"&lt;div data-svc-embed=&#34;{embed.public_id}&#34;" in shown
    assert "https://svc.test/embed/v1/loader.js" in shown
    assert 'data-copy="embed-snippet"' in shown


def test_the_picker_offers_queued_and_file_tools_but_not_those_that_cannot_run_here(
    client, agency_owner
):
    html = page(client, "/account/embeds/").get_data(as_text=True)
    assert re.search(r'value="abstractive-summarizer" *>Abstractive Summarizer \(queued\)<', html)
    assert re.search(r'value="qr-code-generator" *>QR Code Generator<', html)  # makes files
    assert 'value="app-icon-generator"' not in html  # no image provider in the tests
    _signed, key = agency_owner
    created = post(client, "/account/embeds/", **create_form(key.id, tool="audio-trimmer"))
    assert created.status_code == 303
    assert db.session.scalars(db.select(Embed)).one().tool_slug == "audio-trimmer"


@pytest.mark.parametrize(
    ("fields", "field", "message"),
    [
        ({"tool": "app-icon-generator"}, "tool", "This tool cannot run on this deployment"),
        ({"allowed_origins": "https://*.example.com"}, "allowed_origins", "Wildcards"),
        ({"allowed_origins": "https://a.example/path"}, "allowed_origins", "no path"),
        ({"per_minute": "0"}, "per_minute", "Must be a whole number from 1 to 600."),
        ({"api_key_id": "nope"}, "api_key_id", "Choose one of the account&#39;s live keys."),
    ],
)
def test_bad_values_are_field_errors(client, agency_owner, fields, field, message):
    _signed, key = agency_owner
    answer = post(client, "/account/embeds/", **create_form(key.id, **fields))
    assert answer.status_code == 422
    html = answer.get_data(as_text=True)
    error = re.search(rf'id="f-{field}-error">([^<]*)<', html)
    assert error is not None and message in error.group(1)
    assert db.session.scalar(db.select(db.func.count(Embed.id))) == 0


def _widget(signed, key, **values) -> Embed:
    values = {"tool": "word-counter", "allowed_origins": ["https://client.example.com"], **values}
    embed = embeds.create(
        signed.account, key.id, embeds.clean(values, signed.account, creating=True)
    )
    db.session.commit()
    return embed


def test_editing_rotating_and_deleting(client, agency_owner):
    signed, key = agency_owner
    embed = _widget(signed, key)
    saved = post(
        client,
        f"/account/embeds/{embed.id}/",
        name="Acme counter",
        allowed_origins="https://acme.example",
        per_minute="3",
        per_visitor_daily="4",
        daily="50",
        api_key_id=key.id,
        enabled="false",
    )
    assert saved.status_code == 303
    db.session.refresh(embed)
    assert (embed.name, embed.allowed_origins, embed.enabled) == (
        "Acme counter",
        ["https://acme.example"],
        False,
    )
    assert (embed.per_minute, embed.per_visitor_daily, embed.daily) == (3, 4, 50)
    confirm = page(client, f"/account/embeds/{embed.id}/rotate")
    assert confirm.status_code == 200 and "Rotate public id" in confirm.get_data(as_text=True)
    old = embed.public_id
    assert post(client, f"/account/embeds/{embed.id}/rotate").status_code == 303
    db.session.refresh(embed)
    assert embed.public_id != old
    assert page(client, f"/account/embeds/{embed.id}/delete").status_code == 200
    assert post(client, f"/account/embeds/{embed.id}/delete").status_code == 303
    assert db.session.get(Embed, embed.id) is None


def test_a_member_sees_widgets_but_cannot_change_them(client, sign_in, agency_owner):
    signed, key = agency_owner
    embed = _widget(signed, key)
    sign_in(role="member", account=signed.account)
    listing = page(client, "/account/embeds/").get_data(as_text=True)
    assert "Only an owner or admin" in listing and "Create a widget" not in listing
    assert "Save widget" not in page(client, f"/account/embeds/{embed.id}/").get_data(as_text=True)
    for path in (
        "/account/embeds/",
        f"/account/embeds/{embed.id}/",
        f"/account/embeds/{embed.id}/delete",
    ):
        assert post(client, path, **create_form(key.id)).status_code == 403
    assert db.session.get(Embed, embed.id) is not None


def test_another_plan_is_told_what_agency_adds(client, sign_in):
    sign_in(plan="business")
    with_referer(client)
    html = page(client, "/account/embeds/").get_data(as_text=True)
    assert "part of the Agency plan" in html and "/pricing?plan=agency" in html
    assert post(client, "/account/embeds/", tool="word-counter").status_code == 403


def test_the_widget_page_shows_its_runs_and_credits(client, agency_owner):
    signed, key = agency_owner
    signed.account.free_calls_used = 100
    embed = _widget(signed, key)
    widget = page(client, f"/embed/{embed.public_id}").get_data(as_text=True)
    token = re.search(r'name="token" value="([^"]+)"', widget).group(1)
    for _ in range(2):
        client.post(f"/embed/{embed.public_id}", data={"token": token, "text": "a b c"})
    recorder().flush()
    listing = page(client, "/account/embeds/").get_data(as_text=True)
    assert re.search(r'data-label="Runs today">2<', listing)
    assert re.search(r'data-label="Credits, 30 days">2<', listing)
    shown = page(client, f"/account/embeds/{embed.id}/").get_data(as_text=True)
    assert "2 runs, 2 credits" in shown
    # The dashboard counts them too: under the widget's key, as API calls.
    dashboard = page(client, "/account/").get_data(as_text=True)
    assert key.name in dashboard


def test_the_run_history_shows_widget_runs_as_the_widgets(client, agency_owner):
    signed, key = agency_owner
    embed = _widget(signed, key)
    widget = page(client, f"/embed/{embed.public_id}").get_data(as_text=True)
    token = re.search(r'name="token" value="([^"]+)"', widget).group(1)
    client.post(f"/embed/{embed.public_id}", data={"token": token, "text": "a b c"})
    recorder().flush()
    listed = page(client, "/account/runs/?source=embed").get_data(as_text=True)
    assert re.search(r'data-label="Source">Widget · widgets<', listed)
    assert "Word Counter" in listed
    assert "Word Counter" not in page(client, "/account/runs/?source=web").get_data(as_text=True)


def test_a_widget_made_with_a_sandbox_key_keeps_it_and_says_so(client, agency_owner):
    signed, _key = agency_owner
    sandbox = next(k for k, _ in keys.working_keys(signed.account.id) if k.sandbox)
    embed = _widget(signed, sandbox)
    shown = page(client, f"/account/embeds/{embed.id}/").get_data(as_text=True)
    assert "sandbox: sample outputs" in shown and "No working key" not in shown
    saved = post(
        client,
        f"/account/embeds/{embed.id}/",
        name="",
        allowed_origins="https://client.example.com",
        per_minute="10",
        per_visitor_daily="20",
        daily="500",
        api_key_id=sandbox.id,
        enabled="true",
    )
    assert saved.status_code == 303
    db.session.refresh(embed)
    assert embed.api_key_id == sandbox.id
