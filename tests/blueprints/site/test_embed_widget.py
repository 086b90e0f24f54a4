"""``/embed/<public id>``: an agency's widget as another site frames it (its CSP, the empty
answer that reveals nothing, its token, caps and runs) and the loader script."""

from __future__ import annotations

import itertools
import re
from datetime import timedelta

import pytest

from blueprints.site.embed import EMPTY_BODY
from extensions import db
from models import Embed, Run, UsageEvent
from services import accounts, clock, embed_caps, embeds, keys
from services.recorder import recorder
from tests.blueprints.site.test_tool_pages import answered_by_the_embedded_model

_emails = itertools.count(1)
SITE_CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data: blob:; "
    "media-src 'self' blob:; connect-src 'self'; object-src 'none'; base-uri 'self'; "
    "form-action 'self'; frame-ancestors "
)


@pytest.fixture
def agency(app):
    """An agency account with a live key (its raw value kept to search pages for it)."""
    account = accounts.create_account(f"agency{next(_emails)}@example.com", "agency")
    account.free_calls_used = 100
    key, raw = keys.create_key(account, "widgets")
    db.session.commit()
    return account, key, raw


def new_embed(agency, **values) -> Embed:
    account, key, _raw = agency
    values = {"tool": "word-counter", "allowed_origins": ["https://client.example.com"], **values}
    embed = embeds.create(account, key.id, embeds.clean(values, account, creating=True))
    db.session.commit()
    return embed


def token_of(page: str) -> str:
    return re.search(r'name="token" value="([^"]+)"', page).group(1)


def run(client, embed: Embed, text: str = "one two three", token: str | None = None, **extra):
    if token is None:
        token = token_of(client.get(f"/embed/{embed.public_id}").get_data(as_text=True))
    return client.post(f"/embed/{embed.public_id}", data={"token": token, "text": text}, **extra)


def settled_runs(embed_id: str) -> list[Run]:
    recorder().flush()
    db.session.expire_all()
    return list(db.session.scalars(db.select(Run).where(Run.embed_id == embed_id)))


def test_the_page_is_framed_only_by_its_origins(client, agency):
    embed = new_embed(agency, allowed_origins=["https://a.example.com", "http://localhost:8000"])
    page = client.get(f"/embed/{embed.public_id}")
    assert page.status_code == 200
    assert page.headers["Content-Security-Policy"] == (
        SITE_CSP + "https://a.example.com http://localhost:8000"
    )
    assert page.headers["Cache-Control"] == "no-store"
    assert "X-Frame-Options" not in page.headers
    assert "Set-Cookie" not in page.headers
    html = page.get_data(as_text=True)
    assert "<h1>Word Counter</h1>" in html
    assert 'name="text"' in html and 'name="token"' in html
    assert "csrf_token" not in html
    assert "<script>" not in html and "style=" not in html
    assert 'src="/static/js/embed_widget.js"' in html


def test_no_origins_is_frame_ancestors_none(client, agency):
    embed = new_embed(agency, allowed_origins=[])
    page = client.get(f"/embed/{embed.public_id}")
    assert page.status_code == 200
    assert page.headers["Content-Security-Policy"] == SITE_CSP + "'none'"


def _answer(response) -> tuple:
    headers = sorted((k, v) for k, v in response.headers.items() if k != "X-Request-Id")
    return response.status_code, headers, response.get_data()


def test_unknown_disabled_rotated_and_deleted_ids_get_the_same_empty_answer(client, agency):
    unknown = client.get("/embed/" + "A" * 43)
    assert unknown.status_code == 404
    assert unknown.get_data(as_text=True) == EMPTY_BODY
    assert unknown.headers["Content-Security-Policy"] == SITE_CSP + "'none'"
    assert "Set-Cookie" not in unknown.headers
    expected = _answer(unknown)

    disabled = new_embed(agency, enabled=False)
    rotated = new_embed(agency)
    old_public_id = rotated.public_id
    embeds.update(rotated, {"rotate_public_id": True})
    deleted = new_embed(agency)
    deleted_public_id = deleted.public_id
    embeds.delete(deleted)
    db.session.commit()
    for public_id in (disabled.public_id, old_public_id, deleted_public_id, "x", "no/such"):
        for method in ("GET", "POST"):
            answer = client.open(f"/embed/{public_id}", method=method, data={"text": "a"})
            if public_id == "no/such":
                assert answer.status_code == 404
                continue
            assert _answer(answer) == expected, (public_id, method)
    assert client.get(f"/embed/{rotated.public_id}").status_code == 200


def test_a_widget_of_an_account_no_longer_on_agency_or_with_a_revoked_key_shows_nothing(
    client, agency
):
    embed = new_embed(agency)
    account, key, _raw = agency
    keys.revoke_key(key)
    db.session.commit()
    assert client.get(f"/embed/{embed.public_id}").get_data(as_text=True) == EMPTY_BODY
    other = new_embed(agency)
    new_key, _ = keys.create_key(account, "another")
    embeds.set_key(other, new_key.id)
    account.plan_name = "business"
    db.session.commit()
    assert client.get(f"/embed/{other.public_id}").get_data(as_text=True) == EMPTY_BODY


