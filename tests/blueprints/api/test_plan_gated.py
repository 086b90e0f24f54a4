"""The Creator and Business endpoints (docs/architecture/plan-gated-endpoints.md) end to end
through the API.

Most tests run on the embedded default (SQLite, in-process queue); the plan table, limits and
quota run on PostgreSQL and Redis (a real RQ worker where a run has to execute).
"""

import base64
import itertools
import time

import pytest
from flask_migrate import upgrade

from app import create_app
from blueprints.api.audiobooks.tool import AUDIOBOOK
from blueprints.api.images.tool import GENERATE_IMAGES
from blueprints.api.video.tool import GENERATE_VIDEO
from blueprints.api.voice.tool import SPEAK
from extensions import db
from models import Run, UsageEvent
from services import accounts, keys
from services.usage import FREE_CALLS
from tests.engines.fixtures import epub_document, solid_image
from tests.helpers import app_config, auth, needs_pg, needs_redis

ENDPOINT_TOOLS = {
    "/v1/images/generate": GENERATE_IMAGES,
    "/v1/voice/speak": SPEAK,
    "/v1/video/generate": GENERATE_VIDEO,
    "/v1/audiobooks": AUDIOBOOK,
}

UUID = "00000000-0000-4000-8000-000000000000"
SPEECH = {"text": "Hello from the voice endpoint.", "format": "wav"}
SCRIPT = {"script": "A tiny first scene.\n\nAnd a second one.", "resolution": "240p"}

_emails = itertools.count(1)


def new_key(plan: str = "creator", *, sandbox: bool = False, free: bool = False, **fields):
    """A key of a new account on ``plan``; its free calls are used up unless ``free``."""
    account = accounts.create_account(f"gated{next(_emails)}@example.com", plan)
    account.free_calls_used = 0 if free else FREE_CALLS
    key, raw = keys.create_key(account, "gated", sandbox=sandbox)
    for name, value in fields.items():
        setattr(key, name, value)
    db.session.commit()
    return raw


def ledger() -> list[tuple[str, int, bool]]:
    events = db.session.scalars(db.select(UsageEvent).order_by(UsageEvent.id)).all()
    return [(event.tool_slug, event.credits, event.free_call) for event in events]


def usage(client, raw) -> dict:
    return client.get("/v1/public/whoami", headers=auth(raw)).get_json()["usage"]


def until_ended(client, raw, location: str, seconds: float = 60) -> dict:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        record = client.get(location, headers=auth(raw)).get_json()
        if record["status"] in {"succeeded", "failed", "canceled"}:
            return record
        time.sleep(0.1)
    pytest.fail(f"the run did not end: {record}")


def fetch(client, url: str) -> bytes:
    response = client.get(url.removeprefix("https://svc.test"))
    assert response.status_code == 200
    return response.get_data()


@pytest.fixture
def embedded(embedded_app):
    return embedded_app.test_client()


@pytest.fixture
def provider_client(fake_provider, tmp_path, monkeypatch):
    """The embedded default with ``fake_provider`` as its model provider."""
    from engines.models import breaker, provider_transport

    monkeypatch.setattr(provider_transport, "_sleep", lambda seconds: None)
    breaker.reset_breakers()
    app = create_app(
        app_config(
            SQLALCHEMY_DATABASE_URI=f"sqlite:///{tmp_path / 'provider.db'}",
            REDIS_URL=None,
            RATELIMIT_STORAGE_URI="memory://",
            AI_BASE_URL=fake_provider.base_url,
            AI_TIMEOUT_SECONDS=5.0,
        )
    )
    with app.app_context():
        upgrade()
        yield app.test_client()
        db.session.remove()
        db.engine.dispose()
    keys.forget()
    breaker.reset_breakers()


# --- plans and refusals (PostgreSQL and Redis) ---------------------------------------------

ENDPOINTS = {
    "images": ("post", "/v1/images/generate", {"prompt": "a red kite"}, "creator"),
    "speak": ("post", "/v1/voice/speak", SPEECH, "creator"),
    "voices": ("get", "/v1/voice/voices", None, "creator"),
    "video": ("post", "/v1/video/generate", SCRIPT, "business"),
    "audiobook": ("post", "/v1/audiobooks", {"text": "Once upon a time."}, "business"),
    "audiobook-status": ("get", f"/v1/audiobooks/{UUID}", None, "business"),
}
PLAN_TABLE = [
    (endpoint, plan, status)
    for endpoint, (_, _, _, required) in ENDPOINTS.items()
    for plan, status in (
        [("free", 403), ("starter", 403), ("pro", 402)]
        + ([("creator", 402)] if required == "business" else [])
    )
]


