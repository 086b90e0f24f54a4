"""A runner that goes through the tool exactly as the API does and checks the output schema."""

import pytest
from flask import Flask
from jsonschema import Draft202012Validator

from app import engine_settings
from catalogue import load_catalogue
from config import Config
from engines import run_tool
from engines.models import breaker, provider_transport, providers
from tests.fakes import FakeOpenAI


def run_checked(slug: str, **inputs) -> dict:
    tool = load_catalogue().get(slug)
    assert tool.validate(inputs) == {}
    output = run_tool(tool, tool.with_defaults(inputs))
    Draft202012Validator(tool.output).validate(output)
    return output


@pytest.fixture
def run():
    """``run(slug, **inputs)``: validate, fill defaults, run, check the output schema."""
    return run_checked


# --- engines on the model provider: a fake OpenAI-compatible server, no retry pauses ------


@pytest.fixture(autouse=True, scope="session")
def app_settings():
    """The engines read the settings as ``create_app`` has them read (the current app's config),
    so that the bare apps of these tests can stand in for the app."""
    providers.read_settings_from(engine_settings)


@pytest.fixture
def no_provider_waits(monkeypatch):
    """Retries without their back-off pauses, and every circuit breaker closed."""
    monkeypatch.setattr(provider_transport, "_sleep", lambda seconds: None)
    breaker.reset_breakers()
    yield
    breaker.reset_breakers()


@pytest.fixture
def fake():
    with FakeOpenAI() as server:
        yield server


def app_with(base_url):
    """A bare app whose settings name ``base_url`` as the model provider (None: no provider)."""
    app = Flask(__name__)
    app.config.from_object(Config)
    app.config.update({"AI_BASE_URL": base_url, "AI_TIMEOUT_SECONDS": 2.0})
    return app


@pytest.fixture
def ai_app(fake):
    with app_with(fake.base_url).app_context() as context:
        yield context
