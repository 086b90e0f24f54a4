"""The white-label settings page (``/account/white-label``), sharing a run from its page, and
the shared run (``/r/<share id>``) under the agency's brand: what each role and plan sees,
the API's checks and messages on the form, and what a stranger with the link gets (the run,
its files, the brand; nothing of the account)."""

from __future__ import annotations

import io
import re

import pytest
from lxml import html as lxml_html
from markupsafe import escape

from engines.models import local_llm
from extensions import db
from models import Run, WhiteLabel
from services import keys, runs, white_label
from tests.blueprints.site.test_account_auth import forget_request_state
from tests.helpers import auth
from tests.services.test_white_label import SVG, data_uri, png_bytes

BROWSER = "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 Chrome/124.0 Safari/537.36"
PAGE = "/account/white-label"
GOOD_FORM = {
    "brand_name": "Northwind <b>Studio</b>",
    "primary_color": "#1d4ed8",
    "accent_color": "#b45309",
    "support_url": "https://northwind.example/help",
    "hide_powered_by": "on",
}


@pytest.fixture
def client(app):
    client = app.test_client()
    client.environ_base.update(
        {"HTTP_USER_AGENT": BROWSER, "HTTP_REFERER": "https://svc.test/account/"}
    )
    return client


def get(client, path: str):
    forget_request_state()
    return client.get(path)


def post(client, path: str, data: dict, *, page: str = PAGE):
    token = re.search(r'name="csrf_token" value="([^"]+)"', get(client, page).text)[1]
    forget_request_state()
    answer = client.post(
        path, data={"csrf_token": token, **data}, content_type="multipart/form-data"
    )
    # A body over 500 KB was spooled to a temporary file by the test client: closed here.
    answer.request.environ["wsgi.input"].close()
    return answer


def upload(data: bytes, name: str, content_type: str):
    return (io.BytesIO(data), name, content_type)


def field_error(page, name: str) -> str:
    document = lxml_html.fromstring(page.get_data(as_text=True))
    (found,) = document.xpath(f"//*[@id='f-{name}-error']")
    return found.text_content()


def make_run(account, *, status="succeeded", **fields) -> Run:
    key, _raw = keys.create_key(account, "the agency's secret key")
    run = Run(
        account_id=account.id,
        api_key_id=key.id,
        tool_slug="word-counter",
        status=status,
        input={"text": "one two three"},
        output={"words": 3, "characters": 13} if status == "succeeded" else None,
        **fields,
    )
    db.session.add(run)
    db.session.commit()
    return run


# --------------------------------------------------------------------------- settings


def test_an_agency_owner_saves_the_brand_with_a_logo(app, client, sign_in):
    signed = sign_in(plan="agency")
    page = get(client, PAGE)
    assert page.status_code == 200
    assert 'type="color"' in page.text and 'accept="image/png,image/jpeg,image/webp"' in page.text
    sent = png_bytes(size=(120, 40), text={"Author": "Jane"})
    answer = post(client, PAGE, {**GOOD_FORM, "logo": upload(sent, "logo.png", "image/png")})
    assert answer.status_code == 303 and answer.location == PAGE
    row = db.session.get(WhiteLabel, signed.account.id)
    assert row.brand_name == "Northwind <b>Studio</b>"
    assert (row.primary_color, row.accent_color) == ("#1d4ed8", "#b45309")
    assert row.hide_powered_by is True and row.logo_content_type == "image/png"
    assert row.logo != sent
    page = get(client, PAGE)
    assert "Your brand is saved" in page.text
    # The preview: the name escaped, the logo, the brand's stylesheet in the head.
    assert "Northwind &lt;b&gt;Studio&lt;/b&gt;" in page.text and "<b>Studio</b>" not in page.text
    assert f'src="https://svc.test/brand/logo/{row.logo_sha256}"' in page.text
    assert 'href="/brand/1d4ed8-b45309.css"' in page.text
    assert 'style="' not in page.text


