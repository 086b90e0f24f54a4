"""Every error under /v1 is problem+json with a request id; site pages answer HTML."""

import pytest


@pytest.mark.parametrize("path", ["/v1/nope", "/v1", "/v1/tools/run/extra/deep"])
def test_unknown_route_is_a_problem(client, path):
    response = client.get(path)
    assert response.status_code == 404
    assert response.mimetype == "application/problem+json"
    assert response.get_json()["code"] == "not_found"


def test_method_not_allowed_lists_allow(client):
    response = client.delete("/v1/public/whoami")
    assert response.status_code == 405
    assert response.mimetype == "application/problem+json"
    assert response.get_json()["code"] == "method_not_allowed"
    assert set(response.headers["Allow"].split(", ")) >= {"GET", "HEAD", "OPTIONS"}


def test_request_id_is_echoed_or_made(client):
    assert (
        client.get("/v1/health", headers={"X-Request-Id": "abc-123"}).headers["X-Request-Id"]
        == "abc-123"
    )
    made = client.get("/v1/health", headers={"X-Request-Id": "bad id with spaces"})
    assert len(made.headers["X-Request-Id"]) == 32


def test_site_404_is_html(client):
    response = client.get("/no-such-page")
    assert response.status_code == 404
    assert response.mimetype == "text/html"


def test_unexpected_exception_is_a_problem_without_traceback(app, client, monkeypatch):
    def explode():
        raise RuntimeError("database password is hunter2")

    monkeypatch.setattr("blueprints.api.health.routes._redis_checks", explode)
    response = client.get("/v1/health")
    assert response.status_code == 500
    assert response.mimetype == "application/problem+json"
    text = response.get_data(as_text=True)
    assert "hunter2" not in text and "Traceback" not in text
    assert response.get_json()["request_id"] == response.headers["X-Request-Id"]


def test_health_reports_components_without_secrets(client):
    response = client.get("/v1/health")
    assert response.status_code == 200
    body = response.get_json()
    assert body["status"] in {"ok", "degraded"}
    assert set(body["checks"]) == {"database", "redis", "queue", "engines"}
    assert all(body["checks"][name]["status"] == "ok" for name in ("database", "redis", "queue"))
    assert "postgres" not in response.get_data(as_text=True).replace("postgresql", "")


def test_chatbot_health_is_honest(client):
    """Without a provider the assistant answers from retrieval alone: a warning, not a pass
    (tests/blueprints/api/test_assistant_api.py has the rest)."""
    body = client.get("/v1/health/chatbot").get_json()
    assert body["status"] == "warn"
    assert body["checks"]["answer:mode"][0]["observedValue"] == "retrieval only"


def test_health_names_tools_that_cannot_run_here(client, monkeypatch):
    from engines.base import Engine

    monkeypatch.setattr(
        Engine, "unavailable_reason", lambda self: "Engine needs the Python package(s) nothing."
    )
    body = client.get("/v1/health").get_json()
    assert body["status"] == "degraded"
    assert body["checks"]["engines"]["status"] == "degraded"
    assert "needs the Python package(s) nothing" in body["checks"]["engines"]["detail"]


def test_health_is_503_when_the_database_is_down(client, monkeypatch):
    def down():
        raise ConnectionError("refused")

    monkeypatch.setattr("blueprints.api.health.routes._database", down)
    response = client.get("/v1/health")
    assert response.status_code == 503
    body = response.get_json()
    assert body["status"] == "unavailable"
    assert body["checks"]["database"] == {"status": "error", "detail": "ConnectionError"}
