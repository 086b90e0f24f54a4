"""``/v1/embeds``: the agency's widgets through the API (docs/architecture/agency.md)."""

import itertools

import pytest

from extensions import db
from models import Embed
from services import accounts, keys
from tests.helpers import auth

_emails = itertools.count(1)
UUID = "00000000-0000-4000-8000-000000000000"
CREATE = {"tool": "word-counter", "allowed_origins": ["https://client.example.com"]}


def new_key(plan: str = "agency", **fields) -> str:
    account = accounts.create_account(f"embeds{next(_emails)}@example.com", plan)
    key, raw = keys.create_key(account, "agency key", **fields)
    db.session.commit()
    return raw


def create(client, raw, **body):
    return client.post("/v1/embeds", json={**CREATE, **body}, headers=auth(raw))


@pytest.mark.parametrize(
    ("plan", "status"),
    [("free", 403), ("starter", 403), ("pro", 402), ("creator", 402), ("business", 402)],
)
@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("get", "/v1/embeds"),
        ("post", "/v1/embeds"),
        ("get", f"/v1/embeds/{UUID}"),
        ("patch", f"/v1/embeds/{UUID}"),
        ("delete", f"/v1/embeds/{UUID}"),
    ],
)
def test_plans_below_agency_are_refused(client, plan, status, method, path):
    raw = new_key(plan)
    answer = client.open(path, method=method.upper(), json=CREATE, headers=auth(raw))
    assert answer.status_code == status
    body = answer.get_json()
    assert answer.mimetype == "application/problem+json"
    assert body["code"] == "plan_required"
    assert body["required_plan"] == "agency"
    assert body["upgrade_url"] == "https://svc.test/pricing?plan=agency"
    assert db.session.scalar(db.select(db.func.count(Embed.id))) == 0


def test_without_a_key_401(client):
    assert client.get("/v1/embeds").status_code == 401


def test_create_answers_201_with_the_snippet(client):
    raw = new_key()
    answer = create(client, raw, name="Counter for Acme", per_minute=5)
    assert answer.status_code == 201
    body = answer.get_json()
    assert answer.headers["Location"] == f"/v1/embeds/{body['id']}"
    assert body["tool"] == "word-counter"
    assert body["name"] == "Counter for Acme"
    assert body["allowed_origins"] == ["https://client.example.com"]
    assert (body["per_minute"], body["per_visitor_daily"], body["daily"]) == (5, 20, 500)
    assert body["enabled"] is True
    assert len(body["public_id"]) == 43
    assert body["embed_url"] == f"https://svc.test/embed/{body['public_id']}"
    assert body["snippet"] == (
        f'<div data-svc-embed="{body["public_id"]}" data-title="Word Counter"></div>\n'
        '<script src="https://svc.test/embed/v1/loader.js" async></script>'
    )
    context = keys.resolve(raw)
    assert body["api_key_id"] == context.key_id
    assert raw not in answer.get_data(as_text=True)
    embed = db.session.get(Embed, body["id"])
    assert embed.api_key_id == context.key_id and embed.account_id == context.account_id


def test_list_get_patch_delete(client):
    raw = new_key()
    first = create(client, raw).get_json()
    second = create(client, raw, tool="keyword-extractor", allowed_origins=[]).get_json()
    listed = client.get("/v1/embeds", headers=auth(raw)).get_json()
    assert listed["count"] == 2
    assert [e["id"] for e in listed["embeds"]] == [first["id"], second["id"]]
    assert second["allowed_origins"] == []
    one = client.get(f"/v1/embeds/{first['id']}", headers=auth(raw))
    assert one.status_code == 200 and one.get_json() == first
    changed = client.patch(
        f"/v1/embeds/{first['id']}",
        json={"allowed_origins": ["HTTPS://Shop.Example.COM:443", "http://localhost:8000"],
              "daily": 50, "enabled": False, "name": None},
        headers=auth(raw),
    )  # fmt: skip
    assert changed.status_code == 200
    body = changed.get_json()
    assert body["allowed_origins"] == ["https://shop.example.com", "http://localhost:8000"]
    assert (body["daily"], body["enabled"], body["name"]) == (50, False, "Word Counter")
    assert body["public_id"] == first["public_id"]
    deleted = client.delete(f"/v1/embeds/{first['id']}", headers=auth(raw))
    assert deleted.status_code == 204 and deleted.get_data() == b""
    gone = client.get(f"/v1/embeds/{first['id']}", headers=auth(raw))
    assert gone.status_code == 404 and gone.get_json()["code"] == "embed_not_found"
    assert client.get("/v1/embeds", headers=auth(raw)).get_json()["count"] == 1


def test_rotating_gives_a_new_public_id(client):
    raw = new_key()
    first = create(client, raw).get_json()
    rotated = client.patch(
        f"/v1/embeds/{first['id']}", json={"rotate_public_id": True}, headers=auth(raw)
    ).get_json()
    assert rotated["public_id"] != first["public_id"]
    assert (
        rotated["public_id"] in rotated["snippet"] and first["public_id"] not in rotated["snippet"]
    )
    assert rotated["embed_url"].endswith(rotated["public_id"])