def test_unchecking_a_colour_s_default_and_removing_the_logo(app, client, sign_in):
    signed = sign_in(plan="agency")
    post(client, PAGE, {**GOOD_FORM, "logo": upload(png_bytes(), "logo.png", "image/png")})
    answer = post(
        client,
        PAGE,
        {"brand_name": "", "primary_color": "#000000", "primary_color_default": "on",
         "accent_color": "#b45309", "support_url": "", "remove_logo": "on"},
    )  # fmt: skip
    assert answer.status_code == 303
    row = db.session.get(WhiteLabel, signed.account.id)
    db.session.refresh(row)
    assert (row.brand_name, row.primary_color, row.support_url) == (None, None, None)
    assert row.logo is None and row.hide_powered_by is False


@pytest.mark.parametrize(
    ("data", "field", "says"),
    [
        ({"primary_color": "red;}body{"}, "primary_color", "#rrggbb"),
        ({"accent_color": "#777777"}, "accent_color", "contrast ratio of 4.47:1"),
        ({"logo": upload(SVG, "logo.svg", "image/svg+xml")}, "logo", "SVG logos are refused"),
        ({"logo": upload(b"plain text", "logo.png", "image/png")}, "logo", "not a PNG, JPEG"),
        ({"logo": upload(b"\x89PNG" + b"\0" * 600_000, "big.png", "image/png")}, "logo", "512 KB"),
        ({"support_url": "javascript:alert(1)"}, "support_url", "https://"),
        ({"brand_name": "x" * 81}, "brand_name", "At most 80 characters"),
    ],
)
def test_bad_values_are_refused_beside_their_field(app, client, sign_in, data, field, says):
    signed = sign_in(plan="agency")
    answer = post(client, PAGE, {**GOOD_FORM, **data})
    assert answer.status_code == 422
    assert says in field_error(answer, field)
    assert "The brand was not saved" in answer.text
    assert db.session.get(WhiteLabel, signed.account.id) is None


@pytest.mark.parametrize("plan", ["free", "pro", "business"])
def test_below_agency_the_page_says_why_with_an_upgrade_link(app, client, sign_in, plan):
    signed = sign_in(plan=plan)
    page = get(client, PAGE)
    assert page.status_code == 200
    assert "White-label is part of the Agency plan" in page.text
    assert 'href="https://svc.test/pricing?plan=agency"' in page.text
    assert '<form method="post" action="/account/white-label"' not in page.text
    answer = post(client, PAGE, GOOD_FORM)
    assert answer.status_code == 402
    assert db.session.get(WhiteLabel, signed.account.id) is None


def test_a_member_sees_the_brand_but_cannot_change_it(app, client, sign_in):
    signed = sign_in(plan="agency", role="member")
    page = get(client, PAGE)
    assert page.status_code == 200
    assert "Only an owner or an admin" in page.text
    assert "<fieldset disabled>" in page.text
    assert post(client, PAGE, GOOD_FORM).status_code == 403
    assert db.session.get(WhiteLabel, signed.account.id) is None


def test_an_admin_may_change_it(app, client, sign_in):
    signed = sign_in(plan="agency", role="admin")
    assert post(client, PAGE, GOOD_FORM).status_code == 303
    assert db.session.get(WhiteLabel, signed.account.id).brand_name == "Northwind <b>Studio</b>"


# --------------------------------------------------------------------------- sharing


def share(client, run) -> str:
    page = f"/account/runs/{run.id}/"
    answer = post(client, f"/account/runs/{run.id}/share", {}, page=page)
    assert answer.status_code == 303
    db.session.refresh(run)
    return run.share_id