def _call(client, endpoint: str, raw: str | None):
    method, path, body, _ = ENDPOINTS[endpoint]
    headers = auth(raw) if raw else {}
    return getattr(client, method)(path, headers=headers, json=body)


@pytest.mark.parametrize(("endpoint", "plan", "status"), PLAN_TABLE)
def test_plans_below_the_endpoint_are_refused_with_the_plan_to_buy(
    client, make_key, endpoint, plan, status
):
    response = _call(client, endpoint, make_key(plan))
    assert response.status_code == status
    assert response.mimetype == "application/problem+json"
    problem = response.get_json()
    required = ENDPOINTS[endpoint][3]
    assert problem["code"] == "plan_required"
    assert problem["required_plan"] == required
    assert problem["upgrade_url"].endswith(f"/pricing?plan={required}")
    assert db.session.scalar(db.select(db.func.count(Run.id))) == 0


@pytest.mark.parametrize("endpoint", ENDPOINTS)
def test_a_missing_key_is_401(client, endpoint):
    response = _call(client, endpoint, None)
    assert response.status_code == 401 and response.get_json()["code"] == "invalid_api_key"


@needs_redis
def test_the_per_minute_limit_applies(client, make_key):
    raw = make_key("creator", per_minute_override=1)
    assert client.get("/v1/voice/voices", headers=auth(raw)).status_code == 200
    refused = client.post("/v1/voice/speak", headers=auth(raw), json=SPEECH)
    assert refused.status_code == 429 and refused.get_json()["code"] == "rate_limited"
    assert int(refused.headers["Retry-After"]) >= 1


@needs_redis
def test_an_exhausted_daily_quota_is_429_and_starts_no_run(client, make_key):
    raw = make_key("business", daily_override=0)
    refused = client.post("/v1/video/generate", headers=auth(raw), json=SCRIPT)
    assert refused.status_code == 429 and refused.get_json()["code"] == "quota_exceeded"
    assert int(refused.headers["Retry-After"]) > 0
    assert db.session.scalar(db.select(db.func.count(Run.id))) == 0


@pytest.fixture
def public_base_url(monkeypatch):
    """The worker process (started after this) answers file URLs on this base."""
    monkeypatch.setenv("PUBLIC_BASE_URL", "https://svc.test")


@needs_pg
@needs_redis
def test_a_failed_run_gives_its_reserved_quota_back(client, make_key, public_base_url, rq_worker):
    raw = make_key("creator", daily_override=1)
    failed = client.post(
        "/v1/voice/speak",
        headers={**auth(raw), "Prefer": "wait=30"},
        json={**SPEECH, "voice": "provider:robot"},
    )
    assert failed.status_code == 422, failed.get_json()
    assert "Unknown voice provider:robot" in failed.get_json()["detail"]
    assert usage(client, raw)["calls_today"] == 0
    spoken = client.post("/v1/voice/speak", headers={**auth(raw), "Prefer": "wait=30"}, json=SPEECH)
    assert spoken.status_code == 200, spoken.get_json()
    assert usage(client, raw)["calls_today"] == 1


# --- voice ---------------------------------------------------------------------------------


def test_speak_answers_an_audio_url_and_charges_five_credits(embedded):
    raw = new_key("creator")
    response = embedded.post("/v1/voice/speak", headers=auth(raw), json=SPEECH)
    assert response.status_code == 200, response.get_json()
    body = response.get_json()
    assert (body["tool"], body["status"], body["credits"], body["sandbox"]) == (
        "voice/speak",
        "succeeded",
        5,
        False,
    )
    output = body["output"]
    assert (output["engine"], output["voice"], output["format"]) == (
        "piper",
        "en_US-joe-medium",
        "wav",
    )
    assert fetch(embedded, output["audio"]["url"])[:4] == b"RIFF"
    assert ledger() == [("voice/speak", 5, False)]
    assert usage(embedded, raw)["credits_today"] == 5
    record = embedded.get(f"/v1/tools/run/{body['run_id']}/status", headers=auth(raw))
    assert record.status_code == 200 and record.get_json()["output"] == output


def test_the_first_calls_of_an_account_are_free(embedded):
    raw = new_key("creator", free=True)
    body = embedded.post("/v1/voice/speak", headers=auth(raw), json=SPEECH).get_json()
    assert body["credits"] == 0
    assert ledger() == [("voice/speak", 0, True)]


