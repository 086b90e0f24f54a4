"""In-process stand-ins for outside services, speaking their real wire protocols."""

from tests.fakes.openai_server import FakeOpenAI

__all__ = ["FakeOpenAI"]