def test_a_member_shares_a_run_and_a_stranger_sees_it_under_the_brand(app, client, sign_in):
    signed = sign_in(plan="agency", role="member")
    white_label.save(
        signed.account.id,
        {"brand_name": "<script>alert(1)</script>", "primary_color": "#1d4ed8",
         "logo": data_uri(png_bytes()),
         "support_url": "https://northwind.example/help"},
    )  # fmt: skip
    db.session.commit()
    run = make_run(signed.account)
    before = get(client, f"/account/runs/{run.id}/")
    assert "Share this run" in before.text
    share_id = share(client, run)
    assert share_id and len(share_id) >= 22
    page = get(client, f"/account/runs/{run.id}/")
    assert f"https://svc.test/r/{share_id}" in page.text and "Stop sharing" in page.text

    stranger = app.test_client()
    forget_request_state()
    shared = stranger.get(f"/r/{share_id}")
    assert shared.status_code == 200
    text = shared.text
    assert "Word Counter" in text and "one two three" in text
    # The brand: its stylesheet, logo, escaped name, support link and "Powered by".
    assert 'href="/brand/1d4ed8-none.css"' in text
    assert 'class="brand-logo" src="/brand/logo/' in text
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in text and "<script>alert" not in text
    assert 'href="https://northwind.example/help"' in text and "Powered by" in text
    # Never indexed; nothing of the account.
    assert '<meta name="robots" content="noindex, nofollow">' in text
    assert shared.headers["X-Robots-Tag"] == "noindex, nofollow"
    assert "no-store" in shared.headers["Cache-Control"]
    for secret in (signed.user.email, "secret key", run.api_key_id, run.id, "svc_", "Sign out"):
        assert secret not in text
    assert 'class="site-header"' not in text  # the agency's header, not the product's

    # Stop sharing: the link is a 404 from now on, and sharing again makes a new one.
    post(client, f"/account/runs/{run.id}/unshare", {}, page=f"/account/runs/{run.id}/")
    forget_request_state()
    assert stranger.get(f"/r/{share_id}").status_code == 404
    assert share(client, run) != share_id


def test_a_run_the_embedded_model_wrote_says_so_on_its_page_and_where_shared(app, client, sign_in):
    signed = sign_in(plan="agency")
    run = make_run(signed.account, model=f"gpt-4o-mini, {local_llm.model_name()}")
    note = f'<p class="notice">{escape(runs.quality_note(run.model))}</p>'
    assert note in get(client, f"/account/runs/{run.id}/").text
    share_id = share(client, run)
    forget_request_state()
    assert note in app.test_client().get(f"/r/{share_id}").text


def test_hide_powered_by_removes_the_line(app, client, sign_in):
    signed = sign_in(plan="agency")
    white_label.save(signed.account.id, {"brand_name": "Acme", "hide_powered_by": True})
    db.session.commit()
    share_id = share(client, make_run(signed.account))
    forget_request_state()
    text = app.test_client().get(f"/r/{share_id}").text
    assert "Acme" in text and "Powered by" not in text


def test_a_brand_that_only_hides_powered_by_draws_no_empty_header_band(app, client, sign_in):
    signed = sign_in(plan="agency")
    white_label.save(signed.account.id, {"hide_powered_by": True})
    db.session.commit()
    share_id = share(client, make_run(signed.account))
    forget_request_state()
    text = app.test_client().get(f"/r/{share_id}").text
    assert "brand-header" not in text and "Powered by" not in text


@pytest.mark.parametrize("plan", ["pro", "business"])
def test_below_agency_a_shared_run_has_the_site_s_look(app, client, sign_in, plan):
    signed = sign_in(plan=plan)
    # A brand left from an agency plan the account no longer has is not shown.
    white_label.save(signed.account.id, {"brand_name": "Old brand", "primary_color": "#1d4ed8"})
    db.session.commit()
    share_id = share(client, make_run(signed.account))
    forget_request_state()
    shared = app.test_client().get(f"/r/{share_id}")
    assert shared.status_code == 200
    assert 'class="site-header"' in shared.text and "Old brand" not in shared.text
    assert "/brand/" not in shared.text


