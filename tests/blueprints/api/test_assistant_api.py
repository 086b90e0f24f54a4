"""The site assistant over the API: ``GET /v1/tools?q=`` and ``GET /v1/health/chatbot``."""

from __future__ import annotations

import time

import pytest

from app import create_app
from services.assistant import health
from tests.helpers import app_config, clean

HEALTH_JSON = "application/health+json"


def slugs(response) -> list[str]:
    return [tool["slug"] for tool in response.get_json()["tools"]]


def test_search_answers_the_tools_list_best_match_first(client):
    response = client.get("/v1/tools", query_string={"q": "turn a podcast into show notes"})
    assert response.status_code == 200
    body = response.get_json()
    assert body["tools"][0]["slug"] == "podcast-show-notes"
    assert body["count"] == len(body["tools"]) <= 20
    assert set(body["tools"][0]) >= {"slug", "name", "input_schema", "output_schema", "available"}


def test_search_puts_an_exact_slug_first(client):
    assert slugs(client.get("/v1/tools?q=word-counter"))[0] == "word-counter"


def test_search_combines_with_category_and_plan(client):
    found = slugs(
        client.get("/v1/tools", query_string={"q": "resize", "category": "image-editing"})
    )
    assert found and found[0] == "image-resizer"
    catalogue = client.application.extensions["catalogue"]
    assert {catalogue.get(slug).category for slug in found} == {"image-editing"}
    assert client.get("/v1/tools", query_string={"q": "resize", "plan": "free"}).get_json() == {
        "tools": [],
        "count": 0,
    }
    creator_only = slugs(client.get("/v1/tools", query_string={"q": "image", "plan": "pro"}))
    assert all(catalogue.get(slug).required_plan == "pro" for slug in creator_only)


def test_a_search_that_matches_nothing_well_is_an_empty_list(client):
    assert client.get("/v1/tools?q=weather in paris").get_json() == {"tools": [], "count": 0}


@pytest.mark.parametrize("q", ["", "x" * 301])
def test_an_empty_or_too_long_query_is_422(client, q):
    response = client.get("/v1/tools", query_string={"q": q})
    assert response.status_code == 422
    assert response.get_json()["code"] == "validation_failed"
    assert "q" in response.get_json()["errors"]


def test_the_query_is_documented(client):
    spec = client.get("/v1/openapi.json").get_json()
    parameters = spec["paths"]["/v1/tools"]["get"]["parameters"]
    q = next(p for p in parameters if p["name"] == "q")
    assert q["in"] == "query" and "best" in q["description"]


# --- GET /v1/health/chatbot ---------------------------------------------------------------


def test_chatbot_health_without_a_provider_warns_that_it_answers_from_retrieval(client):
    response = client.get("/v1/health/chatbot")
    assert response.status_code == 200
    assert response.mimetype == HEALTH_JSON
    body = response.get_json()
    assert body["status"] == "warn"
    checks = {name: check[0] for name, check in body["checks"].items()}
    assert checks["index:documents"]["status"] == "pass"
    assert checks["index:documents"]["observedValue"] > 400
    assert checks["embedder:loaded"]["status"] == "pass"
    assert checks["answer:mode"] == {**checks["answer:mode"], "status": "warn",
                                     "observedValue": "retrieval only"}  # fmt: skip
    assert "provider:reachability" not in checks
    from services.assistant import current_index

    assert body["releaseId"] == current_index().release_id


@pytest.fixture
def provider_app(_schema, fake_provider):
    """The app with ``fake_provider`` as its model provider, and the provider."""
    app = create_app(app_config(AI_BASE_URL=fake_provider.base_url))
    health.forget()
    for app_ in clean(app):
        yield app_, fake_provider
    health.forget()


def test_with_a_reachable_provider_it_passes_from_a_cached_probe(provider_app):
    app, fake = provider_app
    client = app.test_client()
    first = client.get("/v1/health/chatbot").get_json()  # starts the probe, waits for nothing
    assert first["checks"]["provider:reachability"][0]["observedValue"] in (
        "not probed yet",
        "reachable",
    )
    for _ in range(100):
        if health._probe is not None:
            break
        time.sleep(0.02)
    body = client.get("/v1/health/chatbot").get_json()
    assert body["status"] == "pass"
    assert body["checks"]["answer:mode"][0]["observedValue"] == "provider"
    assert body["checks"]["provider:reachability"][0]["observedValue"] == "reachable"
    probes = [r for r in fake.requests if r.path == "/v1/models"]
    for _ in range(5):
        client.get("/v1/health/chatbot")
    assert [r for r in fake.requests if r.path == "/v1/models"] == probes  # cached


def test_an_index_that_cannot_be_built_fails_with_503(client, monkeypatch):
    def broken():
        raise RuntimeError("secret-looking detail")

    monkeypatch.setattr(health, "current_index", broken)
    response = client.get("/v1/health/chatbot")
    assert response.status_code == 503
    assert response.mimetype == HEALTH_JSON
    assert response.get_json()["status"] == "fail"
    assert "secret-looking" not in response.get_data(as_text=True)


SECRETS = {
    "AI_BASE_URL": "https://svc-user:pa55-w0rd-secret@provider-host-secret.example:8443/v1",
    "AI_API_KEY": "sk-live-key-secret-9f8e7d",
    "AI_MODEL_CHAT": "chat-model-secret-name",
    "AI_MODEL_IMAGE": "image-model-secret-name",
    "AI_MODEL_TRANSCRIBE": "stt-model-secret-name",
    "AI_MODEL_SPEECH": "tts-model-secret-name",
    "AI_MODEL_EMBED": "embed-model-secret-name",
}


def test_chatbot_health_never_shows_a_provider_setting(_schema, monkeypatch):
    """Every provider setting holds a secret-looking value; the probe fails with an error
    quoting them; the body holds none of them (nor a host, user or password)."""

    class Failing:
        def get(self, url, **kwargs):
            raise RuntimeError(f"{url} {kwargs} " + " ".join(SECRETS.values()))

    monkeypatch.setattr(health, "session", lambda: Failing())
    health.forget()
    app = create_app(app_config(**SECRETS))
    for app_ in clean(app):
        client = app_.test_client()
        bodies = [client.get("/v1/health/chatbot").get_data(as_text=True)]
        for _ in range(100):
            if health._probe is not None:
                break
            time.sleep(0.02)
        bodies.append(client.get("/v1/health/chatbot").get_data(as_text=True))
    health.forget()
    assert '"observedValue":"unreachable"' in bodies[1]
    needles = [*SECRETS.values(), "svc-user", "pa55-w0rd", "provider-host-secret", "8443"]
    for body in bodies:
        for needle in needles:
            assert needle not in body
        assert "RuntimeError" not in body