def test_a_run_answers_the_output_and_is_charged_as_the_widgets_key(client, agency):
    embed = new_embed(agency)
    answer = run(client, embed, "one two three four")
    assert answer.status_code == 200, answer.get_data(as_text=True)
    html = answer.get_data(as_text=True)
    assert "Result" in html
    assert answer.headers["Content-Security-Policy"].endswith(
        "frame-ancestors https://client.example.com"
    )
    assert "Set-Cookie" not in answer.headers
    (recorded,) = settled_runs(embed.id)
    account, key, _raw = agency
    assert (recorded.source, recorded.api_key_id, recorded.account_id) == (
        "embed",
        key.id,
        account.id,
    )
    assert recorded.status == "succeeded" and recorded.credits == 1
    assert recorded.web_address == embed_caps.visitor_hash("127.0.0.1")
    ledger = db.session.scalars(db.select(UsageEvent).where(UsageEvent.run_id == recorded.id)).all()
    assert [(e.api_key_id, e.credits) for e in ledger] == [(key.id, 1)]


def test_a_result_the_embedded_model_wrote_says_so_in_the_widget(client, agency, monkeypatch):
    note = answered_by_the_embedded_model(monkeypatch)
    answer = run(client, new_embed(agency), "one two three four")
    assert answer.status_code == 200, answer.get_data(as_text=True)
    assert f'<p class="notice">{note}</p>' in answer.get_data(as_text=True)


def test_bad_input_is_a_field_error_and_nothing_runs(client, agency):
    embed = new_embed(agency)
    answer = run(client, embed, "")
    assert answer.status_code == 422
    assert "Some fields need another look." in answer.get_data(as_text=True)
    assert settled_runs(embed.id) == []


def test_an_expired_token_asks_to_reload(client, agency):
    embed = new_embed(agency)
    token = token_of(client.get(f"/embed/{embed.public_id}").get_data(as_text=True))
    clock.set_offset(timedelta(minutes=16))
    try:
        answer = run(client, embed, token=token)
    finally:
        clock.set_offset(timedelta(0))
    assert answer.status_code == 400
    html = answer.get_data(as_text=True)
    assert "has expired. Reload the page and run it again." in html
    assert settled_runs(embed.id) == []


def test_a_token_is_bound_to_its_widget_and_public_id(client, agency):
    first, second = new_embed(agency), new_embed(agency)
    token = token_of(client.get(f"/embed/{first.public_id}").get_data(as_text=True))
    assert run(client, second, token=token).status_code == 400
    assert run(client, first, token="forged").status_code == 400
    embeds.update(first, {"rotate_public_id": True})
    db.session.commit()
    # The old token names the old public id: refused under the new one.
    assert run(client, first, token=token).status_code == 400
    assert settled_runs(first.id) == [] and settled_runs(second.id) == []


def test_over_the_per_visitor_cap_is_a_friendly_429_and_nothing_runs(client, agency):
    embed = new_embed(agency, per_visitor_daily=2)
    assert run(client, embed).status_code == 200
    assert run(client, embed).status_code == 200
    refused = run(client, embed)
    assert refused.status_code == 429
    assert (
        "You have reached this tool&#39;s limit of 2 runs a day per visitor."
        in refused.get_data(as_text=True)
    )
    assert int(refused.headers["Retry-After"]) > 0
    assert len(settled_runs(embed.id)) == 2
    # Another visitor (another address) still may.
    other = run(client, embed, environ_base={"REMOTE_ADDR": "203.0.113.9"})
    assert other.status_code == 200


def test_over_the_daily_cap_is_a_429(client, agency):
    embed = new_embed(agency, daily=1)
    assert run(client, embed).status_code == 200
    refused = run(client, embed, environ_base={"REMOTE_ADDR": "203.0.113.9"})
    assert refused.status_code == 429
    assert "used as much as it can be today" in refused.get_data(as_text=True)
    assert len(settled_runs(embed.id)) == 1


def test_over_the_per_minute_cap_is_a_429(client, agency):
    embed = new_embed(agency, per_minute=1)
    assert run(client, embed).status_code == 200
    refused = run(client, embed)
    assert refused.status_code == 429
    assert "too many runs in the last minute" in refused.get_data(as_text=True)
    assert len(settled_runs(embed.id)) == 1


def test_the_loader_is_a_static_script(client):
    answer = client.get("/embed/v1/loader.js")
    assert answer.status_code == 200
    assert answer.mimetype == "text/javascript"
    body = answer.get_data(as_text=True)
    assert "event.origin !== origin" in body and "contentWindow === event.source" in body
    assert "Set-Cookie" not in answer.headers


def test_nothing_the_widget_serves_holds_the_key(client, agency):
    """The agency's key never reaches the browser: every page, script and answer of the
    widget is searched for its raw value, its hash and its hint."""
    account, key, raw = agency
    embed = new_embed(agency, per_visitor_daily=1)
    secrets = (raw, key.key_hash, key.hint, raw[4:], key.id)
    answers = [client.get(f"/embed/{embed.public_id}")]
    page = answers[0].get_data(as_text=True)
    token = token_of(page)
    answers.append(run(client, embed, token=token))
    answers.append(run(client, embed, token=token))  # over its cap: 429
    answers.append(run(client, embed, "", token=token))  # a field error
    answers.append(run(client, embed, token="forged"))
    answers.append(client.get("/embed/" + "B" * 43))
    assert [a.status_code for a in answers] == [200, 200, 429, 422, 400, 404]
    served = [(a.request.path, a.get_data(as_text=True) + str(a.headers)) for a in answers]
    scripts_and_styles = sorted(set(re.findall(r'(?:src|href)="(/[^"]+)"', page)))
    assert "/static/js/embed_widget.js" in scripts_and_styles
    for path in [*scripts_and_styles, "/embed/v1/loader.js"]:
        with client.get(path) as answer:
            assert answer.status_code == 200, path
            served.append((path, answer.get_data(as_text=True) + str(answer.headers)))
    for path, text in served:
        for secret in secrets:
            assert secret not in text, (path, secret[:8])