def test_voices_lists_the_local_voices(embedded):
    response = embedded.get("/v1/voice/voices", headers=auth(new_key("creator")))
    assert response.status_code == 200
    body = response.get_json()
    assert body["count"] == len(body["voices"]) > 10
    assert body["voices"][0]["id"] == "en_US-joe-medium"
    assert {voice["engine"] for voice in body["voices"]} == {"piper", "espeak-ng"}
    assert db.session.scalar(db.select(db.func.count(Run.id))) == 0


def test_voices_lists_the_providers_voices_when_one_is_configured(provider_client):
    body = provider_client.get("/v1/voice/voices", headers=auth(new_key("agency"))).get_json()
    assert {"id": "provider:alloy", "name": "Alloy (model provider)", "language": "mul"}.items()
    provider = [voice for voice in body["voices"] if voice["engine"] == "provider"]
    assert provider[0] == {
        "id": "provider:alloy",
        "name": "Alloy (model provider)",
        "language": "mul",
        "engine": "provider",
    }


def test_a_provider_voice_speaks_through_the_provider(provider_client, fake_provider):
    response = provider_client.post(
        "/v1/voice/speak",
        headers=auth(new_key("creator")),
        json={"text": "Four words from afar.", "voice": "provider:nova", "format": "mp3"},
    )
    assert response.status_code == 200, response.get_json()
    output = response.get_json()["output"]
    assert (output["engine"], output["voice"]) == ("provider", "provider:nova")
    assert output["duration_s"] == pytest.approx(1.6, abs=0.05)
    assert output["audio"]["content_type"] == "audio/mpeg"
    assert fake_provider.calls("/v1/audio/speech")[0].json["voice"] == "nova"


def test_idempotency_key_replays_the_first_answer(embedded):
    raw = new_key("creator")
    headers = {**auth(raw), "Idempotency-Key": "speak-1"}
    first = embedded.post("/v1/voice/speak", headers=headers, json=SPEECH)
    again = embedded.post("/v1/voice/speak", headers=headers, json=SPEECH)
    assert first.status_code == again.status_code == 200
    assert again.headers["Idempotent-Replayed"] == "true"
    assert again.get_json()["run_id"] == first.get_json()["run_id"]
    other = embedded.post("/v1/voice/speak", headers=headers, json={**SPEECH, "speed": 1.5})
    assert other.status_code == 422 and other.get_json()["code"] == "idempotency_key_reused"
    assert db.session.scalar(db.select(db.func.count(Run.id))) == 1
    assert ledger() == [("voice/speak", 5, False)]


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"input": "hello"}, "input"),
        ({"text": "hi", "tone": "warm"}, "tone"),
        ({"text": "hi", "speed": 3}, "speed"),
        ({"text": "   "}, "text"),
        ({}, "text"),
    ],
)
def test_invalid_speech_requests_are_422(embedded, body, field):
    response = embedded.post("/v1/voice/speak", headers=auth(new_key("creator")), json=body)
    assert response.status_code == 422
    assert field in response.get_json()["errors"]


def test_a_text_body_over_one_mib_is_413(embedded):
    response = embedded.post(
        "/v1/voice/speak",
        headers=auth(new_key("creator")),
        json={"text": "a" * (1024 * 1024 + 10)},
    )
    assert response.status_code == 413 and response.get_json()["code"] == "payload_too_large"


# --- images --------------------------------------------------------------------------------


def test_images_without_a_provider_are_503_naming_the_setting(embedded):
    raw = new_key("creator")
    response = embedded.post(
        "/v1/images/generate", headers=auth(raw), json={"prompt": "a red kite", "count": 2}
    )
    assert response.status_code == 503
    problem = response.get_json()
    assert problem["code"] == "provider_unavailable"
    assert "AI_BASE_URL" in problem["detail"]
    assert int(response.headers["Retry-After"]) > 0
    assert db.session.scalar(db.select(db.func.count(Run.id))) == 0
    assert usage(embedded, raw)["calls_today"] == 0


def test_images_are_generated_and_charged_per_image(provider_client, fake_provider):
    raw = new_key("creator")
    response = provider_client.post(
        "/v1/images/generate",
        headers=auth(raw),
        json={"prompt": "a red kite", "size": "256x256", "count": 3, "style": "ink"},
    )
    assert response.status_code == 200, response.get_json()
    body = response.get_json()
    assert body["credits"] == 15 and body["output"]["size"] == "256x256"
    assert len(body["output"]["images"]) == 3
    for image in body["output"]["images"]:
        assert fetch(provider_client, image["url"]).startswith(b"\x89PNG")
    assert fake_provider.calls("/v1/images/generations")[0].json["n"] == 3
    assert ledger() == [("images/generate", 15, False)]
    today = usage(provider_client, raw)
    assert (today["calls_today"], today["credits_today"]) == (1, 15)