@pytest.mark.parametrize("method", ["GET", "PATCH", "DELETE"])
def test_another_accounts_embed_is_not_found(client, method):
    theirs = create(client, new_key()).get_json()
    raw = new_key()
    answer = client.open(
        f"/v1/embeds/{theirs['id']}", method=method, json={"daily": 1}, headers=auth(raw)
    )
    assert answer.status_code == 404
    assert answer.get_json()["code"] == "embed_not_found"
    assert db.session.get(Embed, theirs["id"]).daily == 500


@pytest.mark.parametrize(
    ("body", "errors"),
    [
        ({"tool": "no-such-tool"}, {"tool": ["There is no tool with the slug 'no-such-tool'."]}),
        ({"tool": 5}, {"tool": ["Name the tool by its slug, e.g. word-counter."]}),
        (
            # Image generation needs a provider the test deployment does not configure.
            {"tool": "app-icon-generator"},
            {"tool": ["This tool cannot run on this deployment: Image generation needs a model "
                      "provider: set AI_BASE_URL to an OpenAI-compatible API (and AI_API_KEY if "
                      "it needs one)."]},
        ),
        ({"allowed_origins": "https://a.example"}, None),
        ({"allowed_origins": ["https://*.example.com"]}, None),
        ({"allowed_origins": ["https://example.com/path"]}, None),
        ({"allowed_origins": ["https://example.com?x=1"]}, None),
        ({"allowed_origins": ["https://user:pw@example.com"]}, None),
        ({"allowed_origins": ["ftp://example.com"]}, None),
        ({"allowed_origins": ["javascript:alert(1)"]}, None),
        ({"allowed_origins": ["https://example.com; script-src *"]}, None),
        ({"allowed_origins": ["https://example.com:99999"]}, None),
        ({"allowed_origins": ["example.com"]}, None),
        ({"allowed_origins": [42]}, None),
        ({"per_minute": 0}, {"per_minute": ["Must be a whole number from 1 to 600."]}),
        ({"daily": 100001}, {"daily": ["Must be a whole number from 1 to 100,000."]}),
        (
            {"per_visitor_daily": True},
            {"per_visitor_daily": ["Must be a whole number from 1 to 10,000."]},
        ),
        ({"daily": "ten"}, {"daily": ["Must be a whole number from 1 to 100,000."]}),
        ({"enabled": "yes"}, {"enabled": ["Must be true or false."]}),
        ({"name": "x" * 101}, {"name": ["At most 100 characters."]}),
        ({"colour": "red"}, {"colour": ["Unknown field."]}),
        (
            {"rotate_public_id": True},
            {"rotate_public_id": ["Only an update rotates the public id."]},
        ),
    ],
)  # fmt: skip
def test_bad_values_are_422_with_field_messages(client, body, errors):
    raw = new_key()
    answer = create(client, raw, **body)
    assert answer.status_code == 422
    problem = answer.get_json()
    assert problem["code"] == "validation_failed"
    if errors is None:
        assert list(problem["errors"]) == ["allowed_origins"]
        assert len(problem["errors"]["allowed_origins"]) == 1
    else:
        assert problem["errors"] == errors
    assert db.session.scalar(db.select(db.func.count(Embed.id))) == 0


@pytest.mark.parametrize(
    "tool",
    ["abandoned-cart-email-series", "qr-code-generator", "text-to-speech"],  # queued, files, both
)
def test_queued_tools_and_tools_that_make_files_can_be_embedded(client, tool):
    answer = create(client, new_key(), tool=tool)
    assert answer.status_code == 201, answer.get_json()
    assert answer.get_json()["tool"] == tool


def test_create_needs_tool_and_origins(client):
    raw = new_key()
    answer = client.post("/v1/embeds", json={}, headers=auth(raw))
    assert answer.status_code == 422
    assert answer.get_json()["errors"] == {
        "allowed_origins": ["Missing required field."],
        "tool": ["Missing required field."],
    }
    broken = client.post("/v1/embeds", data="{", content_type="application/json", headers=auth(raw))
    assert broken.status_code == 400 and broken.get_json()["code"] == "invalid_json"


def test_the_tool_cannot_change(client):
    raw = new_key()
    first = create(client, raw).get_json()
    answer = client.patch(
        f"/v1/embeds/{first['id']}", json={"tool": "keyword-extractor"}, headers=auth(raw)
    )
    assert answer.status_code == 422
    assert answer.get_json()["errors"] == {
        "tool": ["A widget's tool cannot change: create another widget."]
    }


@pytest.mark.parametrize(
    ("given", "kept"),
    [
        ("https://Example.COM", "https://example.com"),
        ("https://example.com:443", "https://example.com"),
        ("http://example.com:80/", "http://example.com"),
        ("http://127.0.0.1:5000", "http://127.0.0.1:5000"),
        ("https://[::1]:8443", "https://[::1]:8443"),
        ("https://bücher.example", "https://xn--bcher-kva.example"),
    ],
)
def test_origins_are_normalised(given, kept):
    from services.embeds import normalise_origin

    assert normalise_origin(given) == kept
