"""A runner that goes through the tool exactly as the API does and checks the output schema."""

import pytest
from jsonschema import Draft202012Validator

from app import engine_settings
from catalogue import load_catalogue
from engines import run_tool
from engines.models import breaker, provider_transport, providers
from tests.helpers import bare_app


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


# --- engines on the model provider (the root conftest's ``fake_provider``), no retry pauses ---


@pytest.fixture(autouse=True, scope="session")
def _engine_settings_from_the_current_app():
    """The engines read the settings as ``create_app`` has them read (the current app's config),
    so that the bare apps of these tests (``tests.helpers.bare_app``) can stand in for the app."""
    providers.read_settings_from(engine_settings)


@pytest.fixture
def no_provider_waits(monkeypatch):
    """Retries without their back-off pauses, and every circuit breaker closed."""
    monkeypatch.setattr(provider_transport, "_sleep", lambda seconds: None)
    breaker.reset_breakers()
    yield
    breaker.reset_breakers()


@pytest.fixture
def ai_app(fake_provider):
    """A bare app's context whose model provider is ``fake_provider`` (the root conftest.py)."""
    with bare_app(fake_provider.base_url).app_context() as context:
        yield context
