"""``GET/PUT /v1/white-label`` (docs/architecture/agency.md): every plan's answer, a round
trip, the 422s with their field messages, and the brand's stylesheet and logo it links."""

from __future__ import annotations

import io

import pytest
from PIL import Image

from extensions import db
from models import WhiteLabel
from services import white_label
from tests.helpers import auth
from tests.services.test_white_label import SVG, data_uri, png_bytes, png_declaring

PATH = "/v1/white-label"
GOOD = {
    "brand_name": "Northwind Studio",
    "primary_color": "#1D4ED8",
    "accent_color": "#b45309",
    "support_url": "https://northwind.example/help",
    "hide_powered_by": True,
}


def put(client, raw, body):
    return client.put(PATH, json=body, headers=auth(raw))


@pytest.mark.parametrize(
    ("plan", "status"),
    [("free", 403), ("starter", 403), ("pro", 402), ("creator", 402), ("business", 402)],
)
@pytest.mark.parametrize("method", ["get", "put"])
def test_plans_below_agency_are_refused(client, make_key, plan, status, method):
    raw = make_key(plan)
    answer = client.open(PATH, method=method.upper(), json=GOOD, headers=auth(raw))
    assert answer.status_code == status
    assert answer.mimetype == "application/problem+json"
    problem = answer.get_json()
    assert problem["code"] == "plan_required"
    assert problem["required_plan"] == "agency"
    assert problem["upgrade_url"] == "https://svc.test/pricing?plan=agency"
    assert db.session.scalar(db.select(db.func.count()).select_from(WhiteLabel)) == 0


def test_without_a_key_401(client):
    answer = client.get(PATH)
    assert answer.status_code == 401
    assert answer.get_json()["code"] == "invalid_api_key"


def test_an_agency_without_a_brand_reads_nulls(client, make_key):
    answer = client.get(PATH, headers=auth(make_key("agency")))
    assert answer.status_code == 200
    assert answer.get_json() == {
        "brand_name": None,
        "logo_url": None,
        "primary_color": None,
        "accent_color": None,
        "support_url": None,
        "hide_powered_by": False,
        "stylesheet_url": None,
        "updated_at": None,
    }
    assert "RateLimit" in answer.headers


def test_put_then_get_round_trip(client, make_key):
    raw = make_key("agency")
    saved = put(client, raw, {**GOOD, "logo": data_uri(png_bytes())})
    assert saved.status_code == 200, saved.get_json()
    body = saved.get_json()
    assert body["primary_color"] == "#1d4ed8"
    assert body["stylesheet_url"] == "https://svc.test/brand/1d4ed8-b45309.css"
    assert body["logo_url"].startswith("https://svc.test/brand/logo/")
    assert client.get(PATH, headers=auth(raw)).get_json() == body
    # A field left out stays; null removes it.
    again = put(client, raw, {"support_url": None, "logo": None}).get_json()
    assert again["support_url"] is None and again["logo_url"] is None
    assert again["brand_name"] == "Northwind Studio" and again["hide_powered_by"] is True


def test_the_stylesheet_and_the_logo_are_served(client, make_key):
    raw = make_key("agency")
    body = put(client, raw, {**GOOD, "logo": data_uri(png_bytes(size=(30, 20)))}).get_json()
    css = client.get(body["stylesheet_url"].removeprefix("https://svc.test"))
    assert css.status_code == 200 and css.mimetype == "text/css"
    assert "--brand-primary: #1d4ed8;" in css.get_data(as_text=True)
    assert "immutable" in css.headers["Cache-Control"]
    logo = client.get(body["logo_url"].removeprefix("https://svc.test"))
    assert logo.status_code == 200
    assert logo.headers["Content-Type"] == "image/png"
    assert logo.headers["X-Content-Type-Options"] == "nosniff"
    assert "sandbox" in logo.headers["Content-Security-Policy"]
    assert "default-src 'none'" in logo.headers["Content-Security-Policy"]
    assert Image.open(io.BytesIO(logo.get_data())).size == (30, 20)
    # The URLs name no account: an unknown hash or colour name is a 404.
    assert client.get("/brand/logo/" + "0" * 64).status_code == 404
    assert client.get("/brand/red;}body{-none.css").status_code == 404


@pytest.mark.parametrize(
    ("body", "field", "says"),
    [
        ({"primary_color": "red;}body{"}, "primary_color", "#rrggbb"),
        ({"accent_color": "#777777"}, "accent_color", "contrast ratio of 4.47:1"),
        ({"logo": data_uri(SVG, "image/svg+xml")}, "logo", "SVG logos are refused"),
        ({"logo": data_uri(b"not an image at all")}, "logo", "not a PNG, JPEG or WebP"),
        ({"logo": data_uri(png_declaring(50_000, 50_000))}, "logo", "too many pixels"),
        (
            {"logo": data_uri(png_bytes() + b"\0" * white_label.MAX_LOGO_BYTES)},
            "logo",
            "larger than 512 KB",
        ),
        ({"support_url": "javascript:alert(1)"}, "support_url", "https://"),
        ({"brand_name": "x" * 81}, "brand_name", "At most 80 characters"),
        ({"hide_powered_by": "yes"}, "hide_powered_by", "true or false"),
        ({"colour": "#000000"}, "colour", "Unknown field"),
    ],
)
def test_bad_values_are_422_with_field_messages(client, make_key, body, field, says):
    raw = make_key("agency")
    answer = put(client, raw, body)
    assert answer.status_code == 422
    problem = answer.get_json()
    assert problem["code"] == "validation_failed"
    assert list(problem["errors"]) == [field]
    assert says in problem["errors"][field][0]
    assert db.session.scalar(db.select(db.func.count()).select_from(WhiteLabel)) == 0


def test_a_script_in_the_brand_name_is_saved_as_text(client, make_key):
    raw = make_key("agency")
    body = put(client, raw, {"brand_name": "<script>alert(1)</script>"}).get_json()
    assert body["brand_name"] == "<script>alert(1)</script>"


@pytest.mark.parametrize(
    ("kwargs", "status", "code"),
    [
        ({"data": "{not json", "content_type": "application/json"}, 400, "invalid_json"),
        ({"data": "brand_name=x", "content_type": "text/plain"}, 415, "unsupported_media_type"),
        ({"data": "", "content_type": "application/json"}, 422, "validation_failed"),
        ({"json": ["not", "an", "object"]}, 422, "validation_failed"),
    ],
)
def test_a_body_that_is_not_a_json_object_is_refused(client, make_key, kwargs, status, code):
    answer = client.put(PATH, headers=auth(make_key("agency")), **kwargs)
    assert answer.status_code == status
    assert answer.get_json()["code"] == code


def test_both_operations_are_documented(client):
    document = client.get("/v1/openapi.json").get_json()
    item = document["paths"][PATH]
    assert item["get"]["operationId"] == "getWhiteLabel"
    assert item["put"]["operationId"] == "setWhiteLabel"
    for status in ("401", "402", "403", "429"):
        assert status in item["get"]["responses"] and status in item["put"]["responses"]
    assert "422" in item["put"]["responses"]
    body = item["put"]["requestBody"]["content"]["application/json"]
    assert body["example"]["primary_color"] == "#1d4ed8"