def test_a_failing_image_provider_is_503_and_releases_the_quota(provider_client, fake_provider):
    raw = new_key("creator")
    fake_provider.fail_next(10, status=503)
    response = provider_client.post(
        "/v1/images/generate", headers=auth(raw), json={"prompt": "a red kite"}
    )
    assert response.status_code == 503 and response.get_json()["code"] == "provider_unavailable"
    assert "Retry-After" in response.headers
    assert usage(provider_client, raw)["calls_today"] == 0
    assert ledger() == []
    run = db.session.get(Run, response.get_json()["run_id"])
    assert run.status == "failed" and run.credits == 0


def test_a_sandbox_key_gets_the_sample_images_for_nothing(embedded):
    raw = new_key("creator", sandbox=True)
    response = embedded.post("/v1/images/generate", headers=auth(raw), json={"prompt": "a kite"})
    assert response.status_code == 200
    body = response.get_json()
    assert body["sandbox"] is True and body["credits"] == 0
    from blueprints.api.images.tool import GENERATE_IMAGES

    assert body["output"] == GENERATE_IMAGES.examples[0]["output"]
    assert ledger() == []


def test_more_than_four_images_is_422(embedded):
    response = embedded.post(
        "/v1/images/generate",
        headers=auth(new_key("creator")),
        json={"prompt": "a kite", "count": 5},
    )
    assert response.status_code == 422 and "count" in response.get_json()["errors"]


# --- video ---------------------------------------------------------------------------------


def _png_data_uri(color: str) -> str:
    blob = solid_image(64, 36, color)
    return "data:image/png;base64," + base64.b64encode(blob.data).decode()


def test_a_narrated_video_is_queued_then_rendered(embedded):
    raw = new_key("business")
    response = embedded.post(
        "/v1/video/generate",
        headers={**auth(raw), "Prefer": "respond-async"},
        json={**SCRIPT, "images": [_png_data_uri("teal")]},
    )
    assert response.status_code == 202
    location = response.headers["Location"]
    assert location == f"/v1/tools/run/{response.get_json()['run_id']}/status"
    record = until_ended(embedded, raw, location)
    assert record["status"] == "succeeded", record["error"]
    output = record["output"]
    assert (output["width"], output["height"]) == (426, 240)
    assert [scene["visual"] for scene in output["scenes"]] == ["supplied", "title_card"]
    assert output["script"] == SCRIPT["script"]
    assert fetch(embedded, output["video"]["url"])[4:8] == b"ftyp"
    assert record["credits"] == 10
    assert ledger() == [("video/generate", 10, False)]


@pytest.mark.parametrize(
    ("body", "fields"),
    [
        ({"topic": "sleep", "script": "Sleep well."}, {"topic", "script"}),
        ({"aspect_ratio": "1:1"}, {"topic", "script"}),
        ({"topic": "sleep", "images": ["not an image"]}, {"images.0"}),
        ({"topic": "sleep", "aspect_ratio": "4:3"}, {"aspect_ratio"}),
    ],
)
def test_invalid_video_requests_are_422(embedded, body, fields):
    response = embedded.post("/v1/video/generate", headers=auth(new_key("business")), json=body)
    assert response.status_code == 422, response.get_json()
    assert set(response.get_json()["errors"]) == fields


def test_a_topic_is_scripted_and_illustrated_by_the_provider(provider_client, fake_provider):
    fake_provider.reply("Bees make honey.\n\nThey dance to talk.")
    response = provider_client.post(
        "/v1/video/generate",
        headers={**auth(new_key("business")), "Prefer": "wait=60"},
        json={"topic": "bees", "scene_count": 2, "resolution": "240p", "aspect_ratio": "9:16"},
    )
    assert response.status_code == 200, response.get_json()
    output = response.get_json()["output"]
    assert output["script"] == "Bees make honey.\n\nThey dance to talk."
    assert [scene["visual"] for scene in output["scenes"]] == ["generated", "generated"]
    assert (output["width"], output["height"]) == (240, 426)


# --- audiobooks ----------------------------------------------------------------------------