def test_only_a_succeeded_run_can_be_shared(app, client, sign_in):
    signed = sign_in(plan="agency")
    run = make_run(signed.account, status="failed")
    page = get(client, f"/account/runs/{run.id}/")
    assert "Share this run" not in page.text
    answer = post(client, f"/account/runs/{run.id}/share", {}, page=f"/account/runs/{run.id}/")
    assert answer.status_code == 303
    db.session.refresh(run)
    assert run.share_id is None
    assert "Only a run that succeeded can be shared." in get(client, answer.location).text


@pytest.mark.parametrize(
    "share_id", ["unknown-share-id-0000", "x", "a" * 44, "%3Cscript%3E", "....................."]
)
def test_an_unknown_share_id_is_a_404(app, share_id):
    assert app.test_client().get(f"/r/{share_id}").status_code == 404


def test_a_suspended_account_s_shared_runs_are_gone(app, client, sign_in):
    signed = sign_in(plan="agency")
    share_id = share(client, make_run(signed.account))
    from services import clock

    signed.account.suspended_at = clock.now()
    db.session.commit()
    forget_request_state()
    assert app.test_client().get(f"/r/{share_id}").status_code == 404


def test_a_shared_run_s_image_shows_for_anyone_with_the_link(app, client, sign_in):
    signed = sign_in(plan="agency")
    key, raw = keys.create_key(signed.account, "agency key")
    db.session.commit()
    picture = data_uri(png_bytes())
    forget_request_state()
    ran = client.post(
        "/v1/tools/run", headers=auth(raw), json={"slug": "image-flipper", "input": picture}
    )
    assert ran.status_code == 200, ran.get_json()
    run = db.session.get(Run, ran.get_json()["run_id"])
    assert run is not None
    share_id = share(client, run)
    forget_request_state()
    stranger = app.test_client()
    page = stranger.get(f"/r/{share_id}")
    document = lxml_html.fromstring(page.text)
    (src,) = document.xpath("//main//figure/img/@src")
    image = stranger.get(src.removeprefix("https://svc.test"))
    assert image.status_code == 200 and image.mimetype == "image/png"
    assert image.headers["X-Content-Type-Options"] == "nosniff"


# --------------------------------------------------------------------------- the widget


def new_widget(account):
    from services import embeds

    key, _raw = keys.create_key(account, "widgets")
    values = {"tool": "word-counter", "allowed_origins": ["https://client.example.com"]}
    embed = embeds.create(account, key.id, embeds.clean(values, account, creating=True))
    db.session.commit()
    return embed


def test_a_widget_shows_the_agency_s_brand(app, client, sign_in):
    signed = sign_in(plan="agency")
    white_label.save(
        signed.account.id,
        {"brand_name": "<i>Acme</i>", "accent_color": "#b45309", "logo": data_uri(png_bytes()),
         "support_url": "https://acme.example/help", "hide_powered_by": True},
    )  # fmt: skip
    db.session.commit()
    embed = new_widget(signed.account)
    forget_request_state()
    page = app.test_client().get(f"/embed/{embed.public_id}")
    assert page.status_code == 200
    text = page.text
    assert 'href="/brand/none-b45309.css"' in text and 'href="/static/css/brand.css"' in text
    assert 'class="brand-logo" src="/brand/logo/' in text
    assert "&lt;i&gt;Acme&lt;/i&gt;" in text and "<i>Acme" not in text
    assert (
        'href="https://acme.example/help" rel="noopener noreferrer nofollow" target="_blank"'
        in text
    )
    assert "Powered by" not in text
    assert "style=" not in text
    # The stylesheet gives the widget's buttons the accent.
    css = client.get("/brand/none-b45309.css").text
    assert "body.embed {" in css and "--pico-primary-background: #b45309;" in css


def test_a_widget_without_a_brand_keeps_the_site_s_footer(app, sign_in):
    signed = sign_in(plan="agency")
    embed = new_widget(signed.account)
    forget_request_state()
    text = app.test_client().get(f"/embed/{embed.public_id}").text
    assert "brand-header" not in text and "/brand/" not in text
    assert "Powered by" in text