def test_an_uploaded_epub_becomes_chapters_charged_per_chapter(embedded):
    raw = new_key("business")
    book = epub_document([("Dawn", "The keeper woke early."), ("Dusk", "The lamp was lit.")])
    response = embedded.post(
        "/v1/audiobooks",
        headers={**auth(raw), "Prefer": "wait=60"},
        data={"book": (__import__("io").BytesIO(book.data), "book.epub"), "format": "wav"},
        content_type="multipart/form-data",
    )
    assert response.status_code == 200, response.get_json()
    body = response.get_json()
    assert body["credits"] == 10 and body["tool"] == "audiobooks"
    assert ledger() == [("audiobooks", 10, False)]
    shown = embedded.get(f"/v1/audiobooks/{body['run_id']}", headers=auth(raw))
    assert shown.status_code == 200
    audiobook = shown.get_json()
    assert (audiobook["status"], audiobook["title"], audiobook["credits"]) == (
        "succeeded",
        "A Test Book",
        10,
    )
    assert [chapter["title"] for chapter in audiobook["chapters"]] == ["Dawn", "Dusk"]
    for chapter in audiobook["chapters"]:
        assert chapter["duration_s"] > 0.5
        assert fetch(embedded, chapter["audio"]["url"])[:4] == b"RIFF"
    assert audiobook["duration_s"] == pytest.approx(
        sum(chapter["duration_s"] for chapter in audiobook["chapters"])
    )


def test_a_queued_audiobook_is_polled_until_its_chapters_are_read(embedded):
    raw = new_key("business")
    response = embedded.post(
        "/v1/audiobooks",
        headers={**auth(raw), "Prefer": "respond-async"},
        json={"text": "# One\n\nHi.\n\n# Two\n\nBye.", "title": "Short"},
    )
    assert response.status_code == 202
    run_id = response.get_json()["run_id"]
    audiobook = until_ended(embedded, raw, f"/v1/audiobooks/{run_id}")
    assert audiobook["status"] == "succeeded" and audiobook["title"] == "Short"
    assert [chapter["index"] for chapter in audiobook["chapters"]] == [1, 2]
    assert audiobook["chapters"][0]["audio"]["content_type"] == "audio/mpeg"


def test_an_audiobook_that_cannot_be_read_is_422_and_charges_nothing(embedded):
    raw = new_key("business")
    response = embedded.post(
        "/v1/audiobooks",
        headers=auth(raw),
        json={
            "book": "data:application/epub+zip;base64," + base64.b64encode(b"PK\x03\x04no").decode()
        },
    )
    assert response.status_code == 422, response.get_json()
    assert ledger() == [] and usage(embedded, raw)["calls_today"] == 0


def test_another_accounts_audiobook_and_other_runs_are_404(embedded):
    owner, stranger = new_key("business"), new_key("business")
    started = embedded.post(
        "/v1/audiobooks",
        headers={**auth(owner), "Prefer": "respond-async"},
        json={"text": "Hello."},
    ).get_json()
    for path in (
        f"/v1/audiobooks/{started['run_id']}",
        f"/v1/tools/run/{started['run_id']}/status",
    ):
        refused = embedded.get(path, headers=auth(stranger))
        assert refused.status_code == 404 and refused.get_json()["code"] == "run_not_found"
    spoken = embedded.post("/v1/voice/speak", headers=auth(owner), json=SPEECH).get_json()
    not_a_book = embedded.get(f"/v1/audiobooks/{spoken['run_id']}", headers=auth(owner))
    assert not_a_book.status_code == 404
    until_ended(embedded, owner, f"/v1/audiobooks/{started['run_id']}")


# --- OpenAPI -------------------------------------------------------------------------------


def test_the_endpoints_are_documented_with_their_schemas(client):
    document = client.get("/v1/openapi.json").get_json()
    paths = document["paths"]
    for path, tool in ENDPOINT_TOOLS.items():
        operation = paths[path]["post"]
        body = operation["requestBody"]["content"]["application/json"]
        assert body["schema"]["additionalProperties"] is False and body["example"]
        # "text or book" is said, not a oneOf of required lists (generated clients read Any).
        assert "oneOf" not in body["schema"]
        assert {"200", "202", "402", "403", "422", "429", "503"} <= set(operation["responses"])
        result = operation["responses"]["200"]["content"]["application/json"]
        assert result["schema"] == {
            "$ref": "#/components/schemas/RunResult",
            "properties": {"output": tool.output},
        }
    video = paths["/v1/video/generate"]["post"]["requestBody"]["content"]["application/json"]
    assert video["schema"]["description"] == "Send `topic` or `script`, not both."
    assert "multipart/form-data" in paths["/v1/audiobooks"]["post"]["requestBody"]["content"]
    assert "/v1/voice/voices" in paths and "/v1/audiobooks/{run_id}" in paths
